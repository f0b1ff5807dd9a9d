"""Paying for an order: from checkout to paid, expired or canceled. No seat is ever sold without
its money, and no money is kept without its seats.

Order states: ``pending_payment -> paid | expired | canceled``; a paid order may become
``refunded`` or ``partially_refunded`` (payments/refunds.py). An expired order can still become
paid when its payment arrives late (below).

1. **Start** (``start``, the checkout view's): cart ``active -> paying`` (only while its hold
   lasts), which extends the hold once to the payment window (BOOKING_PAYMENT_WINDOW_SECONDS,
   never past BOOKING_PAYMENT_CAP_SECONDS from the first hold) or, for "pay at the box office", to
   the session's box-office deadline; then the order is stored ``pending_payment`` (unique
   cartId: a second submit finds it); then, for a card, the provider's payment is made (nothing
   charged yet) and its id written to the order. While paying, the seats stay *held* by the cart.
2. **Pay** (``pay_with_card``): the order's current attempt is claimed (``open -> confirming``,
   conditional, so a double submit confirms once), then the provider charges the card. Declined:
   the attempt is ``failed`` and the buyer may try again, which is a new attempt with a new
   payment (the old one is canceled at the provider first). 3-D Secure: ``action``, which the
   browser finishes with Stripe.js.
3. **Settle** (``settle``; from the webhook, the return page, reconcile or staff at the box office,
   whichever comes first; all idempotent): the order ``pending_payment|expired -> paid``
   (conditional; ``settling: true``), then per session its seats ``held -> sold`` through the
   cart's hold (the filter proves the hold is still the cart's), or, when the hold has ended,
   ``free -> sold`` in one conditional update requiring every seat still free; then the receipt
   number, the cart ``done``, and the order's ``settling`` cleared with its confirmation mail
   pending. If anyone else has a seat, the order becomes ``refunded``: seats it sold elsewhere go
   back, the money is refunded automatically, the buyer is told on the page and by e-mail.
   A payment for an order that is already paid by another payment (two payments for one order)
   is refunded at once: never paid twice.
4. **Expire**: a paying cart whose window ended is expired like any cart (worker), its seats
   released, then the order ``pending_payment -> expired``. Its payment stays open at the
   provider for BOOKING_PAYMENT_LATE_SECONDS more (a buyer still on a 3-D Secure screen); then
   reconcile cancels it there (a payment that succeeded meanwhile is settled instead).
5. **Reconcile** (``reconcile_payments``): asks the provider about every order pending past its
   window and every expired order whose payment is still open; finishes orders left settling
   by a crash; releases holds of canceled orders; retries refunds (payments/refunds.py).

Every write is followed by a fault point (booking/core/faults.py) and the crash tests in
booking/tests/payments/test_payment_crashes.py kill the flow at each one and let reconcile finish.
"""

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext, ngettext
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from booking import payments
from booking.core import clock, faults, mongo
from booking.core.domain import (
    SEAT_OWNING_ORDER_STATES,
    Cart,
    CartState,
    Customer,
    MailState,
    Order,
    OrderState,
    Session,
    SessionStatus,
    within_quota,
)
from booking.core.errors import CartExpired, Conflict, InvalidRequest, NotFound
from booking.core.localized import order_state_label
from booking.payments import base, credit_notes, donations, money, receipts, refunds, voucher_purchases, vouchers
from booking.payments import settings as payment_settings
from booking.payments.box_office import BoxOfficeProvider
from booking.reports import marks
from booking.sales import carts as cart_service
from booking.sales import checkout, client_holds, exchanges, offers, outbox, promos, reservations
from booking.venues.seat_grid import FREE, SOLD, cell_path, parse_seat_key

logger = logging.getLogger("booking.payments")

# Order states (booking/core/domain.py), by the short names this module reads best with.
PENDING = OrderState.PENDING_PAYMENT
PAID = OrderState.PAID
EXPIRED = OrderState.EXPIRED
CANCELED = OrderState.CANCELED
REFUNDED = OrderState.REFUNDED
PARTIALLY_REFUNDED = OrderState.PARTIALLY_REFUNDED
SEAT_OWNING = SEAT_OWNING_ORDER_STATES  # orders whose (remaining) lines own sold seats
PAYABLE = (PENDING, EXPIRED)  # a payment arriving for these is taken (seats bought, or refunded)
CONFIRMING = "confirming"  # an attempt claimed by the request that is charging the card
METHODS = (payments.CARD, payments.BOX_OFFICE)
AT_THE_BANK = (base.ACTION, base.PROCESSING, CONFIRMING, base.SUCCEEDED)  # ask before the hold ends
MAX_ATTEMPTS = 20  # card attempts per order (declines); more is someone trying stolen cards


def orders():
    return mongo.orders()


# --- 1. start ---


def payment_window_end(cart: Mapping[str, Any], now: datetime) -> datetime:
    """Extended once, to the window, never shortened and never past the cap from the first hold."""
    window = now + timedelta(seconds=settings.BOOKING_PAYMENT_WINDOW_SECONDS)
    cap = cart["firstHoldOn"] + timedelta(seconds=settings.BOOKING_PAYMENT_CAP_SECONDS)
    return max(cart["expiresAt"], min(window, cap))


def box_office_deadline(sessions: Sequence[Mapping[str, Any]], now: datetime) -> datetime | None:
    """When unpaid box-office seats go back, if every session of the cart offers the box office
    and that is still far enough ahead (later than a card payment's window); else None."""
    if not sessions:
        return None
    deadlines = []
    for session in sessions:
        box = session.get("boxOffice") or {}
        if not box.get("enabled"):
            return None
        minutes = box.get("deadlineMinutes", settings.BOOKING_BOX_OFFICE_DEADLINE_MINUTES)
        deadlines.append(session["start"] - timedelta(minutes=minutes))
    deadline = min(deadlines)
    if deadline <= now + timedelta(seconds=settings.BOOKING_PAYMENT_WINDOW_SECONDS):
        return None
    return deadline


def cart_sessions(cart: Mapping[str, Any]) -> list[Session]:  # a Cart, or one being moved on
    ids = list({i["sessionId"] for i in cart.get("items", [])})
    fields = {
        "name": 1,
        "nameDe": 1,
        "start": 1,
        "theaterName": 1,
        "theaterNameDe": 1,
        "theaterId": 1,
        "layout.categories": 1,
        "boxOffice": 1,
    }
    return list(mongo.sessions().find({"_id": {"$in": ids}}, fields))


