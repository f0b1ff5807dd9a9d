"""The seat map: the venue's word at its front, a performance canceled while seats are held, and
the seat numbers' contrast.

1. A performance canceled while a buyer holds seats in it: the buyer kept "Held for you" and a
   Check out button; new visitors' seats were announced "available".
2. The stadium's section map said "Stage" at the front of a football stand."""

import re

import pytest
from django.urls import reverse

from booking.core import mongo
from booking.core.contrast import contrast, ink_on
from booking.core.errors import InvalidRequest
from booking.sales import demo, reservations, selectors
from booking.sales import sessions as session_service
from booking.sales.demo_stadium import STADIUM_CATEGORIES, create_match, create_stadium
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.venues.seat_grid import FREE
from booking.venues.theaters import create_theater
from booking.web.seatmap_html import category_css, clear_cache

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh(settings):
    settings.BOOKING_HOLD_RATE = ""
    clear_cache()


# --- the venue decides the word at the front of the map ---


def test_a_stadium_section_says_pitch_and_a_theater_says_stage(client):
    stadium = create_stadium("Test Stadium", seats=4 * 40, rows=4, half=5)
    section = create_match(stadium)
    page = client.get(reverse("booking:session", args=[str(section["_id"])])).content.decode()
    front = re.search(r'<div class="stage" aria-hidden="true">([^<]*)</div>', page).group(1)
    assert front == "Pitch"
    hall = make_session()
    page = client.get(reverse("booking:session", args=[str(hall["_id"])])).content.decode()
    assert '<div class="stage" aria-hidden="true">Stage</div>' in page


def test_each_venue_word_and_a_bad_one(client):
    cinema = create_theater("Cinema", demo.parse_grid("A: ssss", demo.STUDIO_CATEGORIES), front="screen")
    session = make_session(cinema, prices={"s": 900})
    page = client.get(reverse("booking:session", args=[str(session["_id"])])).content.decode()
    assert '<div class="stage" aria-hidden="true">Screen</div>' in page
    with pytest.raises(InvalidRequest):
        create_theater("Odd", demo.parse_grid("A: ssss", demo.STUDIO_CATEGORIES), front="<b>ring</b>")


# --- canceled while seats are held ---


def hold(client, session, key):
    return client.post(reverse("booking:toggle_seat", args=[str(session["_id"])]), {"seat": key}, **HTMX)


def test_a_canceled_performance_releases_the_buyers_seats_and_says_why(client):
    session = make_session(name="Hamlet")
    hold(client, session, "0:0")
    hold(client, session, "0:1")
    session_service.cancel_session(session["_id"])
    page = client.get(reverse("booking:session", args=[str(session["_id"])])).content.decode()
    assert "“Hamlet”" in page and "has been canceled. The 2 seats you held for it were released" in page
    assert "Held for you for" not in page and 'href="/checkout/"' not in page  # no countdown, no Check out
    cart = mongo.carts().find_one({"owner": {"$exists": True}, "state": "active"}, hint=[("_id", 1)])
    assert cart["items"] == [] and cart["total"] == 0
    now = selectors.get_session(session["_id"])
    assert now["seats"][0][0] == FREE and now["seats"][0][1] == FREE
    # and a new visitor is not told the seats are available
    fresh = type(client)().get(reverse("booking:session", args=[str(session["_id"])])).content.decode()
    assert "This performance has been canceled." in fresh
    assert (
        ", available" not in fresh
        and 'aria-label="Row A, seat 1, Stalls, €20, not on sale" aria-disabled="true"' in fresh
    )


def test_the_open_map_brings_the_cancelation_to_the_cart(client):
    """The buyer's page is open when staff cancel: its live map refresh also replaces the cart."""
    session = make_session(name="Hamlet")
    hold(client, session, "1:0")
    session_service.cancel_session(session["_id"])
    partial = client.get(reverse("booking:seat_map", args=[str(session["_id"])]), **HTMX).content.decode()
    assert 'id="cart-summary"' in partial and 'hx-swap-oob="true"' in partial
    assert "has been canceled. The seat you held for it was released" in partial
    assert 'id="cart-bar"' in partial and "Check out" not in partial


def test_a_cancelation_interrupted_before_the_carts_is_finished_by_the_page(client):
    """A crash after the seats were released but before the carts were told: the page tells them."""
    session = make_session(name="Hamlet")
    hold(client, session, "2:0")
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"status": "canceled"}, "$inc": {"version": 1}})
    for res in selectors.get_session(session["_id"])["reservations"]:
        reservations.settle(session["_id"], res["_id"])
    page = client.get(reverse("booking:session", args=[str(session["_id"])])).content.decode()
    assert "has been canceled. The seat you held for it was released" in page
    assert 'href="/checkout/"' not in page


# --- seat numbers readable on every category colour (AA: 4.5:1) ---


@pytest.mark.parametrize(
    "colour",
    sorted(
        {c["color"] for c in demo.GRAND_CATEGORIES + demo.STUDIO_CATEGORIES + STADIUM_CATEGORIES}
        | {"#10b981", "#f59e0b", "#777777", "#767676", "#000000", "#ffffff"}
    ),
)
def test_seat_numbers_have_aa_contrast_on_every_category_colour(colour):
    assert contrast(ink_on(colour), colour) >= 4.5


def test_the_category_css_carries_the_number_colour():
    css = category_css(
        {"prices": {"b": 1, "r": 1}, "layout": {"categories": demo.GRAND_CATEGORIES + [demo.STUDIO_CATEGORIES[1]]}}
    )
    assert ".c-b{--cat:#10b981;--on-cat:#000000}" in css  # green: black numbers (white was 2.5:1)
    assert ".c-r{--cat:#f59e0b;--on-cat:#000000}" in css  # amber: black numbers (white was 2.2:1)
