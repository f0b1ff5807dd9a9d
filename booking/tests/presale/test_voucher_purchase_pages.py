"""The buyer's gift voucher pages: the form per theater, hostile input refused with 400 and nothing
stored, the card payment answered as JSON like an order's, the return page in both languages."""

import pytest
from django.conf import settings
from django.test import Client

from booking.core import mongo
from booking.tests.factories import make_theater
from booking.tests.localstripe import DECLINED, VISA, card


@pytest.fixture
def theater():
    return make_theater(name="Studio")


def url(theater):
    return f"/theaters/{theater['_id']}/vouchers/"


def count_vouchers():
    return mongo.vouchers().count_documents({}, hint=[("_id", 1)])


def buy(client, theater, **fields):
    return client.post(url(theater), {"value": "25", "name": "Ada", "email": "ada@example.com", **fields})


def test_whats_on_links_each_theaters_voucher_page(client, theater):
    page = client.get("/")
    assert page.status_code == 200 and url(theater) in page.content.decode()


@pytest.mark.parametrize("language", ["en", "de"])
def test_the_form_names_the_limits_in_the_buyers_language(theater, language):
    page = Client(HTTP_ACCEPT_LANGUAGE=language).get(url(theater))
    text = page.content.decode()
    assert page.status_code == 200 and "Studio" in text and 'min="5"' in text and 'max="500"' in text
    assert ("Weiter zur Zahlung" in text) == (language == "de")
    # amounts as every other page writes them, not the receipts' "5,00 EUR"
    assert ("5\xa0€" in text and "500\xa0€" in text) if language == "de" else ("€5" in text and "€500" in text)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"value": "4"}, "from"),
        ({"value": "501"}, "from"),
        ({"value": ""}, "from"),
        ({"value": "25.50"}, "from"),
        ({"value": "-25"}, "from"),
        ({"value": "1e9"}, "from"),
        ({"value": "9" * 40}, "from"),
        ({"value": "<script>"}, "from"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "100 characters"),
        ({"name": "Ada\u202e"}, "invisible"),
        ({"email": "nobody"}, "e-mail"),
        ({"email": "a@b.c" + "x" * 300}, "e-mail"),
    ],
)
def test_hostile_input_is_refused_with_400_and_a_message_and_nothing_is_stored(client, theater, fields, says):
    answer = buy(client, theater, **fields)
    assert answer.status_code == 400 and says in answer.content.decode()
    assert count_vouchers() == 0


@pytest.mark.parametrize("theater_id", ["nope", "6b0b1749a7f35c6d1a3c2806", "%00"])
def test_an_unknown_theater_is_404(client, theater_id):
    assert client.get(f"/theaters/{theater_id}/vouchers/").status_code == 404
    assert client.post(f"/theaters/{theater_id}/vouchers/", {"value": "25"}).status_code == 404
    assert count_vouchers() == 0


def test_values_at_both_limits_are_taken_and_lead_to_the_card_form(client, theater):
    for value in ("5", "500"):
        answer = buy(client, theater, value=value)
        assert answer.status_code == 302 and answer["Location"].startswith("/vouchers/bought/")
        page = client.get(answer["Location"])
        assert page.status_code == 200 and "data-card-form" in page.content.decode()
    assert sorted(v["value"] for v in mongo.vouchers().find({}, hint=[("_id", 1)])) == [500, 50_000]


def test_htmx_submit_is_sent_on_with_hx_redirect(client, theater):
    answer = client.post(
        url(theater), {"value": "30", "name": "Ada", "email": "ada@example.com"}, HTTP_HX_REQUEST="true"
    )
    assert answer.status_code == 200 and answer["HX-Redirect"].startswith("/vouchers/bought/")


def test_paying_by_card_and_the_return_page(client, theater):
    page = buy(client, theater)["Location"]
    card_page = client.get(page)
    assert settings.STRIPE_API_BASE in card_page["Content-Security-Policy"]  # Stripe.js may load its card form
    declined = client.post(page + "pay", {"payment_method": card(DECLINED)})
    assert declined.status_code == 200 and declined.json()["status"] == "failed" and declined.json()["message"]
    paid = client.post(page + "pay", {"payment_method": card(VISA)})
    assert paid.status_code == 200 and paid.json() == {"status": "paid", "message": "", "redirect": page}
    done = client.get(page).content.decode()
    assert "The voucher is paid" in done and "ada@example.com" in done and "data-card-form" not in done
    [voucher] = mongo.vouchers().find({}, hint=[("_id", 1)])
    assert voucher["state"] == "active" and voucher["code"] not in done  # the code goes by mail only
    assert client.get(page + "status").json()["status"] == "paid"


@pytest.mark.parametrize("means", ["", "pm_nonexistent", "x" * 500])
def test_a_bad_payment_method_is_answered_4xx_or_failed_and_the_voucher_stays_pending(client, theater, means):
    page = buy(client, theater)["Location"]
    answer = client.post(page + "pay", {"payment_method": means})
    assert answer.status_code in (400, 502) and answer.json()["status"] == "failed"
    [voucher] = mongo.vouchers().find({}, hint=[("_id", 1)])
    assert voucher["state"] == "pending"


@pytest.mark.parametrize("token", ["x", "a" * 30, "../../etc", "a" * 65])
def test_an_unknown_purchase_is_404(client, token):
    assert client.get(f"/vouchers/bought/{token}/").status_code == 404
    assert client.post(f"/vouchers/bought/{token}/pay", {"payment_method": "pm"}).status_code == 404
    assert client.get(f"/vouchers/bought/{token}/status").status_code == 404
