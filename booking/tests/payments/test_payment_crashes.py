"""A process can die after any write of the payment flow; reconcile (or the buyer trying again)
finishes it: money taken means seats sold (or refunded), no money means seats back."""

from datetime import timedelta

import pytest
from django.test import Client

from booking.core import clock, faults, mongo
from booking.payments import base, refunds
from booking.payments import flow as payments
from booking.sales import cancels, holds
from booking.sales.cart_expiry import expire_stale_carts
from booking.tests.localstripe import THREE_D_SECURE, VISA, authenticate, card, events_for, signed
from booking.tests.paying import checkout_paid, intent_of
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import FREE, HELD, SOLD

ALICE = "s:alice"
KEYS = ["1:2", "1:3"]
NO_GRACE = timedelta(0)


@pytest.fixture
def crash_at():
    def arm(point_name):
        def hook(name):
            if name == point_name:
                raise faults.InjectedCrash(name)

        faults.set_hook(hook)

    yield arm
    faults.set_hook(None)


@pytest.fixture
def session():
    from booking.tests.factories import make_session

    return make_session()


def cells(session, keys=KEYS):
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    return [seats[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


def after_the_window():
    return clock.now() + timedelta(minutes=17)  # hold 15 min, then reconcile's 1-minute grace


def the_order():
    [order] = mongo.orders().find()
    return order


def succeeded_refunds_at_stripe(order):
    from booking.payments.stripe_provider import client

    return [r.amount for r in client().v1.refunds.list({"payment_intent": order["paidWith"]["id"]}).data]


def assert_paid_and_sold(session):
    order = the_order()
    assert order["state"] == "paid" and "settling" not in order
    assert cells(session) == [SOLD, SOLD] and order["receiptNo"] == 1 and order["mail"] == "pending"
    assert mongo.carts().find_one({"_id": order["cartId"]})["state"] == "done"
    assert check_invariants() == []


# --- before any money: the seats come back when the window ends, or the buyer just goes on ---


@pytest.mark.parametrize("point", ["pay.after_cart", "pay.after_order", "pay.after_intent", "pay.after_claim"])
def test_crash_before_the_card_is_charged_ends_with_the_seats_free(crash_at, session, point):
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
        payments.pay_with_card(order["_id"], ALICE, card(VISA))
    faults.set_hook(None)
    assert cells(session) == [HELD, HELD]  # still the buyer's while the window lasts
    reconcile(now=after_the_window(), grace=NO_GRACE)
    assert cells(session) == [FREE, FREE]
    for order in mongo.orders().find():
        assert order["state"] == "expired" and "paidWith" not in order
    assert check_invariants() == []


@pytest.mark.parametrize("point", ["pay.after_cart", "pay.after_order", "pay.after_intent", "pay.after_claim"])
def test_after_a_crash_before_the_charge_the_buyer_can_simply_pay(crash_at, session, point, monkeypatch):
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
        payments.pay_with_card(order["_id"], ALICE, card(VISA))
    faults.set_hook(None)
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")  # the page again
    if point == "pay.after_claim":  # the claim of the crashed request runs out first
        assert payments.pay_with_card(order["_id"], ALICE, card(VISA)).status == "processing"  # not yet
        later = clock.now() + timedelta(seconds=base.confirm_claim_seconds() + 1)
        monkeypatch.setattr(clock, "now", lambda: later)  # still in the payment window
        reconcile(now=later, grace=NO_GRACE)
        payments.check(order["_id"])
    outcome = payments.pay_with_card(order["_id"], ALICE, card(VISA))
    assert outcome.status == "paid", outcome
    assert_paid_and_sold(session)


# --- money taken: reconcile sells the seats ---


@pytest.mark.parametrize(
    "point",
    [
        "pay.after_confirm",
        "pay.after_paid",
        "pay.after_sell",
        "series.after_take",
        "pay.after_receipt",
        "pay.after_cart_done",
    ],
)
def test_crash_after_the_charge_is_finished_by_reconcile(crash_at, session, point):
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        payments.pay_with_card(order["_id"], ALICE, card(VISA))
    faults.set_hook(None)
    report = reconcile(now=after_the_window(), grace=NO_GRACE)
    assert report.carts_expired == 0  # never released: the order was asked about first
    assert_paid_and_sold(session)
    assert len(succeeded_refunds_at_stripe(the_order())) == 0


def test_crash_after_the_charge_when_the_worker_expires_the_cart_first(crash_at, session):
    """The expiry task runs before reconcile does: it asks about the payment before ending the hold."""
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    crash_at("pay.after_confirm")
    with pytest.raises(faults.InjectedCrash):
        payments.pay_with_card(order["_id"], ALICE, card(VISA))
    faults.set_hook(None)
    assert expire_stale_carts(after_the_window()).carts_expired == 0
    assert_paid_and_sold(session)


def test_crash_between_the_charge_and_anything_with_the_3ds_finished_in_the_browser(session):
    """The process that would hear about it is gone: only the payment at Stripe knows."""
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    asked = payments.pay_with_card(order["_id"], ALICE, card(THREE_D_SECURE))
    authenticate(intent_of(order), asked.client_secret)
    reconcile(now=after_the_window(), grace=NO_GRACE)
    assert_paid_and_sold(session)


# --- the hold ends ---


@pytest.mark.parametrize("point", ["pay.expire_after_cart", "pay.expire_after_release"])
def test_crash_while_expiring_an_unpaid_order(crash_at, session, point):
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        expire_stale_carts(clock.now() + timedelta(minutes=16))
    faults.set_hook(None)
    reconcile(now=after_the_window(), grace=NO_GRACE)
    assert the_order()["state"] == "expired" and cells(session) == [FREE, FREE]
    assert check_invariants() == []


def test_crash_while_the_buyer_cancels(crash_at, session):
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    crash_at("pay.cancel_after_order")
    with pytest.raises(faults.InjectedCrash):
        payments.cancel_unpaid(order["_id"], owner=ALICE)
    faults.set_hook(None)
    reconcile(now=clock.now() + timedelta(seconds=1), grace=NO_GRACE)
    assert the_order()["state"] == "canceled" and cells(session) == [FREE, FREE]
    assert check_invariants() == []


def test_crash_while_staff_cancel_a_payment_the_bank_then_accepts(crash_at, session):
    """Staff cancel an order whose buyer is on the bank's 3-D Secure screen; the process dies
    right after the order's write, before the payment is canceled at Stripe; then the bank says
    yes. Reconcile frees the seats and gives the money back: the cancel stands."""
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    asked = payments.pay_with_card(order["_id"], ALICE, card(THREE_D_SECURE))
    crash_at("pay.cancel_after_order")
    with pytest.raises(faults.InjectedCrash):
        cancels.cancel_order(order["_id"], by="staff", reason="customer called")
    faults.set_hook(None)
    authenticate(intent_of(order), asked.client_secret)
    reconcile(now=clock.now() + timedelta(seconds=1), grace=NO_GRACE)
    done = the_order()
    assert done["state"] == "canceled" and "paidWith" not in done and cells(session) == [FREE, FREE]
    assert done["extraPayments"][0]["amount"] == 7000 and done["amountRefunded"] == 7000
    assert succeeded_refunds_at_stripe({"paidWith": {"id": order["payment"]["intent"]}}) == [7000]
    assert check_invariants() == []


# --- refunds ---


@pytest.mark.parametrize(
    "point", ["refund.after_order", "refund.after_seats", "refund.after_claim", "refund.after_provider"]
)
def test_crash_during_a_refund_is_finished_by_reconcile_and_refunds_once(crash_at, session, point):
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    order = checkout_paid(ALICE, cart.cart_id, "Ada", "ada@example.com")
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        cancels.cancel_order(order["_id"], by="staff")
    faults.set_hook(None)
    reconcile(now=clock.now() + timedelta(minutes=2), grace=NO_GRACE)  # past the refund's claim
    done = the_order()
    assert done["state"] == "refunded" and done["refunds"][0]["status"] == "succeeded"
    assert succeeded_refunds_at_stripe(done) == [7000]  # once, though asked again after the crash
    assert cells(session) == [FREE, FREE]
    assert check_invariants() == []


def test_crash_after_a_late_payment_lost_its_seats(crash_at, session):
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    asked = payments.pay_with_card(order["_id"], ALICE, card(THREE_D_SECURE))
    expire_stale_carts(clock.now() + timedelta(minutes=16))
    holds.hold_seats(session["_id"], "s:bob", None, ["1:3"])
    authenticate(intent_of(order), asked.client_secret)
    crash_at("refund.lost_after_order")
    with pytest.raises(faults.InjectedCrash):
        payments.check(order["_id"])
    faults.set_hook(None)
    reconcile(now=clock.now() + timedelta(seconds=1), grace=NO_GRACE)
    lost = the_order()
    assert lost["state"] == "refunded" and lost["refunds"][0]["status"] == "succeeded"
    assert cells(session) == [FREE, HELD]  # the other seat free, and Bob's hold
    assert check_invariants() == []


def test_crash_after_a_webhook_was_recorded_is_handled_when_stripe_retries(crash_at, session):
    from booking.payments.stripe_provider import StripeProvider

    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    StripeProvider().confirm(intent_of(order), card(VISA), idempotency_key="crash-hook")
    [event] = events_for(intent_of(order))
    body, signature = signed(event)
    crash_at("webhook.after_record")
    with pytest.raises(faults.InjectedCrash):
        Client().post(
            "/payments/stripe/webhook/", body, content_type="application/json", HTTP_STRIPE_SIGNATURE=signature
        )
    faults.set_hook(None)
    answer = Client().post(
        "/payments/stripe/webhook/", body, content_type="application/json", HTTP_STRIPE_SIGNATURE=signature
    )
    assert answer.status_code == 200
    assert_paid_and_sold(session)
    assert refunds.failed_refunds() == []


# --- the remaining writes: a new attempt after a decline, a second payment's refund ---


def test_crash_after_a_new_attempt_was_written_the_buyer_pays_with_one_charge(crash_at, session):
    from booking.payments.stripe_provider import StripeProvider, client
    from booking.tests.localstripe import DECLINED

    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    assert payments.pay_with_card(order["_id"], ALICE, card(DECLINED)).status == "failed"
    crash_at("pay.after_next_attempt")  # attempt 2 written, its payment not made yet
    with pytest.raises(faults.InjectedCrash):
        payments.pay_with_card(order["_id"], ALICE, card(VISA))
    faults.set_hook(None)
    assert the_order()["payment"]["attempt"] == 2 and the_order()["payment"]["intent"] is None
    assert payments.pay_with_card(order["_id"], ALICE, card(VISA)).status == "paid"  # the buyer again
    assert_paid_and_sold(session)
    assert StripeProvider().retrieve(intent_of(order)).status == "canceled"  # the declined one
    mine = [
        pi
        for pi in client().v1.payment_intents.list({"limit": 100000}).data
        if pi.metadata.to_dict().get("order") == str(order["_id"])
    ]
    assert sorted(pi.status for pi in mine) == ["canceled", "succeeded"]


def test_crash_after_a_second_payment_was_recorded_is_refunded_once_by_reconcile(crash_at, session):
    from booking.payments.stripe_provider import StripeProvider

    order = checkout_paid(ALICE, holds.hold_seats(session["_id"], ALICE, None, KEYS).cart_id, "Ada", "a@example.com")
    stripe = StripeProvider()
    extra = stripe.start(order, idempotency_key=f"test-second-{order['_id']}")  # paid twice (another tab)
    paid_again = stripe.confirm(extra.id, card(VISA), idempotency_key=f"test-second-{order['_id']}-confirm")
    crash_at("refund.extra_after_order")
    with pytest.raises(faults.InjectedCrash):
        payments.settle(paid_again)
    faults.set_hook(None)
    assert any("refund" in b for b in check_invariants())  # recorded, not refunded yet
    reconcile(now=clock.now() + timedelta(seconds=1), grace=NO_GRACE)
    payments.settle(paid_again)  # the webhook too, later: nothing more
    from booking.payments.stripe_provider import client

    assert [r.amount for r in client().v1.refunds.list({"payment_intent": extra.id}).data] == [7000]
    assert the_order()["state"] == "paid" and cells(session) == [SOLD, SOLD]
    assert check_invariants() == []
