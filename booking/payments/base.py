"""What a payment provider is to the booking engine: small enough that another one (Mollie,
PayPal, SEPA) is one module.

A provider starts a payment for an order, confirms it with what the buyer's browser gathered,
says where a payment stands, cancels one that must not be paid any more, refunds all or part, and
verifies a webhook. Everything it answers is one of the plain values below, never the provider's
own objects, so the flow (booking/payments/flow.py) is the same for every provider.

Statuses of a payment (``Payment.status``):

- ``open``: waiting for the buyer (no means of payment yet, or not confirmed yet);
- ``action``: the buyer must do something at their bank (3-D Secure);
- ``processing``: the provider is still deciding;
- ``succeeded``: the money is ours (and stays ours: a succeeded payment never changes back);
- ``failed``: the last try was refused (declined card); the buyer may try again with a new payment;
- ``canceled``: it can never be paid.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

OPEN = "open"
ACTION = "action"
PROCESSING = "processing"
SUCCEEDED = "succeeded"
FAILED = "failed"
CANCELED = "canceled"
FINAL = (SUCCEEDED, CANCELED)


def confirm_claim_seconds() -> float:
    """How long a request's claim of an attempt (``confirming``) lasts: the card put onto the
    payment and the confirm, each tried up to three times by the library, plus its back-off."""
    return 2 * 3 * settings.STRIPE_TIMEOUT_SECONDS + 10


class ProviderError(Exception):
    """The provider could not be reached or answered with an error we cannot act on (retry later)."""


class PaymentDeclined(Exception):
    """The provider refused the means of payment (declined card). ``message`` is for the buyer."""

    def __init__(self, message: str, payment: "Payment | None" = None):
        super().__init__(message)
        self.message = message
        self.payment = payment


class BadSignature(Exception):
    """A webhook whose signature does not verify: answered 400, nothing changes."""


class NotConfigured(Exception):
    """The provider has no keys here (card payment is off)."""


@dataclass(frozen=True)
class Payment:
    """One payment at the provider, as the flow needs it."""

    provider: str
    id: str  # the provider's id (Stripe: the PaymentIntent), unique per provider
    status: str
    amount: int  # minor units
    currency: str  # upper case, like orders
    order_id: str = ""  # what we told the provider when starting it (metadata), "" if unknown
    order_ref: str = ""  # the order's reference, likewise (orders are sharded on it)
    client_secret: str = ""  # what the buyer's browser needs to finish it (3-D Secure); never stored
    failure: str = ""  # why the last try failed, for the buyer


@dataclass(frozen=True)
class Refund:
    provider: str
    id: str
    amount: int
    status: str  # "succeeded", "pending" (the provider is still working on it) or "failed"
    refund_key: str = ""  # our refund's id, as we told the provider


@dataclass(frozen=True)
class WebhookEvent:
    id: str  # the provider's event id: a replay carries the same one
    type: str  # "succeeded", "failed", "canceled", "processing", "action" or "other"
    payment: Payment | None
    raw_type: str = ""


@dataclass
class Provider:
    """The interface. ``name`` is stored on orders; ``online`` says whether the buyer pays here
    (by card) or elsewhere (at the box office, which staff confirm)."""

    name: str = ""
    online: bool = True
    extra: dict = field(default_factory=dict)

    def is_configured(self) -> bool:
        return True

    def start(self, order: Mapping[str, Any], *, idempotency_key: str) -> Payment:
        """A new payment for the order's total (nothing is charged yet): an order, or an exchange's
        difference or a voucher purchase given as one (its _id, ref, total, currency)."""
        raise NotImplementedError

    def confirm(self, payment_id: str, means: str, *, idempotency_key: str) -> Payment:
        """Charge the means of payment the browser gathered (a card's payment method id).
        Raises PaymentDeclined when it is refused."""
        raise NotImplementedError

    def retrieve(self, payment_id: str) -> Payment:
        raise NotImplementedError

    def cancel(self, payment_id: str) -> Payment:
        """Make sure it can never be paid. A payment that succeeded meanwhile comes back as
        succeeded (the flow then settles it), never as an error."""
        raise NotImplementedError

    def refund(self, payment_id: str, amount: int, *, refund_key: str, attempt: int = 1) -> Refund:
        """Give back ``amount`` of it. ``refund_key`` is ours and the same on every retry: the
        provider is asked for a refund with that key first, so a retry never refunds twice.
        ``attempt``: the how-many-th time this refund is asked for (1 the first time)."""
        raise NotImplementedError

    def parse_webhook(self, payload: bytes, headers: dict) -> WebhookEvent:
        """Verify and read a webhook; BadSignature when it does not verify."""
        raise BadSignature("this provider has no webhooks")
