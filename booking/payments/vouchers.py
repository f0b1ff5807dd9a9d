"""Gift vouchers: a value sold once, spent on orders in parts until its balance is gone.

A voucher is one document in ``vouchers`` (``core/domain.Voucher``), found by its code (unique
index). The code is 16 characters of a 32-letter alphabet without the look-alikes (no I, O, 0,
1): 80 random bits from ``secrets``, typed in groups of four; guessing one is hopeless, and the
buyer's checkout field is rate limited like every form.

Every change of a balance is ONE conditional update of the voucher, and the document records it
in the same write, so ``balance == value - sum(redemptions) + sum(refunds)`` always holds
(``breaches``, checked by ``upkeep/invariants.py``):

- **Redeem** (``redeem``): ``{code, balance: {$gte: amount}, expiresAt: {$gt: now},
  redemptions.orderId: {$ne: order}}`` with ``$inc balance -amount`` and the redemption pushed
  ``open``. Two orders racing for one balance cannot both take it; one order redeems once.
- **Give back** (``give_back``): a redemption whose order was never paid (the card part failed or
  expired, the buyer gave up, a crash came between the debit and the order's write) becomes
  ``returned`` and its amount goes back as a refund entry, in one update conditional on it being
  ``open``: given back at most once.
- **Refund** (``VoucherProvider.refund``): a paid order's refund through its voucher part
  (``payments/refunds.py`` allocates it, claims and retries it like any provider's) adds the
  amount back, keyed by the refund's id so a retry adds nothing.

Order of writes when a voucher pays (``apply_to_order``): the voucher is debited first (the
redemption names the order), then the order records its ``voucher`` part. A crash between the
two leaves an ``open`` redemption whose order does not carry it: the order's next visitor finds
and uses it (one redemption per order), else reconcile (``upkeep/reconcile.py``) gives it back.
The card (or the counter) is then asked only for what is left (``amount_due``); a voucher that
covers all is the order's payment itself (``payment_of``).

Expiry: ``BOOKING_VOUCHER_VALIDITY_YEARS`` (3) after the end of the year it was bought in, the
German rule (the general limitation period of BGB §195, from the end of the year, §199), so every
voucher sold in one year ends on the same New Year's Eve; ``BOOKING_VOUCHER_END_OF_YEAR=false``
counts the years from the day of sale instead. An expired voucher is refused with the date.
"""

import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.utils import formats, timezone
from django.utils.translation import gettext
from pymongo.errors import DuplicateKeyError

from booking.core import clock, faults, mongo
from booking.core.domain import Order, OrderState, Voucher, VoucherPart, VoucherRefund, VoucherState
from booking.core.errors import Conflict, InvalidRequest
from booking.core.formatting import format_money
from booking.payments import base, money

logger = logging.getLogger("booking.vouchers")

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # 32 letters: 5 bits each, no I/O/0/1 to misread
CODE_LENGTH = 16  # 80 bits
CODE_RE = re.compile(f"^[{ALPHABET}]{{{CODE_LENGTH}}}$")
PROVIDER = "voucher"
OPEN = "open"
SPENT = "spent"
RETURNED = "returned"
REDEEM_TRIES = 32  # a balance changing under us is read again (each miss is another order's win)
SEARCH_MAX = 50


def vouchers():
    return mongo.vouchers()


# --- codes and limits ---


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


RECEIPT_SERIES = "receipt:vouchers"  # counter sales' receipts: one gap-free series of their own


def sale_label(voucher: Mapping[str, Any]) -> str:
    """A voucher sale as the takings list it: its receipt number (G-000042), or the code's end."""
    number = voucher.get("receiptNo")
    return f"G-{number:06d}" if number else "…" + str(voucher.get("code", ""))[-4:]


def display_code(code: str) -> str:
    """In groups of four, as printed and typed: ABCD-EFGH-JKLM-NPQR."""
    return "-".join(code[i : i + 4] for i in range(0, len(code), 4))


