"""Gift vouchers sold at the counter, and the redemptions a crash or an unpaid order left open.

The voucher itself, its code, balance and the one conditional update that spends it:
payments/vouchers.py. This module sits above the payment flow (it settles an order a voucher
covers in full that a crash left pending).
"""

import logging
from datetime import datetime, timedelta

from bson import ObjectId
from django.utils.translation import gettext

from booking import payments
from booking.core import clock, faults, mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, Order, OrderState, Voucher
from booking.core.errors import InvalidRequest
from booking.payments import base, flow, money, number_series, vouchers
from booking.payments.counter import CARD_TERMINAL, CASH

logger = logging.getLogger("booking.vouchers")

COUNTER_MEANS = (CASH, CARD_TERMINAL)


def sell_at_counter(*, value: int, means: str, buyer: str = "", by: str = "", now: datetime | None = None) -> Voucher:
    """Staff sell a voucher over the counter, paid in cash or by the card terminal: it can be
    spent at once, and its sale has a receipt number (a crash before it: the receipt's page gives
    it, and takings list the sale by its code meanwhile)."""
    if means not in COUNTER_MEANS:
        message = gettext("Please choose how the customer pays.")
        raise InvalidRequest(message, fields={"means": message})
    voucher = vouchers.issue(value=value, sold_via="counter", now=now or clock.now(), by=by, buyer=buyer, method=means)
    faults.point("voucher.sold_before_receipt")
    voucher["receiptNo"] = number_receipt(voucher["_id"])
    return voucher


RECEIPT_TARGET = number_series.Target(collection="vouchers", field="receiptNo", stamp="receiptOn")


def number_receipt(voucher_id: ObjectId) -> int:
    """The counter sale's receipt number, given now if it has none (safe to repeat)."""
    return number_series.take(series=vouchers.RECEIPT_SERIES, owner=voucher_id, target=RECEIPT_TARGET)


def finish_redemptions(now: datetime | None = None, grace: timedelta = timedelta(seconds=60)) -> int:
    """Reconcile: every redemption still open after ``grace`` is finished or undone, by what its
    order says. Returns how many changed.

    - the order carries it and is paid (or was, then refunded): spent;
    - the order carries it, is pending and the voucher covers it all (a crash before the settle):
      settled now;
    - the order never got it (a crash between the debit and the order's write), the order is
      still pending and asks for that voucher: written now (roll forward);
    - the order is canceled, or expired with no card payment that could still arrive, or never
      got it and cannot now: given back.
    """
    now = now or clock.now()
    changed = 0
    for voucher_id, redemption in vouchers.open_redemptions(now - grace):
        order = mongo.orders().find_one({"_id": redemption["orderId"], "ref": redemption["ref"]})
        part = (order or {}).get("voucher") or {}
        if order is None:
            changed += bool(vouchers.give_back(voucher_id, redemption["_id"], "no such booking", now))
            continue
        if part.get("redemption") != redemption["_id"]:
            if order["state"] == OrderState.PENDING_PAYMENT and order.get("voucherCode") and not part:
                flow.pay_voucher_part(order)  # finds this redemption and writes it (one per order)
                changed += 1
            else:
                changed += bool(vouchers.give_back(voucher_id, redemption["_id"], "never reached its booking", now))
            continue
        was_paid = order["state"] in SEAT_OWNING_ORDER_STATES or order["state"] == OrderState.REFUNDED
        if order.get("paidWith") and was_paid:
            vouchers.mark_spent(voucher_id, redemption["_id"])
            changed += 1
        elif order["state"] == OrderState.PENDING_PAYMENT and money.amount_due(order) <= 0:
            flow.pay_voucher_part(order)
            changed += 1
        elif order["state"] == OrderState.CANCELED or (
            order["state"] == OrderState.EXPIRED and not _payment_may_still_come(order)
        ):
            changed += bool(vouchers.give_back(voucher_id, redemption["_id"], f"booking {order['state']}", now))
    if changed:
        logger.info("vouchers: %d open redemptions finished or given back", changed)
    return changed


def _payment_may_still_come(order: Order) -> bool:
    """An expired card order's payment may still succeed until reconcile cancels it at the
    provider (payments/flow.py, "late payment")."""
    pay = order.get("payment")
    if order.get("method") != payments.CARD or not pay or not pay["intent"]:
        return False
    return pay["status"] != base.CANCELED
