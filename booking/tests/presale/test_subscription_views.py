"""Buying a subscription through the buyer's pages: the common map, the sale, hostile input."""

from datetime import timedelta

import pytest
from django.urls import reverse

from booking.core import clock, mongo
from booking.sales import holds, subscriptions
from booking.tests.factories import make_session, make_theater
from booking.venues.seat_grid import FREE, HELD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


@pytest.fixture
def season():
    hall = make_theater()
    sessions = [make_session(hall, days=2 + i) for i in range(3)]
    now = clock.now()
    sub = subscriptions.create_subscription(
        name="Season A",
        name_de="Abo A",
        session_ids=[s["_id"] for s in sessions],
        prices={"s": 6000, "p": 9000},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
    )
    return sub, sessions


def page_url(sub):
    return reverse("booking:subscription", kwargs={"subscription_id": str(sub["_id"])})


def buy_url(sub):
    return reverse("booking:subscription_buy", kwargs={"subscription_id": str(sub["_id"])})


def cells(sessions, key):
    r, c = (int(x) for x in key.split(":"))
    return [mongo.sessions().find_one({"_id": s["_id"]})["seats"][r][c] for s in sessions]


def test_the_list_and_the_page_show_the_subscription_in_both_languages(client, season):
    sub, sessions = season
    assert "Season A" in client.get(reverse("booking:subscriptions")).content.decode()
    german = client.get(page_url(sub), HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Abo A" in german
    assert german.count('name="seat"') == sessions[0]["seatsAvailable"]


def test_the_map_offers_only_seats_free_in_every_performance(client, season):
    sub, sessions = season
    holds.hold_seats(sessions[2]["_id"], "s:bob", None, ["0:0", "0:1"])
    page = client.get(page_url(sub)).content.decode()
    seat = page[page.index('id="s0-0"') :].split(">")[0]
    assert "sold" in seat and 'aria-disabled="true"' in seat, seat
    free = page[page.index('id="s0-2"') :].split(">")[0]
    assert "aria-disabled" not in free, free


def test_buying_holds_the_seat_everywhere_and_goes_to_checkout(client, season):
    sub, sessions = season
    answer = client.post(buy_url(sub), {"seat": "1:3", "ticket_type": "full"})
    assert answer.status_code == 302 and answer["Location"] == reverse("booking:checkout")
    assert cells(sessions, "1:3") == [HELD, HELD, HELD]
    checkout = client.get(reverse("booking:checkout")).content.decode()
    assert "€90" in checkout


def test_a_seat_taken_meanwhile_is_a_409_with_the_page_and_nothing_held(client, season):
    sub, sessions = season
    holds.hold_seats(sessions[1]["_id"], "s:bob", None, ["2:0", "2:1"])
    answer = client.post(buy_url(sub), {"seat": "2:0"})
    assert answer.status_code == 409
    assert "just taken" in answer.content.decode()
    assert cells(sessions, "2:0") == [FREE, HELD, FREE]


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"seat": ""},
        {"seat": "x"},
        {"seat": "-1:0"},
        {"seat": "99:99"},
        {"seat": "0:4"},  # the aisle
        {"seat": "0:0", "ticket_type": "<script>"},
        {"seat": "0:0", "ticket_type": "reduced"},  # not offered
        {"seat": "0:0,0:0"},
        {"seat": ",".join(f"2:{c}" for c in range(11))},  # more than a cart's seats
    ],
)
def test_bad_input_is_a_400_and_changes_nothing(client, season, data):
    sub, sessions = season
    answer = client.post(buy_url(sub), data)
    assert answer.status_code == 400
    assert mongo.carts().count_documents({}) == 0
    assert all(s["seatsAvailable"] == mongo.sessions().find_one({"_id": s["_id"]})["seatsAvailable"] for s in sessions)


@pytest.mark.parametrize("ident", ["nope", "0" * 24, "<b>"])
def test_unknown_subscriptions_are_404(client, ident):
    assert client.get(f"/subscriptions/{ident}/").status_code == 404
    assert client.post(f"/subscriptions/{ident}/buy", {"seat": "0:0"}).status_code == 404


def test_a_get_cannot_buy(client, season):
    sub, _ = season
    assert client.get(buy_url(sub)).status_code == 405


def test_renewal_links_that_are_not_tokens_are_404(client):
    assert client.get("/subscriptions/renew/abc/").status_code == 404
    assert client.get("/subscriptions/renew/" + "a" * 32 + "/").status_code == 404
