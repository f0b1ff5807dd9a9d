"""The unique indexes' uniqueness, where the app relies on the database to decide: two orders
never share a reference (ref_unique: a reference drawn twice is found out by the insert, not by a
read first), a cart never has two orders (cart_unique, on a replica set), a scan id is one conflict
(scan_unique: test_checkin_views.py), a promo code's text is one code (code_unique:
test_admin_promo_codes.py)."""

import pytest
from bson import ObjectId
from pymongo.errors import DuplicateKeyError

from booking.core import mongo
from booking.payments import BOX_OFFICE
from booking.payments import flow as payments
from booking.sales import checkout, holds
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants

pytestmark = pytest.mark.django_db


def test_two_checkouts_that_drew_the_same_reference_get_one_each(monkeypatch):
    """payments.start draws a reference and inserts its order without reading first (``fresh``):
    only ref_unique stops the second insert; the second cart then gets a reference of its own."""
    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    first = holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    second = holds.hold_seats(session["_id"], "s:bob", None, ["2:0"])
    drawn = iter(["QQQQQQQQ", "QQQQQQQQ"])  # the same reference, drawn twice
    real = checkout.new_booking_ref
    monkeypatch.setattr(checkout, "new_booking_ref", lambda: next(drawn, None) or real())
    a = payments.start("s:ada", first.cart_id, "Ada", "ada@example.org", BOX_OFFICE)
    b = payments.start("s:bob", second.cart_id, "Bob", "bob@example.org", BOX_OFFICE)
    assert a["ref"] == "QQQQQQQQ" and b["ref"] != "QQQQQQQQ"
    assert mongo.orders().count_documents({"ref": "QQQQQQQQ"}) == 1
    assert mongo.carts().find_one({"_id": second.cart_id})["orderRef"] == b["ref"]
    assert all(line["ticket"].startswith(b["ref"]) for line in b["lines"])
    assert check_invariants() == []


def test_a_second_order_for_one_cart_is_refused_by_the_database(settings):
    """On a replica set (MONGODB_SHARDED false) cart_unique is the last word on a cart's one order."""
    assert not settings.MONGODB_SHARDED
    session = make_session()
    hold = holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    order = payments.start("s:ada", hold.cart_id, "Ada", "ada@example.org")
    twin = {**mongo.orders().find_one({"_id": order["_id"]}), "_id": ObjectId(), "ref": checkout.new_booking_ref()}
    with pytest.raises(DuplicateKeyError):
        mongo.orders().insert_one(twin)
    assert mongo.orders().count_documents({"cartId": hold.cart_id}) == 1
