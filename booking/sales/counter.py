"""Selling for a customer at the counter or on the phone: the buyer's engine, staff's cart.

Staff choose seats on the same live map with the same services as a buyer (``holds``: the same
conditional writes, orphan rule, limits), under a cart of their own (owner ``staff:<user id>``),
and may take house seats they blocked (``holds.BOX_OFFICE``). The sale then goes the buyer's way:

1. cart ``active -> paying`` (conditional on its hold not having ended), with the customer, the
   payment method, the channel and the staff member;
2. the order is stored ``pending_payment`` under the cart's ``orderRef`` (``checkout.store_order``:
   a second submit, or a finisher after a crash, finds the same one), ``channel`` "box_office" or
   "phone", ``soldBy``;
3. cash, card terminal, complimentary: settled at once (``payments.settle`` with the counter
   provider's payment: order paid, seats ``held -> sold``, receipt number, cart done, mail if there
   is an address). An invoice stays ``pending_payment`` with its seats held until its due date;
   staff record the money on the order page (``payments.mark_paid_at_counter``), or the worker
   expires it then like any reservation. With a billing address it is an invoice document: the
   order is stored with the seller's and buyer's data and its mail notice, then numbered
   (payments/invoices.py) and the mail queued.

Staff holds end ``BOOKING_STAFF_HOLD_IDLE_SECONDS`` after the staff member's last action (every
seat click, ticket type, code or ``touch``; the map's refresh is not an action), then the normal
expiry task releases them (``carts.next_expiry``).
"""

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from bson import ObjectId
from django.utils import timezone
from django.utils.translation import gettext as _
from pymongo import ReturnDocument

from booking import payments
from booking.core import clock, faults, mongo
from booking.core.domain import Cart, CartState, Order, OrderState, SalesChannel, Session, live_cart_filter
from booking.core.errors import BookingError, CartExpired, InvalidRequest, NotFound
from booking.payments import donations, invoices
from booking.payments import flow as payment_service
from booking.payments.counter import CARD_TERMINAL, CASH, COMPLIMENTARY, COUNTER_METHODS, INVOICE, PAID_AT_ONCE
from booking.sales import cart_expiry, checkout, holds, offers, outbox, pricing, promos
from booking.sales import carts as cart_service

BOX_OFFICE = SalesChannel.BOX_OFFICE
PHONE = SalesChannel.PHONE
CHANNELS = (BOX_OFFICE, PHONE)
METHODS = COUNTER_METHODS
__all__ = ["CASH", "CARD_TERMINAL", "INVOICE", "COMPLIMENTARY", "METHODS", "CHANNELS", "CounterSale", "sell"]

PHONE_RE = re.compile(r"^\+?[0-9 ()/.-]{5,30}$")


def staff_owner(user_id) -> str:
    """The cart owner of a staff member (carts are sharded on owner: one shard per member)."""
    return f"{cart_service.STAFF_OWNER_PREFIX}{user_id}"


def current_cart(owner: str) -> Cart | None:
    """The staff member's live cart (owner+state index), the newest if there were ever two; a stale
    one found on the way is expired now (its seats free on the map at once)."""
    now = clock.now()
    found = None
    for cart in mongo.carts().find({"owner": owner, "state": CartState.ACTIVE}).sort("createdOn", -1).limit(5):
        live = cart_expiry.live_or_expire(cart, now)
        if live is not None and found is None:
            found = live
    return found


def touch(owner: str, cart_id: ObjectId | None) -> Cart | None:
    """The staff member is still working: their hold lasts another idle period from now. (Staff
    carts only: a buyer's hold keeps its own duration and cap.)"""
    if cart_id is None or not cart_service.is_staff_owner(owner):
        return None
    now = clock.now()
    return mongo.carts().find_one_and_update(
        {"_id": cart_id, "owner": owner, **live_cart_filter(now)},
        {"$set": {"expiresAt": cart_service.next_expiry(None, now, owner)}},
        return_document=ReturnDocument.AFTER,
    )


