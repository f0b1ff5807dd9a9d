"""The service the staff site added to the engine: force-expiring a cart."""

from booking.core import mongo
from booking.core.domain import CartState
from booking.sales import holds
from booking.sales.carts import force_expire_cart
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE


def test_force_expire_frees_the_seats_of_an_active_cart_at_once():
    session = make_session()
    hold = holds.hold_seats(session["_id"], "s:buyer", None, ["0:0", "0:1"])

    freed = force_expire_cart(hold.cart_id)

    assert freed == 2
    cart = mongo.carts().find_one({"_id": hold.cart_id})
    assert cart["state"] == CartState.EXPIRED
    after = mongo.sessions().find_one({"_id": session["_id"]})
    assert after["seats"][0][0] == FREE and after["seats"][0][1] == FREE
    assert after["seatsAvailable"] == session["seatsAvailable"]
    assert check_invariants() == []


def test_force_expire_leaves_a_checked_out_cart_alone():
    session = make_session()
    hold = holds.hold_seats(session["_id"], "s:buyer", None, ["0:0"])
    checkout_paid("s:buyer", hold.cart_id, "Ada", "ada@example.com")

    assert force_expire_cart(hold.cart_id) is None
    assert mongo.carts().find_one({"_id": hold.cart_id})["state"] == CartState.DONE
    assert check_invariants() == []
