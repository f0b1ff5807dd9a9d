"""Renewal: last season's holders get their seats reserved in the new subscription's performances,
mailed a one-click link; seats not renewed go back on sale after the window; a holder may move to
a seat free at every performance."""

from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from booking.core import clock, mongo
from booking.core.errors import SeatsTaken, SessionNotOnSale
from booking.payments import flow
from booking.sales import holds, offers, subscriptions
from booking.sales.subscriptions import SaleRequest
from booking.tests.admin_support import make_staff
from booking.tests.factories import TYPES, make_session, make_theater
from booking.tests.localstripe import VISA, card
from booking.tests.paying import checkout_paid
from booking.upkeep import tasks
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, HELD, SOLD

pytestmark = pytest.mark.django_db


def cells(sessions, key):
    r, c = (int(x) for x in key.split(":"))
    return [mongo.sessions().find_one({"_id": s["_id"]})["seats"][r][c] for s in sessions]


@pytest.fixture
def seasons():
    hall = make_theater()
    now = clock.now()
    old_sessions = [make_session(hall, days=2 + i) for i in range(2)]
    old = subscriptions.create_subscription(
        name="Season 1",
        session_ids=[s["_id"] for s in old_sessions],
        prices={"s": 4000, "p": 6000},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
    )
    holders = {}
    for owner, key, email in (("s:ada", "0:0", "ada@example.com"), ("s:bob", "2:8", "bob@example.com")):
        cart = subscriptions.hold_subscription(
            subscription_id=old["_id"], seat_keys=[key], request=SaleRequest(owner=owner)
        )
        holders[email] = checkout_paid(owner, cart["_id"], email.split("@")[0].title(), email)
    new_sessions = [make_session(hall, days=10 + i) for i in range(3)]
    new = subscriptions.create_subscription(
        name="Season 2",
        session_ids=[s["_id"] for s in new_sessions],
        prices={"s": 4500, "p": 6500},
        sale_opens=now - timedelta(minutes=1),
        sale_closes=now + timedelta(days=5),
        renews=old["_id"],
        renewal_closes=now + timedelta(days=1),
    )
    return new, new_sessions, holders


def test_the_beat_task_reserves_the_holders_seats_and_mails_them(seasons):
    new, sessions, holders = seasons
    result = tasks.subscription_renewals()
    assert result == {"reserved": 2, "mailed": 2, "ended": 0}
    assert cells(sessions, "0:0") == [HELD, HELD, HELD]
    assert cells(sessions, "2:8") == [HELD, HELD, HELD]
    assert sorted(m.to[0] for m in mail.outbox) == sorted(holders)
    assert "/subscriptions/renew/" in mail.outbox[0].body
    assert tasks.subscription_renewals() == {"reserved": 0, "mailed": 0, "ended": 0}  # once
    assert check_invariants() == []


def test_during_the_window_the_public_buys_only_seats_not_reserved_for_renewal(seasons):
    new, sessions, _ = seasons
    eve = SaleRequest(owner="s:eve")
    with pytest.raises(SessionNotOnSale):  # until the holders' seats are reserved, nobody buys
        subscriptions.hold_subscription(subscription_id=new["_id"], seat_keys=["1:0"], request=eve)
    tasks.subscription_renewals()
    with pytest.raises(SeatsTaken):  # a holder's seat, reserved for their renewal
        subscriptions.hold_subscription(subscription_id=new["_id"], seat_keys=["0:0"], request=eve)
    common = subscriptions.common_map(new, subscriptions.performances(new))
    assert common["seats"][0][0] != FREE and common["seats"][2][8] != FREE  # off the buyers' map
    cart = subscriptions.hold_subscription(subscription_id=new["_id"], seat_keys=["1:0"], request=eve)
    assert cart["total"] == 4500 and cells(sessions, "1:0") == [HELD, HELD, HELD]
    assert check_invariants() == []