@dataclass(frozen=True)
class CounterSale:
    """What staff typed for one sale (``clean_sale`` checks it)."""

    name: str
    method: str
    channel: str = BOX_OFFICE
    email: str = ""
    phone: str = ""
    due: date | None = None  # invoice: the last day to pay
    reason: str = ""  # complimentary: why
    by: str = ""  # the staff member's login
    by_id: int | None = None
    billing: invoices.Billing | None = None  # invoice: the buyer's billing data (an address: an invoice document)
    voucher: str = ""  # a gift voucher's code: it pays what it can, cash or the terminal the rest
    donation: str = ""  # an amount the customer adds as a donation, as typed (cash or terminal only)


def clean_sale(sale: CounterSale, sessions: list[Session], now: datetime) -> tuple[CounterSale, datetime | None]:
    """The sale with its fields cleaned, and an invoice's deadline; InvalidRequest (per field) else."""
    errors: dict[str, str] = {}
    name = re.sub(r"\s+", " ", str(sale.name or "")).strip()
    email = str(sale.email or "").strip().lower()
    phone = re.sub(r"\s+", " ", str(sale.phone or "")).strip()
    reason = re.sub(r"\s+", " ", str(sale.reason or "")).strip()
    try:
        name, email = checkout.clean_customer(name, email or "counter@example.invalid")
    except InvalidRequest as exc:
        errors.update(
            {k: v for k, v in exc.details.get("fields", {}).items() if k == "name" or (k == "email" and sale.email)}
        )
    if not sale.email:
        email = ""
    if phone and not PHONE_RE.match(phone):
        errors["phone"] = _("Please enter a phone number (digits, spaces, + - / ( )).")
    if sale.method not in METHODS:
        errors["method"] = _("Please choose how the customer pays.")
    if sale.channel not in CHANNELS:
        errors["channel"] = _("Please choose counter or phone.")
    deadline = None
    billing = invoices.clean_billing(sale.billing, errors) if sale.method == INVOICE else None
    due = sale.due
    if sale.method == INVOICE and billing is not None and due is None:
        first_day = timezone.localtime(min(s["start"] for s in sessions)).date()
        due = min(invoices.default_due(timezone.localtime(now).date()), first_day)
    if sale.method == INVOICE:
        deadline = invoice_deadline(due, sessions, now, errors)
    if sale.method == COMPLIMENTARY and not reason:
        errors["reason"] = _("Please give the reason for complimentary tickets.")
    if len(reason) > 200:
        errors["reason"] = _("Please use at most 200 characters for the reason.")
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    cleaned = CounterSale(
        name,
        sale.method,
        sale.channel,
        email,
        phone,
        due,
        reason,
        sale.by,
        sale.by_id,
        billing,
        sale.voucher,
        sale.donation,
    )
    return cleaned, deadline


def invoice_deadline(due: date | None, sessions: list[Session], now: datetime, errors: dict) -> datetime | None:
    """The end of the due day, local time: the seats stay reserved until then. It must be a day to
    come, on or before the first performance's day (then the performance's start is the limit)."""
    if not isinstance(due, date):
        errors["due"] = _("Please give the date the invoice is due.")
        return None
    first = min(s["start"] for s in sessions)
    end_of_day = datetime.combine(due + timedelta(days=1), time.min, tzinfo=timezone.get_current_timezone())
    if end_of_day <= now:
        errors["due"] = _("The due date must be today or later.")
        return None
    if due > timezone.localtime(first).date():
        errors["due"] = _("The due date must be on or before the day of the performance.")
        return None
    return min(end_of_day, first)