def methods_for(cart: Cart | None, sessions: list[Session] | None = None, now: datetime | None = None) -> dict:
    """How this cart can be paid: {"card": bool, "box_office": deadline or None}."""
    now = now or clock.now()
    sessions = cart_sessions(cart) if sessions is None and cart else (sessions or [])
    return {payments.CARD: payments.card_available(), payments.BOX_OFFICE: box_office_deadline(sessions, now)}


def start(
    owner: str,
    cart_id: ObjectId | None,
    name: str,
    email: str,
    method: str = payments.CARD,
    language: str | None = None,
    voucher_code: str = "",
    donation: str = "",
) -> Order:
    """Checkout: the cart's seats become an order waiting for payment. Submitting twice returns the
    same order. ``language``: the buyer's (default: the active one, the request's), kept on the
    order so its mails are written in it. ``voucher_code``: a gift voucher pays what it can first
    (payments/vouchers.py); the card is asked for the rest, or nothing. ``donation``: the amount
    the buyer adds as a donation, as typed or chosen (payments/donations.py); "" for none."""
    name, email = checkout.clean_customer(name, email)
    customer: Customer = {"name": name, "email": email, "language": checkout.buyer_language(language)}
    if method not in METHODS:
        raise InvalidRequest(
            gettext("Please choose how to pay."), fields={"method": gettext("Please choose how to pay.")}
        )
    now = clock.now()
    cart, reserved = _cart_and_open_reservations(owner, cart_id, method, now)
    if cart is None:
        raise NotFound(gettext("You have no seats on hold."))
    if cart["state"] in (CartState.PAYING, CartState.DONE):
        return _order_of_started_cart(cart)
    if cart["state"] != CartState.ACTIVE or cart["expiresAt"] <= now:
        cart_service.expire_cart(cart["_id"], now)
        raise CartExpired(gettext("Your hold has ended and the seats were released. Please choose your seats again."))
    if not cart["items"]:
        raise InvalidRequest(gettext("Your cart is empty."))
    offers.check_ticket_rules(cart["items"])  # companion only with a wheelchair space, max per type
    code = voucher_for(method, voucher_code, now)  # before any write: a refused code changes nothing
    sessions = cart_sessions(cart)
    donated = donations.chosen(donation, donation_offer(sessions))  # before any write, as the code
    if method == payments.CARD:
        if not payments.card_available():
            raise InvalidRequest(
                gettext("Card payment is not available right now."), fields={"method": gettext("Not available.")}
            )
        until = payment_window_end(cart, now)
    else:
        deadline = box_office_deadline(sessions, now)
        if deadline is None:
            message = gettext("Paying at the box office is not offered for these seats.")
            raise InvalidRequest(message, fields={"method": message})
        _refuse_too_many_reservations(reserved)
        until = deadline
    _keep_counting_for_client(cart, method, until, now)
    order_ref = checkout.new_booking_ref()
    unused_code = promos.give_back_unused(cart)  # its seats left the cart: no discount, the use goes back
    faults.point("pay.before_cart")  # the worker may expire the cart since it was read: the filter decides
    result = mongo.carts().update_one(
        {"_id": cart["_id"], "owner": owner, "state": CartState.ACTIVE, "expiresAt": {"$gt": now}},
        {
            "$set": {
                "state": CartState.PAYING,
                "checkoutOn": now,
                "customer": customer,
                "payMethod": method,
                "expiresAt": until,
                "orderRef": order_ref,  # the order's booking reference (sales/checkout.py)
                **({"voucherCode": code} if code else {}),
                **({"donation": donated} if donated else {}),
                **unused_code,
            }
        },
    )
    if not result.matched_count:
        current = mongo.carts().find_one({"_id": cart["_id"]})
        if current and current["state"] in (CartState.PAYING, CartState.DONE):
            return _order_of_started_cart(current)  # a second submit got there first
        cart_service.expire_cart(cart["_id"], now)
        raise CartExpired(gettext("Your hold has ended and the seats were released. Please choose your seats again."))
    faults.point("pay.after_cart")
    if unused_code:
        promos.finish_give_back(cart)
    moved: Cart = {**cart, "state": CartState.PAYING, "customer": customer, "payMethod": method}
    moved["orderRef"] = order_ref
    if code:
        moved["voucherCode"] = code
    if donated:
        moved["donation"] = donated
    return _order_of_started_cart({**moved, "expiresAt": until}, sessions, fresh=True)


def voucher_for(method: str, typed: str, now: datetime) -> str:
    """The voucher code a checkout pays with ("" for none), checked before anything is written: a
    voucher pays an order paid now (by card, or at the counter in cash or by terminal)."""
    if not str(typed or "").strip():
        return ""
    if method not in (payments.CARD, *payments.counter.PAID_AT_ONCE) or method == payments.counter.COMPLIMENTARY:
        message = gettext("A voucher pays together with a card or cash, not a reservation or an invoice.")
        raise InvalidRequest(message, fields={"voucher": message})
    return vouchers.usable(typed, now)["code"]


def pay_voucher_part(order: Order) -> Order:
    """The voucher the checkout named pays what it can of the order; an order it covers in full
    is settled with it. Safe to repeat (a second submit, a finisher after a crash)."""
    if order["state"] == PENDING and order.get("voucherCode"):
        order = vouchers.apply_to_order(order, order["voucherCode"], clock.now())
    if order["state"] == PENDING and order.get("voucher") and vouchers.amount_due(order) <= 0:
        order = _settled(vouchers.payment_of(order), order)
    return order


def _cart_and_open_reservations(
    owner: str, cart_id: ObjectId | None, method: str, now: datetime
) -> tuple[Cart | None, int]:
    """Checkout's one read of carts: the buyer's cart and, for a box-office reservation while
    BOOKING_MAX_OPEN_RESERVATIONS is on, how many other reservations of theirs wait for payment
    (one query, each branch indexed and by owner, the shard key)."""
    if cart_id is None:
        return None, 0
    branches: list[dict] = [{"_id": cart_id, "owner": owner}]
    if method == payments.BOX_OFFICE and client_holds.reservations_limit() and not cart_service.is_staff_owner(owner):
        branches.append(
            {"owner": owner, "state": CartState.PAYING, "payMethod": payments.BOX_OFFICE, "expiresAt": {"$gt": now}}
        )
    cart, reserved = None, 0
    for doc in mongo.carts().find({"$or": branches} if len(branches) > 1 else branches[0]):
        if doc["_id"] == cart_id:
            cart = doc
        else:
            reserved += 1
    return cart, reserved


