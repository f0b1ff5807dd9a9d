"""Reads of endpoints and deliveries, one per access pattern (indexes: core/mongo.py)."""

from bson import ObjectId

from booking.core import mongo

DELIVERY_LIST_LIMIT = 100


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
