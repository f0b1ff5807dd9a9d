""" "Bugs found when tried as a buyer": each one as a buyer meets it."""

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from booking.core import mongo
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.tests.localstripe import VISA, card

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


@pytest.fixture
def session():
    return make_session()


def url(name, **kwargs):
    return reverse(f"booking:{name}", kwargs=kwargs)


def toggle(client, session, key):
    return client.post(url("toggle_seat", session_id=str(session["_id"])), {"seat": key}, **HTMX)


def buy(client, session, key="0:0"):
    """Checkout, then pay by card through the pay endpoint (as pay.js does): a paid order, and the
    order page the payment answer sends the buyer to."""
    toggle(client, session, key)
    response = client.post(url("checkout"), {"name": "Ada", "email": "ada@example.com", "method": "card"})
    assert response.status_code == 302
    order = mongo.orders().find_one({})
    paid = client.post(url("pay", ref=order["ref"]), {"payment_method": card(VISA)}).json()
    assert paid["status"] == "paid" and paid["redirect"] == url("order", ref=order["ref"])
    order = mongo.orders().find_one({"_id": order["_id"]})
    assert order["state"] == "paid"
    return order, paid["redirect"]


# 3. a cancelled booking offers no "Print tickets", and says why
def test_a_canceled_booking_offers_no_print_tickets_and_says_why(client, session):
    from booking.sales.cancels import cancel_order

    order, _ = buy(client, session)
    assert "Print tickets" in client.get(url("order", ref=order["ref"])).content.decode()
    cancel_order(order["_id"], by="staff", reason="double booking")
    page = client.get(url("order", ref=order["ref"])).content.decode()
    assert "Print tickets" not in page
    assert "tickets are no longer valid" in page


# 4. the thank-you line only right after checkout
def test_thank_you_only_right_after_checkout_not_through_find_my_booking(client, session):
    order, page_url = buy(client, session)
    first = client.get(page_url).content.decode()  # the first view of the order page after payment
    assert "Thank you" in first and "confirmation is on its way" in first
    again = client.get(page_url).content.decode()  # a reload
    assert "Thank you" not in again and "confirmation is on its way" not in again
    other = Client()
    found = other.post(url("find_booking"), {"ref": order["ref"], "email": "ada@example.com"})
    page = other.get(found["Location"]).content.decode()
    assert order["ref"] in page
    assert "Thank you" not in page and "confirmation is on its way" not in page


# 5. releasing a cart is not cancelling a booking
def test_releasing_a_cart_says_the_held_seats_were_released(client, session):
    toggle(client, session, "0:0")
    page = client.post(url("cart_cancel"), follow=True).content.decode()
    assert "Your held seats were released" in page
    assert "booking was canceled" not in page


# 6. a favicon
def test_favicon_is_served_and_linked(client, session):
    response = client.get("/favicon.ico")
    assert response.status_code in (301, 302)
    assert response["Location"].endswith("booking/favicon.svg")
    assert finders.find("booking/favicon.svg")
    assert 'rel="icon"' in client.get("/").content.decode()
