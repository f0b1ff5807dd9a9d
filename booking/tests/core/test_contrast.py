"""Seat numbers on any category colour staff may pick pass WCAG AA (4.5:1): black or white,
whichever reads better (booking/core/contrast.py), in the buyer's map stylesheet and the staff grid."""

import itertools

from booking.core.contrast import BLACK, WHITE, contrast, ink_on
from booking.web.seatmap_html import category_css


def test_known_values():
    assert round(contrast(BLACK, WHITE), 2) == 21.0
    assert round(contrast("#3b82f6", WHITE), 2) == 3.68  # the demo's Stalls blue: white fails AA
    assert ink_on("#3b82f6") == BLACK and ink_on("#551022") == WHITE


def test_every_colour_gets_a_readable_ink():
    steps = range(0, 256, 15)  # 18^3 colours across the cube
    worst = min(
        contrast(f"#{r:02x}{g:02x}{b:02x}", ink_on(f"#{r:02x}{g:02x}{b:02x}"))
        for r, g, b in itertools.product(steps, repeat=3)
    )
    assert worst >= 4.5


def test_the_map_stylesheet_names_the_ink_per_category():
    session = {
        "prices": {"s": 2200, "r": 1500},
        "layout": {"categories": [{"code": "s", "color": "#3b82f6"}, {"code": "r", "color": "#7a1631"}]},
    }
    assert category_css(session) == ".c-s{--cat:#3b82f6;--on-cat:#000000}.c-r{--cat:#7a1631;--on-cat:#ffffff}"
