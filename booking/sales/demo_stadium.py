"""A 100,000-seat stadium: four stands of 25 sections, each section 20 rows of 50 seats with a
stairway down the middle and two wheelchair spaces in its back row. One session document per
section (about 60 KB each), so no document carries the whole venue."""

from datetime import timedelta

from booking.core import clock
from booking.core.domain import Section, Theater
from booking.sales.sessions import create_session
from booking.venues.layouts import auto_row_label, parse_grid
from booking.venues.theaters import create_sectioned_theater

STANDS = ["North", "East", "South", "West"]
STANDS_DE = {"North": "Nord", "East": "Ost", "South": "Süd", "West": "West"}  # German pages (booking/core/localized.py)
STADIUM_CATEGORIES = [
    {"code": "p", "name": "Halfway line", "nameDe": "Mittellinie", "color": "#a855f7"},
    {"code": "s", "name": "Stand", "nameDe": "Tribüne", "color": "#3b82f6"},
]
STADIUM_PRICES = {"p": 8500, "s": 4500}


def section_grid(rows: int, half: int, category: str) -> str:
    lines = []
    for r in range(rows):
        left = right = category * half
        if r == rows - 1:  # wheelchair spaces at the ends of the back row, companions beside them
            left = category.upper() + category * (half - 1)
            right = category * (half - 1) + category.upper()
        lines.append(f"{auto_row_label(r)}: {left}.{right}")
    return "\n".join(lines)


def stadium_sections(seats: int = 100_000, rows: int = 20, half: int = 25) -> list[Section]:
    """Sections of ``rows`` x ``2 * half`` seats, dealt round the four stands, ``seats`` in all."""
    per_section = rows * 2 * half
    count = max(1, -(-seats // per_section))
    per_stand = -(-count // len(STANDS))
    sections: list[Section] = []
    for i in range(count):
        stand, number = STANDS[i // per_stand], i % per_stand + 1
        middle = stand in ("East", "West") and abs(number - (per_stand + 1) / 2) < per_stand / 5
        grid = section_grid(rows, half, "p" if middle else "s")
        sections.append(
            {
                "name": f"{stand} {number}",
                "nameDe": f"{STANDS_DE[stand]} {number}",
                "layout": parse_grid(grid, STADIUM_CATEGORIES),
            }
        )
    return sections


def create_stadium(name: str = "Riverside Stadium", seats: int = 100_000, **shape) -> Theater:
    """A football stadium: its seat maps say "Pitch" at the front, not "Stage"."""
    name_de = "Riverside-Stadion" if name == "Riverside Stadium" else ""
    return create_sectioned_theater(name, stadium_sections(seats, **shape), front="pitch", name_de=name_de)


def create_match(stadium: Theater, name: str = "Cup Final", days: float = 7) -> dict:
    """A performance in the stadium; returns its first section's session document."""
    start = clock.now() + timedelta(days=days)
    return create_session(
        stadium["_id"],
        published=True,
        name=name,
        description="Riverside Rovers against Harbour Athletic.",
        name_de="Pokalfinale" if name == "Cup Final" else "",
        description_de="Riverside Rovers gegen Harbour Athletic.",
        start=start,
        end=start + timedelta(hours=2),
        prices=STADIUM_PRICES,
    )
