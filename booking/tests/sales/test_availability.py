"""A performance's free seats per category, counted by category columns, agree seat for seat with
its seat map: every state, gaps, a category with a single seat in a row, a row stored short."""

import random

from booking.core import mongo
from booking.sales.availability import availability
from booking.tests.factories import make_session, make_theater
from booking.venues.seat_grid import BLOCKED, FREE, GAP, HELD, SOLD

GRID = """\
A: sssp.ssss
B: pspp.ppss
C: s.ss.sssp
D: ppppppppp
"""
CATEGORIES = [{"code": "s", "name": "Stalls"}, {"code": "p", "name": "Premium"}]


def counted_seat_by_seat(found) -> dict[str, tuple[int, int]]:
    counts: dict[str, list[int]] = {}
    for seat in found.seats:
        free_total = counts.setdefault(seat["category"], [0, 0])
        free_total[0] += seat["state"] == "free"
        free_total[1] += 1
    return {code: (free, total) for code, (free, total) in counts.items()}


def test_counts_per_category_match_the_seat_map_whatever_the_states():
    session = make_session(make_theater(GRID, CATEGORIES))
    rng = random.Random(5)
    for round_ in range(25):
        grid = mongo.sessions().find_one({"_id": session["_id"]}, {"seats": 1})["seats"]
        states: list[list[int]] = [
            [s if s == GAP else rng.choice([FREE, FREE, HELD, SOLD, BLOCKED]) for s in row] for row in grid
        ]
        if round_ % 5 == 0:
            states[3] = states[3][:6]  # stored short: its missing seats are no seats
        mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"seats": states}})
        found = availability(session["_id"], theater_id=session["theaterId"], with_seats=True)
        assert found is not None
        by_category = {c.code: (c.free, c.total) for c in found.categories}
        assert by_category == counted_seat_by_seat(found)
        free_seats: int = sum(row.count(FREE) for row in states)
        assert sum(c.free for c in found.categories) == free_seats


def test_a_fresh_performance_counts_every_seat_free():
    session = make_session(make_theater(GRID, CATEGORIES))
    found = availability(session["_id"], theater_id=session["theaterId"])
    assert [(c.code, c.free, c.total) for c in found.categories] == [("s", 16, 16), ("p", 16, 16)]
    assert found.seats is None
