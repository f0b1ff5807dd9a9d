"""The benchmark's data: 900-seat halls, seat plans that never leave a
single seat alone (so the orphan rule never refuses a benchmark hold), and stale carts for C4."""

from datetime import timedelta

from bson import ObjectId

from booking.core import clock, mongo
from booking.core.domain import CartState
from booking.sales.demo import GRAND_CATEGORIES
from booking.sales.sessions import create_session
from booking.venues.layouts import auto_row_label, parse_grid
from booking.venues.seat_grid import HELD, seat_key
from booking.venues.theaters import create_theater

PRICES = {"p": 5500, "s": 3900, "b": 2500}


def grand_hall() -> dict:
    """A hall of exactly 900 seats shaped like the demo's Grand Hall (aisles, three price
    categories, wheelchair spaces with companion seats at the back): 30 rows of 8 + 14 + 8."""
    lines = []
    for i in range(30):
        middle = "p" if 3 <= i <= 12 else ("s" if i < 22 else "b")
        side = "s" if i < 22 else "b"
        left = right = side * 8
        if i == 29:
            left, right = "B" + side * 7, side * 7 + "B"
        lines.append(f"{auto_row_label(i)}: {left}.{middle * 14}.{right}")
    return create_theater("Grand Hall", parse_grid("\n".join(lines), GRAND_CATEGORIES))


def performance(theater: dict, name: str, days: float) -> dict:
    start = clock.now() + timedelta(days=days)
    return create_session(
        theater["_id"],
        published=True,
        name=name,
        description="Benchmark performance",
        start=start,
        end=start + timedelta(hours=2),
        prices=PRICES,
    )


def blocks(session: dict) -> list[tuple[int, int, int]]:
    """(row, first col, end col) of every run of seats between gaps."""
    found = []
    for r, states in enumerate(session["seats"]):
        start = None
        for c, state in enumerate([*states, -1]):
            if state != -1 and start is None:
                start = c
            elif state == -1 and start is not None:
                found.append((r, start, c))
                start = None
    return found


def edge_pairs(session: dict) -> list[list[str]]:
    """Two seats at each end of every block of 6 or more: holding or releasing any of them in any
    order never leaves a seat alone."""
    pairs = []
    for r, start, end in blocks(session):
        if end - start >= 6:
            pairs.append([seat_key(r, start), seat_key(r, start + 1)])
            pairs.append([seat_key(r, end - 2), seat_key(r, end - 1)])
    return pairs


def sale_groups(session: dict) -> list[list[str]]:
    """The whole hall cut into groups of 2 (3 at an odd block's end), to be sold left to right
    within each block: every group starts at the block's edge or beside a sold seat."""
    per_block = []
    for r, start, end in blocks(session):
        cols = list(range(start, end))
        groups = [cols[i : i + 2] for i in range(0, len(cols), 2)]
        if len(groups) > 1 and len(groups[-1]) == 1:
            groups[-2].extend(groups.pop())
        per_block.append([[seat_key(r, c) for c in g] for g in groups])
    return per_block


def checkout_plan(sessions: list[dict], clients: int) -> list[list[tuple[str, list[str]]]]:
    """Give each client whole blocks, so its groups are bought in order and never collide."""
    plan: list[list] = [[] for _ in range(clients)]
    i = 0
    for session in sessions:
        for block in sale_groups(session):
            plan[i % clients].extend((str(session["_id"]), group) for group in block)
            i += 1
    return plan


def stale_carts(count: int, per_session: int = 400) -> list[ObjectId]:
    """``count`` active carts past their expiry, each holding 2 seats in one of several 900-seat
    performances, written directly (the benchmark measures the sweep, not how they came about)."""
    theater = grand_hall()
    now = clock.now()
    past = now - timedelta(minutes=1)
    cart_ids: list[ObjectId] = []
    day = 30.0
    while len(cart_ids) < count:
        session = performance(theater, "Expiry sweep", day)
        day += 0.1
        groups = [g[:2] for block in sale_groups(session) for g in block][: min(per_session, count - len(cart_ids))]
        seats = session["seats"]
        reservations, carts = [], []
        for group in groups:
            cart_id = ObjectId()
            for key in group:
                r, c = (int(x) for x in key.split(":"))
                seats[r][c] = HELD
            reservations.append({"_id": cart_id, "seats": group, "total": 0, "v": "bench", "modifiedOn": past})
            carts.append(
                {
                    "_id": cart_id,
                    "owner": f"s:bench{len(cart_ids)}",
                    "state": CartState.ACTIVE,
                    "items": [
                        {"sessionId": session["_id"], "key": k, "row": "?", "seat": "?", "cat": "s", "price": 0}
                        for k in group
                    ],
                    "total": 0,
                    "createdOn": past,
                    "modifiedOn": past,
                    "firstHoldOn": past,
                    "expiresAt": past,
                }
            )
            cart_ids.append(cart_id)
        held = sum(len(g) for g in groups)
        mongo.sessions().update_one(
            {"_id": session["_id"]},
            {"$set": {"seats": seats, "reservations": reservations}, "$inc": {"seatsAvailable": -held, "version": 1}},
        )
        mongo.carts().insert_many(carts)
    return cart_ids
