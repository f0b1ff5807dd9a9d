"""Reconcile: finish or undo whatever a crash left half done (the worker runs it every few minutes).

- carts the checkout from before payments left in checking_out are finished as it would have
  (``finish_checkouts_begun_before_payments``; ``manage.py backfill_orders`` runs it too);
- stale active carts are expired;
- holds in sessions whose cart is missing or no longer live are released, and seats a live cart's
  hold has but the cart does not know about (a crash between the session write and the cart
  write) are released; the sessions' reservations are scanned, not only the carts;
- cart items whose seats the session no longer holds for the cart are dropped from the cart;
- subscription sales a crash left between their performances' writes are finished (their cart
  was stored) or undone (sales/subscriptions.py);
- canceled or failed orders whose seats were not yet given back are finished;
- confirmation mails still pending a few minutes after checkout (Redis was down, or the task was
  lost with its worker) are queued again;
- failed confirmation mails whose next round is due (``mailRetryAt``) are made pending and queued;
- what's on entries behind their session (a crash after the session write) are written again;
- webhook events no dispatch took are dispatched, and pending deliveries whose task was lost are
  queued again (booking/webhooks/);
- numbers a gap-free series gave (receipts) that a crash kept off their document are written;
- waiting-list offers a crash left half made are finished or undone, and their mails queued.
Holds younger than the grace period are left alone: their cart write may still be under way.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext_noop

from booking.core import clock, faults, mongo
from booking.core.domain import HOLDING_STATES, SEAT_OWNING_ORDER_STATES, Cart, CartState, MailState, Order, OrderState
from booking.notifications import change_notices, payment_notices, waiting_list_mail
from booking.notifications import confirmations as notifications
from booking.payments import credit_notes, invoices, number_series, voucher_purchases, voucher_sales
from booking.payments import flow as payments
from booking.reports import marks, tills
from booking.sales import (
    cart_expiry,
    checkout,
    exchanges,
    listings,
    orders,
    outbox,
    performance_details,
    promos,
    reservations,
    session_cancel,
    subscriptions,
    waiting_list,
)
from booking.sales import carts as cart_service
from booking.venues.seat_grid import SOLD, parse_seat_key
from booking.webhooks import deliveries as webhook_deliveries
from booking.webhooks import dispatch as webhook_dispatch

logger = logging.getLogger("booking.reconcile")

# The cart state of the checkout from before payments (the buyer submitted; the order not yet
# stored or its seats not yet sold): no cart enters it any more, CartState has it no longer.
BEGUN_BEFORE_PAYMENTS = "checking_out"
# Stored on a failed order in English (the source language) and translated when shown.
HOLD_ENDED_BEFORE_PAYMENT = gettext_noop("Your hold on some seats ended before payment completed; nothing was charged.")


@dataclass
class ReconcileReport:
    checkouts_finished: int = 0
    carts_expired: int = 0
    holds_released: int = 0
    seats_released: int = 0
    cart_items_dropped: int = 0
    orders_released: int = 0
    mails_requeued: int = 0
    mails_given_up: int = 0
    mails_retried: int = 0
    payments_checked: int = 0  # orders whose payment reconcile asked the provider about
    payments_settled: int = 0
    payments_expired: int = 0
    exchanges_finished: int = 0  # staff exchanges a crash left open (sales/exchanges.py)
    sections_updated: int = 0  # a performance's details change a crash left half written (sales/performance_details.py)
    listings_written: int = 0  # what's on entries a crash left behind their session (listings.py)
    promo_uses_returned: int = 0  # promo-code uses a crash left half given back (promos.py)
    webhook_events_dispatched: int = 0  # orders and sessions whose events no dispatch took (webhooks/)
    webhook_deliveries_requeued: int = 0  # pending deliveries whose task was lost
    voucher_redemptions_settled: int = 0  # gift voucher debits finished or given back (payments/voucher_sales.py)
    numbers_written: int = 0  # receipt numbers a crash left in their series' log (number_series.py)
    waiting_list_offers_finished: int = 0  # offers a crash left half made (sales/waiting_list.py)
    invoices_numbered: int = 0  # invoices a crash left without their number (invoices.py)
    credit_notes_issued: int = 0  # orders whose credit notes a crash left unwritten (credit_notes.py)
    till_closings_finished: int = 0  # till closings a crash left half made (reports/tills.py)
    subscription_sales_finished: int = 0  # subscription sales a crash left holding (sales/subscriptions.py)
    subscription_sales_undone: int = 0
    vouchers_bought_activated: int = 0  # online voucher sales paid but not yet active (voucher_purchases.py)
    voucher_purchases_canceled: int = 0  # ... never paid: the PaymentIntent canceled, the voucher never spendable

    def __str__(self):
        return ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in self.__dict__.items())


def reconcile(now: datetime | None = None, grace: timedelta | None = None) -> ReconcileReport:
    now = now or clock.now()
    grace = timedelta(seconds=settings.BOOKING_RECONCILE_GRACE_SECONDS) if grace is None else grace
    report = ReconcileReport()
    _finish_stuck_checkouts(now, report)
    expired = cart_expiry.expire_stale_carts(now)
    report.carts_expired += expired.carts_expired
    report.seats_released += expired.seats_released
    # before the dead holds: a sale's own undo gives back exactly its seats and ends its intent
    open_sales = subscriptions.finish_open_sales(now - grace)
    report.subscription_sales_finished += open_sales.finished
    report.subscription_sales_undone += open_sales.undone
    report.seats_released += open_sales.seats_released
    paid = payments.reconcile_payments(now)
    report.payments_checked = paid.checked
    # settled by the cart expiry (asked first: a payment that went through is not expired) or here
    report.payments_settled = expired.payments_settled + paid.settled + paid.finished
    report.payments_expired = paid.expired
    _release_dead_holds(now, now - grace, report)
    _drop_lost_cart_items(now - grace, report)
    # the release_pending index (partial on seatsReleased: false) holds just these
    for order in mongo.orders().find(
        {"state": {"$in": [OrderState.CANCELED, OrderState.FAILED]}, "seatsReleased": False}
    ):
        report.seats_released += orders.release_order_seats(order)
        report.orders_released += 1
    report.voucher_redemptions_settled += voucher_sales.finish_redemptions(now, grace)
    bought = voucher_purchases.reconcile_purchases(now)
    report.vouchers_bought_activated += bought["activated"]
    report.voucher_purchases_canceled += bought["canceled"]
    report.exchanges_finished += exchanges.finish_open(now, grace)
    change_notices.requeue_pending(now)
    payment_notices.requeue_pending(now)
    session_cancel.resume_stalled(now)
    report.sections_updated += performance_details.finish_details()
    report.listings_written += listings.refresh_due()
    report.promo_uses_returned += promos.finish_give_backs()
    report.webhook_events_dispatched += webhook_dispatch.dispatch_pending(now, grace)
    report.webhook_deliveries_requeued += webhook_deliveries.requeue_due(now, grace)
    report.invoices_numbered += invoices.assign_missing()
    report.credit_notes_issued += credit_notes.issue_due()
    report.till_closings_finished += tills.finish_all()
    report.numbers_written += number_series.finish_all()  # after the payments: their numbers first
    report.waiting_list_offers_finished += waiting_list.finish_offers(older_than=now - grace)
    waiting_list_mail.requeue_pending(now)
    _requeue_pending_mails(now, report)
    _retry_failed_mails(now, report)
    logger.info("reconcile: %s", report)
    return report


def _finish_stuck_checkouts(now: datetime, report: ReconcileReport) -> None:
    stuck_before = now - timedelta(seconds=settings.BOOKING_CHECKOUT_STUCK_SECONDS)
    report.checkouts_finished += finish_checkouts_begun_before_payments(begun_before=stuck_before)


def finish_checkouts_begun_before_payments(*, begun_before: datetime | None = None) -> int:
    """Finish every cart still in ``checking_out`` (``begun_before``: only those whose checkout
    began by then; reconcile leaves younger ones to a node of the old version still finishing
    them). Safe to repeat and to run beside such a node: every step is conditional. Returns how
    many carts it tried, finished or failed."""
    query: dict = {"state": BEGUN_BEFORE_PAYMENTS}
    if begun_before is not None:
        query["checkoutOn"] = {"$lte": begun_before}
    tried = 0
    for cart in mongo.carts().find(query):
        order = finish_begun_checkout(cart)
        if order["state"] == OrderState.FAILED:
            logger.warning("checkout %s begun before payments failed: %s", cart["_id"], order.get("failure"))
        tried += 1
    return tried


def finish_begun_checkout(cart: Cart) -> Order:
    """The steps a checkout from before payments had left, each safe to repeat: its order stored
    paid under the cart's ``orderRef``, per session the held seats sold (the filter proves the hold
    is still the cart's), the cart done and the confirmation mailed once. Returns the order."""
    order = checkout.store_order(cart, make=checkout.new_order)
    if order["state"] == OrderState.FAILED:
        _end_cart(cart, CartState.CANCELED, order)
        return order
    by_session: dict[ObjectId, set[str]] = {}
    for item in cart["items"]:
        by_session.setdefault(item["sessionId"], set()).add(item["key"])
    try:
        for session_id, keys in by_session.items():
            _sell(session_id, cart["_id"], keys, order)
    except reservations.HoldLost:
        order = _fail_order(order, HOLD_ENDED_BEFORE_PAYMENT)
        orders.release_order_seats(order)  # seats already sold in another session go back
        reservations.release_all(cart["_id"], session_ids=cart_service.session_ids_of(cart))
        _end_cart(cart, CartState.CANCELED, order)
        promos.release_for_cart(cart["_id"], owner=cart["owner"])
        return order
    if _end_cart(cart, CartState.DONE, order):
        logger.info("checkout begun before payments finished: cart=%s order=%s", cart["_id"], order["ref"])
        outbox.queue_confirmation(order["_id"])  # only now that the order is stored and sold
    return order