def clean_code(text: Any) -> str:
    """The code as stored, from what a person typed (any case, spaces or dashes between groups);
    InvalidRequest on the ``voucher`` field for anything that cannot be a code."""
    typed = re.sub(r"[\s\-]", "", str(text or "")).upper()
    if not CODE_RE.match(typed):
        message = gettext("This is not a voucher code. A code has 16 letters and digits, as printed on the voucher.")
        raise InvalidRequest(message, fields={"voucher": message})
    return typed


def expiry_for(issued: datetime) -> datetime:
    """When a voucher bought at ``issued`` stops being accepted (module docstring)."""
    years = settings.BOOKING_VOUCHER_VALIDITY_YEARS
    local = timezone.localtime(issued)
    if settings.BOOKING_VOUCHER_END_OF_YEAR:
        first_day_after = local.date().replace(year=local.year + years + 1, month=1, day=1)
    else:
        day = local.date()
        try:
            first_day_after = day.replace(year=day.year + years)
        except ValueError:  # 29 February
            first_day_after = day.replace(year=day.year + years, day=28)
    return datetime.combine(first_day_after, time.min, tzinfo=timezone.get_current_timezone())


def last_day(voucher: Mapping[str, Any]) -> str:
    """The last day it is accepted, as people read dates ("31 December 2029")."""
    day = (timezone.localtime(voucher["expiresAt"]) - timedelta(days=1)).date()
    return formats.date_format(day, "DATE_FORMAT")


def clean_value(value: Any) -> int:
    """A voucher's value in cents within BOOKING_VOUCHER_MIN_VALUE..BOOKING_VOUCHER_MAX_VALUE."""
    low, high = settings.BOOKING_VOUCHER_MIN_VALUE, settings.BOOKING_VOUCHER_MAX_VALUE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        currency = settings.BOOKING_CURRENCY
        message = gettext("A voucher is worth from %(low)s to %(high)s.") % {
            "low": format_money(low, currency),
            "high": format_money(high, currency),
        }
        raise InvalidRequest(message, fields={"value": message})
    return value


# --- issue ---


def issue(
    *,
    value: int,
    sold_via: str,
    now: datetime,
    by: str = "",
    buyer: str = "",
    method: str = "",
    order_ref: str = "",
    state: VoucherState = VoucherState.ACTIVE,
    extra: Mapping[str, Any] | None = None,
) -> Voucher:
    """A new voucher of ``value`` cents. ``sold_via``: "counter" or "online"; an online sale is
    ``pending`` until its order is paid (``activate``). ``extra``: more fields, in the same insert."""
    value = clean_value(value)
    buyer = " ".join(str(buyer or "").split())[:200]
    for _ in range(5):  # 80 random bits: a collision is as good as impossible, but never a 500
        voucher: Voucher = {
            "_id": ObjectId(),
            "code": new_code(),
            "value": value,
            "balance": value,
            "currency": settings.BOOKING_CURRENCY,
            "state": state,
            "issuedOn": now,
            "expiresAt": expiry_for(now),
            "soldVia": sold_via,
            "soldBy": by,
            "buyer": buyer,
            "method": method,
            "orderRef": order_ref,
            "redemptions": [],
            "refunds": [],
            **(extra or {}),  # type: ignore[typeddict-item]
        }
        try:
            vouchers().insert_one(voucher)
        except DuplicateKeyError:
            continue
        logger.info("voucher %s… of %d issued (%s)", voucher["code"][:4], value, sold_via)
        return voucher
    raise RuntimeError("could not draw an unused voucher code")


def activate(voucher_id: ObjectId) -> bool:
    """A voucher sold online becomes spendable once its order is paid (safe to repeat)."""
    done = vouchers().update_one(
        {"_id": voucher_id, "state": VoucherState.PENDING}, {"$set": {"state": VoucherState.ACTIVE}}
    )
    return bool(done.modified_count)


