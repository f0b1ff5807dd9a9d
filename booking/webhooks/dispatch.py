"""Handing an order's or a performance's webhook events to the endpoints that want them.

The sale wrote each event onto the document with its change (sales/outbox.py). Here, in the
worker, each event becomes one delivery per active endpoint of the document's theaters that chose
its type (``_id``: event id and endpoint id, so a second run inserts nothing new), then the events
are pulled from the document, then the deliveries are queued. A crash before the pull leaves the
events where ``dispatch_pending`` (reconcile) finds them; one after it leaves pending deliveries,
which ``deliveries.requeue_due`` queues again.
"""

import logging
from datetime import datetime, timedelta

from bson import ObjectId
from django.conf import settings
from pymongo.errors import DuplicateKeyError

from booking.core import clock, faults, mongo
from booking.sales import outbox
from booking.webhooks import deliveries, payloads, selectors

logger = logging.getLogger("booking.webhooks")

# What dispatch reads of a session (not its seats).
SESSION_FIELDS = {
    "webhookEvents": 1,
    "performanceId": 1,
    "theaterId": 1,
    "theaterName": 1,
    "name": 1,
    "start": 1,
    "status": 1,
    "canceledOn": 1,
}
# Where a document names its theaters (an order one per session, in an array).
THEATER_FIELD = {outbox.ORDERS: "sessions.theaterId", outbox.SESSIONS: "theaterId"}
BATCH = 200
MOST_PER_RUN = 2000  # a backlog left by a long broker outage drains over a few runs


def _collection(name: str):
    if name == outbox.ORDERS:
        return mongo.orders()
    if name == outbox.SESSIONS:
        return mongo.sessions()
    raise ValueError(f"no webhook events on {name!r}")


def dispatch(collection: str, document_id: ObjectId) -> list[str]:
    """Store the deliveries of the document's events, pull the events, queue the deliveries.
    Returns the ids of the deliveries queued (safe to run any number of times)."""
    projection = SESSION_FIELDS if collection == outbox.SESSIONS else None
    document = _collection(collection).find_one({"_id": document_id}, projection)
    events = (document or {}).get("webhookEvents") or []
    if document is None or not events:
        return []
    endpoints = selectors.active_endpoints(outbox.theaters_of(document, collection))
    due: list[str] = []
    now = clock.now()
    for event in events:
        wanting = [e for e in endpoints if event["type"] in e.get("events", [])]
        if not wanting:
            continue
        body = payloads.body(event, document, collection)
        for endpoint in wanting:
            delivery = deliveries.new_delivery(event, endpoint, body, now)
            try:
                mongo.webhook_deliveries().insert_one(delivery)
            except DuplicateKeyError:
                pass  # stored by an earlier run: queued again below, sent once (deliveries.attempt claims it)
            due.append(delivery["_id"])
    faults.point("webhooks.after_deliveries")
    documents = _collection(collection)
    documents.update_one(
        {"_id": document_id}, {"$pull": {"webhookEvents": {"_id": {"$in": [e["_id"] for e in events]}}}}
    )
    # an empty list would keep the document in the sparse index; an event pushed meanwhile stays
    documents.update_one({"_id": document_id, "webhookEvents": {"$size": 0}}, {"$unset": {"webhookEvents": ""}})
    for delivery_id in due:
        deliveries.queue(delivery_id)
    return due


def dispatch_pending(now: datetime | None = None, grace: timedelta | None = None) -> int:
    """Reconcile: events older than the grace period that no dispatch took (the publish was lost
    with its process, the broker was away) are dispatched here. Returns how many documents."""
    now = now or clock.now()
    grace = timedelta(seconds=settings.BOOKING_RECONCILE_GRACE_SECONDS) if grace is None else grace
    handled = 0
    for collection in (outbox.ORDERS, outbox.SESSIONS):
        older = {"webhookEvents.at": {"$lte": now - grace}}
        # nobody listens to these theaters (their sales queued no dispatch): one write per collection
        unheard = {**older, THEATER_FIELD[collection]: {"$nin": list(selectors.theaters_listening_now())}}
        handled += _collection(collection).update_many(unheard, {"$unset": {"webhookEvents": ""}}).modified_count
        failed: list[ObjectId] = []
        while handled < MOST_PER_RUN:
            query = {**older, "_id": {"$nin": failed}} if failed else older
            batch = list(_collection(collection).find(query, {"_id": 1}).limit(BATCH))
            if not batch:
                break
            for document in batch:
                try:
                    dispatch(collection, document["_id"])
                except Exception:  # one document that fails must not stop the rest; logged, tried next run
                    logger.exception("webhook events of %s %s not dispatched", collection, document["_id"])
                    failed.append(document["_id"])
                    continue
                handled += 1
    return handled