def _refuse_too_many_reservations(reserved: int) -> None:
    """A buyer has at most BOOKING_MAX_OPEN_RESERVATIONS unpaid box-office reservations at once (the
    address's count: ``_keep_counting_for_client``)."""
    most = client_holds.reservations_limit()
    if most and reserved >= most:
        message = ngettext(
            "You already have %(count)d reservation to pay at the box office (at most %(max)d at once). "
            "Pay for it or cancel it first, or pay by card.",
            "You already have %(count)d reservations to pay at the box office (at most %(max)d at once). "
            "Pay for or cancel one of them first, or pay by card.",
            reserved,
        ) % {"count": reserved, "max": most}
        raise InvalidRequest(message, fields={"method": message})


def _keep_counting_for_client(cart: Cart, method: str, until: datetime, now: datetime) -> None:
    """The seats stay held while they are paid for (to ``until``), so they keep counting for the
    address that started the cart, and a box-office reservation is one of its open ones (at most
    BOOKING_MAX_OPEN_RESERVATIONS). Written BEFORE the cart's write: never an under-count
    (sales/client_holds.py)."""
    client = cart.get("client")
    if not client:
        return
    if method == payments.BOX_OFFICE and client_holds.reservations_limit():
        count = client_holds.open_reservation(client, cart["_id"], until, now, owner=cart["owner"])
        if count is not None:
            message = gettext(
                "Too many reservations to pay at the box office from your connection right now "
                "(%(count)d; at most %(max)d). Pay for or cancel one of them first, or pay by card."
            ) % {"count": count, "max": client_holds.reservations_limit()}
            raise InvalidRequest(message, fields={"method": message})
    elif client_holds.limit():
        client_holds.extend(client, cart["_id"], until)


def _order_of_started_cart(cart: Cart, sessions: list[Session] | None = None, fresh: bool = False) -> Order:
    """The paying cart's order, stored under the cart's ``orderRef`` if it is not yet (checkout's
    own way: a second submit, or a finisher after a crash, finds the same one). ``fresh``: the
    cart was moved to paying just now."""
    order = None
    if not fresh:
        ref = cart.get("orderRef")
        order = orders().find_one({"ref": ref, "cartId": cart["_id"]} if ref else {"cartId": cart["_id"]})
    if order is None:
        if cart["state"] != CartState.PAYING:
            raise NotFound(gettext("No such order."))
        sessions = sessions if sessions is not None else cart_sessions(cart)
        order = checkout.store_order(cart, make=lambda c, ref: pending_order(c, ref, sessions), fresh=fresh)
        faults.point("pay.after_order")
        if order.get("method") == payments.BOX_OFFICE and order["state"] == PENDING:
            outbox.queue_reservation_notice(order)  # stored with the order: what, how much, by when, where
    order = pay_voucher_part(order)
    if order["state"] == PENDING and order.get("method") == payments.CARD:
        try:
            order = ensure_payment(order)
        except base.ProviderError as exc:
            # The order waits; the payment page tries again (and reconcile ends it if nobody does).
            logger.warning("could not start the payment of order %s: %s", order["ref"], exc)
    return order


def theaters_of(sessions: Sequence[Mapping[str, Any]]) -> dict:
    """The VAT settings of the sessions' theaters (money.ticket_rate reads them), kept per process
    for a few seconds (payments/settings.py)."""
    return payment_settings.theater_vat_settings(s.get("theaterId") for s in sessions)


def donation_offer(sessions: Sequence[Mapping[str, Any]]) -> dict | None:
    """The donation offer of the theater these sessions play in (none when they play in several:
    a donation goes to one theater)."""
    theater_ids = {s.get("theaterId") for s in sessions}
    if len(theater_ids) != 1:
        return None
    return donations.offer_of(theaters_of(sessions).get(theater_ids.pop()))


def pending_order(cart: Cart, ref: str, sessions: list[Session]) -> Order:
    """The order's document as checkout makes it (lines with their ticket types, locked prices and
    promo shares, totals, search keys, retention), waiting for its payment: each line's VAT rate,
    the booking fee, the donation (no VAT), the payment, no mail yet (it goes once the order is
    paid)."""
    order = checkout.new_order(cart, ref, sessions)
    method = cart.get("payMethod", payments.CARD)
    theaters = theaters_of(sessions)
    by_id: dict[ObjectId, Mapping[str, Any]] = {s["_id"]: s for s in sessions}
    for line in order["lines"]:
        line["vat"] = money.ticket_rate(theaters.get(by_id.get(line["sessionId"], {}).get("theaterId")), line["cat"])
    for summary in order["sessions"]:
        summary["theaterId"] = by_id.get(summary["_id"], {}).get("theaterId")  # its receipt sequence
    fee_amount, fee_rate = money.booking_fee()
    order.pop("mail", None)
    if cart.get("voucherCode"):
        order["voucherCode"] = cart["voucherCode"]  # redeemed once the order is stored (pay_voucher_part)
    if method == payments.BOX_OFFICE:
        order["changeNotices"] = [outbox.reservation_made()]  # in the insert: no reservation without its mail
    donated = int(cart.get("donation") or 0)
    if donated:
        order["donation"] = {"amount": donated}
    order.update(
        {
            "state": PENDING,
            "method": method,
            "fee": {"amount": fee_amount, "vat": fee_rate},
            "total": order["total"] + fee_amount + donated,
            "payment": {
                "provider": payments.METHOD_PROVIDER[method],
                "attempt": 1,
                "intent": None,
                "status": base.OPEN,
                "until": cart["expiresAt"],
            },
        }
    )
    return order


def _mine(order: Order) -> dict:
    """The filter for this order, carrying its shard key (orders are sharded on ref)."""
    return {"_id": order["_id"], "ref": order["ref"]}


def ensure_payment(order: Order) -> Order:
    """The order's current attempt has a payment at the provider (made now if not)."""
    pay = order["payment"]
    if pay.get("intent") or order["state"] != PENDING:
        return order
    provider = payments.provider(pay["provider"])
    started = provider.start(order, idempotency_key=f"order-{order['_id']}-{pay['attempt']}")
    faults.point("pay.after_provider_start")  # made there, not written here: a retry sends the same key
    written = orders().update_one(
        {**_mine(order), "payment.attempt": pay["attempt"], "payment.intent": None},
        {"$set": {"payment.intent": started.id, "payment.status": base.OPEN}},
    )
    faults.point("pay.after_intent")
    if written.modified_count:
        return {**order, "payment": {**pay, "intent": started.id, "status": base.OPEN}}
    return orders().find_one(_mine(order))  # another request made one meanwhile


