"""Webhook endpoints: the URLs a theater's other systems receive events at, registered by staff
(booking/control/webhooks.py).

``webhook_endpoints: {_id, theaterId, url, events: [type], active, secret, description,
createdOn, createdBy, secretRotatedOn?, changedOn?}``. The secret signs every delivery
(signing.py); it is made here, shown to staff and replaced by ``rotate_secret``. It is kept as
it is, not hashed: each delivery needs it to sign.
"""

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext

from booking.core import clock, mongo
from booking.core.errors import InvalidRequest, NotFound
from booking.sales.outbox import WEBHOOK_EVENT_TYPES
from booking.webhooks import addresses, selectors, signing

MAX_DESCRIPTION = 200


def _clean(*, url: str, events: list[str], description: str) -> dict:
    allow_local = settings.BOOKING_WEBHOOK_ALLOW_LOCAL
    cleaned_url = addresses.clean_url(url, allow_local=allow_local)
    chosen = list(dict.fromkeys(events))
    if not chosen:
        message = gettext("Choose at least one event.")
        raise InvalidRequest(message, fields={"events": message})
    unknown = [e for e in chosen if e not in WEBHOOK_EVENT_TYPES]
    if unknown:
        message = gettext("Unknown event: %(event)s.") % {"event": unknown[0][:40]}
        raise InvalidRequest(message, fields={"events": message})
    description = (description or "").strip()
    if len(description) > MAX_DESCRIPTION:
        message = gettext("At most %(max)d characters.") % {"max": MAX_DESCRIPTION}
        raise InvalidRequest(message, fields={"description": message})
    return {"url": cleaned_url, "events": [e for e in WEBHOOK_EVENT_TYPES if e in chosen], "description": description}


def create_endpoint(
    *, theater_id: ObjectId, url: str, events: list[str], description: str = "", active: bool = True, by: str = ""
) -> dict:
    """A new endpoint with a new secret; InvalidRequest (per field) for a URL or choice that
    cannot be."""
    fields = _clean(url=url, events=events, description=description)
    if mongo.theaters().find_one({"_id": theater_id}, {"_id": 1}) is None:
        message = gettext("No such theater.")
        raise InvalidRequest(message, fields={"theater": message})
    limit = settings.BOOKING_WEBHOOK_ENDPOINTS_PER_THEATER
    if mongo.webhook_endpoints().count_documents({"theaterId": theater_id}) >= limit:
        message = gettext("A theater has at most %(max)d webhook endpoints.") % {"max": limit}
        raise InvalidRequest(message, fields={"url": message})
    endpoint = {
        "_id": ObjectId(),
        "theaterId": theater_id,
        **fields,
        "active": bool(active),
        "secret": signing.new_secret(),
        "createdOn": clock.now(),
        "createdBy": by,
    }
    mongo.webhook_endpoints().insert_one(endpoint)
    selectors.forget_endpoint_presence()
    return endpoint


def update_endpoint(endpoint_id: ObjectId, *, url: str, events: list[str], description: str = "", active: bool) -> dict:
    fields = _clean(url=url, events=events, description=description)
    found = mongo.webhook_endpoints().find_one_and_update(
        {"_id": endpoint_id},
        {"$set": {**fields, "active": bool(active), "changedOn": clock.now()}},
        return_document=True,
    )
    if found is None:
        raise NotFound(gettext("No such webhook endpoint."))
    selectors.forget_endpoint_presence()
    return found


def rotate_secret(endpoint_id: ObjectId) -> dict:
    """A new secret; deliveries from now on are signed with it."""
    found = mongo.webhook_endpoints().find_one_and_update(
        {"_id": endpoint_id},
        {"$set": {"secret": signing.new_secret(), "secretRotatedOn": clock.now()}},
        return_document=True,
    )
    if found is None:
        raise NotFound(gettext("No such webhook endpoint."))
    return found


def delete_endpoint(endpoint_id: ObjectId) -> None:
    """The endpoint goes; its deliveries stay until their retention ends, and no pending one is
    sent (deliveries.py finds no endpoint)."""
    if not mongo.webhook_endpoints().delete_one({"_id": endpoint_id}).deleted_count:
        raise NotFound(gettext("No such webhook endpoint."))
    selectors.forget_endpoint_presence()
