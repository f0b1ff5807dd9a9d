"""The one place that knows how to reach MongoDB.

One MongoClient per process, created lazily. gunicorn and Celery prefork workers fork after
import, and a pymongo client must not cross a fork, so the client remembers the pid that made it
and a child process builds its own.
"""

import os
import threading
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from pymongo import MongoClient
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import OperationFailure

from booking.core.domain import MailState, OrderState, SubscriptionSaleState

_lock = threading.Lock()
_client: MongoClient | None = None
_client_pid: int | None = None
_listeners: list = []  # pymongo command listeners (command counting in tests and the benchmark)
# Collection objects per (database, name), with the client they were made from: pymongo's are
# thread-safe and immutable, and building a Database and a Collection for every command (their
# codec and write-concern options) was a measurable share of a seat click's client-side CPU.
_collections: dict[tuple[str, str], tuple[MongoClient, Collection]] = {}

if os.environ.get("BOOKING_MONGO_MONITOR"):  # opt-in, for the benchmark: see booking/core/command_monitor.py
    from booking.core.command_monitor import enabled as _monitor_enabled
    from booking.core.command_monitor import monitor as _request_monitor

    if _monitor_enabled():
        _listeners.append(_request_monitor)


def get_client() -> MongoClient:
    global _client, _client_pid
    pid = os.getpid()
    if _client is not None and _client_pid == pid:
        return _client
    with _lock:
        if _client is None or _client_pid != pid:
            _client = MongoClient(
                settings.MONGODB_URI,
                serverSelectionTimeoutMS=settings.MONGODB_TIMEOUT_MS,
                connectTimeoutMS=settings.MONGODB_TIMEOUT_MS,
                tz_aware=True,
                connect=False,
                event_listeners=list(_listeners),
                **write_concern_options(settings.MONGODB_URI),
            )
            _client_pid = pid
    return _client


def write_concern_options(uri: str) -> dict:
    """Majority write concern on a replica set (or an SRV cluster), unless the URI names its own
    ``w``: an acknowledged hold or sale must survive a failover, or a seat could be sold twice."""
    options = {key.lower() for key in parse_qs(urlsplit(uri).query)}  # URI options ignore case
    if "w" in options:
        return {}
    if "replicaset" in options or uri.startswith("mongodb+srv://"):
        return {"w": "majority"}
    return {}


def close_client() -> None:
    """Forget the client (tests switch databases; a forked child drops the parent's)."""
    global _client, _client_pid
    with _lock:
        if _client is not None and _client_pid == os.getpid():
            _client.close()
        _client = None
        _client_pid = None
        _collections.clear()


def add_listener(listener) -> None:
    """Watch every command this process sends from now on (the client is rebuilt to take it)."""
    _listeners.append(listener)
    close_client()


def remove_listener(listener) -> None:
    _listeners.remove(listener)
    close_client()


def _forget_after_fork() -> None:
    # The parent's sockets belong to the parent; never close them from the child.
    global _client, _client_pid
    _client = None
    _client_pid = None
    _collections.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def get_db() -> Database:
    return get_client()[settings.MONGODB_DB]


def _collection(name: str) -> Collection:
    client = get_client()
    key = (settings.MONGODB_DB, name)
    kept = _collections.get(key)
    if kept is not None and kept[0] is client:
        return kept[1]
    collection = client[settings.MONGODB_DB][name]
    _collections[key] = (client, collection)
    return collection


def theaters():
    return _collection("theaters")


def sessions():
    return _collection("sessions")


def carts():
    return _collection("carts")


def orders():
    return _collection("orders")


def promo_codes():
    return _collection("promo_codes")


def vouchers():
    """Gift vouchers, found by their code (booking/payments/vouchers.py)."""
    return _collection("vouchers")


def checkin_conflicts():
    return _collection("checkin_conflicts")


def credit_notes():
    return _collection("credit_notes")


