"""Before the map: the legend gives each kind of ticket's price, and best available takes how many
seats of which kind, so the cart holds them at those prices from the start."""

import pytest

from booking.core import mongo
from booking.sales import offers
from booking.tests.factories import TYPES, make_session, make_theater

pytestmark = pytest.mark.django_db


@pytest.fixture
def priced():
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500}})
    return session


def best(client, session, HTTP_HX_REQUEST=None, **fields):
    headers = {"HTTP_HX_REQUEST": HTTP_HX_REQUEST} if HTTP_HX_REQUEST else {}
    return client.post(f"/sessions/{session['_id']}/best", fields, **headers)


def cart_items(client) -> list[dict]:
    """The items of the test's one live cart (the buyer cookie is signed: read by state)."""
    cart = mongo.carts().find_one({"state": "active"}, hint="state_expires")
    return sorted(cart["items"], key=lambda i: i["key"]) if cart else []


def test_the_legend_gives_each_kinds_price_and_the_form_asks_which_kinds(client, priced):
    page = client.get(f"/sessions/{priced['_id']}/").content.decode()
    assert "Reduced €15" in page  # stalls' reduced price beside its full price
    assert 'id="best-kinds"' in page and 'name="kind_reduced"' in page
    assert 'name="kind_companion"' not in page  # chosen in the cart, beside a wheelchair space


def test_german_pages_name_the_kinds_in_german(client, priced):
    page = client.get(f"/sessions/{priced['_id']}/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Ermäßigt 15\xa0€" in page and "Welche Arten?" in page


def test_best_available_holds_the_seats_at_the_kinds_asked_for(client, priced):
    response = best(client, priced, count="3", category="s", kind_reduced="1")
    assert response.status_code in (200, 302)
    items = cart_items(client)
    assert len(items) == 3
    assert sorted(i["ticketType"] for i in items) == ["full", "full", "reduced"]
    assert sum(i["price"] for i in items) == 2000 + 2000 + 1500


def test_more_kinds_than_seats_is_a_400_and_holds_nothing(client, priced):
    response = best(client, priced, count="2", kind_reduced="3")
    assert response.status_code == 400
    assert mongo.carts().count_documents({}) == 0


@pytest.mark.parametrize("field, value", [("kind_Bad!", "1"), ("kind_reduced", "x"), ("kind_reduced", "-1")])
def test_a_malformed_kind_is_a_400_and_holds_nothing(client, priced, field, value):
    assert best(client, priced, count="2", **{field: value}).status_code == 400
    assert mongo.carts().count_documents({}) == 0


def test_an_unknown_kind_is_refused_before_any_seat_is_held(client, priced):
    response = best(client, priced, count="2", kind_student="1")
    assert response.status_code == 400
    assert mongo.carts().count_documents({}) == 0


def test_exactly_as_many_kinds_as_seats_is_allowed(client, priced):
    assert best(client, priced, count="2", category="s", kind_reduced="2").status_code in (200, 302)
    assert [i["ticketType"] for i in cart_items(client)] == ["reduced", "reduced"]


def test_a_kind_the_category_does_not_offer_leaves_the_seat_full_price(client, priced):
    assert best(client, priced, count="2", category="p", kind_reduced="1").status_code in (200, 302)
    assert [i["ticketType"] for i in cart_items(client)] == ["full", "full"]


def test_the_held_note_gives_the_price_of_the_kinds_chosen_as_the_cart_does(client, priced):
    response = best(client, priced, count="3", category="s", kind_reduced="1", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    note = response.content.decode()
    assert sum(i["price"] for i in cart_items(client)) == 5500
    assert "€55" in note and "€60" not in note  # 2 full (€20) and 1 reduced (€15), not 3 at full price