# --- reads ---


def find(voucher_id: ObjectId) -> Voucher | None:
    return vouchers().find_one({"_id": voucher_id})


def by_code(code: str) -> Voucher | None:
    return vouchers().find_one({"code": code})


def usable(code_text: Any, now: datetime) -> Voucher:
    """The voucher a buyer or staff typed, if it can pay now; InvalidRequest (field ``voucher``)
    saying why not: not a code, unknown, not paid yet, expired, used up."""
    code = clean_code(code_text)
    voucher = by_code(code)
    message = ""
    if voucher is None:
        message = gettext("We do not know this voucher code. Please check it.")
    elif voucher["state"] != VoucherState.ACTIVE:
        message = gettext("This voucher is not paid yet.")
    elif voucher["expiresAt"] <= now:
        message = gettext("This voucher expired after %(date)s.") % {"date": last_day(voucher)}
    elif voucher["balance"] <= 0:
        message = gettext("This voucher is used up.")
    if message:
        raise InvalidRequest(message, fields={"voucher": message})
    assert voucher is not None
    return voucher


def search(text: str = "", limit: int = SEARCH_MAX) -> list[Voucher]:
    """Staff: the newest vouchers, or those whose code starts with what was typed (4 characters
    or more), or whose buyer's name contains it."""
    text = " ".join(str(text or "").split())[:100]
    query: dict = {}
    if text:
        typed = re.sub(r"[\s\-]", "", text).upper()
        by_name = {"buyer": {"$regex": re.escape(text), "$options": "i"}}
        if len(typed) >= 4 and all(c in ALPHABET for c in typed):
            query = {"$or": [{"code": {"$regex": f"^{typed}"}}, by_name]}
        else:
            query = by_name
    # newest first along issued_newest; a name is matched while walking it (a few thousand vouchers)
    newest = [("issuedOn", -1), ("_id", -1)]
    return list(vouchers().find(query).sort(newest).hint(newest).limit(limit))


# --- redeem, give back ---


@dataclass(frozen=True)
class Redemption:
    voucher_id: ObjectId
    redemption_id: str
    amount: int
    code: str


def redeem(*, code: str, order_id: ObjectId, ref: str, wanted: int, now: datetime) -> Redemption | None:
    """Take up to ``wanted`` cents of the voucher for the order: what its balance allows, in one
    conditional update. The order's redemption if it has one already (a second submit, or the
    finisher after a crash). None when nothing could be taken (used up, expired, unknown)."""
    if wanted <= 0:
        return None
    for _ in range(REDEEM_TRIES):
        voucher = vouchers().find_one({"code": code})
        if voucher is None:
            return None
        earlier = _open_redemption_of(voucher, order_id)
        if earlier is not None:
            return Redemption(voucher["_id"], earlier["_id"], earlier["amount"], code)
        if voucher["state"] != VoucherState.ACTIVE or voucher["expiresAt"] <= now:
            return None
        amount = min(voucher["balance"], wanted)
        if amount <= 0:
            return None
        rid = f"v{secrets.token_hex(6)}"
        entry = {"_id": rid, "orderId": order_id, "ref": ref, "amount": amount, "at": now, "state": OPEN}
        taken = vouchers().update_one(
            {
                "code": code,
                "state": VoucherState.ACTIVE,
                "balance": {"$gte": amount},
                "expiresAt": {"$gt": now},
                "redemptions.orderId": {"$ne": order_id},
            },
            {
                "$inc": {"balance": -amount},
                "$push": {"redemptions": entry},
            },
        )
        if taken.modified_count:
            return Redemption(voucher["_id"], rid, amount, code)
    raise Conflict(gettext("This voucher is being used by another booking right now. Please try again."))


def _open_redemption_of(voucher: Mapping[str, Any], order_id: ObjectId) -> dict | None:
    for redemption in voucher.get("redemptions") or []:
        if redemption["orderId"] == order_id and redemption["state"] != RETURNED:
            return redemption
    return None


