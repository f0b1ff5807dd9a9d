"""German and English: the language comes from the browser (Accept-Language), the header's switch
changes it and a cookie remembers it; pages, messages, money, numbers and dates follow it; the
buyer's mails are written in the language they checked out in; staff's German show names are
shown on German pages. English stays the default (the test client sends no Accept-Language)."""

import re
from typing import cast

import pytest
from babel import Locale
from babel import numbers as babel_numbers
from django.conf import settings as django_settings
from django.core import mail
from django.core.mail import EmailMultiAlternatives
from django.test import Client
from django.urls import reverse
from django.utils import timezone, translation

from booking.core import clock, formatting, mongo
from booking.notifications import confirmations as notifications
from booking.payments import money
from booking.sales.demo_stadium import create_match, create_stadium
from booking.tests.factories import make_session
from booking.tests.headers import GERMAN, HTMX
from booking.tests.localstripe import VISA, card

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


def url(name, **kwargs):
    return reverse(f"booking:{name}", kwargs=kwargs)


def german_client() -> Client:
    return Client(**GERMAN)


def hold(client, session, key="0:0"):
    answer = client.post(url("toggle_seat", session_id=str(session["_id"])), {"seat": key}, **HTMX)
    assert answer.status_code == 200, answer.content[:300]
    return answer


def test_without_accept_language_the_site_is_english(client):
    make_session(name="Hamlet")
    page = client.get("/").content.decode()
    assert '<html lang="en">' in page and "What's on" in page and "24 seats left" in page
    assert "€20 – €35" in page


def test_a_german_browser_gets_german_pages_through_the_whole_purchase():
    session = make_session(name="Hamlet")
    buyer = german_client()
    whats_on = buyer.get("/").content.decode()
    assert '<html lang="de">' in whats_on
    assert "Spielplan" in whats_on and "24 Plätze frei" in whats_on
    assert "20\xa0€ – 35\xa0€" in whats_on  # Babel's German currency format
    page = buyer.get(url("session", session_id=str(session["_id"]))).content.decode()
    assert "Spielplan" in page and "Warenkorb" in page
    hold(buyer, session, "0:0")
    hold(buyer, session, "0:1")
    cart = buyer.get(url("cart")).content.decode()
    assert "Ihr Warenkorb" in cart and "Reihe A, Platz 1" in cart and "Zur Kasse" in cart
    assert "Gesamt (2 Plätze)" in cart and "40\xa0€" in cart
    checkout = buyer.get(url("checkout")).content.decode()
    assert "Kasse" in checkout and "Wie möchten Sie bezahlen?" in checkout
    refused = buyer.post(url("checkout"), {"name": "", "email": "kein-name"})
    assert refused.status_code == 400
    errors = refused.content.decode()
    assert "Bitte geben Sie Ihren Namen ein." in errors and "Bitte geben Sie eine gültige E-Mail-Adresse ein." in errors
    done = buyer.post(url("checkout"), {"name": "Ada", "email": "ada@example.com"})
    order = mongo.orders().find_one({})
    assert order["language"] == "de"  # its mails are written in German
    paying = buyer.get(done["Location"]).content.decode()
    assert "40\xa0€ bezahlen" in paying and "Kartendaten" in paying
    paid = buyer.post(url("pay", ref=order["ref"]), {"payment_method": card(VISA)})
    assert paid.json()["status"] == "paid"
    confirmation = buyer.get(done["Location"]).content.decode()
    assert "Sie gehen ins Theater!" in confirmation and "Buchungsnummer" in confirmation
    assert "Tickets drucken" in confirmation and "inkl. 7 % MwSt." in confirmation
    stranger = german_client()
    find = stranger.get(url("find_booking")).content.decode()
    assert "Buchung finden" in find and "z. B. K7M2QX9P" in find
    wrong = stranger.post(url("find_booking"), {"ref": order["ref"], "email": "eve@example.com"})
    assert "Zu dieser Buchungsnummer und E-Mail-Adresse gibt es keine Buchung." in wrong.content.decode()