# --- 2. pay by card ---


@dataclass
class PayOutcome:
    status: str  # "succeeded", "action", "processing", "failed", or the order's state when not pending
    order: Order
    message: str = ""
    client_secret: str = ""  # for Stripe.js to finish 3-D Secure


def visible_order(ref_or_id, owner: str | None) -> Order:
    query = {"_id": ref_or_id} if isinstance(ref_or_id, ObjectId) else {"ref": str(ref_or_id).upper()}
    order = orders().find_one(query)
    if order is None or not owner or order.get("owner") != owner:
        raise NotFound(gettext("No such booking."))
    return order


def pay_with_card(order_id: ObjectId | str, owner: str | None, means: str) -> PayOutcome:
    """Charge the card the browser gathered (Stripe.js: a payment method id) for the order (its id,
    or its booking reference)."""
    order = visible_order(order_id, owner)
    if order.get("method") != payments.CARD:
        raise InvalidRequest(gettext("This booking is paid at the box office."))
    if not isinstance(means, str) or not means or len(means) > 255:
        raise InvalidRequest(gettext("The card details did not arrive. Please try again."))
    if order["state"] == PENDING and order["payment"]["status"] == base.ACTION:
        order = check(order["_id"], quiet=True)  # the bank's step (3-D Secure) may have ended
    if order["state"] != PENDING:
        return _outcome_of(order)
    pay = order["payment"]
    if pay["status"] in (base.FAILED, base.CANCELED):
        order = _next_attempt(order)
        if order["state"] != PENDING:
            return _outcome_of(order)
        pay = order["payment"]
    if not pay.get("intent"):
        order = ensure_payment(order)
        pay = order["payment"]
    intent = pay["intent"]
    if intent is None:  # never: ensure_payment made it (it raises when it cannot)
        return _outcome_of(order)
    claimed_on = clock.now()
    claimed = orders().update_one(
        {**_mine(order), "state": PENDING, "payment.intent": intent, "payment.status": base.OPEN},
        {"$set": {"payment.status": CONFIRMING, "payment.confirmOn": claimed_on}},
    )
    if not claimed.modified_count:
        return _outcome_of(orders().find_one(_mine(order)))  # a second submit: the first decides
    faults.point("pay.after_claim")
    provider = payments.provider(pay["provider"])
    key = f"order-{order['_id']}-{pay['attempt']}-{means}"
    try:
        payment = provider.confirm(intent, means, idempotency_key=key)
    except base.PaymentDeclined as exc:
        record(intent, base.FAILED, exc.message)
        return PayOutcome(base.FAILED, orders().find_one(_mine(order)), exc.message)
    except base.ProviderError as exc:
        logger.warning("confirming the payment of order %s failed: %s", order["ref"], exc)
        record(intent, base.OPEN, our_claim=claimed_on)  # our try is over; the provider says how it ended
        return _outcome_of(check(order["_id"], quiet=True))
    if payment.status != base.SUCCEEDED:
        record(payment.id, payment.status, payment.failure, our_claim=claimed_on)  # (settle writes a success)
    faults.point("pay.after_confirm")
    if payment.status == base.SUCCEEDED:
        return _outcome_of(_settled(payment, order))
    current = orders().find_one(_mine(order))
    return PayOutcome(payment.status, current, payment.failure, payment.client_secret)


def _outcome_of(order: Order) -> PayOutcome:
    if order["state"] != PENDING:
        return PayOutcome(order["state"], order, order.get("failure", ""))
    pay = order["payment"]
    status = pay["status"]
    if status == CONFIRMING:
        status = base.PROCESSING
    secret = ""
    intent = pay["intent"]
    if status == base.ACTION and intent:
        try:
            secret = payments.provider(pay["provider"]).retrieve(intent).client_secret
        except base.ProviderError:
            status = base.PROCESSING
    return PayOutcome(status, order, pay.get("failure") or "", secret)


def record(payment_id: str, status: str, failure: str = "", *, our_claim: datetime | None = None) -> None:
    """What the provider says about the order's current payment (never over a success). "Open"
    while a request is confirming only means the confirm has not reached the provider yet: it
    does not end that claim (the page would offer the card form again, and a second Pay would
    confirm twice) unless the claim is ``our_claim`` or older than a confirm can take."""
    query: dict = {
        "payment.intent": payment_id,
        "state": {"$in": [PENDING, EXPIRED, CANCELED]},
        "payment.status": {"$ne": base.SUCCEEDED},
    }
    if status == base.OPEN:
        ended = clock.now() - timedelta(seconds=base.confirm_claim_seconds())
        query["$or"] = [
            {"payment.status": {"$ne": CONFIRMING}},
            {"payment.confirmOn": {"$lte": ended}},
            *([{"payment.confirmOn": our_claim}] if our_claim else []),
        ]
    orders().update_one(
        query,
        {"$set": {"payment.status": status, "payment.failure": failure or None, "payment.checkedOn": clock.now()}},
    )


def _next_attempt(order: Order) -> Order:
    """A new payment after a refused one. The refused one is canceled at the provider first, so it
    can never be paid later beside the new one (if it was paid after all, it is settled)."""
    pay = order["payment"]
    if pay["attempt"] >= MAX_ATTEMPTS:
        raise InvalidRequest(gettext("Too many payment attempts for this booking. Please contact the box office."))
    if pay["intent"]:
        canceled = payments.provider(pay["provider"]).cancel(pay["intent"])
        if canceled.status == base.SUCCEEDED:
            return _settled(canceled)
    orders().update_one(
        {
            "_id": order["_id"],
            "state": PENDING,
            "payment.attempt": pay["attempt"],
            "payment.status": {"$in": [base.FAILED, base.CANCELED]},
        },
        {
            "$set": {"payment.attempt": pay["attempt"] + 1, "payment.intent": None, "payment.status": base.OPEN},
            "$push": {"payment.previous": {"intent": pay.get("intent"), "failure": pay.get("failure")}},
        },
    )
    faults.point("pay.after_next_attempt")
    return ensure_payment(orders().find_one({"_id": order["_id"]}))


