"""Ticket types and the promo code on what a buyer and staff read afterwards: the
tickets page, the VAT receipt (PDF), the confirmation mail and the admin's order page."""

import pytest
from django.test import Client
from django.utils import translation

from booking.core import mongo
from booking.notifications import confirmations as notifications
from booking.payments import flow as payments
from booking.payments import pdf
from booking.sales import holds, offers, promos
from booking.tests.factories import TYPES, make_session, make_theater
from booking.tests.paying import pay
from booking.tests.pdf_reading import drawn_strings
from booking.upkeep.invariants import check_invariants
from booking.web import ticket_pdf

pytestmark = pytest.mark.django_db

OWNER = "s:ada"


@pytest.fixture
def paid_order(settings):
    """Three seats: full price, reduced, full; code SPRING-24 (10 % off full price tickets); a fee."""
    settings.BOOKING_FEE = 150
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater, name="Hamlet")
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500}})
    promos.create_code("SPRING-24", "percent", 10, ticket_types=["full"], cap=5)
    hold = holds.hold_seats(session["_id"], OWNER, None, ["0:0", "0:1", "0:2"])
    offers.choose_ticket_type(OWNER, hold.cart_id, session["_id"], "0:1", "reduced")
    promos.apply_code(OWNER, hold.cart_id, "spring-24")
    order = pay(payments.start(OWNER, hold.cart_id, "Ada Lovelace", "ada@example.com"))
    return mongo.orders().find_one({"_id": order["_id"]})


def pdf_text(data: bytes) -> str:
    """The text a PDF from ReportLab shows: the strings it draws, in order, one space between."""
    return " ".join(d.text for d in drawn_strings(data))


def test_the_order_keeps_types_prices_and_the_code(paid_order):
    lines = paid_order["lines"]
    assert [(line["ticketTypeName"], line["price"], line.get("discount", 0)) for line in lines] == [
        ("Full price", 2000, 200),
        ("Reduced", 1500, 0),
        ("Full price", 2000, 200),
    ]
    assert paid_order["discount"] == 400 and paid_order["subtotal"] == 5500
    assert paid_order["total"] == 5500 - 400 + 150
    assert paid_order["promo"]["code"] == "SPRING-24" and paid_order["promo"]["kind"] == "percent"
    assert check_invariants() == []


def test_the_receipt_shows_ticket_types_and_the_code(paid_order):
    text = pdf_text(pdf.receipt_pdf(paid_order))
    assert "Reduced" in text and text.count("Full price") == 2
    assert "Promo code SPRING-24" in text and "-4.00 EUR" in text
    assert "52.50 EUR" in text  # total paid: 55.00 - 4.00 + 1.50


def test_the_confirmation_mail_shows_ticket_types_and_the_code(paid_order):
    message = notifications.confirmation_message(paid_order)
    body = message.body
    assert "Row A, seat 2 (Stalls, Reduced): 15.00 EUR" in body and "(Stalls, Full price)" in body
    assert "Promo code SPRING-24" in body and "Booking fee" in body
    html = str(message.alternatives[0][0])
    assert "<small>Reduced</small>" in html and "Promo code SPRING-24" in html
    [(name, data, mime), (calendar_name, _, _)] = message.attachments
    assert calendar_name.endswith(".ics")
    assert mime == "application/pdf" and isinstance(data, bytes) and "Promo code SPRING-24" in pdf_text(data)


def test_the_tickets_and_order_pages_show_the_types_and_the_code(paid_order):
    buyer = Client()
    tickets = buyer.get(f"/orders/{paid_order['ref']}/tickets/?email=ada@example.com").content.decode()
    assert tickets.count("Reduced") == 1 and tickets.count("Full price") == 2
    page = buyer.get(f"/orders/{paid_order['ref']}/").content.decode()
    assert "Reduced" in page and "Promo code <strong>SPRING-24</strong>" in page and "−€4<" in page


def test_the_admin_order_page_shows_the_types_and_the_code(paid_order, manager_client):
    page = manager_client.get(f"/admin/booking/order/{paid_order['_id']}/change/").content.decode()
    assert page.count("<td>Reduced</td>") == 1 and page.count("<td>Full price</td>") == 2
    assert "<code>SPRING-24</code>: −€4 (tickets €55 before it)" in page and 'line-discount">−€2</span>' in page


def german(text: str) -> bool:
    return "Ermäßigt" in text and "Normalpreis" in text and "Reduced" not in text and "Full price" not in text


def english(text: str) -> bool:
    return "Reduced" in text and "Full price" in text and "Ermäßigt" not in text and "Normalpreis" not in text


def test_the_ticket_type_reads_in_the_buyers_language_on_every_page_and_document(paid_order, manager_client):
    """The type's German name (staff's ``nameDe``), kept on the order, on the confirmation and
    tickets pages, the mail, the receipt, the printed tickets and the staff's order page in German;
    the English name in English."""
    ref, email = paid_order["ref"], {"email": "ada@example.com"}
    for language, reads in (("de", german), ("en", english)):
        buyer = Client(HTTP_ACCEPT_LANGUAGE=language)
        assert reads(buyer.get(f"/orders/{ref}/", email).content.decode())
        assert reads(buyer.get(f"/orders/{ref}/tickets/", email).content.decode())
        staff_page = manager_client.get(
            f"/admin/booking/order/{paid_order['_id']}/change/", HTTP_ACCEPT_LANGUAGE=language
        )
        assert reads(staff_page.content.decode())
        mail = notifications.confirmation_message(paid_order | {"language": language})
        assert reads(str(mail.body)) and reads(str(mail.alternatives[0][0]))
        with translation.override(language):
            assert reads(pdf_text(pdf.receipt_pdf(paid_order)))
            assert reads(pdf_text(ticket_pdf.tickets_pdf(paid_order)))
            assert reads(pdf_text(ticket_pdf.tickets_pdf(paid_order, ticket_pdf.THERMAL)))


def test_a_ticket_type_without_a_german_name_reads_in_english_on_german_pages(paid_order):
    """An order sold before the type had a German name (or one staff never gave one) keeps its
    English name; only the built-in "Full price" is translated."""
    mongo.orders().update_one({"_id": paid_order["_id"]}, {"$unset": {"lines.$[].ticketTypeNameDe": ""}})
    order = mongo.orders().find_one({"_id": paid_order["_id"]})
    page = Client(HTTP_ACCEPT_LANGUAGE="de").get(f"/orders/{order['ref']}/", {"email": "ada@example.com"})
    text = page.content.decode()
    assert "Reduced" in text and "Normalpreis" in text and "Ermäßigt" not in text
    with translation.override("de"):
        receipt = pdf_text(pdf.receipt_pdf(order))
    assert "Reduced" in receipt and "Normalpreis" in receipt


def test_the_ticket_says_what_its_holder_must_show(paid_order):
    """The reduced type's condition on the e-ticket and on both printed layouts, in the buyer's
    language; the full price tickets ask for nothing."""
    for language, condition in (
        ("de", "Studierende, Senioren ab 65; Nachweis am Einlass zeigen"),
        ("en", "Students, seniors 65+; show proof at the door"),
    ):
        buyer = Client(HTTP_ACCEPT_LANGUAGE=language)
        tickets = buyer.get(f"/orders/{paid_order['ref']}/tickets/", {"email": "ada@example.com"}).content.decode()
        assert tickets.count(condition) == 1
        with translation.override(language):
            for layout in ticket_pdf.LAYOUTS:
                assert pdf_text(ticket_pdf.tickets_pdf(paid_order, layout)).count(condition) == 1, layout