def give_back(voucher_id: ObjectId, redemption_id: str, why: str, now: datetime | None = None) -> int:
    """An open redemption's amount goes back to the balance, once. Returns the amount given back
    (0 when it was not open: spent, or given back already)."""
    voucher = vouchers().find_one({"_id": voucher_id, "redemptions._id": redemption_id}, {"redemptions.$": 1})
    if voucher is None:
        return 0
    redemption = voucher["redemptions"][0]
    if redemption["state"] != OPEN:
        return 0
    now = now or clock.now()
    back = {"_id": f"back-{redemption_id}", "orderId": redemption["orderId"], "ref": redemption["ref"]}
    done = vouchers().update_one(
        {"_id": voucher_id, "redemptions": {"$elemMatch": {"_id": redemption_id, "state": OPEN}}},
        {
            "$inc": {"balance": redemption["amount"]},
            "$set": {"redemptions.$.state": RETURNED},
            "$push": {"refunds": {**back, "amount": redemption["amount"], "at": now, "why": why}},
        },
    )
    if done.modified_count:
        amount, ref = redemption["amount"], redemption["ref"]
        logger.info("voucher %s: %d given back (%s, order %s)", voucher_id, amount, why, ref)
        return redemption["amount"]
    return 0


def mark_spent(voucher_id: ObjectId, redemption_id: str) -> None:
    """The order was paid: the redemption is final (a refund now goes through ``refunds``)."""
    vouchers().update_one(
        {"_id": voucher_id, "redemptions": {"$elemMatch": {"_id": redemption_id, "state": OPEN}}},
        {"$set": {"redemptions.$.state": SPENT}},
    )


def open_redemptions(before: datetime, limit: int = 500) -> list[tuple[ObjectId, dict]]:
    """Reconcile: (voucher id, redemption) of redemptions still open since before ``before``."""
    found = []
    query = {"redemptions": {"$elemMatch": {"state": OPEN, "at": {"$lte": before}}}}
    for voucher in vouchers().find(query, {"redemptions": 1}).limit(limit):
        for redemption in voucher["redemptions"]:
            if redemption["state"] == OPEN and redemption["at"] <= before:
                found.append((voucher["_id"], redemption))
    return found


# --- an order paid (partly) by voucher ---


amount_due = money.amount_due


def payment_id(voucher_id: ObjectId, redemption_id: str) -> str:
    return f"voucher:{voucher_id}:{redemption_id}"


def _voucher_of_payment(payment: str) -> tuple[ObjectId, str]:
    _, voucher_id, redemption_id = payment.split(":")
    return ObjectId(voucher_id), redemption_id


def payment_of(order: Mapping[str, Any]) -> base.Payment:
    """The voucher part of the order as a succeeded payment: settles an order it covers in full."""
    part = order["voucher"]
    return base.Payment(
        provider=PROVIDER,
        id=part["id"],
        status=base.SUCCEEDED,
        amount=part["amount"],
        currency=order["currency"],
        order_id=str(order["_id"]),
        order_ref=order["ref"],
    )


