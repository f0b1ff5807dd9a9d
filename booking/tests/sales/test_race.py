"""A rush of buyers: 32 threads, each with its own MongoClient and cart, fight over the same
seats while another thread expires carts. No seat may end up sold twice or stuck."""

import random
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest

from booking.core import clock, mongo
from booking.core.errors import BookingError
from booking.payments import flow as payments
from booking.sales import holds
from booking.sales.cart_expiry import expire_stale_carts
from booking.tests.factories import make_session
from booking.tests.localstripe import VISA, card
from booking.tests.threads import PerThreadClient
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import FREE, HELD, SOLD

GRID = "\n".join(f"{row}: ssssss.ssssss" for row in "ABCDE")


@pytest.mark.slow
def test_32_buyers_racing_for_overlapping_seats(monkeypatch, settings):
    settings.BOOKING_HOLD_SECONDS = 1
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    session = make_session(grid=GRID)
    sid = session["_id"]
    clients = PerThreadClient()
    monkeypatch.setattr(mongo, "get_client", clients.get)

    groups = [[f"{r}:{c}", f"{r}:{c + 1}"] for r in range(2) for c in (4, 5, 7)]  # the best seats
    outcome: Counter[str] = Counter()
    sold_by_thread = []
    stop = threading.Event()
    errors = []

    def buyer(n):
        rng = random.Random(n)
        owner = f"s:buyer{n}"
        cart_id = None
        try:
            for _ in range(12):
                keys = rng.choice(groups)
                try:
                    result = holds.hold_seats(sid, owner, cart_id, keys)
                    cart_id = result.cart_id
                    outcome["held"] += 1
                except BookingError as exc:
                    outcome[exc.code] += 1
                    continue
                roll = rng.random()
                try:
                    if roll < 0.3:
                        holds.release_seats(sid, owner, cart_id, keys)
                        outcome["released"] += 1
                    elif roll < 0.6:
                        order = payments.start(owner, cart_id, f"Buyer {n}", f"b{n}@example.com")
                        cart_id = None
                        paid = payments.pay_with_card(order["_id"], owner, card(VISA))  # checkout, then pay
                        if paid.status == "paid":
                            sold_by_thread.append(order["_id"])
                            outcome["bought"] += 1
                        else:
                            outcome[f"payment {paid.status}"] += 1
                    elif roll < 0.8:
                        time.sleep(rng.uniform(0.5, 1.5))  # dawdle: the hold may expire under us
                except BookingError as exc:
                    outcome[exc.code] += 1
        except Exception as exc:  # noqa: BLE001 - a crash in a thread must fail the test
            errors.append(repr(exc))

    def expirer():
        while not stop.is_set():
            try:
                expire_stale_carts()
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))
            time.sleep(0.05)

    threads = [threading.Thread(target=buyer, args=(n,)) for n in range(32)]
    sweeper = threading.Thread(target=expirer)
    sweeper.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    stop.set()
    sweeper.join(timeout=10)
    monkeypatch.undo()
    clients.close()

    assert errors == []
    assert outcome["held"] > 0 and outcome["seats_taken"] > 0, outcome
    # Reconcile as the worker would once every hold left has run out (holds last 1 s here).
    reconcile(now=clock.now() + timedelta(seconds=1.1), grace=timedelta(0))
    assert check_invariants() == []
    fresh = mongo.sessions().find_one({"_id": sid})
    sold_cells = sum(row.count(SOLD) for row in fresh["seats"])
    paid_lines = [
        (line["sessionId"], line["key"])
        for o in mongo.orders().find({"state": "paid"}, hint=[("_id", 1)])  # every order: the test's check
        for line in o["lines"]
    ]
    assert len(paid_lines) == len(set(paid_lines)) == sold_cells
    assert sum(row.count(HELD) for row in fresh["seats"]) == 0
    assert fresh["seatsAvailable"] == sum(row.count(FREE) for row in fresh["seats"])
    assert mongo.orders().count_documents({"state": "paid"}, hint=[("_id", 1)]) == len(sold_by_thread)
