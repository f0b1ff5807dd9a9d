"""The mails an order owes its buyer, and the events it owes the theater's other systems, as the
sale writes them.

A change to an order (an exchange, a cancel, a lapsed reservation...) pushes its notice onto the
order in the same conditional update that makes the change, so a crash cannot make the change
without the mail or the mail without the change; the worker sends each pending notice once
(booking/notifications/). This module writes and queues; it never renders or sends, so the
domains that change orders need not import the mail code.

Webhook events follow the same rule: the write that places, pays, changes, cancels or refunds an
order, checks in a ticket or cancels a performance pushes ``{_id, type, at}`` onto the document's
``webhookEvents`` (``webhook_event``); ``queue_webhook_events`` asks the worker to hand them to
the theater's endpoints (booking/webhooks/dispatch.py), after the answer, unless no endpoint is
switched on anywhere. A crash between the two, or a skipped queue, leaves the event on the
document, where reconcile finds it.
"""

import logging
import secrets
from collections.abc import Mapping
from typing import Any

from bson import ObjectId

from booking.core import clock, publish, work_queue
from booking.core.domain import ChangeNotice, MailState, WebhookEventEntry
from booking.webhooks import selectors as webhook_selectors

logger = logging.getLogger("booking.outbox")

# What a change notice tells of.
EXCHANGE = "exchange"
EXCHANGE_PAYMENT = "exchange_payment"  # the customer is asked to pay a dearer exchange's difference
CANCEL = "cancel"
SESSION_CANCELED = "session_canceled"
RESERVATION = "reservation"  # "reserve now, pay at the box office": what, how much, by when, where
RESERVATION_LAPSED = "reservation_lapsed"  # ... nobody paid by the deadline: the seats went back
INVOICE = "invoice"  # an invoice from the counter, its PDF attached
TRANSFER = "transfer"  # the buyer handed a ticket to someone: told to the buyer
TRANSFER_TICKET = "transfer_ticket"  # ... and the new holder gets their ticket (``to``, ``language``)
# A notice's state.
PENDING = MailState.PENDING
SENT = MailState.SENT
FAILED = MailState.FAILED
# Webhook event types (docs/api.md, "Webhooks").
ORDER_PLACED = "order.placed"
ORDER_PAID = "order.paid"
ORDER_CHANGED = "order.changed"
ORDER_CANCELED = "order.canceled"
ORDER_REFUNDED = "order.refunded"
TICKET_CHECKED_IN = "ticket.checked_in"
PERFORMANCE_CANCELED = "performance.canceled"
WEBHOOK_EVENT_TYPES = (
    ORDER_PLACED,
    ORDER_PAID,
    ORDER_CHANGED,
    ORDER_CANCELED,
    ORDER_REFUNDED,
    TICKET_CHECKED_IN,
    PERFORMANCE_CANCELED,
)
# Which document an event was written on, as the dispatch task is told.
ORDERS = "orders"
SESSIONS = "sessions"
# The confirmation's publish waits for a buyer: one reconnect at once, no more.
CONFIRMATION_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def new_notice(
    kind: str, ref: str = "", refunds: list[str] | None = None, *, to: str = "", language: str = ""
) -> ChangeNotice:
    """A notice to push onto the order in the write that makes the change. ``ref``: the exchange,
    transfer or (first) refund it tells of; ``refunds``: every refund of that change; ``to`` and
    ``language``: a mail to someone else than the buyer (a ticket's new holder)."""
    notice: ChangeNotice = {
        "_id": f"n{secrets.token_hex(6)}",
        "kind": kind,
        "ref": ref,
        "state": PENDING,
        "createdOn": clock.now(),
    }
    if refunds:
        notice["refunds"] = refunds
    if to:
        notice["to"] = to
        notice["language"] = language
    return notice


def reservation_made() -> ChangeNotice:
    """The notice stored with a new box-office order."""
    return new_notice(RESERVATION)


def reservation_lapsed() -> ChangeNotice:
    """The notice pushed in the write that expires an unpaid box-office order."""
    return new_notice(RESERVATION_LAPSED)


def webhook_event(
    event_type: str, *, refund: str = "", exchange: str = "", transfer: str = "", ticket: str = ""
) -> WebhookEventEntry:
    """An event to push onto ``webhookEvents`` in the write that makes the change; the others: what
    the payload needs beyond the document (the ticket checked in, the refund made), when given."""
    event: WebhookEventEntry = {"_id": f"evt_{secrets.token_hex(12)}", "type": event_type, "at": clock.now()}
    if refund:
        event["refund"] = refund
    if exchange:
        event["exchange"] = exchange
    if transfer:
        event["transfer"] = transfer
    if ticket:
        event["ticket"] = ticket
    return event


def theaters_of(document: Mapping[str, Any], collection: str) -> list[ObjectId]:
    """The theaters an order's or a session's events concern (an order may span several)."""
    if collection == SESSIONS:
        return [document["theaterId"]] if document.get("theaterId") else []
    return list(dict.fromkeys(s["theaterId"] for s in document.get("sessions", []) if s.get("theaterId")))


def queue_webhook_events(collection: str, document: Mapping[str, Any]) -> None:
    """Ask the worker to hand the document's events to the endpoints, after the answer (a broker
    that is away: reconcile hands them over later). When none of its theaters has an endpoint
    switched on there is nobody to tell: no task is queued, and reconcile clears the events in bulk."""
    if webhook_selectors.theaters_listening().intersection(theaters_of(document, collection)):
        publish.soon(_queue_dispatch, collection, document["_id"])


def _queue_dispatch(collection: str, document_id: ObjectId) -> None:
    try:
        work_queue.queue(work_queue.DISPATCH_WEBHOOK_EVENTS, collection, str(document_id))
    except Exception as exc:  # noqa: BLE001 - any broker failure: reconcile dispatches them
        logger.warning("could not queue the webhook events of %s %s (%s); reconcile will", collection, document_id, exc)


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
