from datetime import timedelta

import pytest

from booking.core import clock, mongo
from booking.core.errors import CartExpired, Conflict, InvalidRequest, NotFound
from booking.payments import flow as payments
from booking.sales import cancels, holds, selectors
from booking.sales.checkout import REF_ALPHABET
from booking.tests.factories import make_session
from booking.tests.localstripe import VISA, card
from booking.tests.paying import checkout_paid, pay
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, HELD, SOLD

ALICE = "s:alice"


def hold(session, keys, owner=ALICE, cart_id=None):
    return holds.hold_seats(session["_id"], owner, cart_id, keys).cart_id


def test_checkout_stores_one_order_with_tickets_and_paying_sells_the_seats():
    session = make_session()
    cart_id = hold(session, ["1:2", "1:3"])
    order = payments.start(ALICE, cart_id, "  Ada   Lovelace ", "ADA@example.com")
    assert order["name"] == "Ada Lovelace" and order["email"] == "ada@example.com"
    assert len(order["ref"]) == 8 and set(order["ref"]) <= set(REF_ALPHABET)
    assert order["total"] == 7000 and order["state"] == "pending_payment"  # was "paid": now it waits for the money
    assert [(line["row"], line["seat"], line["cat"]) for line in order["lines"]] == [("B", "3", "p"), ("B", "4", "p")]
    tickets = [line["ticket"] for line in order["lines"]]
    assert len(set(tickets)) == 2 and all(len(t) >= 20 for t in tickets)
    assert selectors.get_session(session["_id"])["seats"][1][2:4] == [HELD, HELD]  # held while paying
    assert mongo.carts().find_one({"_id": cart_id})["state"] == "paying"
    order = pay(order)
    assert order["state"] == "paid"
    fresh = selectors.get_session(session["_id"])
    assert fresh["seats"][1][2:4] == [SOLD, SOLD]
    assert fresh["reservations"] == []
    assert mongo.carts().find_one({"_id": cart_id})["state"] == "done"
    assert check_invariants() == []


def test_a_second_submit_returns_the_same_order():
    session = make_session()
    cart_id = hold(session, ["0:0"])
    first = payments.start(ALICE, cart_id, "Ada", "ada@example.com")
    again = payments.start(ALICE, cart_id, "Ada", "ada@example.com")
    assert again["_id"] == first["_id"]
    assert mongo.orders().count_documents({}) == 1


def test_expired_cart_cannot_check_out_and_its_seats_are_released():
    session = make_session()
    cart_id = hold(session, ["0:0"])
    mongo.carts().update_one({"_id": cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    with pytest.raises(CartExpired, match="released"):
        payments.start(ALICE, cart_id, "Ada", "ada@example.com")
    assert selectors.get_session(session["_id"])["seats"][0][0] == FREE
    assert mongo.orders().count_documents({}) == 0
    assert check_invariants() == []


@pytest.mark.parametrize("name, email", [("", "a@example.com"), ("Ada", "not-an-email"), ("x" * 101, "a@b.co")])
def test_bad_customer_details_are_refused_with_field_messages(name, email):
    session = make_session()
    cart_id = hold(session, ["0:0"])
    with pytest.raises(InvalidRequest) as exc:
        payments.start(ALICE, cart_id, name, email)
    assert exc.value.details["fields"]
    assert mongo.carts().find_one({"_id": cart_id})["state"] == "active"


def test_someone_elses_cart_is_not_found():
    session = make_session()
    cart_id = hold(session, ["0:0"])
    with pytest.raises(NotFound):
        payments.start("s:mallory", cart_id, "M", "m@example.com")
    assert mongo.carts().find_one({"_id": cart_id})["state"] == "active"


def test_checkout_fails_cleanly_when_the_hold_was_lost():
    session = make_session()
    cart_id = hold(session, ["0:0", "0:1"])
    # staff cancel the session's holds behind the cart's back, and someone else takes a seat
    from booking.sales import reservations

    reservations.settle(session["_id"], cart_id)
    hold(session, ["0:0"], owner="s:bob")
    order = payments.start(ALICE, cart_id, "Ada", "ada@example.com")
    failed = payments.pay_with_card(order["_id"], ALICE, card(VISA))
    # was CheckoutFailed before any money; now the payment is taken and goes straight back
    assert failed.status == "refunded" and failed.order["refunds"][0]["status"] == "succeeded"
    assert mongo.orders().find_one({"cartId": cart_id})["state"] == "refunded"
    assert mongo.carts().find_one({"_id": cart_id})["state"] == "canceled"
    assert selectors.get_session(session["_id"])["seats"][0][:2] == [HELD, FREE]  # Bob's, and free
    assert check_invariants() == []


def test_cancel_order_frees_its_seats():
    session = make_session()
    cart_id = hold(session, ["0:0", "0:1"])
    order = checkout_paid(ALICE, cart_id, "Ada", "ada@example.com")
    canceled = cancels.cancel_order(order["_id"], by="staff")
    assert canceled["state"] == "refunded" and canceled["seatsReleased"]  # was "canceled": the money goes back
    fresh = selectors.get_session(session["_id"])
    assert fresh["seats"][0][:2] == [FREE, FREE]
    assert fresh["seatsAvailable"] == session["seatsAvailable"]
    with pytest.raises(Conflict):
        cancels.cancel_order(order["_id"])
    assert check_invariants() == []
