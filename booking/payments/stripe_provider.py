"""Card payments through Stripe: the official ``stripe`` library and PaymentIntents.

The browser gathers the card with Stripe.js (Stripe's own card form; the card number never
reaches us) and sends us a payment method id; we attach it to the order's PaymentIntent and
confirm it here, on the server. A card that needs 3-D Secure comes back as ``action``: the
browser finishes it with Stripe.js (``confirmCardPayment``), and the webhook or the return page
tells us the outcome.

Every POST carries an idempotency key made from the order and its attempt, so a retried request
never makes a second PaymentIntent or a second charge at Stripe. Money only moves at ``confirm``,
which names one PaymentIntent, and a PaymentIntent succeeds at most once; a refund is looked
up by our own key (its metadata) before every try to make one (the library's blind retry is
off for refunds), so even a provider that ignored idempotency keys (localstripe does) could not
refund twice.

Settings: STRIPE_SECRET_KEY, STRIPE_PUBLISHABLE_KEY, STRIPE_WEBHOOK_SECRET, STRIPE_API_BASE
(Stripe's address, or localstripe's in development and tests), STRIPE_JS_URL.
"""

import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import stripe
from django.conf import settings
from django.utils.translation import gettext_noop

from booking.core import clock
from booking.payments import base, money

logger = logging.getLogger("booking.payments.stripe")

_STATUS = {
    "requires_payment_method": base.OPEN,
    "requires_confirmation": base.OPEN,
    "requires_action": base.ACTION,
    "requires_capture": base.PROCESSING,
    "processing": base.PROCESSING,
    "succeeded": base.SUCCEEDED,
    "canceled": base.CANCELED,
}
_EVENTS = {
    "payment_intent.succeeded": base.SUCCEEDED,
    "payment_intent.payment_failed": base.FAILED,
    "payment_intent.canceled": base.CANCELED,
    "payment_intent.processing": base.PROCESSING,
    "payment_intent.requires_action": base.ACTION,
}
REFUND_TRIES = 3  # as many as the library's own tries (max_network_retries=2), each after a look-up
# Stripe's own (its library refuses an older signature as a replay); a newer one is refused too
WEBHOOK_TOLERANCE_SECONDS = stripe.Webhook.DEFAULT_TOLERANCE
DECLINED = gettext_noop("Your card was declined. Please try another card.")
# Cards that do one thing each in test mode, at Stripe and at localstripe alike: the card form
# names them then (and the README). Not 4000000000000002, Stripe's generic decline: localstripe
# declines it only for a card attached to a customer, so in development it pays.
TEST_CARDS = (
    ("4242424242424242", base.SUCCEEDED, gettext_noop("pays")),
    ("4000002760003184", base.ACTION, gettext_noop("asks for 3-D Secure")),
    ("4000000000000341", base.FAILED, gettext_noop("is declined")),
)

_clients: dict = {}
_lock = threading.Lock()


def client() -> stripe.StripeClient:
    """One client per process and configuration (rebuilt in a forked child, like MongoDB's)."""
    key = (os.getpid(), settings.STRIPE_SECRET_KEY, settings.STRIPE_API_BASE)
    with _lock:
        found = _clients.get(key)
        if found is None:
            if not settings.STRIPE_SECRET_KEY:
                raise base.NotConfigured("STRIPE_SECRET_KEY is not set: card payment is off.")
            found = _clients[key] = stripe.StripeClient(
                settings.STRIPE_SECRET_KEY,
                base_addresses={"api": settings.STRIPE_API_BASE},
                http_client=stripe.RequestsClient(timeout=settings.STRIPE_TIMEOUT_SECONDS),
                max_network_retries=2,  # the library retries with the same idempotency key
            )
        return found