def test_a_seat_click_answers_with_the_cart_in_german():
    session = make_session(name="Hamlet")
    buyer = german_client()
    hold(buyer, session, "0:0")
    answer = hold(buyer, session, "0:1").content.decode()
    assert 'aria-label="Ihre Plätze"' in answer and "<h2>Ihre Plätze</h2>" in answer
    assert 'Noch <strong class="countdown-time">' in answer and "Uhr)</span>" in answer
    assert "Reihe A, Platz 1 " in answer and "Reihe A, Platz 2 " in answer
    assert "Gesamt (2 Plätze)" in answer and "40\xa0€" in answer
    assert ">Zur Kasse</a>" in answer and ">Warenkorb bearbeiten</a>" in answer
    assert "<span>2 Plätze</span>" in answer and "Vorgemerkt für" in answer and "(Leiste)" in answer
    assert "Your seats" not in answer and "Check out" not in answer
    hold(buyer, session, "0:0")
    emptied = hold(buyer, session, "0:1").content.decode()  # the cart's last seat let go
    assert "Klicken Sie im Saalplan auf einen freien Platz" in emptied and 'class="lines"' not in emptied


def test_engine_messages_come_in_the_buyers_language():
    session = make_session()
    buyer = german_client()
    hold(buyer, session, "0:0")
    other = german_client()
    taken = other.post(url("toggle_seat", session_id=str(session["_id"])), {"seat": "0:0"}, **HTMX)
    assert "Leider wurde Reihe A, Platz 1 gerade von jemand anderem gebucht." in taken.content.decode()
    bad = other.post(url("toggle_seat", session_id=str(session["_id"])), {"seat": "99:99"}, **HTMX)
    assert bad.status_code == 400 and "Reihe 100" in bad.content.decode()


