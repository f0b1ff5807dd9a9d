"""Subscriptions on the staff site: defining one, and the box office selling one on the common map."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from booking.core import clock, mongo
from booking.sales import subscriptions
from booking.tests.admin_support import make_staff
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, SOLD

pytestmark = pytest.mark.django_db


@pytest.fixture
def season():
    sessions = [make_session(days=2 + i) for i in range(3)]
    now = clock.now()
    sub = subscriptions.create_subscription(
        name="Season B",
        session_ids=[s["_id"] for s in sessions],
        prices={"s": 4500, "p": 7500},
        sale_opens=now + timedelta(hours=2),  # not yet online: the box office sells anyway
        sale_closes=now + timedelta(days=1),
    )
    return sub, sessions


def url(name, *args):
    return reverse(f"admin:booking_subscription_{name}", args=[str(a) for a in args])


def cells(sessions, key):
    r, c = (int(x) for x in key.split(":"))
    return [mongo.sessions().find_one({"_id": s["_id"]})["seats"][r][c] for s in sessions]


def test_the_box_office_sells_a_subscription_on_the_common_map(client, season):
    sub, sessions = season
    client.force_login(make_staff("anna", ["view_session", "sell_at_counter"]))
    page = client.get(url("change", sub["_id"]))
    assert page.status_code == 200 and 'name="seat" value="1:3"' in page.content.decode()
    sold = client.post(
        url("sell", sub["_id"]),
        {"seat": "1:3", "ticket_type": "full", "name": "Max", "method": "cash", "channel": "box_office"},
    )
    assert sold.status_code == 302
    order = mongo.orders().find_one()
    assert order["state"] == "paid" and order["total"] == 7500 and len(order["lines"]) == 3
    assert cells(sessions, "1:3") == [SOLD, SOLD, SOLD]
    assert check_invariants() == []


@pytest.mark.parametrize(
    "data, status",
    [
        ({"seat": "1:3", "name": "", "method": "cash", "channel": "box_office"}, 400),  # no customer
        ({"seat": "nope", "name": "Max", "method": "cash", "channel": "box_office"}, 400),
        ({"seat": "0:4", "name": "Max", "method": "cash", "channel": "box_office"}, 400),  # the aisle
        ({"seat": "1:3", "name": "Max", "method": "barter", "channel": "box_office"}, 400),
        ({"seat": "1:3", "name": "Max", "method": "cash", "channel": "box_office", "ticket_type": "vip"}, 400),
    ],
)
def test_a_refused_counter_sale_holds_nothing(client, season, data, status):
    sub, sessions = season
    client.force_login(make_staff("anna", ["view_session", "sell_at_counter"]))
    answer = client.post(url("sell", sub["_id"]), {"ticket_type": "full", **data})
    assert answer.status_code == status
    assert cells(sessions, "1:3") == [FREE, FREE, FREE]
    assert mongo.orders().count_documents({}) == 0
    assert check_invariants() == []


def test_selling_needs_the_counter_permission(client, season):
    sub, _ = season
    client.force_login(make_staff("viewer", ["view_subscription"]))
    assert client.get(url("change", sub["_id"])).status_code == 200
    answer = client.post(
        url("sell", sub["_id"]), {"seat": "1:3", "name": "Max", "method": "cash", "channel": "box_office"}
    )
    assert answer.status_code == 403


def test_staff_define_a_subscription(client):
    sessions = [make_session(days=3), make_session(days=4)]
    client.force_login(make_staff("planner", ["view_subscription", "add_subscription", "view_session"]))
    assert client.get(url("add")).status_code == 200
    local = timezone.localtime(clock.now())
    answer = client.post(
        url("add"),
        {
            "name": "Season C",
            "name_de": "Abo C",
            "sessions": [str(s["_id"]) for s in sessions],
            "prices": "s: 3000\np: 5000",
            "sale_opens": local.strftime("%Y-%m-%dT%H:%M"),
            "sale_closes": (local + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M"),
        },
    )
    assert answer.status_code == 302
    stored = mongo.subscriptions().find_one()
    assert stored["nameDe"] == "Abo C" and stored["prices"] == {"p": 5000, "s": 3000}
    bad = client.post(url("add"), {"name": "X", "sessions": [str(sessions[0]["_id"])], "prices": "s: lots"})
    assert bad.status_code == 400
    assert mongo.subscriptions().count_documents({}) == 1
