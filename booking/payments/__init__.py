"""Payments: the provider interface (base.py), the providers shipped (Stripe, box office), money
with VAT (money.py), receipt numbers (receipts.py) and the receipt PDF (pdf.py).

The flow that uses them (an order's payment from start to paid, refunds, reconcile) is a service:
booking/payments/flow.py and booking/payments/refunds.py.
"""

from booking.payments.base import Provider
from booking.payments.box_office import BoxOfficeProvider
from booking.payments.counter import COUNTER_METHODS, CounterProvider
from booking.payments.stripe_provider import StripeProvider
from booking.payments.vouchers import VoucherProvider

CARD = "card"
BOX_OFFICE = "box_office"

_PROVIDERS: dict[str, Provider] = {
    "stripe": StripeProvider(),
    "box_office": BoxOfficeProvider(),
    "counter": CounterProvider(),  # staff selling at the counter or on the phone (sales/counter.py)
    "voucher": VoucherProvider(),  # the part of an order a gift voucher pays (payments/vouchers.py)
}
# How the buyer pays -> who takes the money. Another card provider (Mollie, PayPal) is a module
# with a Provider subclass and one line here.
METHOD_PROVIDER = {CARD: "stripe", BOX_OFFICE: "box_office", **dict.fromkeys(COUNTER_METHODS, "counter")}


def provider(name: str) -> Provider:
    return _PROVIDERS[name]


def for_method(method: str) -> Provider:
    return _PROVIDERS[METHOD_PROVIDER[method]]


def card_available() -> bool:
    return for_method(CARD).is_configured()