def check(order_id: ObjectId, *, quiet: bool = False) -> Order:
    """The return page and reconcile: ask the provider where the order's payment stands and act on
    it. Returns the order as it is afterwards."""
    order = orders().find_one({"_id": order_id})
    if order is None:
        raise NotFound(gettext("No such booking."))
    pay = order.get("payment")
    if order["state"] in SEAT_OWNING and order.get("settling"):
        return finish_paid(order_id)
    if order["state"] not in (PENDING, EXPIRED, CANCELED) or not pay or not pay["intent"]:
        return order
    provider = payments.provider(pay["provider"])
    if not provider.online or pay["status"] == base.CANCELED:
        return order
    try:
        payment = provider.retrieve(pay["intent"])
    except base.ProviderError as exc:
        if not quiet:
            raise
        logger.warning("could not ask about the payment of order %s: %s", order["ref"], exc)
        return order
    if payment.status == base.SUCCEEDED:
        return _settled(payment)
    record(payment.id, payment.status, payment.failure)
    return orders().find_one({"_id": order_id})


# --- 3. settle ---


def order_for_payment(payment: base.Payment) -> Order | None:
    if payment.order_id and ObjectId.is_valid(payment.order_id):
        by_ref = {"ref": payment.order_ref} if payment.order_ref else {}  # targeted when known
        found = orders().find_one({"_id": ObjectId(payment.order_id), **by_ref})
        if found is not None:
            return found
    return orders().find_one({"$or": [{"payment.intent": payment.id}, {"payment.previous.intent": payment.id}]})


def _settled(payment: base.Payment, known: Order | None = None, *, taken: dict | None = None) -> Order:
    """``settle`` for the payment of an order the caller has just read: it finds that order (None,
    "no order we know", would mean the order vanished meanwhile: no such booking)."""
    order = settle(payment, known, taken=taken)
    if order is None:
        raise NotFound(gettext("No such booking."))
    return order


def settle(payment: base.Payment, known: Order | None = None, *, taken: dict | None = None) -> Order | None:
    """A payment succeeded: the order it pays becomes paid and its seats sold, or (seats gone,
    order no longer payable, paid already by another payment) the money goes back. Safe to call
    any number of times, from anywhere, in any order. ``known``: the order as the caller just
    read it (saves a read; a stale one only makes the conditional update miss and read again).
    ``taken``: how staff took the money (``by``, ``means``, ``reference``), kept in ``paidWith``
    by the same write that makes the order paid."""
    if payment.status != base.SUCCEEDED:
        raise ValueError("only a succeeded payment is settled")
    for _ in range(5):
        order, known = known or order_for_payment(payment), None
        if order is None:
            logger.error("payment %s %s succeeded for no order we know", payment.provider, payment.id)
            return None
        kept = order.get("paidWith")
        if order.get("exchanges") and not (kept and payment.id == kept["id"]):
            handled = exchanges.difference_paid(order, payment)
            if handled is not None:
                return handled
        if kept and kept["id"] == payment.id:
            return finish_paid(order["_id"]) if order.get("settling") else order
        # a voucher settles an order it covers in full; any other payment is for what it leaves
        expected = order["total"] if payment.provider == vouchers.PROVIDER else vouchers.amount_due(order)
        matches = payment.amount == expected and payment.currency == order["currency"]
        if kept or order["state"] not in PAYABLE or not matches:
            why = "paid twice" if kept else ("amount differs" if not matches else f"order was {order['state']}")
            return refunds.refund_extra_payment(order["_id"], payment, why)
        faults.point("pay.before_paid")  # staff may cancel it since it was read: the filter decides
        now = clock.now()
        faults.point("pay.paid_time_taken")  # tests: a till closing between the sale's time and its write
        paid = orders().update_one(
            {**_mine(order), "state": {"$in": list(PAYABLE)}, "paidWith": {"$exists": False}},
            {
                "$set": {
                    "state": PAID,
                    "settling": True,
                    "paidOn": now,
                    "paidWith": {
                        **(taken or {}),
                        "provider": payment.provider,
                        "id": payment.id,
                        "amount": payment.amount,
                        "on": now,
                    },
                    "payment.status": base.SUCCEEDED,
                    "payment.intent": payment.id,
                    "lateAfter": order["state"] if order["state"] != PENDING else None,
                },
                "$push": {
                    **marks.push(marks.sessions_of(order)),
                    "webhookEvents": outbox.webhook_event(outbox.ORDER_PAID),
                },
            },
        )
        if paid.modified_count:
            outbox.queue_webhook_events(outbox.ORDERS, order)
            faults.point("pay.after_paid")
            return finish_paid(order["_id"], known=order)
    raise RuntimeError(f"could not settle payment {payment.id}: its order kept changing")


def finish_paid(order_id: ObjectId, known: Order | None = None) -> Order:
    """Roll a paid order forward: its seats sold (held -> sold, or free -> sold when its hold has
    ended), its receipt number, its cart done, its mail pending. Each step is safe to repeat.
    ``known``: the order as it was just before settle made it paid (its lines and cart)."""
    order = known or orders().find_one({"_id": order_id})
    if order is None or (known is None and (order["state"] not in SEAT_OWNING or not order.get("settling"))):
        return order
    by_session: dict[ObjectId, list[str]] = {}
    for line in order["lines"]:
        by_session.setdefault(line["sessionId"], []).append(line["key"])
    for session_id, keys in by_session.items():
        if not _secure_seats(session_id, order, keys):
            return _seats_lost(order)
        faults.point("pay.after_sell")
    receipts.assign(order_id, theater_id=receipts.theater_of(order), ref=order["ref"])
    faults.point("pay.after_receipt")
    if order.get("voucher"):  # its voucher part is final: a refund now goes back through refunds
        vouchers.mark_spent(order["voucher"]["voucherId"], order["voucher"]["redemption"])
    mongo.carts().update_one(  # its seats are all in the order: nothing else is held by it
        {"_id": order["cartId"], "owner": order["owner"], "state": {"$ne": CartState.DONE}},
        {"$set": {"state": CartState.DONE, "orderId": order_id, "endedOn": clock.now()}},
    )
    faults.point("pay.after_cart_done")
    mail = MailState.PENDING if order.get("email") else MailState.NONE  # a counter sale may have no address
    done = orders().update_one(
        {**_mine(order), "settling": True},
        {"$unset": {"settling": ""}, "$set": {"mail": mail}},
    )
    if done.modified_count:
        logger.info("order %s paid, %d seats sold", order["ref"], len(order["lines"]))
        if mail == MailState.PENDING:
            outbox.queue_confirmation(order_id)
    return orders().find_one(_mine(order))


