"""A process can die between any two writes; reconcile must finish or undo what it left."""

from datetime import timedelta

import pytest

from booking.core import clock, faults, mongo
from booking.payments import flow as payments
from booking.sales import holds
from booking.sales.carts import expire_cart
from booking.tests.factories import make_session
from booking.tests.localstripe import VISA, card
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import FREE, HELD, SOLD

ALICE = "s:alice"
NO_GRACE = timedelta(0)


def a_moment_later():
    """Reconcile leaves holds changed at or after its 'now' alone; run it just after the crash."""
    return clock.now() + timedelta(milliseconds=50)


def cells(session, keys):
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    return [seats[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


def test_crash_between_session_hold_and_cart_write(crash_at):
    session = make_session()
    crash_at("hold.after_session")
    with pytest.raises(faults.InjectedCrash):
        holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    faults.set_hook(None)
    assert check_invariants() != []  # a hold no cart knows about
    report = reconcile(now=a_moment_later(), grace=NO_GRACE)
    assert report.seats_released == 2
    assert cells(session, ["0:0", "0:1"]) == [FREE, FREE]
    assert check_invariants() == []


def test_crash_in_a_second_hold_for_an_existing_cart(crash_at):
    session = make_session()
    first = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    crash_at("hold.after_session")
    with pytest.raises(faults.InjectedCrash):
        holds.hold_seats(session["_id"], ALICE, first.cart_id, ["0:1"])
    faults.set_hook(None)
    reconcile(now=a_moment_later(), grace=NO_GRACE)
    assert cells(session, ["0:0", "0:1"]) == [HELD, FREE]  # the cart keeps seat 0:0
    assert check_invariants() == []


def test_crash_between_release_writes(crash_at):
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    crash_at("release.after_session")
    with pytest.raises(faults.InjectedCrash):
        holds.release_seats(session["_id"], ALICE, cart.cart_id, ["0:1"])
    faults.set_hook(None)
    report = reconcile(now=clock.now() + timedelta(seconds=1), grace=NO_GRACE)
    assert report.cart_items_dropped == 1
    assert [i["key"] for i in mongo.carts().find_one({"_id": cart.cart_id})["items"]] == ["0:0"]
    assert check_invariants() == []


@pytest.mark.parametrize("point", ["pay.after_confirm", "pay.after_paid", "pay.after_sell"])
def test_crash_during_checkout_is_finished_by_reconcile(crash_at, point, settings):
    # The checkout's writes that matter are those after the money was taken (every point of the
    # flow: test_payment_crashes.py).
    settings.BOOKING_CHECKOUT_STUCK_SECONDS = 0
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["1:2", "1:3"])
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        payments.pay_with_card(order["_id"], ALICE, card(VISA))
    faults.set_hook(None)
    # even long after the hold would have ended, the paid-for seats are not released
    later = clock.now() + timedelta(hours=2)
    report = reconcile(now=later, grace=NO_GRACE)
    assert report.carts_expired == 0  # finished, never expired: the order was asked about first
    assert cells(session, ["1:2", "1:3"]) == [SOLD, SOLD]
    [order] = mongo.orders().find()
    assert order["state"] == "paid" and len(order["lines"]) == 2
    assert mongo.carts().find_one({"_id": cart.cart_id})["state"] == "done"
    assert check_invariants() == []


def test_crash_during_expiry_is_finished_by_reconcile(crash_at):
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    mongo.carts().update_one({"_id": cart.cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    crash_at("expire.after_cart")
    with pytest.raises(faults.InjectedCrash):
        expire_cart(cart.cart_id)
    faults.set_hook(None)
    assert mongo.carts().find_one({"_id": cart.cart_id})["state"] == "expired"
    reconcile(now=a_moment_later(), grace=NO_GRACE)
    assert cells(session, ["0:0", "0:1"]) == [FREE, FREE]
    assert check_invariants() == []


def test_crash_after_expiry_the_next_buyer_still_gets_the_seat(crash_at):
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    mongo.carts().update_one({"_id": cart.cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    crash_at("expire.after_cart")
    with pytest.raises(faults.InjectedCrash):
        expire_cart(cart.cart_id)
    faults.set_hook(None)
    holds.hold_seats(session["_id"], "s:bob", None, ["0:0", "0:1"])
    assert check_invariants() == []