def to_payment(intent) -> base.Payment:
    data = intent if isinstance(intent, dict) else intent.to_dict()
    status = _STATUS.get(data.get("status") or "", base.PROCESSING)
    error = data.get("last_payment_error") or {}
    if status == base.OPEN and error:
        status = base.FAILED  # refused: a new try needs a new payment method
    return base.Payment(
        provider="stripe",
        id=data["id"],
        status=status,
        amount=int(data.get("amount") or 0),
        currency=str(data.get("currency") or "").upper(),
        order_id=str((data.get("metadata") or {}).get("order", "")),
        order_ref=str((data.get("metadata") or {}).get("ref", "")),
        client_secret=data.get("client_secret") or "",
        failure=_buyer_message(error) if error else "",
    )


def _buyer_message(error: dict) -> str:
    code = error.get("code") or ""
    if code == "payment_intent_authentication_failure":
        return gettext_noop("Your bank did not confirm the payment (3-D Secure). Please try again or use another card.")
    if code in ("expired_card",):
        return gettext_noop("Your card has expired. Please use another card.")
    if code in ("incorrect_cvc", "invalid_cvc"):
        return gettext_noop("The card's security code is wrong.")
    return DECLINED


_spent = threading.local()


def time_in_stripe_ms(reset: bool = False) -> float:
    """Milliseconds this thread spent waiting for Stripe since the last reset (the payment views
    report it in Server-Timing, so the benchmark shows Stripe's share apart)."""
    spent = getattr(_spent, "ms", 0.0)
    if reset:
        _spent.ms = 0.0
    return spent


def _wrap(call, *args, **kwargs):
    started = time.perf_counter()
    try:
        return call(*args, **kwargs)
    except stripe.CardError as exc:
        raise base.PaymentDeclined(_buyer_message({"code": exc.code or ""})) from exc
    except stripe.StripeError as exc:
        raise base.ProviderError(f"Stripe: {exc.__class__.__name__} {exc.http_status or ''} {exc}".strip()) from exc
    finally:
        _spent.ms = getattr(_spent, "ms", 0.0) + (time.perf_counter() - started) * 1000


def refund_idempotency_key(refund_key: str, attempt: int, server_errors: int) -> str:
    """``refund-<our id>``; from a later attempt or after a 5xx answer, one more part for each."""
    if attempt <= 1 and server_errors == 0:
        return f"refund-{refund_key}"
    return f"refund-{refund_key}-{attempt}-{server_errors}"


