"""Gift vouchers bought online and paid by card (the voucher itself: payments/vouchers.py).

Order of writes:

1. ``start_purchase``: the voucher is stored ``pending`` (never spendable: ``redeem`` takes only
   ``active`` ones) with its buyer, e-mail, language and a random page token, then a
   PaymentIntent is made for its value (metadata ``voucher``; idempotency key from the voucher)
   and its id written onto the voucher (``purchase.intent``).
2. ``pay``: the buyer's card confirms the PaymentIntent (the existing Stripe provider).
3. ``activate_paid``: a succeeded payment activates the voucher in ONE conditional update
   (``state: pending`` and this intent -> ``active``, ``mail: pending``). The return page, the
   webhook and reconcile may all call it at once: one of them wins and only the winner queues
   the mail, and the mail itself is claimed before sending (notifications/voucher_mail.py), so
   the buyer gets one mail.

A crash after the payment but before step 3 leaves a pending voucher whose intent succeeded:
reconcile (``reconcile_purchases``) asks Stripe and activates it. A payment that never succeeds
leaves the voucher pending; once its window (BOOKING_PAYMENT_WINDOW_SECONDS) and the late period
are over, reconcile cancels the PaymentIntent (a payment that got through meanwhile activates it
instead) and marks the purchase ``canceled``: the voucher stays unspendable for good.
"""

import logging
import secrets
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from bson.errors import InvalidId
from django.conf import settings
from django.utils.translation import gettext

from booking import payments
from booking.core import clock, faults, mongo, work_queue
from booking.core.domain import Voucher, VoucherState
from booking.core.errors import InvalidRequest, NotFound
from booking.payments import base, vouchers
from booking.sales import checkout

logger = logging.getLogger("booking.vouchers")

SOLD_ONLINE = "online"
MAIL_PENDING = "pending"
MAIL_SENT = "sent"
MAIL_FAILED = "failed"
CANCELED = "canceled"


def provider() -> base.Provider:
    return payments.provider("stripe")


def clean_value_text(text: Any) -> int:
    """The value typed in whole currency units ("25") as cents, within the counter's limits."""
    raw = str(text or "").strip()
    cents = int(raw) * 100 if raw.isascii() and raw.isdigit() and len(raw) <= 9 else -1
    return vouchers.clean_value(cents)


def start_purchase(
    *, theater_id: ObjectId, value: int, buyer: str, email: str, language: str, now: datetime | None = None
) -> Voucher:
    """A pending voucher and its PaymentIntent. InvalidRequest (nothing stored) for a value out of
    the limits, an empty or overlong name or a bad e-mail address."""
    value = vouchers.clean_value(value)
    name, address = checkout.clean_customer(buyer, email)
    now = now or clock.now()
    purchase = {
        "token": secrets.token_urlsafe(24),
        "intent": None,
        "status": base.OPEN,
        "attempt": 1,
        "until": now + timedelta(seconds=settings.BOOKING_PAYMENT_WINDOW_SECONDS),
    }
    extra = {
        "email": address,
        "language": checkout.buyer_language(language),
        "theaterId": theater_id,
        "purchase": purchase,
    }
    voucher = vouchers.issue(
        value=value,
        sold_via=SOLD_ONLINE,
        now=now,
        buyer=name,
        method=payments.CARD,
        state=VoucherState.PENDING,
        extra=extra,
    )
    return ensure_intent(voucher)


def ensure_intent(voucher: Voucher) -> Voucher:
    """The voucher's PaymentIntent, made once (the idempotency key is the voucher's)."""
    purchase = voucher["purchase"]
    if purchase.get("intent"):
        return voucher
    as_order = {
        "_id": voucher["_id"],
        "ref": f"voucher-{voucher['_id']}",
        "total": voucher["value"],
        "currency": voucher["currency"],
    }
    attempt = purchase.get("attempt", 1)
    payment = provider().start(as_order, idempotency_key=f"voucher-{voucher['_id']}-{attempt}")
    mongo.vouchers().update_one(
        {"_id": voucher["_id"], "purchase.intent": None}, {"$set": {"purchase.intent": payment.id}}
    )
    return by_id(voucher["_id"])


def by_id(voucher_id: ObjectId) -> Voucher:
    found = mongo.vouchers().find_one({"_id": voucher_id})
    if found is None:
        raise NotFound("no such voucher")
    return found


def by_token(token: Any) -> Voucher:
    """The purchase a buyer's page names (its token, never the code)."""
    text = str(token or "")
    found = mongo.vouchers().find_one({"purchase.token": text}) if 20 <= len(text) <= 64 else None
    if found is None:
        raise NotFound("no such voucher purchase")
    return found