def test_one_click_renews_and_pays_through_the_checkout(client, seasons):
    new, sessions, holders = seasons
    tasks.subscription_renewals()
    ada = next(m for m in mail.outbox if m.to == ["ada@example.com"])
    link = next(line for line in ada.body.splitlines() if "/subscriptions/renew/" in line)
    path = link[link.index("/subscriptions/") :]
    assert client.get(path).status_code == 200
    answer = client.post(path)
    assert answer.status_code == 302 and answer["Location"] == reverse("booking:checkout")
    client.post(reverse("booking:checkout"), {"name": "Ada", "email": "ada@example.com", "method": "card"})
    order = mongo.orders().find_one({"subscription._id": new["_id"]})
    assert order is not None and order["state"] == "pending_payment"
    flow.pay_with_card(order["_id"], order["owner"], card(VISA))
    assert cells(sessions, "0:0") == [SOLD, SOLD, SOLD]
    assert check_invariants() == []


def test_seats_not_renewed_go_back_on_sale_after_the_window(seasons):
    new, sessions, _ = seasons
    tasks.subscription_renewals()
    mongo.carts().update_many({"owner": {"$regex": "^r:"}}, {"$set": {"expiresAt": clock.now()}})
    mongo.subscriptions().update_one({"_id": new["_id"]}, {"$set": {"renewalCloses": clock.now()}})
    assert tasks.subscription_renewals()["ended"] == 2
    assert cells(sessions, "0:0") == [FREE, FREE, FREE]
    cart = subscriptions.hold_subscription(
        subscription_id=new["_id"], seat_keys=["0:0"], request=SaleRequest(owner="s:eve")
    )
    assert cart["total"] == 4500
    assert check_invariants() == []


def test_a_holder_moves_to_a_seat_free_at_every_performance(seasons):
    new, sessions, _ = seasons
    tasks.subscription_renewals()
    [ada] = [c for c in mongo.carts().find({"owner": {"$regex": "^r:"}}) if c["items"][0]["key"] == "0:0"]
    holds.hold_seats(sessions[2]["_id"], "s:eve", None, ["1:0", "1:1"])  # taken at the last performance
    with pytest.raises(SeatsTaken):
        subscriptions.change_renewal_seat(owner=ada["owner"], seat_keys=["1:0"])
    assert cells(sessions, "0:0") == [HELD, HELD, HELD]  # the old seat stays reserved
    moved = subscriptions.change_renewal_seat(owner=ada["owner"], seat_keys=["0:3"])
    assert cells(sessions, "0:3") == [HELD, HELD, HELD]
    assert cells(sessions, "0:0") == [FREE, FREE, FREE]
    assert moved["expiresAt"] == ada["expiresAt"]
    assert check_invariants() == []


def with_reduced(session):
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500, "p": 2500}})
    return session


@pytest.fixture
def reduced_seasons():
    """Last season's holder bought one full-price and one reduced seat; both seasons offer both."""
    hall = make_theater()
    offers.set_theater_ticket_types(hall["_id"], TYPES)
    now = clock.now()
    old_sessions = [with_reduced(make_session(hall, days=2 + i)) for i in range(2)]
    old = subscriptions.create_subscription(
        name="Season 1",
        session_ids=[s["_id"] for s in old_sessions],
        prices={"s": 4000, "p": 6000},
        type_prices={"reduced": {"s": 2000, "p": 3000}},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
    )
    full = subscriptions.hold_subscription(
        subscription_id=old["_id"], seat_keys=["0:0"], request=SaleRequest(owner="s:ada")
    )
    cart = subscriptions.hold_subscription(
        subscription_id=old["_id"], seat_keys=["2:8"], request=SaleRequest(owner="s:ada", ticket_type="reduced")
    )
    checkout_paid("s:ada", cart["_id"], "Ada", "ada@example.com")
    checkout_paid("s:ada", full["_id"], "Ada", "ada@example.com")
    new_sessions = [with_reduced(make_session(hall, days=10 + i)) for i in range(3)]
    new = subscriptions.create_subscription(
        name="Season 2",
        session_ids=[s["_id"] for s in new_sessions],
        prices={"s": 4500, "p": 6500},
        type_prices={"reduced": {"s": 2250, "p": 3250}},
        sale_opens=now - timedelta(minutes=1),
        sale_closes=now + timedelta(days=5),
        renews=old["_id"],
        renewal_closes=now + timedelta(days=1),
    )
    return new, new_sessions