def _sell(session_id: ObjectId, cart_id: ObjectId, keys: set[str], order: Order) -> None:
    settled = reservations.settle(session_id, cart_id, sell=keys)
    if settled.found:
        return
    # No hold left: either an earlier run sold the seats (a repeat after a crash), or the hold is
    # gone. The seats are the order's iff they are sold and no other paid order has them.
    session = mongo.sessions().find_one({"_id": session_id}, {"seats": 1})
    sold = session is not None and all(session["seats"][r][c] == SOLD for r, c in (parse_seat_key(k) for k in keys))
    if sold:
        others = mongo.orders().count_documents(
            {
                "_id": {"$ne": order["_id"]},
                "state": {"$in": list(SEAT_OWNING_ORDER_STATES)},
                "lines": {"$elemMatch": {"sessionId": session_id, "key": {"$in": sorted(keys)}}},
            }
        )
        if not others:
            return
    raise reservations.HoldLost(sorted(keys))


def _fail_order(order: Order, reason: str) -> Order:
    mongo.orders().update_one(
        {"_id": order["_id"], "ref": order["ref"], "state": OrderState.PAID},
        {
            "$set": {"state": OrderState.FAILED, "failure": reason, "seatsReleased": False},
            "$push": marks.push(marks.sessions_of(order)),
        },
    )
    return {**order, "state": OrderState.FAILED, "failure": reason, "seatsReleased": False}


