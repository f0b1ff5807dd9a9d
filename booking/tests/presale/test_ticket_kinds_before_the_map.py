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


# --- how many of which kinds, before clicking seats one by one ---


def choose(client, session, htmx=False, **fields):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(f"/sessions/{session['_id']}/kinds/", fields, **headers)


def click(client, session, key):
    return client.post(f"/sessions/{session['_id']}/toggle", {"seat": key}, HTTP_HX_REQUEST="true")


def kinds_in_cart(client) -> dict[str, str]:
    return {i["key"]: i["ticketType"] for i in cart_items(client)}


def test_the_picker_is_offered_on_the_map_and_comes_as_a_page_or_as_a_partial(client, priced):
    page = client.get(f"/sessions/{priced['_id']}/").content.decode()
    assert 'id="kinds-first"' in page and f"/sessions/{priced['_id']}/kinds/" in page
    full = client.get(f"/sessions/{priced['_id']}/kinds/").content.decode()
    assert "<html" in full and 'name="kind_full"' in full and 'name="kind_reduced"' in full
    partial = client.get(f"/sessions/{priced['_id']}/kinds/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and partial.lstrip().startswith('<form class="kinds-form"')
    german = client.get(f"/sessions/{priced['_id']}/kinds/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Ermäßigt" in german and "Wie viele, und welche Arten?" in german


def test_seats_clicked_one_by_one_take_the_chosen_kinds_in_order_then_full_price(client, priced):
    response = choose(client, priced, kind_full="2", kind_reduced="1")
    assert response.status_code == 302 and response["Location"] == f"/sessions/{priced['_id']}/"
    page = client.get(f"/sessions/{priced['_id']}/").content.decode()
    assert "2 × Full price, 1 × Reduced" in page
    for key in ("0:0", "0:1", "0:5", "0:6"):  # never a single seat left on its own
        assert click(client, priced, key).status_code == 200
    assert kinds_in_cart(client) == {"0:0": "full", "0:1": "full", "0:5": "reduced", "0:6": "full"}
    assert sum(i["price"] for i in cart_items(client)) == 2000 * 3 + 1500


def test_a_seat_let_go_gives_its_kind_back_to_the_next_click(client, priced):
    choose(client, priced, kind_reduced="1", kind_full="1")  # taken in the list's order: full price first
    click(client, priced, "0:0")
    click(client, priced, "0:1")
    assert kinds_in_cart(client) == {"0:0": "full", "0:1": "reduced"}
    click(client, priced, "0:1")  # let go
    click(client, priced, "0:5")
    assert kinds_in_cart(client) == {"0:0": "full", "0:5": "reduced"}


def test_a_chosen_kind_the_seat_s_category_does_not_offer_is_full_price(client, priced):
    choose(client, priced, kind_reduced="1")
    assert click(client, priced, "1:3").status_code == 200  # premium: no reduced price
    assert kinds_in_cart(client) == {"1:3": "full"}


def test_htmx_choice_sends_the_browser_to_the_map(client, priced):
    response = choose(client, priced, htmx=True, kind_reduced="1")
    assert response.status_code == 200 and response["HX-Redirect"] == f"/sessions/{priced['_id']}/"


def test_forgetting_the_choice_leaves_clicked_seats_full_price(client, priced):
    choose(client, priced, kind_reduced="2")
    choose(client, priced, clear="1")
    click(client, priced, "0:0")
    assert kinds_in_cart(client) == {"0:0": "full"}


@pytest.mark.parametrize(
    "fields",
    [{"kind_reduced": "x"}, {"kind_reduced": "-1"}, {"kind_full": "0"}, {"kind_student": "1"}, {"kind_full": "11"}],
)
def test_a_bad_choice_is_a_400_with_a_message_and_keeps_nothing(client, priced, settings, fields):
    settings.BOOKING_MAX_SEATS_PER_CART = 10
    response = choose(client, priced, **fields)
    assert response.status_code == 400 and 'id="kinds-error"' in response.content.decode()
    click(client, priced, "0:0")
    assert kinds_in_cart(client) == {"0:0": "full"}


def test_the_most_seats_of_a_cart_can_be_chosen_and_one_more_cannot(client, priced, settings):
    settings.BOOKING_MAX_SEATS_PER_CART = 10
    assert choose(client, priced, kind_full="5", kind_reduced="6").status_code == 400
    assert choose(client, priced, kind_full="4", kind_reduced="6").status_code == 302


def test_the_picker_of_an_unknown_performance_is_a_404(client, db):
    assert client.get("/sessions/000000000000000000000000/kinds/").status_code == 404
    assert client.post("/sessions/nonsense/kinds/", {"kind_full": "1"}).status_code == 404
