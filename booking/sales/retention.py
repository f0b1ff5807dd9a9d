"""Data that does not grow without bound (docs/architecture.md, "Retention").

- Ended carts are deleted BOOKING_CART_RETENTION_DAYS after they ended (TTL index on ``endedOn``).
- Orders carry ``purgeAt`` from the day they are made (sales/orders.purge_at; TTL index), so
  they are kept as long as the law wants and no longer.
- A session that ended BOOKING_SESSION_COMPACT_AFTER_DAYS ago loses its seat grid and holds
  (``seats``, ``reservations``: most of a 40-60 KB document) for ``seatSummary``, the counts by
  state; its layout, prices and times stay. Which seats were sold is in the orders (their lines
  name the seats), and a page that shows the grid of a compacted session rebuilds it from them
  (seat_grid.restored_states). The worker runs compact_past_sessions every
  BOOKING_COMPACT_EVERY_SECONDS. A compacted session gets the ``purgeAt`` its orders have (TTL):
  once they are gone, nothing refers to it.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings

from booking.core import clock, mongo
from booking.sales import orders
from booking.venues.seat_grid import BLOCKED, FREE, HELD, SOLD, count_state

logger = logging.getLogger("booking.retention")

# A compacted session's grid as the pages count it: sold, blocked, and free (a hold left at
# compaction is long dead: its seat counts as free).
GRID_FIELDS = {"seats": 1, "version": 1, "end": 1}


def seat_summary(seats: list[list[int]]) -> dict:
    sold, blocked = count_state(seats, SOLD), count_state(seats, BLOCKED)
    free = count_state(seats, FREE) + count_state(seats, HELD)
    return {"sold": sold, "blocked": blocked, "free": free, "total": sold + blocked + free}


def compact_past_sessions(now: datetime | None = None, batch_size: int = 100) -> int:
    """Compact every session that ended long enough ago; returns how many. Safe to run twice at
    once: each compaction is conditional on the version it read (a late order cancelation that
    freed a seat meanwhile makes it miss, and the next run takes the new grid)."""
    now = now or clock.now()
    cutoff = now - timedelta(days=settings.BOOKING_SESSION_COMPACT_AFTER_DAYS)
    # the grid_by_end index holds only the sessions that still have their grid
    due = {"end": {"$lt": cutoff}, "seats": {"$exists": True}}
    compacted = 0
    while True:
        found = list(mongo.sessions().find(due, GRID_FIELDS).sort("end", 1).limit(batch_size))
        before = compacted
        for session in found:
            result = mongo.sessions().update_one(
                {"_id": session["_id"], "version": session["version"], "seats": {"$exists": True}},
                {
                    "$set": {
                        "seatSummary": seat_summary(session["seats"]),
                        "compactedOn": now,
                        "purgeAt": orders.purge_at(session["end"]),  # goes with its orders
                    },
                    "$unset": {"seats": "", "reservations": ""},
                    "$inc": {"version": 1},
                },
            )
            compacted += result.modified_count
        if len(found) < batch_size or compacted == before:
            break  # done, or every one changed under us: the next run takes them
    if compacted:
        logger.info("compacted the seat grids of %d past sessions", compacted)
    return compacted
