"""The buyer's waiting-list pages: the sold-out map's entry, joining (prefilled for a signed-in
buyer, bad input a 4xx that stores nothing), the offer's link putting the held seats in the cart,
and the staff's list."""

import pytest
from django.test import Client
from django.urls import reverse

from booking.accounts.buyers import buyer_user
from booking.core import mongo
from booking.sales import holds, waiting_list
from booking.tests.factories import make_session

pytestmark = pytest.mark.django_db

GRID = "A: ssss\n"


@pytest.fixture
def sold_out():
    session = make_session(grid=GRID)
    cart = holds.hold_seats(session["_id"], "s:first", None, ["0:0", "0:1", "0:2", "0:3"])
    return session, cart.cart_id


def join_url(session) -> str:
    return reverse("booking:waiting_list_join", args=[str(session["_id"])])


def test_a_sold_out_map_offers_the_waiting_list_and_one_on_sale_does_not(sold_out):
    session, _ = sold_out
    page = Client().get(reverse("booking:session", args=[str(session["_id"])])).content.decode()
    assert 'id="waiting-list-join"' in page and join_url(session) in page
    on_sale = make_session(grid=GRID)
    page = Client().get(reverse("booking:session", args=[str(on_sale["_id"])])).content.decode()
    assert 'id="waiting-list-join"' not in page


def test_the_form_is_prefilled_with_a_signed_in_buyers_address(sold_out):
    session, _ = sold_out
    client = Client()
    client.force_login(buyer_user(email="ada@example.com"), backend="sesame.backends.ModelBackend")
    page = client.get(join_url(session)).content.decode()
    assert 'value="ada@example.com"' in page


@pytest.mark.parametrize("language, words", [("en", "Your place"), ("de", "Ihr Platz")])
def test_joining_shows_the_place(sold_out, language, words):
    session, _ = sold_out
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.post(join_url(session), {"email": "first@example.com", "count": "1"})
    response = client.post(join_url(session), {"email": "ada@example.com", "count": "2", "together": "on"})
    assert response.status_code == 200
    assert words in response.content.decode() and "<strong>2</strong>" in response.content.decode()
    stored = mongo.waiting_list().find_one({"sessionId": session["_id"], "email": "ada@example.com"})
    assert stored["count"] == 2 and stored["together"] is True and stored["language"] == language


@pytest.mark.parametrize("form", [{"email": "x", "count": "1"}, {"email": "a@example.com", "count": "0"}])
def test_bad_input_is_a_400_with_a_message_and_stores_nothing(sold_out, form):
    session, _ = sold_out
    response = Client().post(join_url(session), form)
    assert response.status_code == 400 and 'id="waiting-list-error"' in response.content.decode()
    assert mongo.waiting_list().count_documents({}) == 0


def test_joining_a_performance_with_seats_on_sale_is_a_409():
    session = make_session(grid=GRID)
    response = Client().post(join_url(session), {"email": "a@example.com", "count": "1"})
    assert response.status_code == 409
    assert mongo.waiting_list().count_documents({}) == 0


def test_an_unknown_performance_is_a_404():
    assert Client().get(reverse("booking:waiting_list_join", args=["nope"])).status_code == 404


def test_the_offer_link_puts_the_held_seats_in_the_buyers_cart(sold_out):
    session, cart_id = sold_out
    entry = waiting_list.join(
        session_id=session["_id"], email="ada@example.com", count=2, together=True, category=None, language="en"
    )
    holds.release_seats(session["_id"], "s:first", cart_id, ["0:2", "0:3"])
    waiting_list.offer_free_seats(session["_id"])
    token = mongo.waiting_list().find_one({"_id": entry["_id"]})["offer"]["token"]
    url = reverse("booking:waiting_list_offer", args=[token])
    buyer = Client()

    page = buyer.get(url)  # a mail scanner opening the link takes nothing
    assert page.status_code == 200 and 'id="waiting-list-take"' in page.content.decode()
    assert mongo.waiting_list().find_one({"_id": entry["_id"]})["state"] == waiting_list.OFFERED

    taken = buyer.post(url)
    assert taken.status_code == 302 and taken["Location"] == reverse("booking:cart")
    cart_page = buyer.get(reverse("booking:cart")).content.decode()
    assert "Row A, seat 3" in cart_page and "Row A, seat 4" in cart_page


def test_an_unknown_offer_link_is_a_404():
    assert Client().get(reverse("booking:waiting_list_offer", args=["x" * 32])).status_code == 404


def test_staff_see_the_list_with_places_and_offers(sold_out, manager_client):
    session, cart_id = sold_out
    for n, email in enumerate(["a@example.com", "b@example.com", "c@example.com"]):
        waiting_list.join(
            session_id=session["_id"], email=email, count=1 + n, together=True, category=None, language="en"
        )
    holds.release_seats(session["_id"], "s:first", cart_id, ["0:3"])
    waiting_list.offer_free_seats(session["_id"])
    page = manager_client.get(reverse("admin:booking_session_waiting_list", args=[str(session["_id"])]))
    text = page.content.decode()
    assert page.status_code == 200
    assert "2 waiting, 1 with an open offer" in " ".join(text.split())
    assert "; 1 offer made" in " ".join(text.split())
    german = manager_client.get(
        reverse("admin:booking_session_waiting_list", args=[str(session["_id"])]), HTTP_ACCEPT_LANGUAGE="de"
    )
    assert "; 1 Angebot gemacht" in " ".join(german.content.decode().split())
    assert "a@example.com" in text and "Row A, seat 4" in text
