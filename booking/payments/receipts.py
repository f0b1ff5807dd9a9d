"""Receipt numbers: one gap-free series per theater, ``receipt:<theaterId>`` in
``payments/number_series.py`` (taking a number never fails under contention and survives a crash
between its writes; that module's docstring says how). The order gets ``receiptNo``, with
``receiptTheater`` and ``receiptOn``.

Theaters numbered before the series existed kept a counter in ``receipt_counters``
(``{_id: theaterId, last, lastOrder, lastRef}``); a theater's series starts after its last
number, its last holder's number written first.
"""

import dataclasses

from bson import ObjectId
from django.utils.translation import gettext_lazy

from booking.core import clock, mongo
from booking.core.domain import Order, RefundStatus
from booking.payments import number_series


def series_of(theater_id: ObjectId) -> str:
    return f"receipt:{theater_id}"


def theater_of(order: Order) -> ObjectId | None:
    """The theater whose sequence numbers this order: its first session's."""
    if order.get("receiptTheater"):
        return order["receiptTheater"]
    sessions = order.get("sessions") or []
    return sessions[0].get("theaterId") if sessions else None


def _numbered_before(theater_id: ObjectId) -> int:
    """The last number of the theater's former counter (0 if none), its holder's number written."""
    counter = mongo.get_db()["receipt_counters"].find_one({"_id": theater_id})
    if counter is None:
        return 0
    if counter.get("lastOrder") is not None:
        by_ref = {"ref": counter["lastRef"]} if counter.get("lastRef") else {}
        mongo.orders().update_one(
            {"_id": counter["lastOrder"], **by_ref, "receiptNo": {"$exists": False}},
            {"$set": {"receiptNo": counter["last"], "receiptTheater": theater_id, "receiptOn": clock.now()}},
        )
    return counter["last"]


def assign(order_id: ObjectId, *, theater_id: ObjectId | None = None, ref: str | None = None) -> int:
    """The order's receipt number, given now if it has none yet (safe to call any number of times,
    from any number of processes). ``theater_id``: its sequence, if the caller knows it; ``ref``:
    the order's reference, if known (orders are sharded on it: every command goes to one shard)."""
    if theater_id is None or ref is None:
        fields = {"receiptNo": 1, "sessions": 1, "receiptTheater": 1, "ref": 1}
        order = mongo.orders().find_one({"_id": order_id, **({"ref": ref} if ref else {})}, fields)
        if order is None:
            raise LookupError(f"no order {order_id}")
        if order.get("receiptNo"):
            return order["receiptNo"]
        theater_id, ref = theater_id or theater_of(order), order["ref"]
    if theater_id is None:
        raise LookupError(f"order {order_id} has no performance, so no theater to number it")
    return number_series.take(
        series=series_of(theater_id),
        owner=order_id,
        key={"ref": ref},
        target=number_series.Target(
            collection="orders", field="receiptNo", set={"receiptTheater": theater_id}, stamp="receiptOn"
        ),
        start_after=lambda: _numbered_before(theater_id),
    )


def receipt_label(order: Order) -> str:
    """The number as printed, e.g. 000042 (one sequence per theater, never reset)."""
    number = order.get("receiptNo")
    return f"{number:06d}" if number else ""


# how the money came, in the buyer's and the accountant's words (payments/counter.py's methods)
_HOW_PAID = {
    "cash": gettext_lazy("Cash"),
    "card_terminal": gettext_lazy("Card terminal"),
    "bank_transfer": gettext_lazy("Bank transfer"),
    "complimentary": gettext_lazy("Complimentary"),
    "stripe": gettext_lazy("Card (Stripe)"),
    "voucher": gettext_lazy("Gift voucher"),
    "box_office": gettext_lazy("Paid at the box office"),
}


def payment_label(order: Order) -> str:
    """How the order was paid, as its receipt names it: "Card terminal", "Cash", "Bank transfer"
    (a counter sale's method, or the means staff recorded for one paid later), "Card (Stripe)"."""
    paid = order.get("paidWith")
    provider = paid["provider"] if paid else ""
    if paid and provider in ("counter", "box_office"):
        means = paid.get("means") or (order.get("method") if provider == "counter" else "")
        if means in _HOW_PAID:
            return str(_HOW_PAID[means])
    return str(_HOW_PAID.get(provider, ""))


@dataclasses.dataclass(frozen=True)
class PaidAndRefunded:
    """What the buyer paid (the sale, an exchange's top-ups, a gift voucher beside it), what went
    back to them, and what the theater keeps."""

    paid: int
    refunded: int

    @property
    def kept(self) -> int:
        return self.paid - self.refunded


def paid_and_refunded(order: Order) -> PaidAndRefunded:
    """Refunds of a payment no seat was sold for (``extraPayments``) are left out, as it is."""
    paid_with = order.get("paidWith")
    taken = {paid_with["id"]: paid_with["amount"]} if paid_with and paid_with["id"] else {}
    taken.update({top_up["id"]: top_up["amount"] for top_up in order.get("topUps") or []})
    voucher = order.get("voucher")
    if paid_with and voucher and voucher.get("id") not in taken:
        taken[voucher["id"]] = voucher["amount"]
    refunded = sum(
        r["amount"]
        for r in order.get("refunds") or []
        if r["status"] == RefundStatus.SUCCEEDED and r["payment"]["id"] in taken
    )
    return PaidAndRefunded(sum(taken.values()), refunded)
