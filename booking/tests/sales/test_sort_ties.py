"""Every sort that can tie ends with ``_id``: MongoDB promises no order among equal keys, so a
list cut by a limit (what's on takes 500 sessions; a stadium's sections share one start) or shown
to staff must not depend on the order documents happen to be stored in.

Each test stores two documents with the same sort key in the opposite order of the one expected
(highest id first for an ascending list, lowest first for a descending one), so the order they
were stored in and the order asked for disagree."""

from datetime import timedelta

from booking.control import selectors as staff
from booking.core import clock, mongo
from booking.payments import flow as payments
from booking.sales import holds, selectors
from booking.sales.order_search import OrderFilters, search_orders
from booking.tests.factories import make_session, make_theater, stored_against_id_order, two_sessions_at_the_same_start


def test_whats_on_breaks_ties_of_start_by_id():
    ids = two_sessions_at_the_same_start()
    assert [s["_id"] for s in selectors.upcoming_sessions()] == ids


def test_whats_on_by_theater_breaks_ties_by_id_too():
    ids = two_sessions_at_the_same_start()
    theater_id = mongo.sessions().find_one({"_id": ids[0]})["theaterId"]
    assert [s["_id"] for s in selectors.upcoming_sessions(theater_id=theater_id)] == ids


def test_staff_session_lists_break_ties_by_id():
    ids = two_sessions_at_the_same_start()
    theater_id = mongo.sessions().find_one({"_id": ids[0]})["theaterId"]
    assert [s["_id"] for s in staff.staff_sessions()] == ids
    assert [s["_id"] for s in staff.sessions_of_theater(theater_id)] == ids
    mongo.sessions().update_many({}, {"$set": {"start": clock.now() - timedelta(days=1)}})
    newest_first = stored_against_id_order(mongo.sessions(), list(mongo.sessions().find()), descending=True)
    assert [s["_id"] for s in staff.staff_sessions(when="past")] == newest_first  # both keys descending


def test_theaters_of_the_same_name_come_in_id_order():
    docs = [make_theater(name="Hall"), make_theater(name="Hall")]
    ids = stored_against_id_order(mongo.theaters(), docs)
    assert [t["_id"] for t in selectors.theaters()] == ids
    assert [t["_id"] for t in staff.theaters_with_session_counts()] == ids
    assert [t[0] for t in staff.theater_choices()] == [str(i) for i in ids]


def test_staff_order_and_cart_lists_break_ties_of_creation_time_by_id():
    session = make_session()
    orders = []
    for owner, seat in (("s:a", "0:0"), ("s:b", "0:1")):
        held = holds.hold_seats(session["_id"], owner, None, [seat])
        orders.append(payments.start(owner, held.cart_id, "Ada", "ada@example.org"))
    same = clock.now()
    mongo.orders().update_many({}, {"$set": {"createdOn": same}})
    mongo.carts().update_many({}, {"$set": {"createdOn": same}})
    order_ids = stored_against_id_order(mongo.orders(), list(mongo.orders().find()), descending=True)
    cart_ids = stored_against_id_order(mongo.carts(), list(mongo.carts().find()), descending=True)
    assert [
        o["_id"] for o in search_orders(filters=OrderFilters()).orders
    ] == order_ids  # newest first, both keys descending
    assert [o["_id"] for o in search_orders(filters=OrderFilters(text="Ada")).orders] == order_ids
    assert [c["_id"] for c in staff.carts_by_state(None)] == cart_ids