def _end_cart(cart: Cart, state: CartState, order: Order) -> bool:
    """Returns True for the one call that moved the cart (so follow-ups happen once)."""
    result = mongo.carts().update_one(
        {"_id": cart["_id"], "owner": cart["owner"], "state": BEGUN_BEFORE_PAYMENTS},
        {"$set": {"state": state, "orderId": order["_id"], "endedOn": clock.now()}},
    )
    return bool(result.modified_count)


# Lower than every cart id: ``{"reservations._id": {"$gte": this}}`` is a range on the
# reservation_cart index that holds exactly the sessions with at least one hold.
LOWEST_OBJECT_ID = ObjectId(b"\x00" * 12)


def _release_dead_holds(now: datetime, older_than: datetime, report: ReconcileReport) -> None:
    # Only the sessions holding seats, through the index (not a read of every 40-60 KB session),
    # and of those only the holds.
    with_holds = {"reservations._id": {"$gte": LOWEST_OBJECT_ID}}
    for session in mongo.sessions().find(with_holds, {"reservations": 1}):
        holds = session["reservations"]
        carts = {
            c["_id"]: c
            for c in mongo.carts().find(
                {"_id": {"$in": [h["_id"] for h in holds]}}, {"state": 1, "expiresAt": 1, "items": 1}
            )
        }
        for hold in holds:
            cart = carts.get(hold["_id"])
            # a checkout begun before payments keeps its seats until it is finished (above)
            if cart is not None and cart["state"] in (*HOLDING_STATES, BEGUN_BEFORE_PAYMENTS):
                known = {i["key"] for i in cart["items"] if i["sessionId"] == session["_id"]}
                if set(hold["seats"]) <= known and hold["seats"]:
                    continue
                settled = reservations.settle(session["_id"], hold["_id"], keep=known, older_than=older_than)
            else:
                settled = reservations.settle(session["_id"], hold["_id"], older_than=older_than)
            if settled.found:
                report.holds_released += 1
                report.seats_released += settled.freed


def _drop_lost_cart_items(older_than: datetime, report: ReconcileReport) -> None:
    """An active cart may list a seat whose hold is gone (a crash between release's two writes)."""
    for cart in mongo.carts().find(
        {"state": CartState.ACTIVE, "modifiedOn": {"$lt": older_than}}, {"items": 1, "owner": 1}
    ):
        session_ids = list({i["sessionId"] for i in cart["items"]})
        if not session_ids:
            continue
        held = set()
        for s in mongo.sessions().find(
            {"_id": {"$in": session_ids}}, {"reservations": {"$elemMatch": {"_id": cart["_id"]}}}
        ):
            for res in s.get("reservations", []):
                held |= {(s["_id"], k) for k in res["seats"]}
        lost = [i for i in cart["items"] if (i["sessionId"], i["key"]) not in held]
        for item in lost:
            faults.point("reconcile.before_drop_item")
            # As read: the item still listed (a second reconcile that dropped it first would
            # otherwise have its price taken off twice) and the cart unchanged by its buyer since.
            still_listed = {"$elemMatch": {"sessionId": item["sessionId"], "key": item["key"]}}
            result = mongo.carts().update_one(
                {
                    "_id": cart["_id"],
                    "owner": cart["owner"],
                    "state": CartState.ACTIVE,
                    "modifiedOn": {"$lt": older_than},
                    "items": still_listed,
                },
                {
                    "$pull": {"items": {"sessionId": item["sessionId"], "key": item["key"]}},
                    "$inc": {"total": -item["price"]},
                },
            )
            report.cart_items_dropped += result.modified_count