def till_closings():
    return _collection("till_closings")


def takings_days():
    """A past day's takings counted for keeps (booking/reports/takings.py), by ``_id``."""
    return _collection("takings_days")


def session_sales():
    """The reports' per-session sales summaries (booking/reports/summaries.py)."""
    return _collection("session_sales")


# --- scale: the per-client held-seats limit's documents, one per client address,
# read and written by _id only (sales/client_holds.py): no index but _id's
def client_holds():
    return _collection("client_holds")


def listings():
    """What's on, one document per session (sales/listings.py)."""
    return _collection("listings")


def performances():
    """A sectioned performance's section ids, by performanceId (venues/performance_index.py)."""
    return _collection("performances")


# --- the REST API (booking/api/): its tokens, its call log, its idempotency keys


def api_tokens():
    """API tokens, stored as the SHA-256 of their secret (booking/web/api_tokens.py)."""
    return _collection("api_tokens")


def api_calls():
    """One document per API call: which token, what, the answer's status; kept 30 days."""
    return _collection("api_calls")


def api_idempotency():
    """An API request's Idempotency-Key claimed, and the first answer kept for its retries."""
    return _collection("api_idempotency")


def webhook_endpoints():
    """The URLs a theater's other systems receive events at (booking/webhooks/endpoints.py)."""
    return _collection("webhook_endpoints")


def subscriptions():
    """Season subscriptions staff define (booking/sales/subscriptions.py)."""
    return _collection("subscriptions")


def subscription_sales():
    """A subscription sale's intent: every seat it takes, written first (sales/subscriptions.py)."""
    return _collection("subscription_sales")


def webhook_deliveries():
    """One event sent to one endpoint, with its attempts (booking/webhooks/deliveries.py)."""
    return _collection("webhook_deliveries")


def waiting_list():
    """Buyers waiting for seats of a sold-out performance, and the offers made them
    (booking/sales/waiting_list.py)."""
    return _collection("waiting_list")


# Retention (settings): ended carts and orders go by TTL (MongoDB's TTL monitor deletes them about
# once a minute after their date); the indexes that carry the dates are declared below.
DAY = 86_400

# The shard key of every collection, chosen per access pattern (docs/architecture.md, "Shard
# keys"): every command of the hot paths names it (booking/tests/core/test_shard_keys.py). Nothing
# here shards anything: an operator runs sh.shardCollection with these (docs/deploy.md).
SHARD_KEYS: dict[str, dict[str, str | int]] = {
    "theaters": {"_id": "hashed"},
    "sessions": {"_id": "hashed"},
    "carts": {"owner": "hashed"},
    "orders": {"ref": 1},  # ranged: the reference is random, and its unique index must be the shard key
    "checkin_conflicts": {"scanId": 1},  # ranged: random scan ids, and the unique index is the key's
    "promo_codes": {"code": 1},  # ranged: redeemed by its code, and the unique index is the key's
    "vouchers": {"code": 1},  # ranged: redeemed by its random code, and the unique index is the key's
    "session_sales": {"_id": "hashed"},  # the reports: read and written by session id
    # scale: one document per client address, addressed by _id alone
    "client_holds": {"_id": "hashed"},
    # Q1 what's on (sales/listings.py): ranged on start, so a range of dates reaches only the
    # shards owning them; new listings land on the last chunk, at the rate staff publish shows
    "listings": {"start": 1},
    # the stadium performance page (venues/performance_index.py): read by _id (the performanceId)
    "performances": {"_id": "hashed"},
    # the API: tokens by the hash of their secret (unique), calls by token, keys by token and key
    "api_tokens": {"hash": 1},
    "api_calls": {"tokenId": "hashed"},
    "api_idempotency": {"_id": "hashed"},
    # webhooks: a handful of endpoints per theater; deliveries read by _id and per endpoint
    "webhook_endpoints": {"_id": "hashed"},
    "webhook_deliveries": {"endpointId": 1},
    # a performance's list is read and swept per session; an offer's link finds it by token (off
    # the hot paths: asks every shard)
    "waiting_list": {"sessionId": "hashed"},
    # the accountant's documents: a few a day per theater, read by order or by till
    "credit_notes": {"orderId": "hashed"},
    "till_closings": {"till": 1},
    "takings_days": {"_id": "hashed"},
    # subscriptions: a few dozen a season, read by _id; a sale's intent read by _id or by state
    "subscriptions": {"_id": "hashed"},
    "subscription_sales": {"_id": "hashed"},
}