def test_a_reduced_holder_renews_at_the_reduced_price_shown_and_charged(client, reduced_seasons):
    new, sessions = reduced_seasons
    tasks.subscription_renewals()
    renewal = next(c for c in mongo.carts().find({"owner": {"$regex": "^r:"}}) if c["items"][0]["key"] == "2:8")
    assert renewal["total"] == 2250 and {i["ticketType"] for i in renewal["items"]} == {"reduced"}
    path = reverse("booking:subscription_renew", args=[subscriptions.renewal_token(renewal["owner"])])
    page = client.get(path).content.decode()
    assert "22.50" in page and "Reduced" in page and "45.00" not in page
    client.post(path)
    client.post(reverse("booking:checkout"), {"name": "Ada", "email": "ada@example.com", "method": "card"})
    order = mongo.orders().find_one({"subscription._id": new["_id"]})
    assert order["total"] == 2250
    assert {line["ticketType"] for line in order["lines"]} == {"reduced"}


def renewing(old_id, sessions, *, sale_opens_in: timedelta):
    now = clock.now()
    return subscriptions.create_subscription(
        name="Season 2",
        session_ids=[s["_id"] for s in sessions],
        prices={"s": 4500, "p": 6500},
        sale_opens=now + sale_opens_in,
        sale_closes=now + sale_opens_in + timedelta(days=5),
        renews=old_id,
        renewal_closes=now + sale_opens_in + timedelta(days=1),
    )


def test_holders_seats_are_kept_before_the_subscriptions_own_sale_opens(seasons):
    """The new performances sell single tickets already; the renewal is reserved on the beat's
    next round, days before the subscription's sale opens, so no single buyer takes a holder's seat."""
    new, _, _ = seasons
    hall_sessions = [make_session(make_theater(), days=20 + i) for i in range(2)]
    later = renewing(new["renews"], hall_sessions, sale_opens_in=timedelta(days=2))
    assert tasks.subscription_renewals()["reserved"] == 2 + 2  # both seasons' holders
    assert cells(hall_sessions, "0:0") == [HELD, HELD]
    with pytest.raises(SeatsTaken):
        holds.hold_seats(hall_sessions[0]["_id"], "s:single", None, ["0:0"])
    assert mongo.subscriptions().find_one({"_id": later["_id"]})["renewalOpenedOn"]
    assert check_invariants() == []


def test_staff_creating_a_renewing_subscription_reserve_the_holders_seats_at_once(seasons, client):
    new, _, _ = seasons
    sessions = [make_session(make_theater(), days=20 + i) for i in range(2)]
    opens = timezone.localtime(clock.now() + timedelta(days=2))
    form = {
        "name": "Season 3",
        "sessions": [str(s["_id"]) for s in sessions],
        "prices": "s: 4500\np: 6500",
        "sale_opens": opens.strftime("%Y-%m-%dT%H:%M"),
        "sale_closes": (opens + timedelta(days=5)).strftime("%Y-%m-%dT%H:%M"),
        "renews": str(new["renews"]),
        "renewal_closes": (opens + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M"),
    }
    client.force_login(make_staff("planner", ["view_subscription", "add_subscription", "view_session"]))
    response = client.post("/admin/booking/subscription/add/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert cells(sessions, "0:0") == [HELD, HELD] and cells(sessions, "2:8") == [HELD, HELD]
    with pytest.raises(SeatsTaken):
        holds.hold_seats(sessions[0]["_id"], "s:single", None, ["2:8"])
