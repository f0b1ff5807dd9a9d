"""The money invariants, checked with the seat invariants (booking/upkeep/invariants.py):

- no order is paid twice: every payment an order received beyond the one it keeps
  (``extraPayments``) has been refunded in full, and no payment is kept by two orders;
- no money is kept without its seats: what an order received minus what went back equals the
  price of the tickets it still holds (and its booking fee and donation while it holds any), so an expired,
  canceled or refunded order keeps nothing;
- no refund is left undone (pending or failed).

Orders from before payments (no ``method``) carry no payment and are not checked here.
"""

from booking.core import mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, RefundStatus
from booking.payments import donations

SEAT_OWNING = tuple(SEAT_OWNING_ORDER_STATES)
FIELDS = {
    "ref": 1,
    "exchanges.fee": 1,
    "exchanges.state": 1,
    "state": 1,
    "method": 1,
    "lines": 1,
    "fee": 1,
    "currency": 1,
    "paidWith": 1,
    "extraPayments": 1,
    "refunds": 1,
    "settling": 1,
    "topUps": 1,
    "voucher": 1,
    "donation": 1,
}


CHARGED_EXCHANGES = ("switched", "released", "done")  # sales/exchanges.py's states once the tickets moved


def _money(amount: int, currency: str) -> str:
    return f"{amount / 100:.2f} {currency}"


def money_breaches() -> list[str]:
    breaches = []
    kept_by: dict[tuple, str] = {}  # (provider, payment id) -> the order keeping it
    # every order, as check_invariants reads them (a scan on purpose, hinted on _id: the query
    # audit lists it); orders from before payments have no method and are skipped
    for order in mongo.orders().find({}, FIELDS, hint=[("_id", 1)]):
        if "method" not in order:
            continue
        ref, currency = order["ref"], order.get("currency", "")
        refunds = order.get("refunds") or []
        done = [r for r in refunds if r["status"] == RefundStatus.SUCCEEDED]
        for refund in refunds:
            if refund["status"] != RefundStatus.SUCCEEDED:
                breaches.append(
                    f"order {ref}: refund {refund['_id']} of {_money(refund['amount'], currency)} is {refund['status']}"
                )
        for extra in order.get("extraPayments") or []:
            back = sum(r["amount"] for r in done if r["payment"]["id"] == extra["id"])
            if back != extra["amount"]:
                breaches.append(f"order {ref} was paid twice ({extra['id']}) and the second payment was not refunded")
        paid_with = order.get("paidWith") or {}
        if paid_with.get("id"):
            payment = (paid_with.get("provider"), paid_with["id"])
            if payment in kept_by:  # one payment counted for two orders: one of them is not paid
                breaches.append(f"payment {paid_with['id']} is kept by two orders: {kept_by[payment]} and {ref}")
            kept_by.setdefault(payment, ref)
        received = (order.get("paidWith") or {}).get("amount", 0) + sum(
            e["amount"] for e in order.get("extraPayments") or []
        )
        received += sum(t["amount"] for t in order.get("topUps") or [])  # an exchange's difference, paid at the counter
        voucher = order.get("voucher") or {}
        if voucher and order.get("paidWith") and voucher["id"] != order["paidWith"]["id"]:
            received += voucher["amount"]  # the gift voucher's part beside the card's (payments/vouchers.py)
        kept = received - sum(r["amount"] for r in done)
        owes = 0
        if order["state"] in SEAT_OWNING and order.get("lines"):
            owes = sum(line["price"] - line.get("discount", 0) for line in order["lines"])
            owes += (order.get("fee") or {}).get("amount", 0)
            owes += donations.amount_of(order)  # given with the order, back with its last ticket
        # what the theater keeps for changes the buyer made online (sales/self_service.py): a
        # cancel's fee on its refund, an exchange's in its difference once switched
        owes += sum(r.get("keptFee", 0) for r in refunds)
        owes += sum(x.get("fee", 0) for x in order.get("exchanges") or [] if x.get("state") in CHARGED_EXCHANGES)
        if order["state"] in SEAT_OWNING and not order.get("paidWith"):
            breaches.append(f"order {ref} is {order['state']} without a payment")
        elif kept != owes and not order.get("settling"):
            worth = _money(owes, currency)
            breaches.append(f"order {ref} ({order['state']}) keeps {_money(kept, currency)} for tickets worth {worth}")
    return breaches