# The collections whose indexes ensure_indexes owns: an index there that it no longer declares
# (renamed, retired: the seed's ticket_code, ...) is dropped.
OWNED_COLLECTIONS = (
    "theaters",
    "sessions",
    "carts",
    "orders",
    "checkin_conflicts",
    "promo_codes",
    "vouchers",
    "session_sales",
    "listings",
    "performances",
    "api_tokens",
    "api_calls",
    "api_idempotency",
    "webhook_endpoints",
    "webhook_deliveries",
    "waiting_list",
    "credit_notes",
    "till_closings",
    "subscriptions",
    "subscription_sales",
)


def _index(collection, keys, *, name: str, **options) -> str:
    """Create one index; an index of that name or those keys with other keys or options (sparse
    turned partial, a retention changed) is dropped first and made again."""
    try:
        return collection.create_index(keys, name=name, **options)
    except OperationFailure as exc:
        if exc.code not in (85, 86):  # IndexOptionsConflict, IndexKeySpecsConflict
            raise
    wanted = list(keys)
    for existing, spec in collection.index_information().items():
        if existing != "_id_" and (existing == name or list(spec["key"]) == wanted):
            collection.drop_index(existing)
    return collection.create_index(keys, name=name, **options)


def ensure_indexes() -> list[str]:
    """Create every index the access patterns need and drop the ones no longer declared (in the
    collections listed in OWNED_COLLECTIONS); returns the declared names.

    booking/tests/core/test_query_audit.py checks every command shape the app sends against these.
    """
    created = []
    created.append(_index(theaters(), [("name", 1), ("_id", 1)], name="name_id"))  # the staff list's order
    # _id last: what's on sorts by (start, _id), so that equal starts come in one order, and these
    # serve that sort (an index on start alone would leave a sort in memory of every match)
    created.append(_index(sessions(), [("start", 1), ("_id", 1)], name="start_id"))
    created.append(_index(sessions(), [("theaterId", 1), ("start", 1), ("_id", 1)], name="theater_start_id"))
    created.append(_index(sessions(), [("reservations._id", 1)], name="reservation_cart"))
    created.append(
        _index(sessions(), [("performanceId", 1), ("section.index", 1)], name="performance_sections", sparse=True)
    )
    # sessions whose listing is behind (sales/listings.py): reconcile's work list, empty but
    # for a crash between a session write and its listing's
    created.append(
        _index(sessions(), [("listingDue", 1)], name="listing_due", partialFilterExpression={"listingDue": True})
    )
    # Q1 what's on: by start, or by theater and start, _id last as in the sessions' indexes
    created.append(_index(listings(), [("start", 1), ("_id", 1)], name="start_id"))
    created.append(_index(listings(), [("theaterId", 1), ("start", 1), ("_id", 1)], name="theater_start_id"))
    # a listing goes a day after its show started (what's on lists upcoming shows only)
    created.append(_index(listings(), [("start", 1)], name="start_ttl", expireAfterSeconds=DAY))
    # a sectioned performance's section ids go when its sections' orders would (no index but
    # this and _id's: read by _id only)
    created.append(_index(performances(), [("purgeAt", 1)], name="purge_ttl", expireAfterSeconds=0))
    # the waiting room: the sessions of a queue (booking/sales/waiting_room.py)
    created.append(_index(sessions(), [("waitingRoom.queueId", 1)], name="waiting_room", sparse=True))
    # sessions whose seat grid is still there, by end: the compaction task's work list (the ones
    # compacted leave the index)
    created.append(
        _index(sessions(), [("end", 1)], name="grid_by_end", partialFilterExpression={"seats": {"$exists": True}})
    )
    # a compacted session goes when its orders go (sales/retention.py)
    created.append(_index(sessions(), [("purgeAt", 1)], name="purge_ttl", expireAfterSeconds=0))
    created.append(_index(carts(), [("state", 1), ("expiresAt", 1)], name="state_expires"))
    created.append(_index(carts(), [("owner", 1), ("state", 1)], name="owner_state"))
    # (no index by client: the per-client held-seats limit counts on client_holds by _id)
    # the staff lists: carts of a state, and of every state, newest first
    created.append(_index(carts(), [("state", 1), ("createdOn", -1), ("_id", -1)], name="state_newest"))
    created.append(_index(carts(), [("createdOn", -1), ("_id", -1)], name="newest"))
    retention = settings.BOOKING_CART_RETENTION_DAYS * DAY
    created.append(_index(carts(), [("endedOn", 1)], name="ended_ttl", expireAfterSeconds=retention))
    # reconcile: promo-code uses a crash left half given back (sales/promos.finish_give_backs)
    created.append(
        _index(
            carts(),
            [("promo.released", 1), ("state", 1)],
            name="promo_give_back",
            partialFilterExpression={"promo.codeId": {"$exists": True}},
        )
    )
    created.append(_index(orders(), [("ref", 1)], unique=True, name="ref_unique"))
    # unique on a replica set; a collection sharded on ref cannot have a second unique index, and
    # there a cart's one order rests on the cart's orderRef alone (sales/checkout.py)
    created.append(_index(orders(), [("cartId", 1)], unique=not settings.MONGODB_SHARDED, name="cart_unique"))
    created.append(_index(orders(), [("email", 1)], name="email"))
    # the staff search by name: an anchored prefix of a word of the name (booking/core/names.py)
    created.append(_index(orders(), [("nameKeys", 1)], name="name_prefix"))
    created.append(_index(orders(), [("createdOn", -1), ("_id", -1)], name="newest"))
    # the staff order list's filters by state and by sales channel, newest first (sales/order_search.py;
    # an online order has no channel: indexed as null)
    created.append(_index(orders(), [("state", 1), ("createdOn", -1), ("_id", -1)], name="state_newest"))
    created.append(_index(orders(), [("channel", 1), ("createdOn", -1), ("_id", -1)], name="channel_newest"))
    # ... and by payment method (also the complimentary channel: given away is a method), newest first
    created.append(_index(orders(), [("method", 1), ("createdOn", -1), ("_id", -1)], name="method_newest"))
    # mails still to send, and failed ones by their next round (a sent mail leaves both: years of
    # orders stay out of the way); one partial index per state, each filter a plain equality
    pending, failed = {"mail": MailState.PENDING}, {"mail": MailState.FAILED}
    created.append(
        _index(orders(), [("mail", 1), ("createdOn", 1)], name="mail_pending", partialFilterExpression=pending)
    )
    created.append(
        _index(
            orders(), [("mail", 1), ("mailRetryAt", 1), ("_id", 1)], name="mail_failed", partialFilterExpression=failed
        )
    )
    # the orders of a performance, newest first: the staff list's and the export's filter, and every
    # read of a session's orders (its prefix)
    created.append(_index(orders(), [("lines.sessionId", 1), ("createdOn", -1), ("_id", -1)], name="session_newest"))
    created.append(_index(orders(), [("lines.ticket", 1)], name="line_ticket"))  # door check-in finds a ticket
    # canceled or failed orders whose seats are not given back yet (reconcile): a handful at most
    created.append(
        _index(orders(), [("state", 1)], name="release_pending", partialFilterExpression={"seatsReleased": False})
    )
    created.append(_index(orders(), [("purgeAt", 1)], name="purge_ttl", expireAfterSeconds=0))
    # payments (payments/flow.py, payments/refunds.py): the webhook's lookup and reconcile's queries
    created.append(_index(orders(), [("payment.intent", 1)], name="payment_intent"))
    created.append(_index(orders(), [("payment.previous.intent", 1)], name="payment_previous", sparse=True))
    # reconcile's payment queries, each partial (a plain state index would also serve, and walk,
    # every paid, expired or canceled order of the retention): pending orders by their window's
    # end; expired/canceled card orders by payment status (one still open at the
    # provider); canceled orders whose hold is not released yet
    created.append(
        _index(
            orders(),
            [("state", 1), ("payment.until", 1)],
            name="pending_until",
            partialFilterExpression={"state": OrderState.PENDING_PAYMENT},
        )
    )
    created.append(
        _index(
            orders(),
            [("state", 1), ("payment.status", 1)],
            name="ended_card_status",
            partialFilterExpression={
                "method": "card",
                "state": {"$in": [OrderState.EXPIRED, OrderState.CANCELED]},
            },
        )
    )
    created.append(
        _index(orders(), [("state", 1)], name="hold_release_pending", partialFilterExpression={"holdReleased": False})
    )
    for flag in ("settling", "refundDue", "noticeMail"):
        created.append(_index(orders(), [(flag, 1)], name=flag, sparse=True))
    # staff changes (sales/exchanges.py, notifications/change_notices.py, sales/session_cancel.py): open exchanges,
    # seats an exchange took, notices not sent yet, session cancellations under way
    created.append(_index(orders(), [("exchangeOpen", 1)], name="exchange_open", sparse=True))
    created.append(_index(orders(), [("exchangedLines.ticket", 1)], name="exchanged_ticket", sparse=True))
    created.append(_index(sessions(), [("exchangeHolds._id", 1)], name="exchange_holds", sparse=True))
    created.append(_index(orders(), [("changeNotices.state", 1)], name="change_notices", sparse=True))
    created.append(_index(sessions(), [("cancelRun.state", 1)], name="cancel_run", sparse=True))
    # door check-in of refunded tickets (sales/checkin.py): they are refused, also offline
    created.append(_index(orders(), [("refundedLines.ticket", 1)], name="refunded_ticket", sparse=True))
    created.append(_index(orders(), [("refundedLines.sessionId", 1)], name="refunded_session", sparse=True))
    # ... and of tickets replaced by an exchange (an offline door says "replaced: new seat X")
    created.append(_index(orders(), [("exchangedLines.sessionId", 1)], name="exchanged_session", sparse=True))
    # ... and of tickets the buyer handed to someone else (sales/buyer_changes.py)
    created.append(_index(orders(), [("transferredLines.ticket", 1)], name="transferred_ticket", sparse=True))
    created.append(_index(orders(), [("transferredLines.sessionId", 1)], name="transferred_session", sparse=True))
    # a sectioned performance's details change not yet in every section (sales/performance_details.py)
    created.append(_index(sessions(), [("detailsChange.open", 1)], name="details_change_open", sparse=True))
    # door check-in (sales/checkin.py): a scope's conflicts, newest first; one per offline scan
    created.append(
        checkin_conflicts().create_index([("scopeId", 1), ("reportedOn", -1), ("_id", -1)], name="scope_reported_id")
    )
    created.append(checkin_conflicts().create_index([("scanId", 1)], unique=True, name="scan_unique"))
    # promo codes (sales/promos.py): redeemed by their text; a voucher batch exported by batch;
    # the staff list: codes without a batch ({batch: null}) newest first, and the batches
    created.append(promo_codes().create_index([("code", 1)], unique=True, name="code_unique"))
    batch_keys = [("batch", 1), ("createdOn", -1), ("_id", -1)]
    created.append(promo_codes().create_index(batch_keys, name="batch_created"))
    created += _voucher_indexes()
    created += _report_indexes()
    created += _webhook_indexes()
    created += _money_indexes()
    # --- scale: an address's held-seats document goes once its last hold has ended
    # (sales/client_holds.py); read and written by _id only
    created.append(_index(client_holds(), [("until", 1)], name="until_ttl", expireAfterSeconds=0))
    created += _api_indexes()
    created += _waiting_list_indexes()
    created += _subscription_indexes()
    _drop_undeclared(set(created))
    return created


