"""A donation at the counter: staff type any amount in the limits when the theater takes donations,
with cash or the card terminal only; it is in the total taken and the sold page; hostile input is
a 400 with nothing sold and the seats still held."""

import pytest
from django.urls import reverse

from booking.core import clock, mongo
from booking.payments import donations, pdf
from booking.tests.admin_support import make_staff
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.tests.pdfs import pdf_text
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import HELD

STALLS = 2000


@pytest.fixture
def seller_client(client, db):
    client.force_login(make_staff("anna", ["view_session", "sell_at_counter"]))
    return client


@pytest.fixture
def session(db):
    session = make_session()
    donations.set_offer(session["theaterId"], enabled=True, suggested=[500], free=False, appeal="", appeal_de="")
    return session


def url(name, *args):
    return reverse(f"admin:booking_session_{name}", args=[str(a) for a in args])


def sell(client, session, **data):
    client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    return client.post(url("sell_checkout", session["_id"]), {"channel": "box_office", "name": "Grace", **data})


def test_a_cash_sale_takes_any_amount_in_the_limits_and_shows_it(seller_client, session):
    done = sell(seller_client, session, method="cash", donation="3,50")  # not a suggested one: staff may
    assert done.status_code == 302
    order = mongo.orders().find_one({}, hint=[("_id", 1)])
    assert order["donation"] == {"amount": 350} and order["total"] == STALLS + 350
    assert order["paidWith"]["amount"] == STALLS + 350 and order["state"] == "paid"
    page = seller_client.get(done["Location"]).content.decode()
    assert 'class="sold-donation"' in page and "€3.50" in page
    assert "Donation (no VAT)" in pdf_text(pdf.receipt_pdf(order))
    assert check_invariants() == []


@pytest.mark.parametrize(
    "method, donation, says",
    [
        ("invoice", "5", "cash or by the card terminal"),
        ("complimentary", "5", "cash or by the card terminal"),
        ("cash", "0.99", "A donation is from"),
        ("cash", "-1", "as an amount"),
        ("cash", "x" * 20, "as an amount"),
    ],
)
def test_a_donation_staff_cannot_take_is_a_400_and_sells_nothing(seller_client, session, method, donation, says):
    due = clock.now().astimezone().date().isoformat()  # today: within the performance's day
    answer = sell(seller_client, session, method=method, donation=donation, reason="press", due=due)
    assert answer.status_code == 400 and says in answer.content.decode()
    assert mongo.orders().count_documents({}, hint=[("_id", 1)]) == 0
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    assert seats[0][0] == HELD


def test_a_theater_without_donations_takes_none_at_the_counter(seller_client, db):
    plain = make_session()
    answer = sell(seller_client, plain, method="cash", donation="5")
    assert answer.status_code == 400 and "does not take donations" in answer.content.decode()
    again = {"channel": "box_office", "name": "Grace", "method": "cash", "donation": ""}  # the seat is still held
    assert seller_client.post(url("sell_checkout", plain["_id"]), again).status_code == 302
