"""The staff pages of invoices and credit notes: a sale on invoice from the counter's form, the
theater's seller data, the invoice and credit note PDFs on the order page; hostile input is a 4xx
and changes nothing."""

import pytest
from django.core import mail
from django.urls import reverse

from booking.core import mongo
from booking.notifications import change_notices
from booking.payments import credit_notes, number_series
from booking.tests.admin_support import make_staff
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.tests.pdfs import pdf_text


@pytest.fixture
def seller_client(client, db):
    client.force_login(make_staff("anna", ["view_session", "sell_at_counter", "view_order", "change_order"]))
    return client


def url(name, *args):
    return reverse(f"admin:booking_{name}", args=[str(a) for a in args])


INVOICE_SALE = {
    "channel": "box_office",
    "name": "Grace Hopper",
    "email": "grace@example.com",
    "method": "invoice",
    "company": "Acme GmbH",
    "billing_address": "Hauptstr. 5\r\n10115 Berlin",
    "buyer_vat_id": "DE123456789",
}


def sell_on_invoice(client, session, **changes):
    client.post(url("session_sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    return client.post(url("session_sell_checkout", session["_id"]), {**INVOICE_SALE, **changes})


def test_a_sale_on_invoice_with_an_address_issues_the_invoice_and_the_order_page_offers_its_pdf(seller_client):
    session = make_session(days=10)
    mail.outbox.clear()
    assert sell_on_invoice(seller_client, session).status_code == 302
    order = mongo.orders().find_one({"name": "Grace Hopper"}, hint=[("_id", 1)])
    assert order["invoiceNo"] == 1 and order["invoice"]["buyer"]["company"] == "Acme GmbH"
    page = seller_client.get(url("order_change", order["_id"])).content.decode()
    assert "INV-000001" in page
    pdf = seller_client.get(url("order_invoice_pdf", order["_id"]))
    assert pdf.status_code == 200 and "Acme GmbH" in pdf_text(pdf.content)
    change_notices.send_pending(order["_id"])
    assert any("INV-000001" in m.subject for m in mail.outbox)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"billing_address": ""}, "billing_address"),
        ({"buyer_vat_id": "12"}, "buyer_vat_id"),
        ({"billing_address": "x" * 1001}, "billing_address"),
        ({"company": "c" * 301}, "company"),
        ({"billing_address": "a\r\n" * 7}, "billing_address"),
    ],
)
def test_hostile_billing_input_is_a_400_and_nothing_is_sold_or_numbered(seller_client, changes, field):
    session = make_session(days=10)
    answer = sell_on_invoice(seller_client, session, **changes)
    assert answer.status_code == 400 and field in answer.content.decode()
    assert mongo.orders().count_documents({}, hint=[("_id", 1)]) == 0
    assert number_series.series_documents().count_documents({}) == 0


def test_the_credit_note_of_a_refund_is_on_the_order_page(manager_client):
    from booking.tests.admin_support import sell

    session = make_session(days=10)
    order = sell(session["_id"], ["0:0", "0:1"])
    ticket = order["lines"][0]["ticket"]
    done = manager_client.post(url("order_refund", order["_id"]), {"tickets": [ticket], "reason": "seat broken"})
    assert done.status_code in (200, 302)
    (note,) = credit_notes.of_order(order["_id"])
    page = manager_client.get(url("order_change", order["_id"])).content.decode()
    assert "CN-000001" in page
    pdf = manager_client.get(url("order_credit_note_pdf", order["_id"], note["creditNo"]))
    assert pdf.status_code == 200 and "CN-000001" in pdf_text(pdf.content)
    assert manager_client.get(url("order_credit_note_pdf", order["_id"], 2)).status_code == 404
    assert manager_client.get(url("order_invoice_pdf", order["_id"])).status_code == 404


def test_staff_set_the_theaters_seller_data_and_hostile_input_changes_nothing(manager_client):
    session = make_session(days=10)
    theater_id = session["theaterId"]
    page = manager_client.get(url("theater_seller", theater_id))
    assert page.status_code == 200
    bad = manager_client.post(url("theater_seller", theater_id), {"seller_name": "", "vat_id": "nonsense"})
    assert bad.status_code == 400
    assert "seller" not in mongo.theaters().find_one({"_id": theater_id})
    too_long = {"seller_name": "T", "seller_address": "Platz 1", "vat_id": "DE1", "bank": "b" * 301}
    assert manager_client.post(url("theater_seller", theater_id), too_long).status_code == 400
    good = {
        "seller_name": "Stadttheater GmbH",
        "seller_address": "Platz 1\r\n12345 Stadt",
        "vat_id": "DE 999 999 999",
        "tax_number": "",
        "bank": "IBAN DE02",
    }
    assert manager_client.post(url("theater_seller", theater_id), good).status_code == 302
    seller = mongo.theaters().find_one({"_id": theater_id})["seller"]
    assert seller["vatId"] == "DE999999999" and seller["address"] == "Platz 1\n12345 Stadt"


def test_seller_data_need_the_change_permission(client, db):
    session = make_session(days=10)
    client.force_login(make_staff("viewer", ["view_theater"]))
    data = {"seller_name": "X GmbH", "seller_address": "Platz 1", "vat_id": "DE999999999"}
    assert client.post(url("theater_seller", session["theaterId"]), data).status_code == 403
    assert "seller" not in mongo.theaters().find_one({"_id": session["theaterId"]})