def _voucher_indexes() -> list[str]:
    """Gift vouchers (booking/payments/vouchers.py): redeemed by their code; the staff list newest
    first; reconcile's redemptions still open (their order not paid yet)."""
    return [
        _index(vouchers(), [("code", 1)], unique=True, name="code_unique"),
        _index(vouchers(), [("issuedOn", -1), ("_id", -1)], name="issued_newest"),
        _index(vouchers(), [("redemptions.state", 1), ("redemptions.at", 1)], name="redemptions_open"),
        # bought online (payments/voucher_purchases.py): the buyer's page, the webhook's intent,
        # reconcile's unpaid purchases and mails still owed
        _index(
            vouchers(),
            [("purchase.token", 1)],
            unique=True,
            name="purchase_token",
            partialFilterExpression={"purchase.token": {"$exists": True}},
        ),
        _index(
            vouchers(),
            [("purchase.intent", 1)],
            name="purchase_intent",
            partialFilterExpression={"purchase.intent": {"$exists": True}},
        ),
        _index(vouchers(), [("state", 1), ("purchase.until", 1)], name="purchase_pending"),
        _index(vouchers(), [("mail", 1), ("mailDueOn", 1)], name="voucher_mail_due"),
    ]


def _report_indexes() -> list[str]:
    """The sales reports' summaries (booking/reports/summaries.py): the orders marked for a
    session's summary (a handful between two refreshes: a sparse index, an order leaves it when its
    marks are pulled), and the summaries' retention (they go with their session)."""
    return [
        _index(orders(), [("reportStale.s", 1)], name="report_stale", sparse=True),
        _index(session_sales(), [("purgeAt", 1)], name="purge_ttl", expireAfterSeconds=0),
    ]