def sell(owner: str, cart_id: ObjectId | None, sale: CounterSale) -> Order:
    """Sell everything in the staff member's cart to the customer. Returns the order: paid (cash,
    card terminal, complimentary) or waiting for its invoice. Submitting twice returns the same order."""
    now = clock.now()
    cart = mongo.carts().find_one({"_id": cart_id, "owner": owner}) if cart_id else None
    if cart is None:
        raise NotFound(_("There are no seats on hold at this counter."))
    if cart["state"] in (CartState.PAYING, CartState.DONE):
        return _settle_if_paid_now(_order_of_sold_cart(cart))
    if cart["state"] != CartState.ACTIVE or cart["expiresAt"] <= now:
        cart_service.expire_cart(cart["_id"], now, owner=owner)
        raise CartExpired(
            _("The hold ended (nothing was done for a while) and the seats were released. Please choose again.")
        )
    if not cart["items"]:
        raise InvalidRequest(_("The cart is empty: choose seats first."))
    offers.check_ticket_rules(cart["items"])  # companion only with a wheelchair space, max per type
    sessions = payment_service.cart_sessions(cart)
    sale, deadline = clean_sale(sale, sessions, now)
    code = payment_service.voucher_for(sale.method, sale.voucher, now)
    donated = counter_donation(sale, sessions)
    if sale.method == COMPLIMENTARY and cart.get("promo"):
        message = _("A promo code is applied; remove it before giving the tickets away.")
        raise InvalidRequest(message, fields={"method": message})
    until = deadline or cart_service.next_expiry(cart, now, owner)
    customer = {"name": sale.name, "email": sale.email, **({"phone": sale.phone} if sale.phone else {})}
    order_ref = checkout.new_booking_ref()
    unused_code = promos.give_back_unused(cart)  # its seats left the cart: no discount, the use goes back
    moved = mongo.carts().find_one_and_update(
        {"_id": cart["_id"], "owner": owner, **live_cart_filter(now)},
        {
            "$set": {
                "state": CartState.PAYING,
                "checkoutOn": now,
                "customer": customer,
                "payMethod": sale.method,
                "expiresAt": until,
                "orderRef": order_ref,
                "channel": sale.channel,
                "soldBy": {"id": sale.by_id, "name": sale.by},
                **({"comp": {"reason": sale.reason}} if sale.method == COMPLIMENTARY else {}),
                **({"billing": sale.billing.as_document()} if sale.billing is not None else {}),
                **({"voucherCode": code} if code else {}),
                **({"donation": donated} if donated else {}),
                **unused_code,
            }
        },
        return_document=ReturnDocument.AFTER,
    )
    if moved is None:
        current = mongo.carts().find_one({"_id": cart["_id"], "owner": owner})
        if current and current["state"] in (CartState.PAYING, CartState.DONE):
            return _settle_if_paid_now(_order_of_sold_cart(current))  # a double submit
        raise CartExpired(_("The hold ended meanwhile and the seats were released. Please choose again."))
    faults.point("counter.after_cart")
    if unused_code:
        promos.finish_give_back(moved)
    order = checkout.store_order(moved, make=lambda c, ref: _counter_order(c, ref, sessions))
    faults.point("counter.after_order")
    return _settle_if_paid_now(_numbered(order))


def counter_donation(sale: CounterSale, sessions: list[Session]) -> int:
    """The donation staff took with the sale (cents; 0: none): any amount in the limits when the
    theater takes donations, and only with money taken now (no invoice, nothing complimentary)."""
    if not str(sale.donation or "").strip():
        return 0
    if sale.method not in (CASH, CARD_TERMINAL):
        message = _("A donation is taken in cash or by the card terminal.")
        raise InvalidRequest(message, fields={"donation": message})
    offer = payment_service.donation_offer(sessions)
    return donations.chosen(sale.donation, {**offer, "free": True} if offer else None)


def _order_of_sold_cart(cart: Cart) -> Order:
    """The order of a cart staff sold already (a double submit, or after a crash between the cart's
    write and the order's): found under the cart's reference, or stored now."""
    order = mongo.orders().find_one({"ref": cart["orderRef"], "cartId": cart["_id"]}) if cart.get("orderRef") else None
    if order is not None:
        return _numbered(order)
    if cart["state"] != CartState.PAYING:
        raise NotFound(_("No such order."))
    sessions = payment_service.cart_sessions(cart)
    return _numbered(checkout.store_order(cart, make=lambda c, ref: _counter_order(c, ref, sessions)))


def _numbered(order: Order) -> Order:
    """An invoice's number given (again after a crash or a double submit: the series gives one
    number per order) and its mail queued; any other order as it is."""
    if not order.get("invoice") or order.get("invoiceNo"):
        return order
    number = invoices.assign(order["_id"], ref=order["ref"])
    outbox.queue_reservation_notice(order)
    return {**order, "invoiceNo": number} if number is not None else order


