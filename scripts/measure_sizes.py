"""Measure the BSON size of each kind of document on the demo halls, as the app writes them, for
the sizing in docs/architecture.md ("How big the data gets").

    .venv/bin/python scripts/measure_sizes.py

Starts its own devmongo on a free port, builds the demo's Grand Hall (900 seats) and Studio (94),
sells 70 % of a Grand Hall performance in orders of 1-4 seats through the engine (holds, checkout),
and prints the sizes: a fresh session, a 70 %-sold session, the same after compaction, a done
cart, an expired cart, an order by seat count, and each index entry's key.
"""

import os
import random
import statistics
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "theater_site.settings")


def main() -> None:
    import bson
    import django

    from devmongo import DevMongoServer

    server = DevMongoServer(port=0, notablescan=True).start()  # every query the sizing sends has its index
    os.environ["MONGODB_URI"] = server.uri
    os.environ["MONGODB_DB"] = "measure"
    django.setup()
    from django.conf import settings

    settings.MONGODB_URI, settings.MONGODB_DB = server.uri, "measure"
    settings.BOOKING_MAX_HELD_SEATS_PER_CLIENT = 0
    settings.BOOKING_HOLD_RATE = ""

    from booking.core import clock, mongo
    from booking.core.errors import NoAdjacentSeats
    from booking.payments import flow as payments
    from booking.sales import carts, demo, holds, retention
    from booking.sales.sessions import create_session
    from booking.venues.layouts import parse_grid
    from booking.venues.seat_grid import FREE
    from booking.venues.theaters import create_theater

    mongo.ensure_indexes()
    grand = create_theater("Grand Hall", parse_grid(demo.grand_hall_grid(), demo.GRAND_CATEGORIES))
    studio = create_theater("Studio Stage", parse_grid(demo.STUDIO_GRID, demo.STUDIO_CATEGORIES))
    size = lambda doc: len(bson.encode(doc))  # noqa: E731
    start = clock.now() + timedelta(days=2)
    details = dict(name="The Magic Flute", description="Mozart's opera for all ages, sung in English.")
    prices = {"p": 5500, "s": 3900, "b": 2500}
    session = create_session(
        grand["_id"], published=True, start=start, end=start + timedelta(hours=3), prices=prices, **details
    )
    studio_session = create_session(
        studio["_id"],
        published=True,
        start=start,
        end=start + timedelta(hours=2),
        prices={"s": 2200, "r": 1500},
        **details,
    )
    print(f"theater Grand Hall (830 seats): {size(mongo.theaters().find_one({'_id': grand['_id']}))} B")
    print(f"theater Studio (94 seats): {size(mongo.theaters().find_one({'_id': studio['_id']}))} B")
    print(f"session Grand Hall, fresh: {size(mongo.sessions().find_one({'_id': session['_id']}))} B")
    print(f"session Studio, fresh: {size(mongo.sessions().find_one({'_id': studio_session['_id']}))} B")

    rng = random.Random(20)
    free = [
        (r, c)
        for r, row in enumerate(mongo.sessions().find_one({"_id": session["_id"]})["seats"])
        for c, state in enumerate(row)
        if state == FREE
    ]
    target = int(len(free) * 0.7)
    sold, order_sizes, cart_sizes, n = 0, {}, [], 0
    while sold < target:
        want = rng.choice((1, 2, 2, 2, 3, 4))
        owner = f"s:{rng.getrandbits(64):016x}"
        try:
            hold = holds.hold_best_available(session["_id"], owner, None, want)
        except NoAdjacentSeats:
            continue  # no such run left: another party size
        order = payments.start(owner, hold.cart_id, f"Buyer Number{n}", f"buyer{n}@example.org")
        n += 1
        sold += len(order["lines"])
        order_sizes.setdefault(len(order["lines"]), []).append(size(mongo.orders().find_one({"ref": order["ref"]})))
        cart_sizes.append(size(mongo.carts().find_one({"_id": order["cartId"]})))
    doc = mongo.sessions().find_one({"_id": session["_id"]})
    print(f"session Grand Hall, {sold} of {len(free)} seats sold in {n} orders: {size(doc)} B")
    for seats, sizes in sorted(order_sizes.items()):
        print(f"order of {seats} seat(s): {statistics.mean(sizes):.0f} B (n={len(sizes)})")
    every = [s for sizes in order_sizes.values() for s in sizes]
    print(f"order, mean over the sale: {statistics.mean(every):.0f} B, {sold / n:.2f} seats per order")
    print(f"cart, done: {statistics.mean(cart_sizes):.0f} B")
    owner = "s:0123456789abcdef"
    hold = holds.hold_seats(studio_session["_id"], owner, None, ["3:0", "3:1"])
    mongo.carts().update_one({"_id": hold.cart_id}, {"$set": {"expiresAt": clock.now()}})
    carts.expire_cart(hold.cart_id)
    print(f"cart, expired with 2 seats: {size(mongo.carts().find_one({'_id': hold.cart_id}))} B")
    past = clock.now() - timedelta(days=30)
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"start": past, "end": past + timedelta(hours=3)}})
    retention.compact_past_sessions()
    print(f"session Grand Hall, compacted: {size(mongo.sessions().find_one({'_id': session['_id']}))} B")
    server.stop()


if __name__ == "__main__":
    main()