def _money_indexes() -> list[str]:
    """The accountant's documents (payments/invoices.py, credit_notes.py, tills.py): orders whose
    credit notes are still to be written (a handful), an order's credit notes, money taken and
    given back by time (payments/takings.py: sales by ``paidOn``, exchanges' top-ups by their
    ``on``, refunds by ``createdOn``), a till's closings newest first."""
    return [
        _index(orders(), [("creditNoteDue", 1)], name="credit_note_due", sparse=True),
        _index(orders(), [("invoice.due", 1)], name="invoice_due", sparse=True),
        _index(orders(), [("paidOn", 1)], name="paid_on", sparse=True),
        _index(orders(), [("topUps.on", 1)], name="top_up_on", sparse=True),
        _index(orders(), [("refunds.createdOn", 1)], name="refund_created", sparse=True),
        _index(credit_notes(), [("orderId", 1), ("createdOn", 1)], name="order_created"),
        _index(till_closings(), [("till", 1), ("seq", -1)], name="till_seq", unique=True),
        _index(till_closings(), [("day", 1), ("till", 1)], name="day_till"),
        _index(till_closings(), [("claiming", 1)], name="till_claiming", sparse=True),
    ]


def _api_indexes() -> list[str]:
    """The API (booking/api/): a token found by its secret's hash, the staff list per theater;
    the call log and the idempotency keys go by TTL."""
    return [
        _index(api_tokens(), [("hash", 1)], unique=True, name="hash_unique"),
        _index(api_tokens(), [("theaterId", 1), ("createdOn", -1)], name="theater_created"),
        _index(api_calls(), [("tokenId", 1), ("at", -1)], name="token_at"),
        _index(api_calls(), [("at", 1)], name="at_ttl", expireAfterSeconds=30 * DAY),
        _index(api_idempotency(), [("createdOn", 1)], name="created_ttl", expireAfterSeconds=DAY),
    ]


