"""Sending one event to one endpoint, with retries, every attempt kept.

``webhook_deliveries: {_id: "<event id>.<endpoint id>", endpointId, theaterId, eventId,
eventType, occurredAt, body, state: pending | delivered | failed | canceled, tries, round,
attempts: [{at, status?, error?, excerpt, ms, round}], nextAttemptAt, claimedUntil?,
createdOn, purgeAt}``.

An attempt is claimed first (``claimedUntil``), so two workers never send one delivery at once;
then it is POSTed (no redirects followed, ``BOOKING_WEBHOOK_TIMEOUT_SECONDS``), signed with the
endpoint's current secret. A 2xx answer delivers it. A network error, a 5xx, 408 or 429 is tried
again after ``retry_after`` (exponential backoff with jitter), up to
``BOOKING_WEBHOOK_MAX_ATTEMPTS`` tries in a round; any other answer fails it at once. A failed
(or delivered) delivery can be sent again by staff: a new round. Nothing here runs in a sale.
"""

import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import certifi
import urllib3
from django.conf import settings
from django.utils.translation import gettext
from pymongo import ReturnDocument

from booking.core import clock, mongo, work_queue
from booking.core.domain import WebhookEventEntry
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.webhooks import addresses, signing

logger = logging.getLogger("booking.webhooks")

PENDING = "pending"
DELIVERED = "delivered"
FAILED = "failed"
CANCELED = "canceled"  # its endpoint was switched off or deleted before it went
RETRIED_STATUSES = frozenset({408, 429})
EXCERPT_BYTES = 500
KEPT_ATTEMPTS = 50
USER_AGENT = "theater-booking-webhooks/1"


@dataclass(frozen=True)
class Outcome:
    state: str  # the delivery's state after this attempt ("busy": another worker has it; "missing")
    retry_in: float | None = None  # seconds until the next try, when one is due


def new_delivery(event: WebhookEventEntry, endpoint: dict, body: str, now: datetime) -> dict:
    return {
        "_id": f"{event['_id']}.{endpoint['_id']}",
        "endpointId": endpoint["_id"],
        "theaterId": endpoint["theaterId"],
        "eventId": event["_id"],
        "eventType": event["type"],
        "occurredAt": event["at"],
        "body": body,
        "state": PENDING,
        "tries": 0,
        "round": 1,
        "attempts": [],
        "nextAttemptAt": now,
        "createdOn": now,
        "purgeAt": now + timedelta(days=settings.BOOKING_WEBHOOK_RETENTION_DAYS),
    }


def queue(delivery_id: str) -> bool:
    """Queue the delivery's task; False when the broker is away (``requeue_due`` queues it)."""
    try:
        work_queue.queue(work_queue.DELIVER_WEBHOOK, delivery_id)
    except Exception as exc:  # noqa: BLE001 - any broker failure: reconcile queues it again
        logger.warning("could not queue webhook delivery %s (%s); reconcile will", delivery_id, exc)
        return False
    return True


def retry_after(tries: int) -> float:
    """Seconds before the next try after ``tries`` tries: doubling from the base, with jitter."""
    ceiling = min(
        settings.BOOKING_WEBHOOK_RETRY_MAX_SECONDS, settings.BOOKING_WEBHOOK_RETRY_BASE_SECONDS * 2 ** (tries - 1)
    )
    return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not security


def _claim(delivery_id: str, now: datetime) -> dict | None:
    hold = timedelta(seconds=settings.BOOKING_WEBHOOK_TIMEOUT_SECONDS + 30)
    return mongo.webhook_deliveries().find_one_and_update(
        {
            "_id": delivery_id,
            "state": PENDING,
            "$or": [{"claimedUntil": {"$exists": False}}, {"claimedUntil": {"$lt": now}}],
        },
        {"$set": {"claimedUntil": now + hold}},
        return_document=ReturnDocument.AFTER,
    )


def _post(
    endpoint: dict, delivery: dict, now: datetime, resolve: addresses.Resolver
) -> tuple[int | None, str, str, bool]:
    """One POST: (status, response excerpt, error, worth retrying)."""
    body = delivery["body"].encode()
    timestamp = int(now.timestamp())
    try:
        target = addresses.delivery_target(
            endpoint["url"], allow_local=settings.BOOKING_WEBHOOK_ALLOW_LOCAL, resolve=resolve
        )
    except InvalidRequest as exc:
        return None, "", exc.message, False
    default_port = 443 if target.scheme == "https" else 80
    headers = {
        "Host": target.host if target.port == default_port else f"{target.host}:{target.port}",
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Booking-Event": delivery["eventType"],
        "X-Booking-Event-Id": delivery["eventId"],
        "X-Booking-Delivery": delivery["_id"],
        signing.SIGNATURE_HEADER: signing.header(endpoint["secret"], timestamp, body),
    }
    timeout = urllib3.Timeout(total=settings.BOOKING_WEBHOOK_TIMEOUT_SECONDS)
    # the connection goes to the checked address; TLS still checks the certificate against the name
    pool: urllib3.HTTPConnectionPool = (
        urllib3.HTTPSConnectionPool(
            target.address,
            target.port,
            timeout=timeout,
            retries=False,
            server_hostname=target.host,
            cert_reqs="CERT_REQUIRED",
            ca_certs=certifi.where(),
        )
        if target.scheme == "https"
        else urllib3.HTTPConnectionPool(target.address, target.port, timeout=timeout, retries=False)
    )
    try:
        response = pool.urlopen("POST", target.path, body=body, headers=headers, redirect=False, preload_content=False)
        raw = response.read(EXCERPT_BYTES, decode_content=True) or b""
        status = response.status
        response.release_conn()
    except urllib3.exceptions.HTTPError as exc:
        return None, "", f"{type(exc).__name__}: {exc}"[:300], True
    finally:
        pool.close()
    excerpt = raw.decode("utf-8", errors="replace")
    return status, excerpt, "", status >= 500 or status in RETRIED_STATUSES


