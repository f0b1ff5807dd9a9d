"""Refunds: staff cancel a paid order (all its tickets or some), and the automatic ones (seats
taken before a late payment arrived, a second payment for one order, money for an order that can
no longer be paid). Never silently dropped: a refund is a record on the order before anything is
asked of the provider, and it stays there until the provider confirms it.

Order of writes, each safe to repeat:

1. the order: the refunded tickets move from ``lines`` to ``refundedLines``, a refund record
   ``{_id, amount, payment, status: "pending"}`` is pushed, ``seatsReleased: false``,
   ``refundDue: true``; state ``refunded`` (no ticket left) or ``partially_refunded``. Conditional
   on the refunds the caller saw and on the tickets still being there, so two staff members (or a
   double click) refund a ticket once;
2. the refunded seats ``sold -> free`` (never a seat another paid order has), ``seatsReleased``;
3. the provider: a refund with our refund id as its key, looked up first, so a retry after a crash
   never refunds twice;
4. the record ``succeeded`` (``amountRefunded`` grows), or ``failed`` with ``retryAt``: reconcile
   tries again, doubling the wait, up to BOOKING_REFUND_MAX_TRIES; after that it waits for staff
   (the admin's order page shows it with a "Retry refund" button; ``manage.py worker_status``
   lists it). ``refundDue`` stays set until every refund of the order has succeeded.
"""

import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext, gettext_noop
from pymongo.errors import PyMongoError

from booking import payments
from booking.core import clock, faults, mongo
from booking.core.domain import (
    SEAT_OWNING_ORDER_STATES,
    CartState,
    MailState,
    Order,
    OrderLine,
    OrderState,
    PaymentAmount,
    PaymentRef,
    RefundRecord,
    RefundStatus,
    WebhookEventEntry,
)
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.payments import base, credit_notes, donations, money
from booking.reports import marks
from booking.sales import orders as order_service
from booking.sales import outbox, promos, reservations

logger = logging.getLogger("booking.refunds")

PENDING = RefundStatus.PENDING
SUCCEEDED = RefundStatus.SUCCEEDED
FAILED = RefundStatus.FAILED
CLAIM_SECONDS = 60
NO_LONGER_LIVE = (CartState.EXPIRED, CartState.CANCELED, CartState.DONE)  # a refunded order's cart
SEATS_TAKEN = gettext_noop(  # stored on the order in English; translated where shown (mail, page)
    "Your payment arrived after your hold had ended and someone else had booked the seats meanwhile. "
    "We refunded the full amount."
)


def orders():
    return mongo.orders()


def _record(amount: int, payment: PaymentRef, reason: str, *, tickets=(), by: str = "") -> RefundRecord:
    return {
        "_id": f"r{secrets.token_hex(6)}",
        "amount": amount,
        "payment": {"provider": payment["provider"], "id": payment["id"]},
        "reason": reason,
        "tickets": list(tickets),
        "status": PENDING,
        "tries": 0,
        "by": by,
        "createdOn": clock.now(),
    }


def allocate(order: Order, amount: int) -> list[tuple[PaymentRef, int]]:
    """Which payments of the order an amount goes back through: its gift voucher's part first (the
    theater's money stays with the theater, and the holder can spend it again), then the order's
    payment, up to what is left of it, then the top-ups of exchanges (sales/exchanges.py). A
    provider never refunds more than a payment took, so an order paid partly by card and partly
    at the counter gets two refunds."""
    payments_taken: list[PaymentAmount] = [*voucher_payment(order), order["paidWith"], *(order.get("topUps") or [])]
    back: dict[str, int] = {}
    for refund in order.get("refunds") or []:
        if refund["status"] != FAILED or refund.get("tries", 0) < settings.BOOKING_REFUND_MAX_TRIES:
            back[refund["payment"]["id"]] = back.get(refund["payment"]["id"], 0) + refund["amount"]
    parts: list[tuple[PaymentRef, int]] = []
    for payment in payments_taken:
        if amount <= 0:
            break
        part = min(amount, payment["amount"] - back.get(payment["id"], 0))
        if part > 0:
            parts.append(({"provider": payment["provider"], "id": payment["id"]}, part))
            amount -= part
    if amount > 0 or not parts:  # nothing to give back (free tickets), or more than was ever taken
        parts.append(({"provider": order["paidWith"]["provider"], "id": order["paidWith"]["id"]}, amount))
    return parts