def _webhook_indexes() -> list[str]:
    """Webhooks (booking/webhooks/): the orders and sessions with events not yet handed to their
    endpoints (a handful: an event is pulled once its deliveries are stored), a theater's
    endpoints, an endpoint's deliveries newest first, the deliveries still to be sent, and their
    retention."""
    pending = {"state": "pending"}
    return [
        _index(orders(), [("webhookEvents.at", 1)], name="webhook_events", sparse=True),
        _index(sessions(), [("webhookEvents.at", 1)], name="webhook_events", sparse=True),
        _index(webhook_endpoints(), [("theaterId", 1), ("createdOn", 1)], name="theater_created"),
        _index(webhook_endpoints(), [("active", 1)], name="active"),
        _index(webhook_deliveries(), [("endpointId", 1), ("createdOn", -1), ("_id", -1)], name="endpoint_created"),
        _index(webhook_deliveries(), [("state", 1), ("nextAttemptAt", 1)], name="due", partialFilterExpression=pending),
        _index(webhook_deliveries(), [("purgeAt", 1)], name="purge_ttl", expireAfterSeconds=0),
    ]


def _waiting_list_indexes() -> list[str]:
    """The waiting list (booking/sales/waiting_list.py): a performance's entries first come first
    (the sweep, a place, the staff list); one entry on the list per address and performance; an
    offer's link; the worker's lists of offers to pass on, offers a crash left half made and
    mails still to send (each partial: the handful in that state)."""
    on_list = {"active": True}
    return [
        _index(waiting_list(), [("sessionId", 1), ("state", 1), ("createdOn", 1), ("_id", 1)], name="session_queue"),
        _index(waiting_list(), [("sessionId", 1), ("createdOn", 1), ("_id", 1)], name="session_created"),
        _index(
            waiting_list(),
            [("sessionId", 1), ("email", 1)],
            name="one_per_address",
            unique=True,
            partialFilterExpression=on_list,
        ),
        _index(waiting_list(), [("offer.token", 1)], name="offer_token", sparse=True),
        _index(waiting_list(), [("state", 1), ("offer.until", 1)], name="state_until"),
        _index(waiting_list(), [("mail", 1), ("mailDueOn", 1)], name="mail_due", sparse=True),
    ]