def pay(*, token: str, means: str) -> tuple[Voucher, base.Payment]:
    """The buyer's card confirms the voucher's PaymentIntent; a success activates it."""
    voucher = by_token(token)
    if voucher["state"] != VoucherState.PENDING:
        return voucher, base.Payment(
            provider="stripe", id="", status=base.SUCCEEDED, amount=voucher["value"], currency=voucher["currency"]
        )
    if voucher["purchase"].get("status") == CANCELED:
        raise InvalidRequest(gettext("This purchase was canceled. Please start again."))
    if not means or len(means) > 200:
        raise InvalidRequest(gettext("Please check the card details."))
    voucher = ensure_intent(voucher)
    intent = voucher["purchase"]["intent"]
    try:
        payment = provider().confirm(intent, means, idempotency_key=f"voucher-{voucher['_id']}-{means[-24:]}")
    except base.PaymentDeclined as exc:
        # a refused PaymentIntent is not confirmed again: the next card gets a new one
        mongo.vouchers().update_one(
            {"_id": voucher["_id"], "purchase.intent": intent},
            {
                "$set": {"purchase.intent": None},
                "$inc": {"purchase.attempt": 1},
                "$push": {"purchase.previous": intent},
            },
        )
        failed = exc.payment or base.Payment(provider="stripe", id=intent, status=base.FAILED, amount=0, currency="")
        return voucher, base.Payment(**{**failed.__dict__, "status": base.FAILED, "failure": exc.message})
    faults.point("voucher_purchase.after_payment")
    if payment.status == base.SUCCEEDED:
        activate_paid(payment)
    return by_id(voucher["_id"]), payment


def check(*, token: str) -> Voucher:
    """The return page: where the payment stands, asked of Stripe; activates a paid voucher."""
    voucher = by_token(token)
    intent = voucher["purchase"].get("intent")
    if voucher["state"] == VoucherState.PENDING and intent:
        payment = provider().retrieve(intent)
        if payment.status == base.SUCCEEDED:
            activate_paid(payment)
            return by_id(voucher["_id"])
    return voucher


def for_payment(payment_id: str) -> Voucher | None:
    """The voucher a PaymentIntent pays for, if it pays for one."""
    return mongo.vouchers().find_one({"purchase.intent": payment_id}) if payment_id else None


def activate_paid(payment: base.Payment) -> bool:
    """The one conditional update that makes a paid voucher spendable; True for the caller that
    made it (and so queued the buyer's mail), False for every other."""
    if payment.status != base.SUCCEEDED:
        raise ValueError("only a succeeded payment activates a voucher")
    faults.point("voucher_purchase.before_activate")
    now = clock.now()
    done = mongo.vouchers().find_one_and_update(
        {"purchase.intent": payment.id, "state": VoucherState.PENDING},
        {
            "$set": {
                "state": VoucherState.ACTIVE,
                "purchase.status": base.SUCCEEDED,
                "purchase.paidOn": now,
                "mail": MAIL_PENDING,
                "mailDueOn": now,
            }
        },
        projection={"_id": 1},
    )
    if done is None:
        return False
    logger.info("voucher %s paid online: active", done["_id"])
    queue_mail(done["_id"])
    return True


def queue_mail(voucher_id: ObjectId) -> None:
    try:
        work_queue.queue(work_queue.SEND_VOUCHER_MAIL, str(voucher_id))
    except Exception:  # the mail stays pending on the voucher; reconcile queues it again
        logger.exception("could not queue the voucher mail of %s", voucher_id)


def parse_id(text: str) -> ObjectId | None:
    try:
        return ObjectId(text)
    except (InvalidId, TypeError):
        return None


def reconcile_purchases(now: datetime | None = None) -> dict:
    """Pending online vouchers past their window: a payment that succeeded activates them (a crash
    came between the payment and the activation); after the late period the PaymentIntent is
    canceled and the purchase with it. Active vouchers whose mail is still pending are queued
    again. Returns counts."""
    now = now or clock.now()
    grace = timedelta(seconds=settings.BOOKING_PAYMENT_CHECK_GRACE_SECONDS)
    late = timedelta(seconds=settings.BOOKING_PAYMENT_LATE_SECONDS)
    report = {"activated": 0, "canceled": 0, "mails_queued": 0}
    stale = {
        "state": VoucherState.PENDING,
        "soldVia": SOLD_ONLINE,
        "purchase.status": {"$ne": CANCELED},
        "purchase.until": {"$lte": now - grace},
    }
    for voucher in mongo.vouchers().find(stale, {"purchase": 1}).limit(500):
        intent = voucher["purchase"].get("intent")
        payment = provider().retrieve(intent) if intent else None
        if payment is not None and payment.status == base.SUCCEEDED:
            report["activated"] += activate_paid(payment)
            continue
        if voucher["purchase"]["until"] + late > now:
            continue
        if payment is not None:
            payment = provider().cancel(intent)
            if payment.status == base.SUCCEEDED:
                report["activated"] += activate_paid(payment)
                continue
        mongo.vouchers().update_one(
            {"_id": voucher["_id"], "state": VoucherState.PENDING}, {"$set": {"purchase.status": CANCELED}}
        )
        report["canceled"] += 1
    due = now - timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS)
    for voucher in mongo.vouchers().find({"mail": MAIL_PENDING, "mailDueOn": {"$lte": due}}, {"_id": 1}).limit(500):
        queue_mail(voucher["_id"])
        report["mails_queued"] += 1
    return report
