"""The Stripe provider through the official library against a real localstripe process."""

from pathlib import Path

import pytest
from bson import ObjectId

from booking.payments import base, stripe_provider
from booking.tests.localstripe import (
    DECLINED,
    THREE_D_SECURE,
    VISA,
    authenticate,
    card,
    events_for,
    requests_received,
    signed,
)

STRIPE = stripe_provider.StripeProvider()


def an_order(total=4400):
    return {"_id": ObjectId(), "ref": "K7M2QX9P", "total": total, "currency": "EUR"}


def test_start_makes_a_payment_intent_for_the_order_total_that_charges_nothing_yet():
    order = an_order()
    started = STRIPE.start(order, idempotency_key=f"order-{order['_id']}-1")
    assert started.id.startswith("pi_") and started.status == base.OPEN
    assert (started.amount, started.currency, started.order_id) == (4400, "EUR", str(order["_id"]))
    assert STRIPE.retrieve(started.id).status == base.OPEN


def test_a_card_pays():
    started = STRIPE.start(an_order(), idempotency_key="k-visa")
    paid = STRIPE.confirm(started.id, card(VISA), idempotency_key="k-visa-confirm")
    assert paid.status == base.SUCCEEDED and paid.amount == 4400
    assert STRIPE.retrieve(started.id).status == base.SUCCEEDED


def test_a_declined_card_raises_with_a_message_for_the_buyer_and_the_payment_is_failed():
    started = STRIPE.start(an_order(), idempotency_key="k-declined")
    with pytest.raises(base.PaymentDeclined) as exc:
        STRIPE.confirm(started.id, card(DECLINED), idempotency_key="k-declined-confirm")
    assert "declined" in exc.value.message
    assert exc.value.payment.status == base.FAILED
    assert STRIPE.retrieve(started.id).status == base.FAILED


def test_three_d_secure_asks_for_action_then_succeeds_or_fails():
    started = STRIPE.start(an_order(), idempotency_key="k-3ds")
    asked = STRIPE.confirm(started.id, card(THREE_D_SECURE), idempotency_key="k-3ds-confirm")
    assert asked.status == base.ACTION and asked.client_secret
    authenticate(asked.id, asked.client_secret, success=True)
    assert STRIPE.retrieve(started.id).status == base.SUCCEEDED

    other = STRIPE.start(an_order(), idempotency_key="k-3ds-2")
    asked = STRIPE.confirm(other.id, card(THREE_D_SECURE), idempotency_key="k-3ds-2-confirm")
    authenticate(asked.id, asked.client_secret, success=False)
    failed = STRIPE.retrieve(other.id)
    assert failed.status == base.FAILED and "3-D Secure" in failed.failure


def test_cancel_ends_an_open_payment_but_a_succeeded_one_comes_back_succeeded():
    open_one = STRIPE.start(an_order(), idempotency_key="k-cancel")
    assert STRIPE.cancel(open_one.id).status == base.CANCELED
    paid = STRIPE.start(an_order(), idempotency_key="k-cancel-paid")
    STRIPE.confirm(paid.id, card(VISA), idempotency_key="k-cancel-paid-confirm")
    assert STRIPE.cancel(paid.id).status == base.SUCCEEDED


def test_refunds_partial_then_rest_and_a_retry_with_the_same_key_never_refunds_twice():
    started = STRIPE.start(an_order(), idempotency_key="k-refund")
    STRIPE.confirm(started.id, card(VISA), idempotency_key="k-refund-confirm")
    first = STRIPE.refund(started.id, 1000, refund_key="r-one")
    again = STRIPE.refund(started.id, 1000, refund_key="r-one")  # e.g. after a crash
    assert first.status == "succeeded" and again.id == first.id
    rest = STRIPE.refund(started.id, 3400, refund_key="r-two")
    assert rest.id != first.id and rest.amount == 3400
    refunds = stripe_provider.client().v1.refunds.list({"payment_intent": started.id}).data
    assert sorted(r.amount for r in refunds) == [1000, 3400]


def test_every_post_carries_an_idempotency_key():
    """As localstripe received them (scripts/localstripe_server.py lists the headers that arrived)."""
    before = len(requests_received())
    started = STRIPE.start(an_order(), idempotency_key="k-keys")
    STRIPE.confirm(started.id, "pm_card_visa", idempotency_key="k-keys-confirm")
    STRIPE.refund(started.id, 100, refund_key="r-keys")
    other = STRIPE.start(an_order(), idempotency_key="k-keys-2")
    STRIPE.cancel(other.id)
    sent = [r["key"] for r in requests_received()[before:]]
    assert sent == ["k-keys", "k-keys-confirm-pm", "k-keys-confirm", "refund-r-keys", "k-keys-2", f"cancel-{other.id}"]


def test_webhooks_verify_their_signature():
    started = STRIPE.start(an_order(), idempotency_key="k-hook")
    STRIPE.confirm(started.id, card(VISA), idempotency_key="k-hook-confirm")
    [event] = events_for(started.id)
    body, signature = signed(event)
    parsed = STRIPE.parse_webhook(body, {"Stripe-Signature": signature})
    assert parsed.type == base.SUCCEEDED and parsed.payment.id == started.id and parsed.id == event["id"]
    with pytest.raises(base.BadSignature):
        STRIPE.parse_webhook(body, {"Stripe-Signature": signed(event, secret="whsec_wrong")[1]})
    with pytest.raises(base.BadSignature):
        STRIPE.parse_webhook(body + b" ", {"Stripe-Signature": signature})  # changed after signing
    with pytest.raises(base.BadSignature):
        STRIPE.parse_webhook(body, {})
    with pytest.raises(base.BadSignature):  # an old signature replayed long after
        STRIPE.parse_webhook(body, {"Stripe-Signature": signed(event, timestamp=1_600_000_000)[1]})


@pytest.mark.parametrize("number, outcome, _label", stripe_provider.TEST_CARDS)
def test_the_test_cards_the_card_form_names_do_what_it_says(number, outcome, _label):
    """The card form's help in test mode (and the README) name these cards: each does that here."""
    started = STRIPE.start(an_order(), idempotency_key=f"k-named-{number}")
    try:
        status = STRIPE.confirm(started.id, card(number), idempotency_key=f"k-named-{number}-confirm").status
    except base.PaymentDeclined:
        status = STRIPE.retrieve(started.id).status
    assert status == outcome


def test_stripes_generic_decline_card_is_paid_by_localstripe_so_the_form_does_not_name_it():
    """4000000000000002 is declined at Stripe; localstripe declines it only for a card attached to
    a customer, which a PaymentIntent's card never is here."""
    assert "4000000000000002" not in [number for number, _outcome, _label in stripe_provider.TEST_CARDS]
    started = STRIPE.start(an_order(), idempotency_key="k-generic-decline")
    paid = STRIPE.confirm(started.id, card("4000000000000002"), idempotency_key="k-generic-decline-confirm")
    assert paid.status == base.SUCCEEDED


def test_the_readme_names_the_same_test_cards():
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    for number, _outcome, _label in stripe_provider.TEST_CARDS:
        assert f"`{number}`" in readme
