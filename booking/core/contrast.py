"""Text on a coloured background that passes WCAG AA (4.5:1) whatever colour staff chose.

Category colours are staff's choice (the layout editor's colour pickers); the seat numbers printed
on them are black or white, whichever contrasts more. One of the two always reaches 4.58:1.
"""

BLACK, WHITE = "#000000", "#ffffff"


def luminance(hex_colour: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    channels = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def ink_on(background: str) -> str:
    """Black or white: whichever is easier to read on ``background`` (``#rrggbb``)."""
    return BLACK if contrast(background, BLACK) >= contrast(background, WHITE) else WHITE
