"""Canceling a whole performance: every order in it is canceled and refunded, and every customer
mailed, by a worker task that can be killed at any point and run again.

1. ``start`` (staff): the session ``canceled`` (off sale at once) with ``cancelRun: {state:
   "running", total, by, startedOn, beatOn}``; holds in carts are released; the task is queued.
2. ``sales/cancels.py``'s ``cancel_session_orders`` (the Celery task of that name; also reconcile
   when the run stalled): each order that still has tickets of this session gets *those tickets*
   refunded (a partial refund when the order has tickets of other performances too: they stay
   valid), with the customer's
   notice in the same write (payments/refunds.py). The refund is conditional on the tickets still
   being in the order, so an order is refunded once however often the task runs; the run simply
   asks again which orders still have tickets here. Reservations not paid yet are called off.
3. ``cancelRun.state: "done"`` when no order is left.

Progress is read from the orders themselves (``progress``): the number left is a count on the
``lines.sessionId`` index, so it can never drift from what was done.
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from django.utils.translation import gettext as _

from booking.core import clock, faults, mongo, work_queue
from booking.core.domain import SEAT_OWNING_ORDER_STATES, SessionStatus
from booking.core.errors import InvalidRequest, NotFound
from booking.core.formatting import format_money
from booking.sales import carts, listings, outbox, reservations

logger = logging.getLogger("booking.session_cancel")

RUNNING = "running"
DONE = "done"
STALLED_AFTER = timedelta(minutes=5)  # no order finished for this long: reconcile queues it again
REASON = "Performance canceled"


def orders_left_query(session_id: ObjectId) -> dict:
    return {"lines.sessionId": session_id, "state": {"$in": list(SEAT_OWNING_ORDER_STATES)}}


MESSAGE_MAX = 1000
KEPT_MAX = 100_000  # cents: a fee per ticket beyond this is a typing mistake


def clean_terms(message: str, message_de: str, kept_per_ticket: int) -> dict:
    """Staff's words to the buyers (English, German) and the fee kept per ticket, as stored on
    ``cancelRun``; InvalidRequest with per-field messages."""
    message = str(message or "").strip()
    message_de = str(message_de or "").strip()
    errors = {}
    if len(message) > MESSAGE_MAX:
        errors["message"] = _("Please keep the message under %(max)d characters.") % {"max": MESSAGE_MAX}
    if len(message_de) > MESSAGE_MAX:
        errors["message_de"] = _("Please keep the message under %(max)d characters.") % {"max": MESSAGE_MAX}
    if (
        not isinstance(kept_per_ticket, int)
        or isinstance(kept_per_ticket, bool)
        or not 0 <= kept_per_ticket <= KEPT_MAX
    ):
        errors["kept_per_ticket"] = _("The fee kept per ticket must be between 0 and %(max)s.") % {
            "max": format_money(KEPT_MAX)
        }
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    return {"message": message, "messageDe": message_de, "keptPerTicket": kept_per_ticket}


def start(
    session_id: ObjectId, *, by: str = "", message: str = "", message_de: str = "", kept_per_ticket: int = 0
) -> dict:
    """Cancel the session now and leave its orders to the worker. Returns the session.
    ``message`` / ``message_de``: staff's words in the buyers' mail; ``kept_per_ticket``: the fee
    kept of each ticket's refund (cents)."""
    terms = clean_terms(message, message_de, kept_per_ticket)
    session = mongo.sessions().find_one(
        {"_id": session_id}, {"status": 1, "reservations": 1, "cancelRun": 1, "theaterId": 1}
    )
    if session is None:
        raise NotFound(_("No such session."))
    if session.get("status") == SessionStatus.CANCELED and session.get("cancelRun"):
        return session  # already canceled: the run goes on (or is done)
    now = clock.now()
    total = mongo.orders().count_documents(orders_left_query(session_id))
    mongo.sessions().update_one(
        {"_id": session_id, "cancelRun": {"$exists": False}},
        listings.due(
            {
                "$set": {
                    "status": SessionStatus.CANCELED,
                    "canceledOn": now,
                    "cancelRun": {
                        "state": RUNNING,
                        "total": total,
                        "by": by,
                        "startedOn": now,
                        "beatOn": now,
                        **terms,
                    },
                },
                "$inc": {"version": 1},
                "$push": {"webhookEvents": outbox.webhook_event(outbox.PERFORMANCE_CANCELED)},
            }
        ),
    )
    listings.refresh([session_id])  # off what's on at once
    faults.point("session_cancel.after_start")
    outbox.queue_webhook_events(outbox.SESSIONS, session)
    for hold in session.get("reservations", []):
        reservations.settle(session_id, hold["_id"])  # carts' holds: the seats go back
    show = mongo.sessions().find_one({"_id": session_id}, {"name": 1, "start": 1}) or {"_id": session_id}
    for hold in session.get("reservations", []):  # the buyers' carts drop them and say why
        carts.drop_canceled_session(hold["_id"], show)
    queue(session_id)
    return mongo.sessions().find_one({"_id": session_id}, {"status": 1, "cancelRun": 1, "name": 1})


def queue(session_id: ObjectId) -> bool:
    """Queue the refund of the session's orders (``run``); False when the broker is away."""
    try:
        work_queue.queue(work_queue.CANCEL_SESSION_ORDERS, str(session_id))
    except Exception as exc:  # noqa: BLE001 - the broker is away: reconcile queues it again
        logger.warning("could not queue the cancellation of session %s: %s", session_id, exc)
        return False
    return True


@dataclass(frozen=True)
class Progress:
    state: str  # "running" or "done"
    total: int
    left: int
    by: str
    started: datetime | None

    @property
    def done(self) -> int:
        return max(self.total - self.left, 0)

    @property
    def percent(self) -> int:
        return 100 if not self.total else round(100 * self.done / self.total)


def progress(session: Mapping[str, Any]) -> Progress | None:  # a Session, or its cancelRun
    """How far the cancellation of this session is (None: it was not canceled this way)."""
    run_info = session.get("cancelRun")
    if not run_info:
        return None
    left = 0 if run_info["state"] == DONE else mongo.orders().count_documents(orders_left_query(session["_id"]))
    total = max(run_info.get("total", 0), left)
    return Progress(run_info["state"], total, left, run_info.get("by", ""), run_info.get("startedOn"))


def resume_stalled(now: datetime | None = None) -> int:
    """Reconcile: runs with no order finished for a while (the worker died, Redis was away) are
    queued again."""
    now = now or clock.now()
    queued = 0
    for session in mongo.sessions().find({"cancelRun.state": RUNNING}, {"cancelRun": 1}).limit(100):
        if session["cancelRun"].get("beatOn", now) <= now - STALLED_AFTER and queue(session["_id"]):
            queued += 1
    return queued
