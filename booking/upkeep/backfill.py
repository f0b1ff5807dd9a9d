"""Older data brought up to what newer code relies on (``manage.py backfill_orders``, run once
after upgrading from a version before these fields; safe to repeat and to run beside the app).

- ``nameKeys`` on orders made before the staff search used them: without them the search by name
  (booking/core/names.py, the name_prefix index) never finds those orders.
- ``purgeAt`` on orders made before retention: without it the purge_ttl index never deletes them,
  so they would be kept past BOOKING_ORDER_RETENTION_YEARS, for ever.
- ``ticketCodesByRef`` on sessions made before the marker whose tickets all start with their
  order's reference (codes have since 0b71eb8): a door then answers an unknown code by one shard
  instead of asking every shard for a code from before (sales/checkin.py). A session with an
  older ticket, sold, refunded or exchanged, is left without it.
- Carts the checkout from before payments left in ``checking_out`` (its process died between its
  steps) are finished as that checkout would have: the buyer submitted their details and the
  seats were held for them, and that checkout's order was paid at once (there was no payment to
  wait for), so the order is stored paid, the held seats sold and the cart done (every such cart,
  by ``reconcile.finish_checkouts_begun_before_payments``, which reconcile runs too for carts stuck
  longer than BOOKING_CHECKOUT_STUCK_SECONDS). Expiring them instead would take seats from a buyer who was
  told they were booking them, and could leave a paid order, stored before the crash, without its
  seats. A seat whose hold was lost meanwhile fails the order and gives back what it sold.

Each write is conditional on the field still missing, so a repeat, or the app writing meanwhile,
changes nothing twice. The walks go by ``_id`` (an operator's tool: every document, once).
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bson import ObjectId

from booking.core import mongo
from booking.core.names import name_keys
from booking.sales import orders as order_service
from booking.upkeep import reconcile

logger = logging.getLogger("booking.backfill")

TICKET_LISTS = ("lines", "refundedLines", "exchangedLines")
ORDER_FIELDS = {
    "ref": 1,
    "name": 1,
    "createdOn": 1,
    "nameKeys": 1,
    "purgeAt": 1,
    **{f"{lines}.{key}": 1 for lines in TICKET_LISTS for key in ("ticket", "sessionId")},
}


@dataclass
class BackfillReport:
    orders_read: int = 0
    name_keys_set: int = 0
    purge_dates_set: int = 0
    sessions_marked: int = 0
    sessions_with_older_codes: set = field(default_factory=set)
    checkouts_finished: int = 0


def _by_id(collection, query: dict, fields: dict, batch_size: int):
    """Every document matching ``query``, in _id order, a batch at a time (resumable by _id)."""
    last = None
    while True:
        page = {**query, **({"_id": {"$gt": last}} if last is not None else {})}
        batch = list(collection.find(page, fields).hint([("_id", 1)]).sort("_id", 1).limit(batch_size))
        yield from batch
        if len(batch) < batch_size:
            return
        last = batch[-1]["_id"]


def older_code_sessions(order: Mapping[str, Any]) -> set[ObjectId]:
    """The sessions of this order's tickets whose code does not start with the order's reference."""
    ref = order.get("ref") or ""
    return {
        line.get("sessionId")
        for lines in TICKET_LISTS
        for line in order.get(lines) or []
        if line.get("ticket") and not (ref and line["ticket"].startswith(ref))
    }


def backfill_orders(batch_size: int = 500) -> BackfillReport:
    report = BackfillReport()
    report.checkouts_finished = reconcile.finish_checkouts_begun_before_payments()
    for order in _by_id(mongo.orders(), {}, ORDER_FIELDS, batch_size):
        report.orders_read += 1
        mine = {"_id": order["_id"], "ref": order.get("ref")}  # ref: the orders' shard key
        if "nameKeys" not in order:
            done = mongo.orders().update_one(
                {**mine, "nameKeys": {"$exists": False}}, {"$set": {"nameKeys": name_keys(order.get("name", ""))}}
            )
            report.name_keys_set += done.modified_count
        if "purgeAt" not in order and order.get("createdOn"):
            done = mongo.orders().update_one(
                {**mine, "purgeAt": {"$exists": False}},
                {"$set": {"purgeAt": order_service.purge_at(order["createdOn"])}},
            )
            report.purge_dates_set += done.modified_count
        report.sessions_with_older_codes |= older_code_sessions(order)
    unmarked = {"ticketCodesByRef": {"$exists": False}}
    for session in _by_id(mongo.sessions(), unmarked, {"_id": 1}, batch_size):
        if session["_id"] in report.sessions_with_older_codes:
            continue
        done = mongo.sessions().update_one({"_id": session["_id"], **unmarked}, {"$set": {"ticketCodesByRef": True}})
        report.sessions_marked += done.modified_count
    logger.info(
        "backfill: %d checkouts begun before payments finished; %d orders read, nameKeys set on %d, "
        "purgeAt on %d; %d sessions marked, %d keep older codes",
        report.checkouts_finished,
        report.orders_read,
        report.name_keys_set,
        report.purge_dates_set,
        report.sessions_marked,
        len(report.sessions_with_older_codes),
    )
    return report
