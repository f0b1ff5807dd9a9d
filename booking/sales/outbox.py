"""The mails an order owes its buyer, as the sale writes them.

A change to an order (an exchange, a cancel, a lapsed reservation...) pushes its notice onto the
order in the same conditional update that makes the change, so a crash cannot make the change
without the mail or the mail without the change; the worker sends each pending notice once
(booking/notifications/). This module writes and queues; it never renders or sends, so the
domains that change orders need not import the mail code.
"""

import logging
import secrets
from collections.abc import Mapping
from typing import Any

from bson import ObjectId

from booking.core import clock, publish, work_queue

logger = logging.getLogger("booking.outbox")

# What a change notice tells of.
EXCHANGE = "exchange"
EXCHANGE_PAYMENT = "exchange_payment"  # the customer is asked to pay a dearer exchange's difference
CANCEL = "cancel"
SESSION_CANCELED = "session_canceled"
RESERVATION = "reservation"  # "reserve now, pay at the box office": what, how much, by when, where
RESERVATION_LAPSED = "reservation_lapsed"  # ... nobody paid by the deadline: the seats went back
# A notice's state.
PENDING = "pending"
SENT = "sent"
FAILED = "failed"
# The confirmation's publish waits for a buyer: one reconnect at once, no more.
CONFIRMATION_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def new_notice(kind: str, ref: str = "", refunds: list[str] | None = None) -> dict:
    """A notice to push onto the order in the write that makes the change. ``ref``: the exchange
    or (first) refund it tells of; ``refunds``: every refund of that change."""
    notice = {"_id": f"n{secrets.token_hex(6)}", "kind": kind, "ref": ref, "state": PENDING, "createdOn": clock.now()}
    if refunds:
        notice["refunds"] = refunds
    return notice


def reservation_made() -> dict:
    """The notice stored with a new box-office order."""
    return new_notice(RESERVATION)


def reservation_lapsed() -> dict:
    """The notice pushed in the write that expires an unpaid box-office order."""
    return new_notice(RESERVATION_LAPSED)


def queue_change_notices(order_id: ObjectId) -> bool:
    """Queue the order's pending notices for the worker; False when the broker is away (reconcile
    queues them later)."""
    return _queue(work_queue.SEND_CHANGE_NOTICES, order_id, "change notice")


def queue_reservation_notice(order: Mapping[str, Any]) -> None:  # an Order, or one just stored
    """Queue the order's reservation notice if it is still to be sent (a second submit queues
    again: harmless, the notice is sent once; a broker that is away: reconcile queues it)."""
    if any(n["state"] == PENDING for n in order.get("changeNotices", [])):
        publish.soon(queue_change_notices, order["_id"])  # after the answer: the buyer does not wait


def queue_confirmation(order_id: ObjectId) -> bool:
    """Queue the confirmation e-mail. Returns False (and logs) when the broker is unreachable."""
    return _queue(work_queue.SEND_ORDER_CONFIRMATION, order_id, "confirmation mail", retry=CONFIRMATION_RETRY)


def queue_payment_notice(order_id: ObjectId) -> bool:
    """Queue the e-mail telling the buyer their money went back (reconcile re-queues it)."""
    return _queue(work_queue.SEND_PAYMENT_NOTICE, order_id, "refund notice")


def _queue(task_name: str, order_id: ObjectId, what: str, *, retry: dict | None = None) -> bool:
    try:
        work_queue.queue(task_name, str(order_id), retry_policy=retry)
    except Exception as exc:  # noqa: BLE001 - any broker failure: reconcile queues it again
        logger.warning("could not queue %s for order %s (%s); reconcile will retry", what, order_id, exc)
        return False
    return True