def voucher_payment(order: Order) -> list[PaymentAmount]:
    """The order's gift voucher part as a payment taken, when it is not the order's payment itself
    (a voucher that paid all settled the order: payments/vouchers.py)."""
    part = order.get("voucher")
    if not part or ((paid_with := order.get("paidWith")) and part["id"] == paid_with["id"]):
        return []
    return [{"provider": part["provider"], "id": part["id"], "amount": part["amount"]}]


def _refunds_seen(order: Order) -> dict:
    """A filter clause: the order still has exactly the refunds the caller read."""
    n = len(order.get("refunds") or [])
    clause: dict[str, Any] = {f"refunds.{n}": {"$exists": False}}
    if n:
        clause[f"refunds.{n - 1}._id"] = order["refunds"][n - 1]["_id"]
    return clause


def _webhook_events(refund_id: str, *, ended: bool) -> list[WebhookEventEntry]:
    """A refund's webhook events: refunded, and canceled too when no ticket is left."""
    refunded = outbox.webhook_event(outbox.ORDER_REFUNDED, refund=refund_id)
    return [refunded, outbox.webhook_event(outbox.ORDER_CANCELED)] if ended else [refunded]


def refund_tickets(
    order_id: ObjectId,
    *,
    tickets=None,
    reason: str = "",
    by: str = "",
    notice: str | None = "cancel",
    keep: int = 0,
    fingerprint: str | None = None,
) -> Order:
    """Staff: refund the whole order (``tickets`` None) or these ticket codes; their seats become
    free for sale again. The booking fee goes back with the last ticket. ``notice``: the kind of
    e-mail the customer gets (notifications/change_notices.py), stored in the same write; None: none.
    ``keep``: what the theater keeps of the amount (the buyer's cancellation fee, sales/self_service.py),
    recorded on the first refund record as ``keptFee`` for the receipt's correction.
    ``fingerprint``: the order's ``orders.cancel_fingerprint`` the buyer was shown; a changed
    order is refused."""
    order = orders().find_one({"_id": order_id})
    if order is None:
        raise NotFound(gettext("No such order."))
    if order["state"] not in SEAT_OWNING_ORDER_STATES:
        raise Conflict(f"Order {order['ref']} is {order['state'].replace('_', ' ')}; there is nothing to refund.")
    paid_with = order.get("paidWith")
    if not paid_with:
        raise Conflict(f"Order {order['ref']} has no payment to refund.")
    if order.get("settling"):
        raise Conflict(f"Order {order['ref']} is still being completed; try again in a moment.")
    if order.get("exchangeOpen"):
        raise Conflict(f"Order {order['ref']} is being exchanged right now; try again in a moment.")
    if fingerprint is not None and order_service.cancel_fingerprint(order) != fingerprint:
        raise Conflict(gettext("The booking changed since you looked at it; please look again and confirm."))
    lines = order["lines"]
    codes = {line["ticket"] for line in lines} if not tickets else set(tickets)
    selected = [line for line in lines if line["ticket"] in codes]
    if not selected or len(selected) != len(codes):
        raise InvalidRequest(gettext("Choose tickets of this order to refund."))
    remaining = [line for line in lines if line["ticket"] not in codes]
    gross = refund_amount(order, codes)
    kept = min(max(keep, 0), gross)
    amount = gross - kept
    why = reason or "Canceled by the theater"
    records = [_record(part, paid, why, tickets=sorted(codes), by=by) for paid, part in allocate(order, amount)]
    refund = records[0]
    donated = donations.amount_of(order) if not remaining else 0
    if donated:
        refund["donation"] = donated  # the takings report counts it apart from ticket money
    if kept:
        refund["keptFee"] = kept
    now = clock.now()
    owed = credit_notes.owed_for_refund(
        order, refund_ids=[r["_id"] for r in records], tickets=sorted(codes), amount=amount, reason=why
    )
    faults.point("refund.before_order")  # tests: another refund of this order between the read and the write
    changed = orders().update_one(
        {
            "_id": order_id,
            "state": order["state"],
            "lines.ticket": {"$all": sorted(codes)},
            "exchangeOpen": {"$exists": False},
            **_refunds_seen(order),
        },
        {
            "$set": {
                "state": OrderState.REFUNDED if not remaining else OrderState.PARTIALLY_REFUNDED,
                "lines": remaining,
                "seatsReleased": False,
                "refundDue": True,
                **({"canceledOn": now, "canceledBy": by, "cancelReason": reason} if not remaining else {}),
                **(credit_notes.DUE if owed else {}),
            },
            "$push": {
                "refundedLines": {"$each": selected},
                "refunds": {"$each": records},
                **owed,
                **marks.push(marks.sessions_of(order)),
                "webhookEvents": {"$each": _webhook_events(refund["_id"], ended=not remaining)},
                **(
                    {"changeNotices": outbox.new_notice(notice, ref=refund["_id"], refunds=[r["_id"] for r in records])}
                    if notice
                    else {}
                ),
            },
        },
    )
    if not changed.modified_count:
        raise Conflict(gettext("The order changed meanwhile; please look again."))
    faults.point("refund.after_order")
    outbox.queue_webhook_events(outbox.ORDERS, order)
    release_refunded_seats(order_id)
    if not remaining:
        promos.release_for_cart(order["cartId"], states=(CartState.DONE,))  # the code's use goes back
    faults.point("refund.after_seats")
    for record in records:
        process(order_id, record["_id"])
    if owed:
        issue_credit_notes(order_id)
    if notice:
        outbox.queue_change_notices(order_id)
    logger.info("order %s: %d tickets refunded (%d) by %s", order["ref"], len(selected), amount, by or "?")
    return orders().find_one({"_id": order_id})


