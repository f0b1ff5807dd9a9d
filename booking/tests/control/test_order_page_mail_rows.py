"""The order page says only what is true of an order's mail: no "Confirmation mail ?" for an order
that never owed one, no offer to re-send to an order without an e-mail address."""

import pytest

from booking.core import mongo
from booking.payments import flow as payments
from booking.sales import counter, holds
from booking.tests.factories import make_session

pytestmark = pytest.mark.django_db

STAFF = counter.staff_owner(7)


def test_an_order_that_never_owed_a_mail_shows_no_mail_row(manager_client):
    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    cart = holds.hold_seats(session["_id"], "s:gus", None, ["0:0"])
    order = payments.start("s:gus", cart.cart_id, "Gus", "gus@example.com", "box_office")
    assert "mail" not in order  # an order not paid (pending, then expired) owes no confirmation
    page = manager_client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert "<strong>?</strong>" not in page
    assert ">Confirmation mail<" not in page


def test_a_counter_sale_without_an_address_offers_no_mail(manager_client):
    session = make_session()
    held = holds.hold_seats(
        session["_id"], STAFF, None, ["1:2"], context=holds.HoldContext(house_seats=True), allow_orphans=True
    )
    sale = counter.CounterSale(name="Walk In", method=counter.CASH, by="anna", by_id=7)
    order = counter.sell(STAFF, held.cart_id, sale)
    assert not order.get("email")
    page = manager_client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert "Re-send the confirmation mail" not in page
    assert "Send the confirmation mail to this address" not in page
    assert "none given" in page