def _counter_order(cart: Cart, ref: str, sessions: list[Session]) -> Order:
    """The buyer's pending order (lines, VAT, totals), as sold by staff: no online booking fee,
    the channel, who sold it, the customer's phone, a complimentary sale's reason."""
    order = payment_service.pending_order(cart, ref, sessions)
    amounts = pricing.cart_totals(cart)
    order["fee"] = {"amount": 0, "vat": order["fee"]["vat"]}  # the booking fee is the online shop's
    order["total"] = amounts.total + int(cart.get("donation") or 0)
    order["channel"] = cart.get("channel", BOX_OFFICE)
    order["soldBy"] = cart.get("soldBy", {})
    order["payment"]["intent"] = f"counter-{order['_id']}"
    customer = cart.get("customer")
    phone = customer.get("phone") if customer else None
    if phone:
        order["phone"] = phone
    if cart.get("comp"):
        order["compReason"] = cart["comp"]["reason"]
    if cart.get("billing") and order["method"] == INVOICE:
        theater = mongo.theaters().find_one({"_id": sessions[0].get("theaterId")}, {"seller": 1})
        billing = invoices.Billing(cart["billing"]["company"], cart["billing"]["address"], cart["billing"]["vatId"])
        due = invoices.due_day(cart["expiresAt"])
        order["invoice"] = invoices.document(seller=invoices.seller_of(theater), billing=billing, due=due)
        if order.get("email"):  # the invoice's mail, in the insert: no invoice without it
            order["changeNotices"] = [*order.get("changeNotices", []), outbox.new_notice(outbox.INVOICE)]
    return order


def _settle_if_paid_now(order: Order) -> Order:
    """Cash, card terminal and complimentary are paid as the order is made: settle it (again after
    a crash or a double submit: settle is idempotent), a gift voucher's part first. An invoice waits."""
    if order["method"] in PAID_AT_ONCE:
        order = payment_service.pay_voucher_part(order)
    if order["method"] not in PAID_AT_ONCE or order["state"] != OrderState.PENDING_PAYMENT:
        if order["state"] in (OrderState.PAID,) and order.get("settling"):
            return payment_service.finish_paid(order["_id"])
        return order
    provider = payments.provider("counter")
    payment = provider.paid_at_counter(order)  # type: ignore[attr-defined]
    settled = payment_service.settle(payment, order)
    if settled is None:
        raise NotFound(_("No such order."))
    by = (order.get("soldBy") or {}).get("name", "")
    mongo.orders().update_one(
        {"_id": order["_id"], "ref": order["ref"], "paidWith.id": payment.id},
        {"$set": {"paidWith.by": by, "paidWith.means": order["method"]}},
    )
    return mongo.orders().find_one({"_id": order["_id"], "ref": order["ref"]}) or settled


def mark_invoice_paid(order_id: ObjectId, *, by: str) -> Order:
    """The invoice's money arrived: the order becomes paid and its seats sold (as at the box office)."""
    return payment_service.mark_paid_at_counter(order_id, by=by)


def sell_seats(*, owner: str, session_id: ObjectId, seat_keys: list[str], sale: CounterSale) -> Order:
    """Hold these seats under a cart of the owner's and sell them at once: the counter's hold
    (``holds.BOX_OFFICE``: the box office's hours, house seats) and ``sell``, as staff do in two
    steps (the REST API's reservations and complimentary orders). The sale's fields are checked
    before anything is held; a sale refused after the hold gives the seats back at once.

    The owner names one sale: called again with it (a retry after a crash), the cart an earlier
    call left is finished, as a double submit at the counter is, instead of holding anew."""
    session = mongo.sessions().find_one({"_id": session_id}, {"start": 1})
    if session is None:
        raise NotFound(_("No such session."))
    clean_sale(sale, [session], clock.now())
    earlier = mongo.carts().find_one(
        {"owner": owner, "state": {"$in": [CartState.ACTIVE, CartState.PAYING, CartState.DONE]}},
        {"_id": 1, "state": 1, "items": 1},
        sort=[("createdOn", -1)],
    )
    if earlier is not None and (earlier["state"] != CartState.ACTIVE or earlier.get("items")):
        return sell(owner, earlier["_id"], sale)
    held = holds.hold_seats(session_id, owner, None, seat_keys, context=holds.BOX_OFFICE)
    try:
        return sell(owner, held.cart_id, sale)
    except BookingError:
        cart_service.cancel_cart(held.cart_id, owner)
        raise