def issue_credit_notes(order_id: ObjectId) -> None:
    """The order's credit notes written now; one that cannot be is left marked for the mail's
    sender and reconcile (credit_notes.issue_due), and the refund stands."""
    try:
        credit_notes.issue(order_id)
    except (LookupError, PyMongoError):
        logger.warning("credit notes of order %s left to reconcile", order_id, exc_info=True)


def records_of_tickets(order: Order, tickets) -> list[RefundRecord]:
    """The refund records of these tickets: what one ``refund_tickets`` call made (a ticket is
    refunded once), one per payment the amount went back through."""
    wanted = set(tickets)
    return [r for r in order.get("refunds") or [] if wanted & set(r.get("tickets") or ())]


def paid_out_at_counter(records: list[RefundRecord]) -> int:
    """What of these refunds staff hand back themselves (cash or the card terminal): the parts
    through a provider that takes no money online (the box office, the counter)."""
    return sum(r["amount"] for r in records if not payments.provider(r["payment"]["provider"]).online)


def refund_amount(order: Order, codes: set[str]) -> int:
    """What refunding these tickets gives back: their prices less their discounts, and the booking
    fee and the donation with the order's last ticket (a part of the tickets keeps the donation:
    it was given to the theater, not for those seats)."""
    lines = order["lines"]
    last = all(line["ticket"] in codes for line in lines)
    fee = (fee_part["amount"] if (fee_part := order.get("fee")) else 0) + donations.amount_of(order) if last else 0
    return sum(money.line_amount(line) for line in lines if line["ticket"] in codes) + fee


def kept_amount(lines: Sequence[Mapping[str, Any]], kept_per_ticket: int) -> int:
    """What the theater keeps of these tickets' refund: the fee per ticket, never more than a
    ticket's own price (a free ticket keeps nothing)."""
    if kept_per_ticket < 0:
        raise InvalidRequest(gettext("A kept fee cannot be negative."))
    return sum(min(kept_per_ticket, money.line_amount(line)) for line in lines)