def apply_to_order(order: Order, code: str, now: datetime) -> Order:
    """The voucher pays what it can of a pending order not yet asked of the card: the voucher
    debited, then the order's ``voucher`` part written. Returns the order as it is afterwards
    (without a voucher part when the voucher could pay nothing)."""
    if order.get("voucher") or order["state"] != OrderState.PENDING_PAYMENT:
        return order
    intent = order["payment"].get("intent")
    redeemed = redeem(code=code, order_id=order["_id"], ref=order["ref"], wanted=order["total"], now=now)
    if redeemed is None:
        mongo.orders().update_one({"_id": order["_id"], "ref": order["ref"]}, {"$unset": {"voucherCode": ""}})
        without_code = order.copy()
        without_code.pop("voucherCode", None)
        return without_code
    faults.point("voucher.after_debit")
    part: VoucherPart = {
        "voucherId": redeemed.voucher_id,
        "redemption": redeemed.redemption_id,
        "id": payment_id(redeemed.voucher_id, redeemed.redemption_id),
        "provider": PROVIDER,
        "amount": redeemed.amount,
        "codeEnd": code[-4:],
    }
    written = mongo.orders().update_one(
        {
            "_id": order["_id"],
            "ref": order["ref"],
            "state": OrderState.PENDING_PAYMENT,
            "voucher": {"$exists": False},
            "payment.intent": intent,
        },
        {"$set": {"voucher": part}, "$unset": {"voucherCode": ""}},
    )
    faults.point("voucher.after_order")
    current = mongo.orders().find_one({"_id": order["_id"], "ref": order["ref"]})
    if not written.modified_count and (current or {}).get("voucher", {}).get("redemption") != redeemed.redemption_id:
        give_back(redeemed.voucher_id, redeemed.redemption_id, "order changed meanwhile")
    return current or order


def give_back_for_order(order: Mapping[str, Any], why: str) -> int:
    """An order that will never be paid returns its voucher part (safe to repeat)."""
    part = order.get("voucher")
    if not part or order.get("paidWith"):
        return 0
    return give_back(part["voucherId"], part["redemption"], why)


class VoucherProvider(base.Provider):
    """The voucher as a payment, so refunds find their way back to it (``refunds.allocate``)."""

    def __init__(self):
        super().__init__(name=PROVIDER, online=True)

    def start(self, order: Mapping[str, Any], *, idempotency_key: str) -> base.Payment:
        return payment_of(order)

    def retrieve(self, payment_id: str) -> base.Payment:
        return base.Payment(provider=self.name, id=payment_id, status=base.SUCCEEDED, amount=0, currency="")

    def cancel(self, payment_id: str) -> base.Payment:
        return self.retrieve(payment_id)

    def refund(self, payment_id: str, amount: int, *, refund_key: str, attempt: int = 1) -> base.Refund:
        """The amount goes back onto the voucher, once per refund key (even past its expiry: the
        money is the holder's; staff may hand it out otherwise)."""
        voucher_id, redemption_id = _voucher_of_payment(payment_id)
        entry: VoucherRefund = {
            "_id": refund_key,
            "redemption": redemption_id,
            "amount": amount,
            "at": clock.now(),
            "why": "refund",
        }
        vouchers().update_one(
            {"_id": voucher_id, "refunds._id": {"$ne": refund_key}},
            {"$inc": {"balance": amount}, "$push": {"refunds": entry}},
        )
        if vouchers().find_one({"_id": voucher_id, "refunds._id": refund_key}, {"_id": 1}) is None:
            raise base.ProviderError(f"voucher {voucher_id} is gone")
        return base.Refund(
            provider=self.name, id=refund_key, amount=amount, status=base.SUCCEEDED, refund_key=refund_key
        )


# --- the invariant ---


def breaches() -> list[str]:
    """Every voucher's balance is its value less its redemptions plus what came back, and never
    below zero (a scan on purpose, hinted on _id like the other invariants)."""
    found = []
    fields = {"code": 1, "value": 1, "balance": 1, "redemptions": 1, "refunds": 1}
    for voucher in vouchers().find({}, fields, hint=[("_id", 1)]):
        spent = sum(r["amount"] for r in voucher.get("redemptions") or [])
        back = sum(r["amount"] for r in voucher.get("refunds") or [])
        expected = voucher["value"] - spent + back
        label = f"voucher {voucher['code'][:4]}… ({voucher['_id']})"
        if voucher["balance"] != expected:
            found.append(f"{label}: balance {voucher['balance']}, its value less redemptions plus refunds {expected}")
        if voucher["balance"] < 0:
            found.append(f"{label}: balance {voucher['balance']} is below zero")
    return found
