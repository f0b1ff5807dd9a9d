"""Donations over HTTP: the checkout offers the theater's suggested amounts and a free one, in the
page's language; hostile input is a 400 with a clear message and changes nothing; the order page
and receipt show the donation apart; staff set the offer (bad input: 400, nothing saved); the
takings page and its CSV and XLSX downloads show donations apart."""

import io

import pytest
from django.urls import reverse
from django.utils import timezone
from openpyxl import load_workbook

from booking.core import clock, mongo
from booking.payments import donations
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.tests.paying import pay
from booking.tests.pdfs import pdf_text
from booking.upkeep.invariants import check_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]
PREMIUM_PAIR = 7000  # seats 1:2 and 1:3 of make_session's hall


@pytest.fixture
def session():
    session = make_session()
    donations.set_offer(
        session["theaterId"],
        enabled=True,
        suggested=[500, 1000],
        free=True,
        appeal="Help us keep tickets cheap.",
        appeal_de="Helfen Sie uns, die Karten günstig zu halten.",
    )
    return session


def hold(client, session):
    answer = client.post(reverse("booking:hold", args=[str(session["_id"])]), {"seats": "1:2,1:3"}, **HTMX)
    assert answer.status_code == 200


def checkout(client, donation, other="", **headers):
    data = {"name": "Ada", "email": "ada@example.com", "method": "card", "donation": donation, "donation_other": other}
    return client.post(reverse("booking:checkout"), data, **headers)


def nothing_changed():
    assert mongo.orders().count_documents({}) == 0
    assert mongo.carts().find_one({})["state"] == "active"


def test_the_checkout_offers_the_suggested_amounts_and_a_free_one_in_the_buyers_language(client, session):
    hold(client, session)
    html = client.get(reverse("booking:checkout")).content.decode()
    assert "Add a donation (optional)" in html and "Help us keep tickets cheap." in html
    assert 'name="donation" value="5"' in html and 'name="donation" value="10"' in html
    assert 'name="donation" value="other"' in html and 'name="donation_other"' in html
    german = client.get(reverse("booking:checkout"), HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Spende" in german and "Helfen Sie uns, die Karten günstig zu halten." in german


def test_a_theater_without_an_offer_shows_no_donation(client):
    session = make_session()
    hold(client, session)
    assert 'name="donation"' not in client.get(reverse("booking:checkout")).content.decode()


@pytest.mark.parametrize(
    "donation, other, says",
    [
        ("other", "0.99", "A donation is from"),
        ("other", "500.01", "A donation is from"),
        ("other", "-5", "as an amount"),
        ("other", "1" * 100_000, "as an amount"),
        ("other", "<script>", "as an amount"),
        ("7", "", "one of the suggested"),  # a suggested button that was never offered: free is on, 7 is taken
        ("5\x00", "", "as an amount"),
    ],
)
def test_hostile_or_outside_amounts_are_a_400_with_the_reason_and_change_nothing(
    client, session, settings, donation, other, says
):
    settings.BOOKING_DONATION_MAX_VALUE = 50_000
    if donation == "7":
        donations.set_offer(session["theaterId"], enabled=True, suggested=[500], free=False, appeal="", appeal_de="")
    hold(client, session)
    answer = checkout(client, donation, other)
    html = answer.content.decode()
    assert answer.status_code == 400 and says in html
    assert 'aria-invalid="true" aria-describedby="id_donation-error"' in html or 'id="id_donation-error"' in html
    nothing_changed()


def test_a_donation_shows_on_the_payment_panel_the_order_page_and_the_receipt(client, session):
    hold(client, session)
    answer = checkout(client, "other", "12,50", **HTMX)
    html = answer.content.decode()
    assert answer.status_code == 200 and "Donation (no VAT)" in html and "€12.50" in html
    order = mongo.orders().find_one({})
    assert order["total"] == PREMIUM_PAIR + 1250 and order["donation"] == {"amount": 1250}
    pay(order)
    page = client.get(reverse("booking:order", args=[order["ref"]])).content.decode()
    assert "Donation (no VAT)" in page and "€82.50" in page
    receipt = client.get(reverse("booking:receipt", args=[order["ref"]]))
    assert "Donation (no VAT)" in pdf_text(receipt.content)
    assert check_invariants() == []


def test_staff_see_the_donation_on_the_order_page(manager_client, client, session):
    hold(client, session)
    checkout(client, "5")
    order = pay(mongo.orders().find_one({}))
    page = manager_client.get(reverse("admin:booking_order_change", args=[str(order["_id"])])).content.decode()
    assert 'class="order-donation"' in page and "The donation goes back with the last ticket." in page


# --- staff ---


def test_staff_set_the_offer_on_the_theater_page_and_bad_input_is_a_400(manager_client, session):
    url = f"/admin/booking/theater/{session['theaterId']}/change/"
    page = manager_client.get(url).content.decode()
    assert "Donations at checkout" in page and 'name="donation-suggested"' in page and 'value="5 10"' in page
    post = f"/admin/booking/theater/{session['theaterId']}/donations/"
    data = {"donation-enabled": "on", "donation-suggested": "3 7,50", "donation-appeal": "Thanks!"}
    saved = manager_client.post(post, {**data, "donation-appeal_de": "Danke!"}, follow=True)
    assert "Donations saved." in saved.content.decode()
    offer = mongo.theaters().find_one({"_id": session["theaterId"]})["donations"]
    assert offer == {"enabled": True, "suggested": [300, 750], "free": False, "appeal": "Thanks!", "appealDe": "Danke!"}
    for bad in ("0,5", "abc", "1 2 3 4 5", "-3", "x" * 5000):
        refused = manager_client.post(post, {**data, "donation-suggested": bad})
        assert refused.status_code == 400
    assert manager_client.post(post, {**data, "donation-appeal": "x" * 301}).status_code == 400
    assert mongo.theaters().find_one({"_id": session["theaterId"]})["donations"] == offer


def test_the_takings_page_and_downloads_show_donations_apart(manager_client, client, session):
    hold(client, session)
    checkout(client, "10")
    pay(mongo.orders().find_one({}))
    day = timezone.localdate(clock.now()).isoformat()
    query = {"first": day, "last": day}
    page = manager_client.get(reverse("admin:booking_report_takings"), query).content.decode()
    donated = page.split("Donations by payment method")[1].split("</table>")[0]
    assert '<th scope="row">Online card</th><td class="num">1</td><td class="num">€10</td>' in donated
    csv = manager_client.get(reverse("admin:booking_report_takings_csv"), query).content.decode()
    assert "Donations by payment method" in csv
    xlsx = manager_client.get(reverse("admin:booking_report_takings_xlsx"), query)
    sheet = load_workbook(io.BytesIO(xlsx.content))["Donations by payment method"]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[1][0] == "Online card" and rows[-1][2] == 10  # taken, in euros
    bad = manager_client.get(reverse("admin:booking_report_takings_xlsx"), {"first": "nope"})
    assert bad.status_code == 400
