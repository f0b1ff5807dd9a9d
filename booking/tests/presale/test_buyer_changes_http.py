"""The buyer's own changes over HTTP (booking/presale/views/changes.py): only the booking's
owner, hostile input refused with a 4xx and a message, nothing changed."""

import pytest
from django.test import Client
from django.urls import reverse

from booking.core import mongo
from booking.sales import holds, self_service
from booking.tests.factories import make_session, make_theater
from booking.tests.paying import checkout_paid
from booking.venues.seat_grid import FREE

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

OPEN = self_service.Rules(exchange=True, cancel=True, hours_before=48, fee=100, transfer=True, max_transfers=1)


def url(name, ref):
    return reverse(f"booking:{name}", kwargs={"ref": ref})


@pytest.fixture
def theater():
    theater = make_theater()
    self_service.set_theater_rules(theater_id=theater["_id"], rules=OPEN)
    return theater


@pytest.fixture
def session(theater):
    return make_session(theater, days=5)


@pytest.fixture
def order(session):
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["0:0", "0:1"])
    return checkout_paid("s:ada", cart.cart_id, "Ada Lovelace", "ada@example.com")


@pytest.fixture
def owner(order):
    client = Client()
    response = client.post(reverse("booking:find_booking"), {"ref": order["ref"], "email": "ada@example.com"})
    assert response.status_code == 302
    return client


def stored(order):
    return mongo.orders().find_one({"_id": order["_id"]})


def test_the_order_page_offers_the_changes_the_rules_allow(owner, order):
    page = owner.get(url("order", order["ref"])).content.decode()
    assert "Change this booking" in page and "Cancel the ticked tickets" in page and "Hand on" in page
    mongo.theaters().update_many({}, {"$unset": {"selfService": ""}})
    assert "Change this booking" not in owner.get(url("order", order["ref"])).content.decode()


def test_canceling_one_ticket_from_the_page(owner, order, session):
    ticket = order["lines"][0]["ticket"]
    response = owner.post(url("order_cancel_tickets", order["ref"]), {"ticket": ticket})
    assert response.status_code == 302
    after = stored(order)
    assert [x["key"] for x in after["lines"]] == ["0:1"] and after["refunds"][0]["amount"] == 1900
    assert mongo.sessions().find_one({"_id": session["_id"]})["seats"][0][0] == FREE


@pytest.mark.parametrize(
    "data,status",
    [
        ({}, 400),
        ({"ticket": "nope"}, 400),
        ({"ticket": ["a" * 20] * 70}, 400),
        ({"ticket": "x", "fingerprint": "stale"}, 400),
        ({"all": "1", "fingerprint": "stale"}, 409),
    ],
)
def test_hostile_cancels_are_refused_and_change_nothing(owner, order, data, status):
    response = owner.post(url("order_cancel_tickets", order["ref"]), data)
    assert response.status_code == status, response.content[:300]
    assert stored(order)["lines"] == order["lines"] and "refunds" not in stored(order)


def test_a_stranger_cannot_change_the_booking(order):
    stranger = Client()
    for name in ("order_cancel_tickets", "order_transfer"):
        response = stranger.post(url(name, order["ref"]), {"ticket": order["lines"][0]["ticket"], "all": "1"})
        assert response.status_code == 404
    assert stranger.get(url("order_exchange", order["ref"])).status_code == 404
    assert stored(order)["lines"] == order["lines"]


def test_a_get_does_not_cancel(owner, order):
    assert owner.get(url("order_cancel_tickets", order["ref"]) + "?all=1").status_code == 405
    assert stored(order)["state"] == "paid"


@pytest.mark.parametrize(
    "data,status,says",
    [
        ({"name": "Grace", "email": "not an address"}, 400, "valid e-mail"),
        ({"name": "", "email": "g@example.com"}, 400, "name"),
        ({"name": "Grace", "email": "g@example.com", "ticket": "unknown-ticket-code"}, 400, "tickets of this booking"),
        ({"name": "Grace\u202e", "email": "g@example.com"}, 400, "visible"),
    ],
)
def test_hostile_transfers_are_refused_and_change_nothing(owner, order, data, status, says):
    data = {"ticket": order["lines"][0]["ticket"], **data}
    response = owner.post(url("order_transfer", order["ref"]), data)
    assert response.status_code == status and says in response.content.decode()
    assert stored(order)["lines"] == order["lines"]


def test_a_transfer_from_the_page_and_the_limit_after_it(owner, order):
    first, second = (x["ticket"] for x in order["lines"])
    response = owner.post(url("order_transfer", order["ref"]), {"ticket": first, "name": "Grace", "email": "g@x.org"})
    assert response.status_code == 302
    page = owner.get(url("order", order["ref"])).content.decode()
    handed = stored(order)["lines"][0]["ticket"]
    assert "Handed to Grace" in page and handed not in page  # the buyer sees no code, nor a wallet pass of it
    wallet = reverse("booking:ticket_wallet_pass", kwargs={"ref": order["ref"], "code": handed})
    assert owner.get(wallet).status_code == 404
    response = owner.post(url("order_transfer", order["ref"]), {"ticket": second, "name": "Bob", "email": "b@x.org"})
    assert response.status_code == 409 and "used up" in response.content.decode()


@pytest.mark.parametrize(
    "seats,status",
    [(["x"], 400), (["99:99"], 400), (["0:0"], 409), ([], 400), (["2:0", "2:1"], 400)],
)
def test_hostile_exchanges_are_refused_and_change_nothing(owner, order, session, seats, status):
    data = {"ticket": order["lines"][0]["ticket"], "session": str(session["_id"]), "seat": seats}
    response = owner.post(url("order_exchange", order["ref"]), data)
    assert response.status_code == status, response.content[:400]
    assert stored(order)["lines"] == order["lines"] and "exchanges" not in stored(order)


def test_an_exchange_into_a_malformed_performance_is_a_404(owner, order):
    response = owner.post(url("order_exchange", order["ref"]), {"ticket": order["lines"][0]["ticket"], "session": "zz"})
    assert response.status_code == 404


def test_the_exchange_page_shows_the_free_seats_and_an_exchange_waits_for_the_card(owner, order, session):
    page = owner.get(url("order_exchange", order["ref"])).content.decode()
    assert 'value="2:0" aria-label' in page and 'value="0:0" disabled' in page  # a sold seat cannot be ticked
    data = {"ticket": order["lines"][0]["ticket"], "session": str(session["_id"]), "seat": ["2:0"]}
    response = owner.post(url("order_exchange", order["ref"]), data)
    assert response.status_code == 302
    assert stored(order)["exchanges"][0]["state"] == "awaiting_payment"
    assert "pay" in owner.get(url("order", order["ref"])).content.decode().lower()
