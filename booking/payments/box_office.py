"""Reserve now, pay at the box office.

Nothing is charged online: the seats stay reserved (held by the cart) until the session's
box-office deadline, and staff mark the order paid at the counter (the admin's order page). A
refund of such an order is money handed back at the counter by the staff member who records it.
"""

from collections.abc import Mapping
from typing import Any

from booking.core.domain import Order
from booking.payments import base, money


class BoxOfficeProvider(base.Provider):
    def __init__(self):
        super().__init__(name="box_office", online=False)

    def start(self, order: Mapping[str, Any], *, idempotency_key: str) -> base.Payment:
        return base.Payment(
            provider=self.name,
            id=f"box-office-{order['_id']}",
            status=base.OPEN,
            amount=money.amount_due(order),
            currency=order["currency"],
            order_id=str(order["_id"]),
            order_ref=order["ref"],
        )

    def paid_at_counter(self, order: Order) -> base.Payment:
        return base.Payment(
            provider=self.name,
            id=f"box-office-{order['_id']}",
            status=base.SUCCEEDED,
            amount=money.amount_due(order),
            currency=order["currency"],
            order_id=str(order["_id"]),
            order_ref=order["ref"],
        )

    def retrieve(self, payment_id: str) -> base.Payment:
        # Only staff know: a box-office payment is open until they record it.
        return base.Payment(provider=self.name, id=payment_id, status=base.OPEN, amount=0, currency="")

    def cancel(self, payment_id: str) -> base.Payment:
        return base.Payment(provider=self.name, id=payment_id, status=base.CANCELED, amount=0, currency="")

    def refund(self, payment_id: str, amount: int, *, refund_key: str, attempt: int = 1) -> base.Refund:
        return base.Refund(
            provider=self.name, id=f"counter-{refund_key}", amount=amount, status="succeeded", refund_key=refund_key
        )
