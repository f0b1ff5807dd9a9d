"""Reads of endpoints and deliveries, one per access pattern (indexes: core/mongo.py)."""

import time

from bson import ObjectId

from booking.core import mongo
from booking.core.lru import LRUCache

DELIVERY_LIST_LIMIT = 100
# How long a process trusts its answer to "which theaters have an endpoint switched on?". A sale in
# another process within this time of a theater's first endpoint being switched on leaves its
# events for reconcile.
ENDPOINT_PRESENCE_SECONDS = 5.0
_presence: LRUCache[int, frozenset[ObjectId]] = LRUCache(1)


def theaters_listening() -> frozenset[ObjectId]:
    """The theaters with a switched-on endpoint: a sale of any other theater queues no dispatch."""
    return _presence.get_or_build(int(time.monotonic() // ENDPOINT_PRESENCE_SECONDS), theaters_listening_now)


def theaters_listening_now() -> frozenset[ObjectId]:
    """... asked of the database now (reconcile, which drops the events nobody listens to)."""
    found = mongo.webhook_endpoints().find({"active": True}, {"theaterId": 1, "_id": 0})
    return frozenset(endpoint["theaterId"] for endpoint in found)


def forget_endpoint_presence() -> None:
    """After this process changed an endpoint: the next sale asks again."""
    _presence.clear()


def endpoints(theater_id: ObjectId | None = None) -> list[dict]:
    """Every endpoint (a handful per theater), or a theater's, oldest first."""
    query = {"theaterId": theater_id} if theater_id is not None else {}
    return list(mongo.webhook_endpoints().find(query).sort([("theaterId", 1), ("createdOn", 1)]).limit(1000))


def active_endpoints(theater_ids: list[ObjectId]) -> list[dict]:
    """The switched-on endpoints of these theaters."""
    found = mongo.webhook_endpoints().find({"theaterId": {"$in": theater_ids}})
    return [endpoint for endpoint in found if endpoint.get("active")]


def get_endpoint(endpoint_id: ObjectId) -> dict | None:
    return mongo.webhook_endpoints().find_one({"_id": endpoint_id})


def deliveries(endpoint_id: ObjectId, limit: int = DELIVERY_LIST_LIMIT) -> list[dict]:
    """An endpoint's latest deliveries, newest first, without their bodies."""
    cursor = mongo.webhook_deliveries().find({"endpointId": endpoint_id}, {"body": 0})
    return list(cursor.sort([("createdOn", -1), ("_id", -1)]).limit(limit))


def pending_deliveries() -> int:
    """Deliveries still to be sent or tried again (the partial ``due`` index holds just these)."""
    return mongo.webhook_deliveries().count_documents({"state": "pending"})


def get_delivery(delivery_id: str) -> dict | None:
    return mongo.webhook_deliveries().find_one({"_id": delivery_id})
