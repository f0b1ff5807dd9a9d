"""``check_invariants`` reports what must never happen to money, each seen by corrupting real
data made through the real flow (localstripe): a sold seat without its paid order, a paid order
whose seat is not sold, an order paid twice."""

from booking.core import mongo
from booking.payments import flow as payments
from booking.sales import holds
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid, checkout_paid_setup, pay
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, HELD, SOLD

ALICE = "s:alice"


def paid_order(session, owner=ALICE, keys=("1:2", "1:3")):
    cart = holds.hold_seats(session["_id"], owner, None, list(keys))
    order = checkout_paid(owner, cart.cart_id, "Ada", "ada@example.com")
    assert check_invariants() == []
    return order


def set_cell(session, key: str, state: int, available_change: int) -> None:
    r, c = (int(x) for x in key.split(":"))
    mongo.sessions().update_one(
        {"_id": session["_id"]}, {"$set": {f"seats.{r}.{c}": state}, "$inc": {"seatsAvailable": available_change}}
    )


# --- every sold seat belongs to a paid order ---


def test_a_sold_seat_nobody_paid_for_is_reported():
    session = make_session()
    paid_order(session)
    set_cell(session, "0:0", SOLD, -1)  # sold, and no order has it
    assert any("sold seat 0:0 belongs to 0 paid orders" in b for b in check_invariants())


def test_a_sold_seat_whose_order_is_only_waiting_for_its_payment_is_reported():
    session = make_session()
    checkout_paid_setup(session, ALICE, keys=("2:0",))  # pending payment: held, not sold
    assert check_invariants() == []
    set_cell(session, "2:0", SOLD, 0)  # the cell sold before the money came
    breaches = check_invariants()
    assert any("sold seat 2:0 belongs to 0 paid orders" in b for b in breaches)


def test_a_sold_seat_whose_paid_order_went_back_to_pending_is_reported():
    session = make_session()
    order = paid_order(session)
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"state": "pending_payment"}})
    breaches = check_invariants()
    assert any("sold seat 1:2 belongs to 0 paid orders" in b for b in breaches)
    assert any("sold seat 1:3 belongs to 0 paid orders" in b for b in breaches)


def test_a_seat_in_two_paid_orders_is_reported():
    session = make_session()
    first = paid_order(session)
    second = paid_order(session, owner="s:bob", keys=("0:0",))
    line = {**second["lines"][0], "key": first["lines"][0]["key"], "row": first["lines"][0]["row"]}
    mongo.orders().update_one({"_id": second["_id"]}, {"$set": {"lines": [line]}})
    breaches = check_invariants()
    assert any("seat 1:2 is in 2 paid orders" in b for b in breaches)


# --- every paid order's seats are sold ---


def test_a_paid_orders_seat_set_free_is_reported():
    session = make_session()
    order = paid_order(session)
    set_cell(session, "1:3", FREE, 1)
    assert any(f"seat 1:3 is in order {order['ref']} but its cell is {FREE}" in b for b in check_invariants())


def test_a_paid_orders_seat_set_held_is_reported():
    session = make_session()
    order = paid_order(session)
    set_cell(session, "1:2", HELD, 0)
    assert any(f"seat 1:2 is in order {order['ref']} but its cell is {HELD}" in b for b in check_invariants())


# --- no order paid twice ---


def test_a_second_payment_kept_without_its_refund_is_reported():
    session = make_session()
    order = paid_order(session)
    mongo.orders().update_one(
        {"_id": order["_id"]}, {"$push": {"extraPayments": {"provider": "stripe", "id": "pi_second", "amount": 7000}}}
    )
    assert any(f"order {order['ref']} was paid twice (pi_second)" in b for b in check_invariants())


def test_a_second_payment_refunded_in_full_is_not_a_breach():
    """The real thing: a second payment for a paid order is refunded by settle."""
    from booking.payments.stripe_provider import StripeProvider
    from booking.tests.localstripe import VISA, card

    session = make_session()
    order = paid_order(session)
    stripe = StripeProvider()
    extra = stripe.start(order, idempotency_key=f"test-extra-{order['_id']}")
    paid = stripe.confirm(extra.id, card(VISA), idempotency_key=f"test-extra-{order['_id']}-confirm")
    payments.settle(paid)
    after = mongo.orders().find_one({"_id": order["_id"]})
    assert after["extraPayments"][0]["id"] == extra.id and after["refunds"][0]["status"] == "succeeded"
    assert check_invariants() == []


def test_one_payment_kept_by_two_orders_is_reported():
    session = make_session()
    first = paid_order(session)
    second = paid_order(session, owner="s:bob", keys=("0:0",))
    mongo.orders().update_one(
        {"_id": second["_id"]},
        {"$set": {"paidWith.id": first["paidWith"]["id"]}},
    )
    assert any(
        f"payment {first['paidWith']['id']} is kept by two orders" in b and second["ref"] in b
        for b in check_invariants()
    )


def test_a_paid_order_without_a_payment_is_reported():
    session = make_session()
    order = pay(checkout_paid_setup(session, ALICE))
    mongo.orders().update_one({"_id": order["_id"]}, {"$unset": {"paidWith": ""}})
    assert any(f"order {order['ref']} is paid without a payment" in b for b in check_invariants())
