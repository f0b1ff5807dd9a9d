"""The halls both systems sell: the demo's 830-seat Grand Hall (booking/sales/demo.py) and a 40-seat hall
for the rush, as our layouts and as the spec pretix_setup.py turns into pretix seating plans."""

from booking.sales.demo import GRAND_CATEGORIES, grand_hall_grid
from booking.venues.layouts import parse_grid
from booking.venues.seat_grid import seat_key

PRICES = {"p": 5500, "s": 3900, "b": 2500}  # the demo's Grand Hall prices (cents)
RUSH_GRID = "\n".join(f"{label}: ssssssssss" for label in "ABCD")  # 4 rows of 10: 20 pairs


def grand_layout() -> dict:
    return parse_grid(grand_hall_grid(), GRAND_CATEGORIES)


def rush_layout() -> dict:
    return parse_grid(RUSH_GRID, GRAND_CATEGORIES)


def pretix_spec(slug: str, name: str, layout: dict, days: float) -> dict:
    used = {cell["cat"] for row in layout["rows"] for cell in row["cells"] if cell}
    return {
        "slug": slug,
        "name": name,
        "days": days,
        "categories": [{**c, "price": PRICES[c["code"]]} for c in layout["categories"] if c["code"] in used],
        "rows": [{"label": row["label"], "cells": row["cells"]} for row in layout["rows"]],
    }


def seat_keys(layout: dict) -> list[str]:
    return [seat_key(r, c) for r, row in enumerate(layout["rows"]) for c, cell in enumerate(row["cells"]) if cell]


def pair_slots(layout: dict) -> list[list[str]]:
    """Every block of a row cut into pairs side by side from its left end (a row of 10: 5 pairs; an
    odd block leaves its last 3 seats out). Buying only whole slots never leaves a single seat
    alone, so our orphan rule refuses nothing pretix would sell: both systems face the same choices."""
    slots = []
    for r, row in enumerate(layout["rows"]):
        run: list[int] = []
        for c, cell in enumerate([*row["cells"], None]):
            if cell:
                run.append(c)
                continue
            if len(run) % 2:  # an odd block keeps its last 3 seats free: a pair beside them leaves none alone
                run = run[:-3]
            slots += [[seat_key(r, a), seat_key(r, b)] for a, b in zip(run[::2], run[1::2], strict=True)]
            run = []
    return slots


def edge_pairs(layout: dict) -> list[list[str]]:
    """Two seats at each end of every block of 6 or more (as bench/data.py: hold and release in
    any order never leaves a seat alone)."""
    pairs = []
    for r, row in enumerate(layout["rows"]):
        run: list[int] = []
        for c, cell in enumerate([*row["cells"], None]):
            if cell:
                run.append(c)
                continue
            if len(run) >= 6:
                pairs.append([seat_key(r, run[0]), seat_key(r, run[1])])
                pairs.append([seat_key(r, run[-2]), seat_key(r, run[-1])])
            run = []
    return pairs