def attempt(delivery_id: str, *, resolve: addresses.Resolver = addresses.resolve_host) -> Outcome:
    """Send the delivery once if it is pending and nobody else is sending it (``resolve``: how the
    endpoint's host name becomes addresses)."""
    now = clock.now()
    delivery = _claim(delivery_id, now)
    if delivery is None:
        current = mongo.webhook_deliveries().find_one({"_id": delivery_id}, {"state": 1})
        return Outcome("missing" if current is None else ("busy" if current["state"] == PENDING else current["state"]))
    endpoint = mongo.webhook_endpoints().find_one({"_id": delivery["endpointId"]})
    claimed = {"_id": delivery_id, "claimedUntil": delivery["claimedUntil"]}
    if endpoint is None or not endpoint.get("active"):
        mongo.webhook_deliveries().update_one(claimed, {"$set": {"state": CANCELED}, "$unset": {"claimedUntil": ""}})
        return Outcome(CANCELED)
    started = time.monotonic()
    status, excerpt, error, retryable = _post(endpoint, delivery, now, resolve)
    took = round((time.monotonic() - started) * 1000)
    tries = delivery.get("tries", 0) + 1
    record = {
        "at": now,
        "status": status,
        "error": error,
        "excerpt": excerpt,
        "ms": took,
        "round": delivery.get("round", 1),
    }
    retry_in = None
    if status is not None and 200 <= status < 300:
        state = DELIVERED
    elif retryable and tries < settings.BOOKING_WEBHOOK_MAX_ATTEMPTS:
        state, retry_in = PENDING, retry_after(tries)
    else:
        state = FAILED
    sets: dict = {"state": state, "tries": tries, "lastStatus": status, "lastAttemptAt": now}
    if retry_in is not None:
        sets["nextAttemptAt"] = now + timedelta(seconds=retry_in)
    mongo.webhook_deliveries().update_one(
        claimed,
        {
            "$set": sets,
            "$unset": {"claimedUntil": ""},
            "$push": {"attempts": {"$each": [record], "$slice": -KEPT_ATTEMPTS}},
        },
    )
    logger.info(
        "webhook %s to %s: %s in %d ms (try %d) -> %s",
        delivery_id,
        endpoint["url"],
        status or error,
        took,
        tries,
        state,
    )
    return Outcome(state, retry_in)


def resend(delivery_id: str) -> dict:
    """Staff send a delivery again (a new round of tries, the same body, signed anew)."""
    delivery = mongo.webhook_deliveries().find_one({"_id": delivery_id}, {"endpointId": 1, "state": 1})
    if delivery is None:
        raise NotFound(gettext("No such delivery."))
    endpoint = mongo.webhook_endpoints().find_one({"_id": delivery["endpointId"]}, {"active": 1})
    if endpoint is None or not endpoint.get("active"):
        raise Conflict(gettext("The endpoint is switched off; switch it on to send again."))
    updated = mongo.webhook_deliveries().find_one_and_update(
        {"_id": delivery_id, "state": {"$ne": PENDING}},
        {"$set": {"state": PENDING, "tries": 0, "nextAttemptAt": clock.now()}, "$inc": {"round": 1}},
        projection={"body": 0},
        return_document=ReturnDocument.AFTER,
    )
    if updated is None:
        raise Conflict(gettext("This delivery is being sent already."))
    queue(delivery_id)
    return updated


def requeue_due(now: datetime | None = None, grace: timedelta | None = None) -> int:
    """Reconcile: pending deliveries whose next try is past by the grace period (their task was
    lost) are queued again."""
    now = now or clock.now()
    grace = timedelta(seconds=settings.BOOKING_RECONCILE_GRACE_SECONDS) if grace is None else grace
    queued = 0
    due = {"state": PENDING, "nextAttemptAt": {"$lte": now - grace}}
    for delivery in mongo.webhook_deliveries().find(due, {"_id": 1}).limit(500):
        queued += queue(delivery["_id"])
    return queued