def _secure_seats(session_id: ObjectId, order: Order, keys: list[str]) -> bool:
    """The order's seats in one session become sold: through its cart's hold if it still has
    them, else taken straight from free in one conditional update. False when anyone else has one."""
    wanted = set(keys)
    try:
        if reservations.settle(session_id, order["cartId"], sell=wanted).found:
            return True
    except reservations.HoldLost:
        reservations.settle(session_id, order["cartId"])  # the part still held goes back first
    cells = [cell_path(*parse_seat_key(k)) for k in keys]
    now = clock.now()
    on_sale = {
        "status": SessionStatus.ON_SALE,
        "start": {"$gt": now},
        "$or": [{"saleCloses": None}, {"saleCloses": {"$gt": now}}],
        "$and": [within_quota(len(cells))],  # taken again from free: the quota counts them
    }
    taken = mongo.sessions().update_one(  # only while it is still on sale (not closed, not started)
        {"_id": session_id, **on_sale, **{c: FREE for c in cells}},
        {"$set": {c: SOLD for c in cells}, "$inc": {"seatsAvailable": -len(cells), "version": 1}},
    )
    if taken.modified_count:
        return True
    # Sold already: by this order (a repeat after a crash) iff no other paid order has them.
    session = mongo.sessions().find_one({"_id": session_id}, {"seats": 1})
    if session is None:
        return False
    if not all(session["seats"][r][c] == SOLD for r, c in (parse_seat_key(k) for k in keys)):
        return False
    return not orders().count_documents(
        {
            "_id": {"$ne": order["_id"]},
            "state": {"$in": list(SEAT_OWNING)},
            "lines": {"$elemMatch": {"sessionId": session_id, "key": {"$in": sorted(keys)}}},
        }
    )


def _seats_lost(order: Order) -> Order:
    logger.warning("order %s was paid after its hold ended and its seats are taken: refunding", order["ref"])
    return refunds.refund_lost_seats(order["_id"])


# --- 4. expire and cancel ---


def expire_paying_cart(
    cart_id: ObjectId, now: datetime, *, cart: Mapping[str, Any] | None = None
) -> cart_service.CartEnd:
    """The payment window (or box-office deadline) of a paying cart ended: cart expired, seats
    back, order expired. Returns the seats freed, None when the cart was not due, and whether its
    payment turned out to have succeeded (a buyer in the middle of paying is asked about first):
    then its order is settled instead.

    ``cart``: as the caller read it (``owner``, ``orderRef``, ``items.sessionId``), when it did: then
    every write names its collection's shard key (a hold ending a cart that still holds its seat
    is on the buyer's path: docs/architecture.md, "Shard keys")."""
    cart = cart or {}
    owner, ref = cart.get("owner"), cart.get("orderRef")
    fields = {"ref": 1, "payment": 1, "method": 1, "state": 1, "settling": 1, "email": 1, "invoice": 1}
    order = orders().find_one({"ref": ref, "cartId": cart_id}, fields) if ref else None
    if order is None:  # no reference read, or the cart was given a new one since (checkout.store_order)
        order = orders().find_one({"cartId": cart_id}, fields)
    if order is not None and order["state"] in SEAT_OWNING:
        finish_paid(order["_id"])  # paid already, a crash stopped it before its seats were sold
        return cart_service.CartEnd(None, settled=True)
    paying_now = order is not None and order["state"] == PENDING and order.get("method") == payments.CARD
    at_the_bank = paying_now and order["payment"].get("status") in AT_THE_BANK
    if at_the_bank:
        found = check(order["_id"], quiet=True)["state"]
        if found != PENDING:
            return cart_service.CartEnd(None, settled=found in SEAT_OWNING or found == REFUNDED)
    result = mongo.carts().update_one(
        {"_id": cart_id, **({"owner": owner} if owner else {}), "state": CartState.PAYING, "expiresAt": {"$lte": now}},
        {"$set": {"state": CartState.EXPIRED, "endedOn": now}},
    )
    if not result.modified_count:
        return cart_service.CartEnd(None)
    faults.point("pay.expire_after_cart")
    # the sessions its items name (a paying cart's items no longer change), else found by the index
    session_ids = list(dict.fromkeys(i["sessionId"] for i in cart["items"])) if "items" in cart else None
    freed = reservations.release_all(cart_id, session_ids=session_ids)
    faults.point("pay.expire_after_release")
    expired = _expire_order({"cartId": cart_id, **({"ref": order["ref"]} if order is not None else {})}, now, order)
    if order is None or order.get("method") != payments.CARD:
        # a card payment may still come late: its use waits (reconcile)
        promos.release_for_cart(cart_id, owner=owner)
    elif expired is not None and not expired["payment"].get("intent"):
        promos.release_for_cart(cart_id, owner=owner)  # ... unless no payment was ever made: none can come
    return cart_service.CartEnd(freed)


def _expire_order(which: dict, now: datetime, order: Order | None) -> Order | None:
    """``pending_payment -> expired``; a box-office reservation's or an invoice's buyer is told in
    the same write (an invoice's mail carries its credit note).
    Returns the order as that write left it (None when it was not pending): its payment as it was
    at the moment it stopped being payable (a card is only charged while the order is pending)."""
    # the buyer of an unpaid reservation or invoice is told, an invoice's with its credit note
    lapsed = (
        order is not None
        and (order.get("method") == payments.BOX_OFFICE or bool(order.get("invoice")))
        and bool(order.get("email"))
    )
    push: dict = {"changeNotices": outbox.reservation_lapsed()} if lapsed else {}
    owed: dict = {}
    if order is not None and order.get("invoice"):  # an invoice left unpaid is credited in full
        invoiced = orders().find_one({"_id": order["_id"], "ref": order["ref"]}, {"invoice": 1, "lines": 1, "total": 1})
        owed = credit_notes.owed_for_void(invoiced, reason="Not paid by its due date") if invoiced else {}
        push.update(owed)
    done = orders().find_one_and_update(
        {**which, "state": PENDING},
        {
            "$set": {"state": EXPIRED, "expiredOn": now, **(credit_notes.DUE if owed else {})},
            **({"$push": push} if push else {}),
        },
        projection={"payment": 1, "method": 1, "cartId": 1},
        return_document=ReturnDocument.AFTER,
    )
    if lapsed and done is not None and order is not None:
        outbox.queue_change_notices(order["_id"])
    if owed and done is not None:
        faults.point("pay.expire_before_credit_note")
        refunds.issue_credit_notes(done["_id"])
    return done