def test_the_switch_changes_the_language_and_a_cookie_remembers_it(client):
    make_session(name="Hamlet")
    page = client.get("/").content.decode()
    switch = re.search(r'<form class="lang-switch" method="post" action="([^"]+)"', page)
    assert switch and switch.group(1) == "/i18n/setlang/"
    assert 'name="language" value="de"' in page and 'name="csrfmiddlewaretoken"' in page
    answer = client.post("/i18n/setlang/", {"language": "de", "next": "/cart/"})
    assert answer.status_code == 302 and answer["Location"] == "/cart/"
    cookie = answer.cookies[django_settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "de" and int(cookie["max-age"]) == 365 * 24 * 3600 and cookie["samesite"] == "Lax"
    assert "Spielplan" in client.get("/").content.decode()  # remembered, with no Accept-Language
    english_browser_choice = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Spielplan" in english_browser_choice  # the buyer's choice wins over the browser's
    client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "What's on" in client.get("/", **GERMAN).content.decode()


def test_the_switch_needs_its_csrf_token_and_refuses_other_places_to_go():
    guarded = Client(enforce_csrf_checks=True)
    assert guarded.post("/i18n/setlang/", {"language": "de"}).status_code == 403
    client = Client()
    away = client.post("/i18n/setlang/", {"language": "de", "next": "https://evil.example/"})
    assert away.status_code == 302 and away["Location"] == "/"  # only this site's pages
    unknown = client.post("/i18n/setlang/", {"language": "xx", "next": "/"})
    assert unknown.status_code == 302 and django_settings.LANGUAGE_COOKIE_NAME not in unknown.cookies


@pytest.mark.parametrize("language", ["en", "de", "es", "hi"])
def test_whole_numbers_read_as_babel_writes_them_in_each_language(language):
    """Hindi groups by twos above the thousands (12,34,567): the quick path must not guess there."""
    numbers = [0, 1, 9, 10, 999, 1000, 1001, 9999, 10000, 12345, 99999, 100000, 654321, 1234567, 20000000, -1234]
    with translation.override(language):
        for number in numbers:
            expected = babel_numbers.format_decimal(number, locale=Locale.parse(translation.to_locale(language)))
            assert formatting.thousands(number) == expected


def test_money_numbers_and_dates_follow_the_language():
    with translation.override("en"):
        assert formatting.format_money(123450, "EUR") == "€1,234.50"
        assert formatting.format_money(2500, "EUR") == "€25"
        assert formatting.thousands(100000) == "100,000"
        assert formatting.format_money_code(123450, "EUR") == "1,234.50 EUR"
        assert money.format_money(123450, "EUR") == "1,234.50 EUR"
        assert formatting.seat_label("C", "4") == "Row C, seat 4"
    with translation.override("de"):
        assert formatting.format_money(123450, "EUR") == "1.234,50\xa0€"
        assert formatting.format_money(2500, "EUR") == "25\xa0€"
        assert formatting.format_money(900, "CHF") == "9,00 CHF"
        assert formatting.thousands(100000) == "100.000"
        assert formatting.format_money_code(123450, "EUR") == "1.234,50 EUR"
        assert money.format_money(123450, "EUR") == "1.234,50 EUR"
        assert formatting.seat_label("C", "4") == "Reihe C, Platz 4"
        start = clock.now().replace(year=2026, month=12, day=5, hour=18, minute=30, second=0, microsecond=0)
        assert formatting.mail_time(start) == "Sa., 05. Dez. 2026, 19:30"  # Europe/Berlin
    with translation.override("en"):
        assert formatting.mail_time(start) == "Sat 05 Dec 2026, 19:30"


def test_a_big_house_shows_thousands_separators_on_the_list_and_the_section_map(client):
    stadium = create_stadium("Test Stadium", seats=3 * 1000, rows=20, half=25)
    match = create_match(stadium, days=3)
    english = client.get("/").content.decode()
    assert "3,000 seats left" in english and "3000 seats" not in english
    sections = client.get(url("performance", performance_id=str(match["performanceId"]))).content.decode()
    assert "<small>1,000 seats free</small>" in sections and ">1000 " not in sections
    assert "Section North 1: 1,000 seats free" in sections and "3,000 of 3,000 seats free" in sections
    german = german_client()
    assert "3.000 Plätze frei" in german.get("/").content.decode()
    german_sections = german.get(url("performance", performance_id=str(match["performanceId"]))).content.decode()
    assert "<small>1.000 Plätze frei</small>" in german_sections and "1.000 Plätze frei," in german_sections
    assert "3.000 von 3.000 Plätzen frei" in german_sections


def _paid_order(client, session, **headers):
    hold(client, session, "0:0")
    done = client.post(url("checkout"), {"name": "Ada", "email": "ada@example.com"})
    order = mongo.orders().find_one({"ref": done["Location"].rstrip("/").rsplit("/", 1)[-1]})
    assert client.post(url("pay", ref=order["ref"]), {"payment_method": card(VISA)}).json()["status"] == "paid"
    return mongo.orders().find_one({"_id": order["_id"]})


def test_the_confirmation_mail_is_in_the_language_the_buyer_checked_out_in(settings):
    settings.SITE_URL = "https://tickets.example.org"
    session = make_session(name="Hamlet", name_de="Hamlet, Prinz von Dänemark")
    order = _paid_order(german_client(), session)
    assert order["language"] == "de"
    with translation.override("en"):  # the worker's own language does not matter
        assert notifications.send_confirmation(order["_id"]) == "sent"
    [message] = mail.outbox
    assert message.subject == f"Ihre Buchung {order['ref']}: Hamlet, Prinz von Dänemark"
    assert "Guten Tag Ada," in message.body
    assert (
        "Reihe A, Platz 1 (Stalls, Normalpreis): 20,00 EUR" in message.body
        and "1 Platz, gesamt 20,00 EUR" in message.body
    )
    html = str(cast(EmailMultiAlternatives, message).alternatives[0][0])
    assert '<html lang="de">' in html and "Öffnen Sie Ihre Tickets" in html
    assert "Quittung" in html  # the receipt line; the PDF itself rides along
    english = _paid_order(Client(), make_session(name="Macbeth", days=2))
    mail.outbox.clear()
    notifications.send_confirmation(english["_id"])
    assert mail.outbox[0].subject.startswith("Your booking ") and "Hello Ada," in mail.outbox[0].body


def test_staff_german_title_and_description_are_shown_to_german_buyers_only(client):
    make_session(name="The Tempest", description="A storm.", name_de="Der Sturm", description_de="Ein Unwetter.")
    make_session(name="Godot", description="Waiting.", days=2)  # no German text: the main one
    german = german_client().get("/").content.decode()
    assert "Der Sturm" in german and "Ein Unwetter." in german and "The Tempest" not in german
    assert "Godot" in german and "Waiting." in german
    english = client.get("/").content.decode()
    assert "The Tempest" in english and "Der Sturm" not in english


def test_staff_set_the_german_title_in_the_session_form(manager_client):
    session = make_session(name="The Tempest")
    form_url = f"/admin/booking/session/{session['_id']}/change/"
    form = manager_client.get(form_url).content.decode()
    assert 'name="name_de"' in form and 'name="description_de"' in form
    data = {
        "name": "The Tempest",
        "description": "",
        "name_de": "Der Sturm",
        "description_de": "Ein Unwetter auf See.",
        "start": timezone.localtime(session["start"]).strftime("%Y-%m-%dT%H:%M"),
        "end": timezone.localtime(session["end"]).strftime("%Y-%m-%dT%H:%M"),
        "price_s": "20",
        "price_p": "35",
    }
    saved = manager_client.post(form_url, data)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert (stored["nameDe"], stored["descriptionDe"]) == ("Der Sturm", "Ein Unwetter auf See.")
    page = german_client().get(url("session", session_id=str(session["_id"]))).content.decode()
    assert "<h1>Der Sturm</h1>" in page and "Ein Unwetter auf See." in page
    assert "<h1>The Tempest</h1>" in Client().get(url("session", session_id=str(session["_id"]))).content.decode()
    too_long = manager_client.post(form_url, {**data, "name_de": "x" * 121})
    assert too_long.status_code == 400 and mongo.sessions().find_one({"_id": session["_id"]})["nameDe"] == "Der Sturm"


def test_the_scripts_get_their_words_from_the_javascript_catalog(client):
    german = german_client().get("/i18n/js/?lang=de")
    assert german.status_code == 200 and "max-age=86400" in german["Cache-Control"]
    body = german.content.decode()
    assert (
        "Jetzt im Verkauf: W\\u00e4hlen Sie Ihre Pl\\u00e4tze." in body
        or "Jetzt im Verkauf: Wählen Sie Ihre Plätze." in body
    )
    assert (
        "Offline \\u00b7 gegen die Liste dieses Telefons gepr\\u00fcft" in body
        or "gegen die Liste dieses Telefons" in body
    )
    assert "Jetzt im Verkauf" not in client.get("/i18n/js/?lang=en").content.decode()
    whats_on = german_client().get("/").content.decode()
    assert '<script src="/i18n/js/?lang=de" defer>' in whats_on  # one URL per language: cached by browsers


def test_the_seat_map_is_kept_per_language(client):
    """The built map is shared by every viewer of a version, once per language: a German viewer's
    map never reaches an English one (seat names and prices are written in the viewer's language)."""
    session = make_session(prices={"s": 123450, "p": 3500})
    page_url = url("session", session_id=str(session["_id"]))
    german = german_client().get(page_url).content.decode()
    assert 'aria-label="Reihe A, Platz 1, Stalls, 1.234,50\xa0€' in german
    english = client.get(page_url).content.decode()
    assert 'aria-label="Row A, seat 1, Stalls, €1,234.50' in english and "Reihe A" not in english
    hold(client, session, "0:0")  # a new version, built first for the English buyer
    again = german_client().get(page_url).content.decode()
    assert "Reihe A, Platz 2, Stalls, 1.234,50\xa0€, frei" in again and "Row A, seat 2" not in again


def test_the_door_page_and_its_answers_in_german():
    from booking.tests.checkin_support import door_staff, sell, tickets

    session = make_session(name="Hamlet")
    order = sell(session, ["1:2"])
    door = german_client()
    door.force_login(door_staff())
    page = door.get(f"/checkin/{session['_id']}/").content.decode()
    assert '<html lang="de">' in page and "Code eingeben" in page and "Abmelden" in page
    assert '"locale": "de-DE"' in page  # door.js writes its clock times the German way
    scan = f"/checkin/{session['_id']}/scan"
    first = door.post(scan, {"code": tickets(order)[0], "door": "Nord"}).content.decode()
    assert "Einlass" in first and "Reihe B · Platz 3" in first
    again = door.post(
        scan,
        f'{{"code": "{tickets(order)[0]}", "door": "Süd"}}',
        content_type="application/json",
        HTTP_ACCEPT="application/json",
    ).json()
    assert again["status"] == "used" and again["message"] == "Bereits benutzt."