@dataclass(frozen=True)
class CancelOutcome:
    """What ``orders.cancel_order`` would do to the order now, for staff to confirm first."""

    seats: list[OrderLine]  # the order's lines: their seats become free, their tickets void
    refunds: list[dict]  # {provider, means, online, amount}: how much goes back through which payment
    ends_reservation: bool  # not paid yet: nothing goes back, the reservation ends
    mail_to: str  # the address the customer is told at; "" when nobody is
    fingerprint: str  # orders.cancel_fingerprint: cancel_order(confirmed=...) checks it is unchanged


def cancel_outcome(order: Order) -> CancelOutcome:
    """Which seats canceling frees, how much money goes back through which payment, and who gets
    a mail; a Conflict when the order cannot be canceled."""
    order_service.require_cancelable(order)
    unpaid = order["state"] == OrderState.PENDING_PAYMENT
    paid_with = order.get("paidWith")
    parts: list[dict] = []
    if paid_with and not unpaid:
        taken = {p["id"]: p for p in [paid_with, *(order.get("topUps") or [])]}
        for payment, amount in allocate(order, refund_amount(order, {line["ticket"] for line in order["lines"]})):
            means = taken[payment["id"]].get("means", "") if payment["id"] in taken else ""
            online = payments.provider(payment["provider"]).online
            parts.append({"provider": payment["provider"], "means": means, "online": online, "amount": amount})
    told = unpaid or bool(paid_with)  # both send the customer a notice (notifications/change_notices.py)
    return CancelOutcome(
        seats=list(order["lines"]),
        refunds=parts,
        ends_reservation=unpaid,
        mail_to=order.get("email", "") if told else "",
        fingerprint=order_service.cancel_fingerprint(order),
    )


def refund_lost_seats(order_id: ObjectId) -> Order:
    """A paid order whose seats someone else has (its payment came after its hold ended): it
    becomes refunded, seats it sold elsewhere go back, the money is refunded, the buyer told."""
    order = orders().find_one({"_id": order_id})
    if order is None or order["state"] != OrderState.PAID or not order.get("settling"):
        return order
    why = "Seats taken before the payment arrived"
    records = [_record(p["amount"], p, why) for p in [order["paidWith"], *voucher_payment(order)]]
    if donations.amount_of(order):
        records[0]["donation"] = donations.amount_of(order)
    changed = orders().update_one(
        {"_id": order_id, "state": OrderState.PAID, "settling": True},
        {
            "$set": {
                "state": OrderState.REFUNDED,
                "lines": [],
                "seatsReleased": False,
                "refundDue": True,
                "lostSeats": True,
                "failure": SEATS_TAKEN,
                "noticeMail": MailState.PENDING,
            },
            "$unset": {"settling": ""},
            "$push": {
                "refundedLines": {"$each": order["lines"]},
                "refunds": {"$each": records},
                **marks.push(marks.sessions_of(order)),
            },
        },
    )
    if not changed.modified_count:
        return orders().find_one({"_id": order_id})
    faults.point("refund.lost_after_order")
    release_refunded_seats(order_id)
    mongo.carts().update_one(
        {"_id": order["cartId"], "state": CartState.PAYING},
        {"$set": {"state": CartState.CANCELED, "endedOn": clock.now()}},
    )
    reservations.release_all(order["cartId"])
    promos.release_for_cart(order["cartId"])  # no sale: the promo code's use goes back
    for record in records:
        process(order_id, record["_id"])
    outbox.queue_payment_notice(order_id)
    return orders().find_one({"_id": order_id})


def extra_payment_record(paid: PaymentAmount, why: str) -> RefundRecord:
    """The refund of money no seat is sold for (``paid``: {provider, id, amount}), as
    ``refund_extra_payment`` records it, for a caller that records it in a write of its own."""
    return _record(paid["amount"], paid, f"Payment not needed ({why})")