def cancel_unpaid(
    order_id: ObjectId, *, owner: str | None = None, by: str = "", reason: str = "", notice: str = "cancel"
) -> Order:
    """The buyer gives up paying (``owner``), or staff cancel an order nobody has paid.

    The buyer: the payment is canceled at the provider first (one that succeeded meanwhile, say
    in another tab, is settled instead and the order is paid), then the order, then its seats go
    back. Staff: the order is canceled first, then its payment at the provider, then its seats go
    back; a payment that succeeds meanwhile (or had, unseen) finds the order no longer payable and
    settle refunds it: the staff's cancel stands. An order paid before the staff's write is a
    Conflict: nothing is canceled."""
    order = orders().find_one({"_id": order_id})
    if order is None or (owner is not None and order.get("owner") != owner):
        raise NotFound(gettext("No such booking."))
    if order["state"] not in (PENDING, EXPIRED):
        raise Conflict(
            gettext("Booking %(ref)s is %(state)s; it cannot be canceled here.")
            % {"ref": order["ref"], "state": order_state_label(order["state"]).lower()}
        )
    if owner is None:
        return _cancel_by_staff(order, by=by, reason=reason, notice=notice)
    pay = order.get("payment")
    if pay and pay["intent"]:
        provider = payments.provider(pay["provider"])
        canceled = provider.cancel(pay["intent"])
        if canceled.status == base.SUCCEEDED:
            return _settled(canceled)
        record(canceled.id, canceled.status)
    owed = credit_notes.owed_for_void(order, reason=reason or "Canceled by the buyer")
    canceled_now = orders().update_one(
        {"_id": order_id, "state": {"$in": [PENDING, EXPIRED]}},
        {
            "$set": {
                "state": CANCELED,
                "canceledOn": clock.now(),
                "canceledBy": by or "buyer",
                "cancelReason": reason,
                "holdReleased": False,
                **(credit_notes.DUE if owed else {}),
            },
            "$push": {"webhookEvents": outbox.webhook_event(outbox.ORDER_CANCELED), **owed},
        },
    )
    faults.point("pay.cancel_after_order")
    if canceled_now.modified_count:
        outbox.queue_webhook_events(outbox.ORDERS, order)
    release_canceled_hold(order_id)
    if owed:
        refunds.issue_credit_notes(order_id)
    return orders().find_one({"_id": order_id})


def _cancel_by_staff(order: Order, *, by: str, reason: str, notice: str) -> Order:
    """``cancel_unpaid`` for staff: the order first (the customer's notice in the same write, when
    a staff member is named), then its payment at the provider, then its hold."""
    order_id = order["_id"]
    told = bool(by)  # the customer is told; a buyer canceling knows
    owed = credit_notes.owed_for_void(order, reason=reason or "Canceled by the theater")
    canceled_now = orders().update_one(
        {"_id": order_id, "state": {"$in": [PENDING, EXPIRED]}},
        {
            "$set": {
                "state": CANCELED,
                "canceledOn": clock.now(),
                "canceledBy": by,
                "cancelReason": reason,
                "holdReleased": False,
                **(credit_notes.DUE if owed else {}),
            },
            "$push": {
                "webhookEvents": outbox.webhook_event(outbox.ORDER_CANCELED),
                **({"changeNotices": outbox.new_notice(notice)} if told else {}),
                **owed,
            },
        },
    )
    if not canceled_now.modified_count:
        current = orders().find_one({"_id": order_id}, {"state": 1})
        if current is None or current["state"] != CANCELED:
            state = order_state_label(current["state"]).lower() if current else "?"
            raise Conflict(
                gettext("Booking %(ref)s was %(state)s meanwhile; it was not canceled.")
                % {"ref": order["ref"], "state": state}
            )
    faults.point("pay.cancel_after_order")
    if canceled_now.modified_count:
        outbox.queue_webhook_events(outbox.ORDERS, order)
    pay = order.get("payment")
    if pay and pay["intent"]:
        try:
            ended = payments.provider(pay["provider"]).cancel(pay["intent"])
        except base.ProviderError as exc:  # reconcile asks again (a canceled order's open payment)
            logger.warning("could not cancel the payment of canceled order %s: %s", order["ref"], exc)
        else:
            if ended.status == base.SUCCEEDED:
                settle(ended)  # the order is canceled: the money goes back
            else:
                record(ended.id, ended.status)
    release_canceled_hold(order_id)
    if owed and canceled_now.modified_count:
        refunds.issue_credit_notes(order_id)
    if told and canceled_now.modified_count:
        outbox.queue_change_notices(order_id)
    return cast(Order, orders().find_one({"_id": order_id}))


def release_canceled_hold(order_id: ObjectId) -> int:
    order = orders().find_one({"_id": order_id}, {"cartId": 1, "state": 1, "voucher": 1, "paidWith": 1})
    if order is None or order["state"] != CANCELED:
        return 0
    mongo.carts().update_one(
        {"_id": order["cartId"], "state": CartState.PAYING},
        {"$set": {"state": CartState.CANCELED, "endedOn": clock.now()}},
    )
    freed = reservations.release_all(order["cartId"])
    promos.release_for_cart(order["cartId"])  # its promo code's use goes back (once)
    vouchers.give_back_for_order(order, "booking canceled unpaid")
    orders().update_one({"_id": order_id}, {"$set": {"holdReleased": True}})
    return freed


def mark_paid_at_counter(
    order_id: ObjectId, *, by: str, means: str = payments.counter.CASH, reference: str = ""
) -> Order:
    """Staff took the money at the box office, or an invoice's money arrived: how (cash, card
    terminal, bank transfer) and its reference (a slip or transfer number) are kept with it."""
    reference = " ".join((reference or "").split())
    if means not in payments.counter.PAID_LATER_MEANS:
        message = gettext("Please choose how the money was paid.")
        raise InvalidRequest(message, fields={"means": message})
    if len(reference) > payments.counter.PAYMENT_REFERENCE_MAX:
        message = gettext("The reference is at most %(max)d characters.") % {
            "max": payments.counter.PAYMENT_REFERENCE_MAX
        }
        raise InvalidRequest(message, fields={"reference": message})
    order = orders().find_one({"_id": order_id})
    if order is None:
        raise NotFound(gettext("No such order."))
    if order.get("method") not in (payments.BOX_OFFICE, payments.counter.INVOICE):  # an invoice: paid later
        raise Conflict(f"Order {order['ref']} is paid by card, not at the box office.")
    if order["state"] in SEAT_OWNING:
        return order
    if order["state"] not in PAYABLE:
        raise Conflict(f"Order {order['ref']} is {order['state'].replace('_', ' ')}; it cannot be paid now.")
    provider = cast(BoxOfficeProvider, payments.provider(order["payment"]["provider"]))  # or the counter's
    # how the money came, in the write that makes the order paid: never a paid order without it
    settled = _settled(provider.paid_at_counter(order), taken={"by": by, "means": means, "reference": reference})
    return cast(Order, orders().find_one({"_id": settled["_id"]}))  # just settled: it is there


