"""What a buyer and staff read about the money of an order: the receipt names how it was paid
(cash, card terminal, bank transfer, ...) on its PDF and on the pages, in both languages; an
order's total says what was paid, what was refunded and what remains."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from booking.core import clock, mongo
from booking.core.formatting import format_money
from booking.payments import counter as counter_payments
from booking.payments import flow as payment_flow
from booking.payments import receipts
from booking.sales import counter
from booking.tests.factories import make_session
from booking.tests.payments.test_invoices import counter_sale, order_of
from booking.tests.pdfs import pdf_text


@pytest.fixture(autouse=True)
def single_seats(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False


def staff_url(name, order):
    return reverse(f"admin:booking_{name}", args=[str(order["_id"])])


def buyer_page(order) -> str:
    stranger = Client()
    found = stranger.post(reverse("booking:find_booking"), {"ref": order["ref"], "email": order["email"]}, follow=True)
    assert found.status_code == 200
    return found.content.decode()


@pytest.mark.parametrize(
    ("language", "method", "label"),
    [
        ("en", counter.CARD_TERMINAL, "Card terminal"),
        ("de", counter.CARD_TERMINAL, "Kartenterminal"),
        ("en", counter.CASH, "Cash"),
        ("de", counter.CASH, "Bar"),
    ],
)
def test_the_receipt_of_a_counter_sale_names_the_method_on_its_pdf_and_the_pages(
    manager_client, language, method, label
):
    session = make_session(days=5)
    order = counter_sale(session, ["0:0"], method=method)
    receipts.assign(order["_id"])
    manager_client.cookies["django_language"] = language
    with translation.override(language):
        pdf = manager_client.get(staff_url("order_receipt_pdf", order), HTTP_ACCEPT_LANGUAGE=language)
        assert pdf.status_code == 200
        text = pdf_text(pdf.content)
        assert label in text and ("Zahlung" if language == "de" else "Payment") in text
        staff = manager_client.get(staff_url("order_change", order), HTTP_ACCEPT_LANGUAGE=language).content.decode()
        assert f"({label})" in staff
    page = Client(HTTP_ACCEPT_LANGUAGE=language)
    page.cookies["django_language"] = language
    found = page.post(reverse("booking:find_booking"), {"ref": order["ref"], "email": order["email"]}, follow=True)
    paid_word = "Bezahlt" if language == "de" else "Paid"
    assert f"{paid_word} ({label})" in found.content.decode()


def test_a_reservation_paid_later_by_bank_transfer_names_the_transfer():
    session = make_session(days=5)
    order = counter_sale(session, ["0:0"], due=(clock.now() + timedelta(days=2)).date())
    payment_flow.mark_paid_at_counter(order["_id"], by="anna", means=counter_payments.BANK_TRANSFER, reference="TX-1")
    assert receipts.payment_label(order_of(order)) == "Bank transfer"


def test_a_partial_refund_shows_paid_refunded_and_remaining_on_the_staff_and_the_buyers_page(manager_client):
    session = make_session(days=5)
    order = counter_sale(session, ["0:0", "0:1"], method=counter.CASH)
    stored = order_of(order)
    price = stored["lines"][0]["price"]
    paid = stored["paidWith"]["amount"]
    refund = manager_client.post(
        staff_url("order_refund", order), {"tickets": [stored["lines"][0]["ticket"]], "reason": "ill"}
    )
    assert refund.status_code in (200, 302)
    money = receipts.paid_and_refunded(order_of(order))
    assert (money.paid, money.refunded, money.kept) == (paid, price, paid - price)
    currency = stored["currency"]
    staff = manager_client.get(staff_url("order_change", order)).content.decode()
    expected = (
        f"Paid {format_money(paid, currency)} (Cash), refunded {format_money(price, currency)}, "
        f"remaining {format_money(paid - price, currency)}"
    )
    assert expected in " ".join(staff.split())
    page = " ".join(buyer_page(order_of(order)).split())
    assert 'class="refunded-total"' in page and "Remaining after refunds" in page
    assert f"{format_money(paid - price, currency)}</strong>" in page


def test_an_order_without_refunds_shows_no_refund_rows(manager_client):
    session = make_session(days=5)
    order = counter_sale(session, ["0:0"], method=counter.CASH)
    staff = manager_client.get(staff_url("order_change", order)).content.decode()
    assert "Paid " in staff and "remaining" not in staff
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"
