"""Receipt numbers: one gap-free sequence per theater, made with conditional updates.

A counter document per theater, ``receipt_counters: {_id: theaterId, last: n, lastOrder: id, lastRef: ref}``,
holds the last number given and the order it went to. Giving the next one is two writes:

1. the counter: ``last: n -> n + 1, lastOrder: <this order>``, conditional on ``last`` still
   being the ``n`` read (two processes racing: one wins, the other reads again);
2. the order: ``receiptNo: n + 1`` (only if it has none).

A process can die between the two. So before anyone takes a number, they finish the previous
holder's second write (roll forward: the counter names it), and only then read their own order:
if the counter has moved past an order, that order's number is written, so an order that got a
number in an attempt that died finds it here instead of taking a second one. Hence no gaps
(every number the counter gave is written to the order it names, by its taker or the next one)
and no duplicates (an order takes a number only when the counter's ``last`` is still the one read
after seeing it has none). ``booking/tests/payments/test_receipts.py`` kills it between the writes and
races threads over one counter.
"""

import logging
import random
import time

from bson import ObjectId
from pymongo.errors import DuplicateKeyError

from booking.core import clock, faults, mongo

logger = logging.getLogger("booking.receipts")

MAX_ATTEMPTS = 50
BACKOFF_CAP_SECONDS = 0.5  # the longest wait after a lost race for the next number


def counters():
    return mongo.get_db()["receipt_counters"]


def theater_of(order: dict) -> ObjectId | None:
    """The theater whose sequence numbers this order: its first session's."""
    if order.get("receiptTheater"):
        return order["receiptTheater"]
    sessions = order.get("sessions") or []
    return sessions[0].get("theaterId") if sessions else None


def _counter(theater_id) -> dict:
    found = counters().find_one({"_id": theater_id})
    if found is not None:
        return found
    try:
        counters().insert_one({"_id": theater_id, "last": 0, "lastOrder": None})
    except DuplicateKeyError:
        pass
    return counters().find_one({"_id": theater_id})


def _roll_forward(counter: dict) -> None:
    """The counter's last holder gets its number if its own write never happened."""
    holder = counter.get("lastOrder")
    if holder is None:
        return
    by_ref = {"ref": counter["lastRef"]} if counter.get("lastRef") else {}  # orders are sharded on ref
    mongo.orders().update_one(
        {"_id": holder, **by_ref, "receiptNo": {"$exists": False}},
        {"$set": {"receiptNo": counter["last"], "receiptTheater": counter["_id"], "receiptOn": clock.now()}},
    )


def assign(order_id: ObjectId, theater_id=None, ref: str | None = None) -> int:
    """The order's receipt number, given now if it has none yet (safe to call any number of times,
    from any number of processes). ``theater_id``: its sequence, if the caller knows it; ``ref``:
    the order's reference, if known (orders are sharded on it: every command goes to one shard)."""
    mine_filter: dict = {"_id": order_id, **({"ref": ref} if ref else {})}
    if theater_id is None:
        order = mongo.orders().find_one(mine_filter, {"receiptNo": 1, "sessions": 1, "receiptTheater": 1, "ref": 1})
        if order is None:
            raise LookupError(f"no order {order_id}")
        if order.get("receiptNo"):
            return order["receiptNo"]
        theater_id = theater_of(order)
        mine_filter["ref"] = order["ref"]
    for attempt in range(MAX_ATTEMPTS):
        counter = _counter(theater_id)
        if counter.get("lastOrder") == order_id:
            number = counter["last"]  # ours from an attempt that died before its second write
        else:
            # The previous holder's number first; then ours, read after it: if this order ever got
            # a number, the counter has moved past it only after that number was written.
            _roll_forward(counter)
            mine = mongo.orders().find_one(mine_filter, {"receiptNo": 1})
            if mine is None:
                raise LookupError(f"no order {order_id}")
            if mine.get("receiptNo"):
                return mine["receiptNo"]
            taken = counters().update_one(
                {"_id": theater_id, "last": counter["last"]},
                {"$set": {"last": counter["last"] + 1, "lastOrder": order_id, "lastRef": mine_filter.get("ref")}},
            )
            if not taken.modified_count:
                # someone else took the next number: read again, after a random wait that doubles
                # with each loss. Capped at 50 ms, a rush of payments at one theater on a slower
                # machine still ran 300 of the bench's 1,000 payers out of attempts; up to half a
                # second spreads them out, and 50 losses in a row then take ~20 s.
                time.sleep(random.uniform(0, min(BACKOFF_CAP_SECONDS, 0.001 * 2**attempt)))
                continue
            number = counter["last"] + 1
        faults.point("receipt.after_counter")
        written = mongo.orders().update_one(
            {**mine_filter, "receiptNo": {"$exists": False}},
            {"$set": {"receiptNo": number, "receiptTheater": theater_id, "receiptOn": clock.now()}},
        )
        if written.modified_count:
            return number
        return mongo.orders().find_one(mine_filter, {"receiptNo": 1})["receiptNo"]
    raise RuntimeError(f"could not give order {order_id} a receipt number: the counter kept moving")


def receipt_label(order: dict) -> str:
    """The number as printed, e.g. 000042 (one sequence per theater, never reset)."""
    number = order.get("receiptNo")
    return f"{number:06d}" if number else ""