def refund_extra_payment(order_id: ObjectId, payment: base.Payment, why: str) -> Order:
    """Money that no seat is sold for: a second payment for a paid order, a payment for a canceled
    order, an amount that is not the order's. It is refunded in full, once."""
    order = orders().find_one({"_id": order_id})
    paid: PaymentRef = {"provider": payment.provider, "id": payment.id}
    refund = _record(payment.amount, paid, f"Payment not needed ({why})")
    changed = orders().update_one(
        {"_id": order_id, "extraPayments.id": {"$ne": payment.id}, "paidWith.id": {"$ne": payment.id}},
        {
            "$push": {
                "extraPayments": {**paid, "amount": payment.amount, "on": clock.now(), "why": why},
                "refunds": refund,
            },
            "$set": {
                "refundDue": True,
                **({"noticeMail": MailState.PENDING} if order["state"] not in SEAT_OWNING_ORDER_STATES else {}),
            },
        },
    )
    if changed.modified_count:
        logger.warning("order %s: payment %s refunded (%s)", order["ref"], payment.id, why)
        faults.point("refund.extra_after_order")
        process(order_id, refund["_id"])
        if order["state"] not in SEAT_OWNING_ORDER_STATES:
            outbox.queue_payment_notice(order_id)
    return orders().find_one({"_id": order_id})


def release_refunded_seats(order_id: ObjectId) -> int:
    """The sold seats of the order's refunded tickets become free (safe to repeat)."""
    order = orders().find_one({"_id": order_id}, {"refundedLines": 1, "seatsReleased": 1})
    if order is None or order.get("seatsReleased") is not False:
        return 0
    return order_service.release_order_seats({"_id": order_id, "lines": order.get("refundedLines", [])})


def process(order_id: ObjectId, refund_id: str, now: datetime | None = None) -> str:
    """Ask the provider for one refund of the order (claimed first, so two workers do not both
    ask). Returns its status afterwards."""
    now = now or clock.now()
    claimed = orders().update_one(
        {
            "_id": order_id,
            "refunds": {
                "$elemMatch": {
                    "_id": refund_id,
                    "status": {"$in": [PENDING, FAILED]},
                    "claimedUntil": {"$not": {"$gt": now}},
                }
            },
        },
        {
            "$set": {"refunds.$.claimedUntil": now + timedelta(seconds=CLAIM_SECONDS), "refunds.$.triedOn": now},
            # tries: since the last staff retry (which starts them again); claims: ever (the
            # provider's keys must never repeat one that may hold a kept 5xx answer)
            "$inc": {"refunds.$.tries": 1, "refunds.$.claims": 1},
        },
    )
    order = orders().find_one({"_id": order_id})
    refund = next(r for r in order["refunds"] if r["_id"] == refund_id)
    if not claimed.modified_count:
        return refund["status"]
    faults.point("refund.after_claim")
    provider = payments.provider(refund["payment"]["provider"])
    try:
        if refund["amount"] == 0 and refund.get("keptFee"):  # all of it kept as a fee: nothing to ask for
            result = base.Refund(provider=provider.name, id="", amount=0, status=base.SUCCEEDED)
        else:
            result = provider.refund(
                refund["payment"]["id"], refund["amount"], refund_key=refund_id, attempt=refund["claims"]
            )
    except base.ProviderError as exc:
        return _failed(order, refund, str(exc))
    faults.point("refund.after_provider")
    if result.status == base.FAILED:
        return _failed(order, refund, "the provider refused the refund")
    done = result.status == base.SUCCEEDED
    update = {
        "$set": {
            "refunds.$.status": SUCCEEDED if done else PENDING,
            "refunds.$.providerRef": result.id,
            "refunds.$.claimedUntil": None,
            "refunds.$.retryAt": None if done else now + timedelta(seconds=settings.BOOKING_REFUND_RETRY_SECONDS),
            "refunds.$.failure": None,
            **({"refunds.$.doneOn": clock.now()} if done else {}),
        }
    }
    if done:
        update["$inc"] = {"amountRefunded": refund["amount"]}
    orders().update_one(
        {"_id": order_id, "refunds": {"$elemMatch": {"_id": refund_id, "status": {"$ne": SUCCEEDED}}}}, update
    )
    _clear_due(order_id)
    return SUCCEEDED if done else PENDING


