"""The cart's ticket type choice over HTTP: htmx answers the cart at once; a plain post redirects."""

import pytest

from booking.sales import offers
from booking.tests.factories import CATEGORIES, TYPES, make_session, make_theater
from booking.venues.layouts import parse_grid
from booking.venues.theaters import create_theater

pytestmark = pytest.mark.django_db


def priced():
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500}})
    return session


def choose(client, session, seat, code, **headers):
    data = {"session": str(session["_id"]), "seat": seat, "ticket_type": code}
    return client.post("/cart/ticket-type", data, **headers)


def held(client, session, *keys):
    seats = ",".join(keys)
    assert client.post(f"/sessions/{session['_id']}/hold", {"seats": seats}).status_code in (200, 302)


def test_cart_shows_the_choice_and_htmx_post_updates_the_total(client):
    session = priced()
    held(client, session, "0:0", "0:1")
    page = client.get("/cart/").content.decode()
    assert 'name="ticket_type"' in page and "Reduced" in page and "€40" in page
    response = choose(client, session, "0:1", "reduced", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="cart-page"' in body and "€35" in body
    assert 'value="reduced" selected' in body


def test_plain_post_redirects_and_a_bad_choice_says_why(client):
    session = priced()
    held(client, session, "1:2", "1:3")  # premium: no reduced price
    response = choose(client, session, "1:2", "reduced")
    assert response.status_code == 302
    assert "not offered" in client.get("/cart/").content.decode()
    response = choose(client, session, "1:2", "reduced", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "not offered" in response.content.decode()
    assert client.post("/cart/ticket-type", {"seat": "junk"}).status_code == 400


def test_promo_code_field_applies_says_why_not_and_is_rate_limited(client, settings):
    from booking.sales import promos

    settings.BOOKING_PROMO_CODE_RATE = "3/m"
    session = priced()
    held(client, session, "0:0", "0:1")
    promos.create_code("HALF", "percent", 50, cap=10)
    bad = client.post("/cart/promo", {"code": "NOPE1"}, HTTP_HX_REQUEST="true").content.decode()
    assert promos.NOT_VALID in bad and 'id="promo-error"' in bad
    good = client.post("/cart/promo", {"code": "half"}, HTTP_HX_REQUEST="true").content.decode()
    assert "HALF" in good and "€20" in good
    assert client.post("/cart/promo", {"code": "X"}).status_code == 400  # the third try this minute
    assert client.post("/cart/promo", {"code": "X"}).status_code == 429  # the fourth


def test_the_cart_and_checkout_name_the_ticket_types_in_the_buyers_language(client):
    """German names where staff gave one (else the English name), the built-in full price
    translated; the chosen type's condition beside its choice."""
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], [*TYPES, {"code": "student", "name": "Student"}])
    session = make_session(theater)
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500}, "student": {"s": 1200}})
    held(client, session, "0:0", "0:1")
    assert choose(client, session, "0:1", "reduced").status_code == 302
    german = client.get("/cart/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Normalpreis – 20" in german and "Ermäßigt – 15" in german and "Student – 12" in german
    assert "Reduced" not in german and "Full price" not in german
    assert german.count("Studierende, Senioren ab 65; Nachweis am Einlass zeigen") == 1
    english = client.get("/cart/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Full price – €20" in english and "Reduced – €15" in english and "Student – €12" in english
    assert english.count("Students, seniors 65+; show proof at the door") == 1
    checkout = client.get("/checkout/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Ermäßigt" in checkout and "Reduced" not in checkout


def test_the_cart_offers_a_companion_ticket_only_beside_a_wheelchair_space(client, settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    theater = create_theater("Access Hall", parse_grid("A: sS..ssss\nB: ssssssss\n", CATEGORIES))
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    offers.set_price_table(session["_id"], {"s": 2000}, {"reduced": {"s": 1500}, "companion": {"s": 0}})
    held(client, session, "1:0")
    cart = client.get("/cart/").content.decode()
    assert 'value="reduced"' in cart and 'value="companion"' not in cart and "Companion" not in cart
    held(client, session, "0:1")  # the wheelchair space
    assert 'value="companion"' in client.get("/cart/").content.decode()