def _requeue_pending_mails(now: datetime, report: ReconcileReport) -> None:
    """Queue again a confirmation mail nobody is working on: never tried (queuing failed while
    Redis was down) or last tried so long ago that its retries must have been lost with a worker."""
    wait = timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS)
    lost_after = wait + timedelta(seconds=settings.BOOKING_MAIL_RETRY_MAX_SECONDS)
    due = {
        "mail": MailState.PENDING,
        "createdOn": {"$lte": now - wait},
        "$or": [{"mailTriedOn": {"$exists": False}}, {"mailTriedOn": {"$lte": now - lost_after}}],
    }
    # No _id tie-breaker: the mail_pending index serves this order, and which of two mails of the
    # same millisecond is queued first changes nothing (every due one is queued, run after run).
    for order in mongo.orders().find(due, {"mailQueued": 1}).sort("createdOn", 1).limit(500):
        queued = order.get("mailQueued", 0)
        if queued >= settings.BOOKING_MAIL_MAX_REQUEUES:
            reason = f"queued {queued} times without being sent"
            if notifications.give_up(order["_id"], reason, now=now):
                report.mails_given_up += 1
            continue
        # Counted before queuing, so a fast worker's attempt (mailTriedOn) is never older than this.
        mongo.orders().update_one(
            {"_id": order["_id"], "mail": MailState.PENDING},
            {"$set": {"mailTriedOn": now}, "$inc": {"mailQueued": 1}},
        )
        if not outbox.queue_confirmation(order["_id"]):
            mongo.orders().update_one(
                {"_id": order["_id"], "mail": MailState.PENDING},
                {"$unset": {"mailTriedOn": ""}, "$inc": {"mailQueued": -1}},
            )
            break  # the broker is down: the next run tries again
        report.mails_requeued += 1


def _retry_failed_mails(now: datetime, report: ReconcileReport) -> None:
    """Start the next round of a failed mail whose time has come (give_up set ``mailRetryAt``;
    mails refused for good or over the cap have none). Reopening is conditional on the time read,
    so of two reconciles racing one queues it; the task's claim still lets only one worker send."""
    due = {"mail": MailState.FAILED, "state": OrderState.PAID, "mailRetryAt": {"$lte": now}}
    for order in mongo.orders().find(due, {"mailRetryAt": 1}).sort([("mailRetryAt", 1), ("_id", 1)]).limit(500):
        if not notifications.reopen_failed(order["_id"], order["mailRetryAt"], now):
            continue  # another reconcile took it
        if not notifications.queue_reopened(order["_id"]):
            break  # the broker is down: the mail, pending now, is re-queued once it is back
        report.mails_retried += 1


def finish_interrupted_expiries(now: datetime | None = None, window: timedelta = timedelta(minutes=15)):
    """Release the seats of carts that were expired but whose holds are still in a session (a
    worker killed between expire_cart's two writes). The expiry task runs this after every batch,
    so the seats come back within one run instead of waiting for reconcile's grace period; an
    expired cart never takes seats again, so its holds can go at once. Two indexed queries:
    carts whose hold ended within ``window`` (older ones are left to reconcile), and the sessions
    that still hold seats for them. Returns a report (holds_released, seats_released)."""
    now = now or clock.now()
    report = ReconcileReport()
    recent = [
        c["_id"]
        for c in mongo.carts().find(
            {"state": CartState.EXPIRED, "expiresAt": {"$gte": now - window, "$lte": now}}, {"_id": 1}
        )
    ]
    for start in range(0, len(recent), 1000):
        chunk = set(recent[start : start + 1000])
        for session in mongo.sessions().find({"reservations._id": {"$in": list(chunk)}}, {"reservations._id": 1}):
            for hold in session.get("reservations", []):
                if hold["_id"] not in chunk:
                    continue
                settled = reservations.settle(session["_id"], hold["_id"])
                if settled.found:
                    report.holds_released += 1
                    report.seats_released += settled.freed
    if report.holds_released:
        logger.warning("finished %d interrupted cart expiries: %s", report.holds_released, report)
    return report