def _failed(order: Order, refund: RefundRecord, reason: str) -> str:
    tries = max(refund.get("tries", 0), 1)  # this try is counted already: its claim's $inc (read after it)
    now = clock.now()
    retry_at = None
    if tries < settings.BOOKING_REFUND_MAX_TRIES:
        retry_at = now + timedelta(seconds=settings.BOOKING_REFUND_RETRY_SECONDS * 2 ** (tries - 1))
    orders().update_one(
        {"_id": order["_id"], "refunds": {"$elemMatch": {"_id": refund["_id"], "status": {"$ne": SUCCEEDED}}}},
        {
            "$set": {
                "refunds.$.status": FAILED,
                "refunds.$.failure": reason[:300],
                "refunds.$.retryAt": retry_at,
                "refunds.$.claimedUntil": None,
            }
        },
    )
    log = logger.warning if retry_at else logger.error
    log("refund %s of order %s failed (try %d): %s", refund["_id"], order["ref"], tries, reason)
    return FAILED


def _clear_due(order_id: ObjectId) -> None:
    orders().update_one(
        {"_id": order_id, "refundDue": True, "refunds.status": {"$nin": [PENDING, FAILED]}},
        {"$unset": {"refundDue": ""}},
    )


def retry(order_id: ObjectId, refund_id: str) -> str:
    """Staff: try a failed refund again now (also one reconcile gave up on)."""
    orders().update_one(
        {"_id": order_id, "refunds": {"$elemMatch": {"_id": refund_id, "status": FAILED}}},
        {"$set": {"refunds.$.retryAt": clock.now(), "refunds.$.tries": 0}},
    )
    return process(order_id, refund_id)


def retry_due(now: datetime | None = None) -> int:
    """Reconcile: refunds never asked for (a crash after the order write), pending at the
    provider, or failed and due again; seats of refunded tickets not yet freed; the promo code's
    use of an order refunded in full not yet given back."""
    now = now or clock.now()
    tried = 0
    for order in (
        orders().find({"refundDue": True}, {"refunds": 1, "seatsReleased": 1, "state": 1, "cartId": 1}).limit(500)
    ):
        if order.get("seatsReleased") is False:
            release_refunded_seats(order["_id"])
        if order.get("state") == OrderState.REFUNDED:  # no sale after all: the promo code's use goes back (once)
            promos.release_for_cart(order["cartId"], states=NO_LONGER_LIVE)
        for refund in order.get("refunds", []):
            due = refund.get("retryAt")
            claimed = refund.get("claimedUntil")
            if claimed and claimed > now:
                continue
            never_asked_or_due = refund["status"] == PENDING and (due is None or due <= now)
            failed_and_due = refund["status"] == FAILED and due is not None and due <= now
            if never_asked_or_due or failed_and_due:
                tried += 1
                process(order["_id"], refund["_id"], now)
    for order in (
        orders()
        .find(
            {"state": {"$in": [OrderState.REFUNDED, OrderState.PARTIALLY_REFUNDED]}, "seatsReleased": False}, {"_id": 1}
        )
        .limit(500)
    ):
        release_refunded_seats(order["_id"])
    return tried


def failed_refunds(limit: int = 50) -> list[dict]:
    """Refunds waiting for staff or for their next try, for worker_status and the admin."""
    found = []
    for order in orders().find({"refundDue": True}, {"ref": 1, "refunds": 1}).limit(limit):
        for refund in order.get("refunds", []):
            if refund["status"] != SUCCEEDED:
                found.append({"ref": order["ref"], "orderId": order["_id"], **refund})
    return found