def _subscription_indexes() -> list[str]:
    """Subscriptions (booking/sales/subscriptions.py): those on sale by their window, a season's
    renewal by the subscription it renews; sales still holding (a handful: reconcile's scan), and
    an ended sale's intent goes after a month."""
    holding = {"state": SubscriptionSaleState.HOLDING}
    return [
        _index(subscriptions(), [("saleCloses", 1)], name="sale_closes"),
        _index(subscriptions(), [("renewalCloses", 1)], name="renewal_closes", sparse=True),
        _index(subscription_sales(), [("createdOn", 1)], name="holding", partialFilterExpression=holding),
        _index(subscription_sales(), [("cartId", 1)], name="cart"),
        # a season's holders (renewal) and the invariants: the subscriptions' orders only
        _index(orders(), [("subscription._id", 1)], name="subscription", sparse=True),
        _index(subscription_sales(), [("endedOn", 1)], name="ended_ttl", expireAfterSeconds=30 * DAY),
    ]


def _drop_undeclared(declared: set[str]) -> None:
    db = get_db()
    existing = set(db.list_collection_names())
    for name in OWNED_COLLECTIONS:
        if name not in existing:
            continue
        for index in db[name].index_information():
            if index != "_id_" and index not in declared:
                db[name].drop_index(index)
