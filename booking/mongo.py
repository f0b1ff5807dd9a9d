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
from pymongo.database import Database

_lock = threading.Lock()
_client: MongoClient | None = None
_client_pid: int | None = None
_listeners: list = []  # pymongo command listeners (command counting in tests and the benchmark)

if os.environ.get("BOOKING_MONGO_MONITOR"):  # opt-in, for the benchmark: see booking/command_monitor.py
    from .command_monitor import enabled as _monitor_enabled
    from .command_monitor import monitor as _request_monitor

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


os.register_at_fork(after_in_child=_forget_after_fork)


def get_db() -> Database:
    return get_client()[settings.MONGODB_DB]


def theaters():
    return get_db()["theaters"]


def sessions():
    return get_db()["sessions"]


def carts():
    return get_db()["carts"]


def orders():
    return get_db()["orders"]


def promo_codes():
    return get_db()["promo_codes"]


def checkin_conflicts():
    return get_db()["checkin_conflicts"]


def ensure_indexes() -> list[str]:
    """Create every index the access patterns need; returns their names."""
    created = []
    # _id last: what's on sorts by (start, _id), so that equal starts come in one order, and these
    # serve that sort (an index on start alone would leave a sort in memory of every match)
    created.append(sessions().create_index([("start", 1), ("_id", 1)], name="start_id"))
    created.append(sessions().create_index([("theaterId", 1), ("start", 1), ("_id", 1)], name="theater_start_id"))
    created.append(sessions().create_index([("reservations._id", 1)], name="reservation_cart"))
    created.append(
        sessions().create_index([("performanceId", 1), ("section.index", 1)], name="performance_sections", sparse=True)
    )
    created.append(carts().create_index([("state", 1), ("expiresAt", 1)], name="state_expires"))
    created.append(carts().create_index([("owner", 1), ("state", 1)], name="owner_state"))
    # the per-client held-seats limit counts live carts by client address
    created.append(
        carts().create_index([("client", 1), ("state", 1), ("expiresAt", 1)], name="client_live", sparse=True)
    )
    created.append(orders().create_index([("cartId", 1)], unique=True, name="cart_unique"))
    created.append(orders().create_index([("ref", 1)], unique=True, name="ref_unique"))
    created.append(orders().create_index([("email", 1)], name="email"))
    created.append(orders().create_index([("mail", 1), ("createdOn", 1)], name="mail_pending"))
    created.append(orders().create_index([("lines.sessionId", 1)], name="session"))
    created.append(orders().create_index([("lines.ticket", 1)], name="line_ticket"))
    # payments (services/payments.py, refunds.py): the webhook's lookup and reconcile's queries
    created.append(orders().create_index([("payment.intent", 1)], name="payment_intent"))
    created.append(orders().create_index([("state", 1), ("payment.until", 1)], name="state_payment_until"))
    # door check-in of refunded tickets (services/checkin.py): they are refused, also offline
    created.append(orders().create_index([("refundedLines.ticket", 1)], name="refunded_ticket", sparse=True))
    created.append(orders().create_index([("refundedLines.sessionId", 1)], name="refunded_session", sparse=True))
    for flag in ("settling", "refundDue", "noticeMail"):
        created.append(orders().create_index([(flag, 1)], name=flag, sparse=True))
    # door check-in (services/checkin.py): a scope's conflicts, newest first; one per offline scan
    created.append(
        checkin_conflicts().create_index([("scopeId", 1), ("reportedOn", -1), ("_id", -1)], name="scope_reported_id")
    )
    created.append(checkin_conflicts().create_index([("scanId", 1)], unique=True, name="scan_unique"))
    # promo codes (services/promos.py): redeemed by their text; a voucher batch exported by batch
    created.append(promo_codes().create_index([("code", 1)], unique=True, name="code_unique"))
    created.append(promo_codes().create_index([("batch", 1)], name="batch", sparse=True))
    return created