# --- 5. reconcile ---


@dataclass
class PaymentReport:
    checked: int = 0
    settled: int = 0
    expired: int = 0
    canceled_at_provider: int = 0
    finished: int = 0
    holds_released: int = 0
    refunds_retried: int = 0

    def __str__(self):
        return ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in self.__dict__.items())


def reconcile_payments(now: datetime | None = None) -> PaymentReport:
    now = now or clock.now()
    report = PaymentReport()
    grace = timedelta(seconds=settings.BOOKING_PAYMENT_CHECK_GRACE_SECONDS)
    late = timedelta(seconds=settings.BOOKING_PAYMENT_LATE_SECONDS)
    # Pending past the window: the webhook may be lost, the worker down, or a process died.
    for order in orders().find({"state": PENDING, "payment.until": {"$lte": now - grace}}, {"_id": 1}).limit(500):
        report.checked += 1
        _settle_or_expire(order["_id"], now, report)
    # Expired (or canceled) with a payment still open at the provider: a late payment is taken;
    # after the late period the payment is canceled there.
    stale_open = {
        "state": {"$in": [EXPIRED, CANCELED]},
        "method": payments.CARD,
        "payment.intent": {"$ne": None},
        "payment.status": {"$ne": base.CANCELED},
    }
    for order in orders().find(stale_open, {"_id": 1, "payment": 1}).limit(500):
        report.checked += 1
        found = check(order["_id"], quiet=True)
        if found["state"] in SEAT_OWNING or found["state"] == REFUNDED:
            report.settled += 1
            continue
        pay = found["payment"]
        if pay["until"] + late <= now and pay["intent"]:  # (the query asked for an intent)
            canceled = payments.provider(pay["provider"]).cancel(pay["intent"])
            if canceled.status == base.SUCCEEDED:
                settle(canceled)
                report.settled += 1
            else:
                record(canceled.id, base.CANCELED)
                promos.release_for_cart(found["cartId"])  # it can never be paid now: the code's use goes back
                report.canceled_at_provider += 1
    # Paid but not finished (a crash between settle's writes).
    for order in orders().find({"settling": True, "paidOn": {"$lte": now - grace}}, {"_id": 1}).limit(500):
        finish_paid(order["_id"])
        report.finished += 1
    for order in orders().find({"state": CANCELED, "holdReleased": False}, {"_id": 1}).limit(500):
        release_canceled_hold(order["_id"])
        report.holds_released += 1
    report.refunds_retried += refunds.retry_due(now)
    if any(report.__dict__.values()):
        logger.info("reconcile payments: %s", report)
    return report


def _settle_or_expire(order_id: ObjectId, now: datetime, report: PaymentReport) -> None:
    order = check(order_id, quiet=True)
    if order["state"] != PENDING:
        report.settled += order["state"] in SEAT_OWNING
        return
    if order["payment"].get("status") in (base.PROCESSING, CONFIRMING) and order["payment"]["until"] > now - timedelta(
        seconds=settings.BOOKING_PAYMENT_LATE_SECONDS
    ):
        return  # the provider is still deciding: ask again next time
    cart = mongo.carts().find_one({"_id": order["cartId"]}, {"state": 1, "expiresAt": 1})
    if cart is not None and cart["state"] == CartState.PAYING:
        if cart["expiresAt"] > now:
            return  # the hold still runs (a clock skew between window and cart): not yet
        if expire_paying_cart(cart["_id"], now).settled:
            report.settled += 1  # its payment went through just now
            return
    else:
        expired = _expire_order({"_id": order_id}, now, order)
        if expired is not None and expired.get("method") == payments.CARD and not expired["payment"].get("intent"):
            promos.release_for_cart(expired["cartId"])  # no payment was ever made: none can come late
    report.expired += 1


# --- webhooks ---


def payment_events():
    return mongo.get_db()["payment_events"]


def handle_webhook(provider_name: str, payload: bytes, headers) -> tuple[int, str]:
    """A provider's webhook: (HTTP status, short text). Bad signature: 400, nothing changes.
    Every verified event is recorded once (its id is the document's); a replay of a handled
    event changes nothing; an event for a payment we do not know is recorded and answered 200
    (the provider would otherwise retry it for days). Events may come in any order: a success is
    settled whenever it comes, and nothing is written over a success."""
    provider = payments.provider(provider_name)
    try:
        event = provider.parse_webhook(payload, headers)
    except base.BadSignature as exc:
        logger.warning("%s webhook refused: %s", provider_name, exc)
        return 400, "bad signature"
    if not event.id:
        return 400, "no event id"
    key = f"{provider_name}:{event.id}"
    try:
        payment_events().insert_one(
            {
                "_id": key,
                "type": event.raw_type,
                "payment": event.payment.id if event.payment else None,
                "receivedOn": clock.now(),
                "handled": False,
            }
        )
    except DuplicateKeyError:
        seen = payment_events().find_one({"_id": key}, {"handled": 1, "outcome": 1})
        if seen and seen.get("handled"):
            return 200, f"already handled: {seen.get('outcome', '')}"
    faults.point("webhook.after_record")
    outcome = _handle_event(event)
    payment_events().update_one({"_id": key}, {"$set": {"handled": True, "outcome": outcome}})
    return 200, outcome


def _handle_event(event: base.WebhookEvent) -> str:
    if event.payment is None or event.type == "other":
        return "ignored"
    voucher = voucher_purchases.for_payment(event.payment.id)
    if voucher is not None:  # a gift voucher bought online, not an order
        if event.type == base.SUCCEEDED and event.payment.status == base.SUCCEEDED:
            voucher_purchases.activate_paid(event.payment)
        return f"voucher {voucher['_id']} payment {event.payment.status}"
    order = order_for_payment(event.payment)
    if order is None:
        logger.warning("webhook for a payment we do not know: %s", event.payment.id)
        return "unknown payment"
    if event.type == base.SUCCEEDED and event.payment.status == base.SUCCEEDED:
        settled = settle(event.payment)
        return f"order {order['ref']} {settled['state'] if settled else '?'}"
    if event.type == base.SUCCEEDED:
        return f"order {order['ref']} {check(order['_id'], quiet=True)['state']}"
    record(event.payment.id, event.payment.status, event.payment.failure)
    return f"order {order['ref']} payment {event.payment.status}"
