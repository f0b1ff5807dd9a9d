"""Canceling sold orders, with the money back: one order (staff, the buyer's own cancel), or every
order of a canceled performance (the worker's ``cancel_session_orders`` task, resumable: see
``sales/session_cancel.py`` for the run's steps). Which way depends on how the order was paid: a
provider's payment is refunded (payments/refunds.py), an unpaid reservation is called off
(payments/flow.py), money taken at the house is recorded back (sales/orders.py).
"""

import logging

from bson import ObjectId
from django.utils.translation import gettext

from booking.core import clock, faults, mongo
from booking.core.domain import Order, OrderState, SessionStatus
from booking.core.errors import BookingError, Conflict, NotFound
from booking.payments import flow as payments
from booking.payments import refunds
from booking.sales import exchanges, outbox, session_cancel
from booking.sales import orders as order_service

logger = logging.getLogger("booking.session_cancel")


def cancel_order(order_id: ObjectId, *, by: str = "", reason: str = "", confirmed: str | None = None) -> Order:
    """Cancel the order: its seats free again, its money back through its payments (or its
    reservation ended), the customer told. ``confirmed``: the ``cancel_fingerprint`` of the order
    staff were shown; the order must still be the same."""
    order = mongo.orders().find_one({"_id": order_id})
    if order is None:
        raise NotFound(gettext("No such order."))
    if confirmed is not None:
        order_service.require_cancelable(order)
        if order_service.cancel_fingerprint(order) != confirmed:
            raise Conflict(
                gettext(
                    "The order changed since the cancellation was shown; look at what it would do now "
                    "and confirm again."
                )
            )
    unpaid = (OrderState.PENDING_PAYMENT, OrderState.EXPIRED)
    if order.get("paidWith") or order["state"] in unpaid:
        # Paid through a provider: the money goes back (payments/refunds.py); not paid yet: the
        # reservation ends (payments/flow.py).
        if order["state"] in unpaid:
            return payments.cancel_unpaid(order_id, by=by, reason=reason)
        return refunds.refund_tickets(order_id, reason=reason, by=by)
    return order_service.cancel_house_paid_order(order, by=by, reason=reason)


def cancel_tickets(
    order_id: ObjectId, *, tickets: list[str] | None, by: str, reason: str, keep: int, confirmed: str | None = None
) -> Order:
    """Cancel some (``tickets``) or all (None) tickets of a paid order with their money back less
    ``keep`` (the theater's fee): the order first, then the seats free again at once, then the
    refund through the provider (payments/refunds.py), the buyer told in the same write."""
    return refunds.refund_tickets(order_id, tickets=tickets, reason=reason, by=by, keep=keep, fingerprint=confirmed)


def cancel_session_orders(session_id: ObjectId) -> dict:
    """Refund this session's tickets of every order still holding some; then the run is done.
    Safe to run any number of times, at once or after a crash."""
    session = mongo.sessions().find_one({"_id": session_id}, {"status": 1, "cancelRun": 1})
    if session is None or session.get("status") != SessionStatus.CANCELED or not session.get("cancelRun"):
        return {"refunded": 0, "skipped": 0, "state": "not canceled"}
    by = session["cancelRun"].get("by", "")
    kept_per_ticket = session["cancelRun"].get("keptPerTicket", 0)
    exchanges.stop_into(session_id)  # before the scan: an exchange that switched first is found by it
    refunded = skipped = 0
    left_for_later: list[ObjectId] = []  # one try per run: such an order waits for the next run
    while True:
        query = {**session_cancel.orders_left_query(session_id), "_id": {"$nin": left_for_later}}
        batch = list(mongo.orders().find(query, {"lines": 1, "paidWith": 1}).limit(100))
        if not batch:
            break
        for order in batch:
            mine = [line["ticket"] for line in order["lines"] if line["sessionId"] == session_id]
            try:
                if order.get("paidWith"):
                    refunds.refund_tickets(
                        order["_id"],
                        tickets=mine,
                        reason=session_cancel.REASON,
                        by=by,
                        notice=outbox.SESSION_CANCELED,
                        keep=refunds.kept_amount([x for x in order["lines"] if x["ticket"] in mine], kept_per_ticket),
                    )
                else:  # from before payments: nothing to refund, the order is canceled
                    cancel_order(order["_id"], by=by, reason=session_cancel.REASON)
                refunded += 1
            except BookingError as exc:  # e.g. an exchange under way: the next run takes it
                skipped += 1
                left_for_later.append(order["_id"])
                logger.warning("session %s: order %s not canceled yet: %s", session_id, order["_id"], exc.message)
            faults.point("session_cancel.after_order")
            mongo.sessions().update_one({"_id": session_id}, {"$set": {"cancelRun.beatOn": clock.now()}})
    for order in mongo.orders().find({"state": OrderState.PENDING_PAYMENT, "lines.sessionId": session_id}, {"_id": 1}):
        try:
            payments.cancel_unpaid(order["_id"], by=by, reason=session_cancel.REASON, notice=outbox.SESSION_CANCELED)
        except BookingError as exc:
            skipped += 1
            logger.warning("session %s: reservation %s not called off yet: %s", session_id, order["_id"], exc.message)
    if not skipped and not mongo.orders().count_documents(session_cancel.orders_left_query(session_id)):
        mongo.sessions().update_one(
            {"_id": session_id, "cancelRun.state": session_cancel.RUNNING},
            {"$set": {"cancelRun.state": session_cancel.DONE, "cancelRun.doneOn": clock.now()}},
        )
    logger.info("session %s canceled: %d orders refunded, %d left for later", session_id, refunded, skipped)
    return {
        "refunded": refunded,
        "skipped": skipped,
        "state": session_cancel.DONE if not skipped else session_cancel.RUNNING,
    }
