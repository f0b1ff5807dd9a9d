"""Selling a subscription of 8 performances against one single-seat hold, timed in this process
against the run's MongoDB (the services' own time: the same for both, no HTTP around either).

Each sample takes a fresh seat: a hold of one seat in one performance (``holds.hold_seats``), and a
subscription sale of one seat in 8 performances (``subscriptions.hold_subscription``: its intent,
8 conditional seat writes, the cart, the intent's end). Both are given back untimed.
"""

import statistics
import time
from datetime import timedelta

from booking.core import clock
from booking.sales import carts, holds, subscriptions
from booking.sales.subscriptions import SaleRequest

from . import data

PERFORMANCES = 8


def measure(hall: dict, samples: int) -> dict:
    sessions = [data.performance(hall, f"Subscription {i}", 40 + i) for i in range(PERFORMANCES)]
    single = data.performance(hall, "Single hold", 39)
    now = clock.now()
    sub = subscriptions.create_subscription(
        name="Bench season",
        session_ids=[s["_id"] for s in sessions],
        prices={code: price * PERFORMANCES for code, price in data.PRICES.items()},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=30),
    )
    # each block's outermost seats: one seat taken there leaves no seat alone (the orphan rule)
    pairs = data.edge_pairs(single)
    keys = [pair[0] if n % 2 == 0 else pair[1] for n, pair in enumerate(pairs)][:samples]
    single_ms, sale_ms = [], []
    for n, key in enumerate(keys):
        owner = f"s:bench-single-{n}"
        started = time.perf_counter()
        held = holds.hold_seats(single["_id"], owner, None, [key], allow_orphans=True, needs_wheelchair=True)
        single_ms.append((time.perf_counter() - started) * 1000)
        carts.cancel_cart(held.cart_id, owner)
        owner = f"s:bench-sub-{n}"
        started = time.perf_counter()
        cart = subscriptions.hold_subscription(
            subscription_id=sub["_id"], seat_keys=[key], request=SaleRequest(owner=owner)
        )
        sale_ms.append((time.perf_counter() - started) * 1000)
        carts.cancel_cart(cart["_id"], owner)
    single_p50, sale_p50 = statistics.median(single_ms), statistics.median(sale_ms)
    return {
        "samples": len(keys),
        "performances": PERFORMANCES,
        "single_p50_ms": single_p50,
        "subscription_p50_ms": sale_p50,
        "ratio": sale_p50 / single_p50,
    }
