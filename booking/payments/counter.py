"""Money taken by staff at the counter or on the phone (sales/counter.py): cash, the card
terminal beside the till (recorded only: the terminal talks to its own acquirer, we make no
provider call), an invoice paid later, or nothing at all (complimentary).

Like the box office, nothing happens online: a sale paid now is settled at once with a payment
this provider states succeeded; an invoice stays open until staff record the money (the admin's
order page), and a refund is money handed back by the staff member who records it.
"""

from collections.abc import Mapping
from typing import Any

from booking.core.domain import COMPLIMENTARY_METHOD, Order
from booking.payments import base, money

CASH = "cash"
CARD_TERMINAL = "card_terminal"
INVOICE = "invoice"
COMPLIMENTARY = COMPLIMENTARY_METHOD
COUNTER_METHODS = (CASH, CARD_TERMINAL, INVOICE, COMPLIMENTARY)
PAID_AT_ONCE = (CASH, CARD_TERMINAL, COMPLIMENTARY)
# How a reservation or an invoice was paid when staff record it later (the order's paidWith.means)
BANK_TRANSFER = "bank_transfer"
PAID_LATER_MEANS = (CASH, CARD_TERMINAL, BANK_TRANSFER)
PAYMENT_REFERENCE_MAX = 100  # a terminal slip's or a bank transfer's reference


class CounterProvider(base.Provider):
    def __init__(self):
        super().__init__(name="counter", online=False)

    @staticmethod
    def payment_id(order: Mapping[str, Any]) -> str:
        return f"counter-{order['_id']}"

    def _payment(self, order: Mapping[str, Any], status: str) -> base.Payment:
        return base.Payment(
            provider=self.name,
            id=self.payment_id(order),
            status=status,
            amount=money.amount_due(order),
            currency=order["currency"],
            order_id=str(order["_id"]),
            order_ref=order["ref"],
        )

    def start(self, order: Mapping[str, Any], *, idempotency_key: str) -> base.Payment:
        return self._payment(order, base.OPEN)

    def paid_at_counter(self, order: Order) -> base.Payment:
        """Staff took the money (or gave the tickets away): the order's whole total, succeeded."""
        return self._payment(order, base.SUCCEEDED)

    def retrieve(self, payment_id: str) -> base.Payment:
        return base.Payment(provider=self.name, id=payment_id, status=base.OPEN, amount=0, currency="")

    def cancel(self, payment_id: str) -> base.Payment:
        return base.Payment(provider=self.name, id=payment_id, status=base.CANCELED, amount=0, currency="")

    def refund(self, payment_id: str, amount: int, *, refund_key: str, attempt: int = 1) -> base.Refund:
        return base.Refund(
            provider=self.name, id=f"counter-{refund_key}", amount=amount, status="succeeded", refund_key=refund_key
        )
