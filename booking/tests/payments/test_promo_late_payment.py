"""A promo code's use while a late payment is decided. The buyer's hold ended while
their bank still asked for 3-D Secure: the use stays taken (a capped code is not offered to anyone
else meanwhile) until the payment is decided; then it is kept if the payment bought the seats,
given back once if the payment was refunded because the seats were taken or was never made. Never
lost, never counted twice, also when the process dies in between."""

from datetime import timedelta

import pytest

from booking.core import clock, faults, mongo
from booking.core.errors import InvalidRequest
from booking.payments import flow as payments
from booking.sales import cart_expiry, holds, promos
from booking.tests.factories import make_session
from booking.tests.localstripe import THREE_D_SECURE, authenticate, card
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile

ALICE, BOB, CAROL = "s:alice", "s:bob", "s:carol"
KEYS = ["1:2", "1:3"]
NO_GRACE = timedelta(0)


def uses() -> int:
    return mongo.promo_codes().find_one({"code": "ONCE"})["uses"]


def late_payer(session):
    """Alice redeems the only use of ONCE, pays by a 3-D Secure card and her hold ends meanwhile."""
    promos.create_code("ONCE", "amount", 500, cap=1)
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    promos.apply_code(ALICE, cart.cart_id, "ONCE")
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    asked = payments.pay_with_card(order["_id"], ALICE, card(THREE_D_SECURE))
    assert asked.status == "action"
    mongo.carts().update_one({"_id": order["cartId"]}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    cart_expiry.expire_stale_carts()
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "expired"
    assert uses() == 1  # her payment may still come: the use waits for it
    other = holds.hold_seats(session["_id"], CAROL, None, ["0:0"])
    with pytest.raises(InvalidRequest):
        promos.apply_code(CAROL, other.cart_id, "ONCE")  # so nobody else gets it meanwhile
    return order, asked


def later(minutes: float):
    return clock.now() + timedelta(minutes=minutes)


def test_a_late_payment_that_buys_the_seats_keeps_the_use_once(settings):
    settings.BOOKING_PAYMENT_LATE_SECONDS = 600
    order, asked = late_payer(make_session())
    authenticate(order["payment"]["intent"], asked.client_secret)
    paid = payments.check(order["_id"])
    assert paid["state"] == "paid" and paid["discount"] == 1000 and paid["paidWith"]["amount"] == 6000
    assert uses() == 1
    reconcile(now=later(40), grace=NO_GRACE)  # past the late period: nothing to give back
    payments.check(order["_id"])
    assert uses() == 1
    assert check_invariants() == []


def test_a_late_payment_refunded_because_the_seats_were_taken_gives_the_use_back_once(settings):
    settings.BOOKING_PAYMENT_LATE_SECONDS = 600
    session = make_session()
    order, asked = late_payer(session)
    holds.hold_seats(session["_id"], BOB, None, ["1:3"])  # Bob takes one of her seats
    authenticate(order["payment"]["intent"], asked.client_secret)
    lost = payments.check(order["_id"])
    assert lost["state"] == "refunded" and lost["amountRefunded"] == 6000
    assert uses() == 0
    payments.check(order["_id"])  # the return page again, the webhook, reconcile: never twice
    reconcile(now=later(40), grace=NO_GRACE)
    assert uses() == 0
    cart = holds.hold_seats(session["_id"], CAROL, None, ["0:0"])
    promos.apply_code(CAROL, cart.cart_id, "ONCE")  # the use is free for someone else again
    assert uses() == 1
    assert check_invariants() == []


def test_a_crash_while_refunding_the_late_payment_still_gives_the_use_back_once(fault_hook, crash_at):
    session = make_session()
    order, asked = late_payer(session)
    holds.hold_seats(session["_id"], BOB, None, ["1:3"])
    authenticate(order["payment"]["intent"], asked.client_secret)

    crash_at("refund.lost_after_order")  # refunded on the order, nothing else done yet
    with pytest.raises(faults.InjectedCrash):
        payments.check(order["_id"])
    fault_hook(None)
    reconcile(now=later(1), grace=NO_GRACE)
    reconcile(now=later(2), grace=NO_GRACE)
    lost = mongo.orders().find_one({"_id": order["_id"]})
    assert lost["state"] == "refunded" and lost["refunds"][0]["status"] == "succeeded"
    assert uses() == 0
    assert check_invariants() == []


def test_a_late_payment_that_never_comes_gives_the_use_back_after_the_late_period(settings):
    settings.BOOKING_PAYMENT_LATE_SECONDS = 600
    settings.BOOKING_PAYMENT_CHECK_GRACE_SECONDS = 0
    late_payer(make_session())
    reconcile(now=later(5), grace=NO_GRACE)
    assert uses() == 1  # still within the late period
    reconcile(now=later(40), grace=NO_GRACE)  # canceled at Stripe: it can never be paid now
    assert uses() == 0
    reconcile(now=later(41), grace=NO_GRACE)
    assert uses() == 0
    assert check_invariants() == []


def test_a_full_refund_crashing_after_the_order_write_still_gives_the_use_back(fault_hook, crash_at):
    """Staff refund a paid order with the code in full and the process dies before the use goes back."""
    from booking.payments import refunds
    from booking.tests.paying import pay

    promos.create_code("ONCE", "amount", 500, cap=1)
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    promos.apply_code(ALICE, cart.cart_id, "ONCE")
    paid = pay(payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com"))

    crash_at("refund.after_order")
    with pytest.raises(faults.InjectedCrash):
        refunds.refund_tickets(paid["_id"], by="anna")
    fault_hook(None)
    reconcile(now=later(1), grace=NO_GRACE)
    assert mongo.orders().find_one({"_id": paid["_id"]})["state"] == "refunded"
    assert uses() == 0
    reconcile(now=later(2), grace=NO_GRACE)
    assert uses() == 0
    assert check_invariants() == []


def test_a_card_order_whose_payment_was_never_made_gives_the_use_back_when_it_expires(settings):
    """Stripe was unreachable at checkout (the order waits without a PaymentIntent) and the buyer
    left: nothing can ever be paid for it, so its use goes back with its seats, not never."""
    settings.BOOKING_PAYMENT_CHECK_GRACE_SECONDS = 0
    promos.create_code("ONCE", "amount", 500, cap=1)
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    promos.apply_code(ALICE, cart.cart_id, "ONCE")
    reachable = settings.STRIPE_API_BASE
    settings.STRIPE_API_BASE = "http://127.0.0.1:9"  # nothing listens: every call fails
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    settings.STRIPE_API_BASE = reachable
    assert order["state"] == "pending_payment" and order["payment"]["intent"] is None
    assert uses() == 1
    cart_expiry.expire_stale_carts(later(16))  # the hold (15 minutes) ended unpaid
    expired = mongo.orders().find_one({"_id": order["_id"]})
    assert expired["state"] == "expired" and expired["payment"]["intent"] is None
    assert uses() == 0  # at once: there is no payment that could still come
    reconcile(now=later(60), grace=NO_GRACE)  # long past the late period: still once
    assert uses() == 0
    other = holds.hold_seats(session["_id"], CAROL, None, ["0:0"])
    promos.apply_code(CAROL, other.cart_id, "ONCE")
    assert uses() == 1
    assert check_invariants() == []


@pytest.mark.parametrize("ends", ["paid at the counter", "lapsed unpaid", "canceled by staff"])
def test_a_box_office_reservation_keeps_the_use_when_paid_and_gives_it_back_when_it_ends_unpaid(ends):
    promos.create_code("ONCE", "amount", 500, cap=1)
    session = make_session(days=1)
    mongo.sessions().update_one(
        {"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True, "deadlineMinutes": 60}}}
    )
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    promos.apply_code(ALICE, cart.cart_id, "ONCE")
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com", "box_office")
    assert order["state"] == "pending_payment" and uses() == 1
    if ends == "paid at the counter":
        payments.mark_paid_at_counter(order["_id"], by="clerk")
    elif ends == "lapsed unpaid":
        cart_expiry.expire_stale_carts(order["payment"]["until"] + timedelta(seconds=1))
    else:
        payments.cancel_unpaid(order["_id"], by="clerk", reason="no show")
    reconcile(now=order["payment"]["until"] + timedelta(hours=2), grace=NO_GRACE)
    state = mongo.orders().find_one({"_id": order["_id"]})["state"]
    expected = {
        "paid at the counter": ("paid", 1),
        "lapsed unpaid": ("expired", 0),
        "canceled by staff": ("canceled", 0),
    }
    assert (state, uses()) == expected[ends]
    assert check_invariants() == []


# --- a crash while a use is given back (sales/promos.py: three writes, finished by reconcile) ---


def two_carts_with_the_code(session):
    """Alice and Bob each redeemed a use of TWICE (cap 2); Alice's hold has ended (not yet expired)."""
    promos.create_code("TWICE", "amount", 500, cap=2)
    mine = holds.hold_seats(session["_id"], ALICE, None, ["1:2", "1:3"])
    promos.apply_code(ALICE, mine.cart_id, "TWICE")
    theirs = holds.hold_seats(session["_id"], BOB, None, ["2:2", "2:3"])
    promos.apply_code(BOB, theirs.cart_id, "TWICE")
    mongo.carts().update_one({"_id": mine.cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    return mine.cart_id


def twice_uses() -> int:
    return mongo.promo_codes().find_one({"code": "TWICE"})["uses"]


@pytest.mark.parametrize("dies_at", ["expire.after_cart", "promo.after_giving", "promo.after_give_back"])
def test_a_crash_while_an_expired_carts_use_goes_back_returns_it_once_at_reconcile(crash_at, fault_hook, dies_at):
    """Wherever the expiry dies (after the cart's end write, after marking the give-back, after the
    code's write), reconcile gives Alice's use back exactly once: Bob's use is never given back
    with it, and reconcile again changes nothing."""
    cart_id = two_carts_with_the_code(make_session())
    assert twice_uses() == 2
    crash_at(dies_at)
    with pytest.raises(faults.InjectedCrash):
        cart_expiry.expire_stale_carts()
    fault_hook(None)
    assert twice_uses() == (1 if dies_at == "promo.after_give_back" else 2)
    reconcile(grace=NO_GRACE)
    assert twice_uses() == 1  # Alice's use back, Bob's still taken
    assert mongo.carts().find_one({"_id": cart_id})["promo"]["released"] is True
    reconcile(grace=NO_GRACE)
    assert twice_uses() == 1
    assert check_invariants() == []


def test_reconcile_leaves_the_use_of_a_cart_whose_late_payment_may_still_come():
    """An expired card checkout keeps its use until its payment is decided: the give-back sweep
    takes only carts that never reached payment."""
    late_payer(make_session())
    assert promos.finish_give_backs() == 0
    assert uses() == 1