class StripeProvider(base.Provider):
    def __init__(self):
        super().__init__(name="stripe", online=True)

    def is_configured(self) -> bool:
        return bool(settings.STRIPE_SECRET_KEY and settings.STRIPE_PUBLISHABLE_KEY)

    def start(self, order: Mapping[str, Any], *, idempotency_key: str) -> base.Payment:
        params = {
            "amount": money.amount_due(order),
            "currency": order["currency"].lower(),
            "payment_method_types": ["card"],
            "metadata": {"order": str(order["_id"]), "ref": order["ref"]},
        }
        intent = _wrap(client().v1.payment_intents.create, params, {"idempotency_key": idempotency_key})
        return to_payment(intent)

    def confirm(self, payment_id: str, means: str, *, idempotency_key: str) -> base.Payment:
        payments = client().v1.payment_intents
        _wrap(payments.update, payment_id, {"payment_method": means}, {"idempotency_key": f"{idempotency_key}-pm"})
        try:
            intent = _wrap(payments.confirm, payment_id, options={"idempotency_key": idempotency_key})
        except base.PaymentDeclined as exc:
            raise base.PaymentDeclined(exc.message, self.retrieve(payment_id)) from exc
        return to_payment(intent)

    def retrieve(self, payment_id: str) -> base.Payment:
        return to_payment(_wrap(client().v1.payment_intents.retrieve, payment_id))

    def cancel(self, payment_id: str) -> base.Payment:
        current = self.retrieve(payment_id)
        if current.status in base.FINAL:
            return current
        try:
            cancel = client().v1.payment_intents.cancel
            return to_payment(_wrap(cancel, payment_id, options={"idempotency_key": f"cancel-{payment_id}"}))
        except base.ProviderError:
            again = self.retrieve(payment_id)  # succeeded meanwhile (Stripe refuses to cancel it)?
            if again.status in base.FINAL:
                return again
            raise

    def refund(self, payment_id: str, amount: int, *, refund_key: str, attempt: int = 1) -> base.Refund:
        """Looked up by our key before each try to make it. The library's own retry (same
        idempotency key, no look-up) is off here: a provider that ignored the key (localstripe
        does) would refund again when an answer was lost on the network; this loop asks first.

        The idempotency key is the refund's id while no answer was a 5xx. Stripe keeps a 5xx
        answer under its key for a day and gives it again to every retry with that key, so after
        one the next try (and every later ``attempt``) takes a key of its own; the look-up before
        each try is what keeps that from refunding twice."""
        refunds = client().v1.refunds
        params = {"payment_intent": payment_id, "amount": amount, "metadata": {"refund": refund_key}}
        server_errors = 0
        for tried in range(REFUND_TRIES):
            for found in _wrap(refunds.list, {"payment_intent": payment_id, "limit": 100}).data:
                if found.to_dict().get("metadata", {}).get("refund") == refund_key:
                    return self._refund(found, refund_key)
            options = {"idempotency_key": refund_idempotency_key(refund_key, attempt, server_errors)}
            try:
                return self._refund(_wrap(refunds.create, params, {**options, "max_network_retries": 0}), refund_key)
            except base.ProviderError as exc:
                if isinstance(exc.__cause__, stripe.APIError):  # a 5xx answer: kept under that key
                    server_errors += 1
                elif not isinstance(exc.__cause__, stripe.APIConnectionError):  # no answer: same key again
                    raise
                if tried + 1 == REFUND_TRIES:
                    raise
                time.sleep(0.5 * 2**tried)
        raise AssertionError("unreachable")

    @staticmethod
    def _refund(refund, refund_key: str) -> base.Refund:
        status = {"succeeded": "succeeded", "failed": "failed", "canceled": "failed"}.get(refund.status, "pending")
        return base.Refund(provider="stripe", id=refund.id, amount=refund.amount, status=status, refund_key=refund_key)

    def parse_webhook(self, payload: bytes, headers: dict) -> base.WebhookEvent:
        secret = settings.STRIPE_WEBHOOK_SECRET
        if not secret:
            raise base.BadSignature("STRIPE_WEBHOOK_SECRET is not set")
        header = headers.get("Stripe-Signature") or ""
        try:
            # The library checks the signature; its tolerance looks only into the past and at the
            # wall clock, so the time is checked below, both ways, on the engine's clock.
            stripe.WebhookSignature.verify_header(payload.decode("utf-8"), header, secret)
            data = json.loads(payload)
        except (stripe.SignatureVerificationError, UnicodeDecodeError, ValueError) as exc:
            raise base.BadSignature(str(exc)) from exc
        skew = clock.now().timestamp() - signed_at(header)
        if abs(skew) > WEBHOOK_TOLERANCE_SECONDS:
            raise base.BadSignature(f"signed {abs(skew):.0f} s {'ago' if skew > 0 else 'ahead'}: outside the tolerance")
        raw_type = str(data.get("type", ""))
        obj = (data.get("data") or {}).get("object") or {}
        payment = to_payment(obj) if obj.get("object") == "payment_intent" and obj.get("id") else None
        return base.WebhookEvent(
            id=str(data.get("id", "")), type=_EVENTS.get(raw_type, "other"), payment=payment, raw_type=raw_type
        )


def signed_at(header: str) -> int:
    """The time (``t=``) in a Stripe-Signature header the library has verified."""
    return next(int(value) for key, _, value in (part.partition("=") for part in header.split(",")) if key == "t")


def in_test_mode() -> bool:
    """A test key (Stripe's test mode, or localstripe's): no real money moves, test cards work."""
    return settings.STRIPE_SECRET_KEY.startswith(("sk_test_", "rk_test_"))
