"""A buyer exchanges a ticket for a cheaper seat on the map and cancels the other one, from their
booking's page, on a phone and on a laptop, in English and German."""

import re
import time

import pytest
from playwright.sync_api import expect

from booking.core import mongo
from booking.sales import holds, self_service
from booking.tests.factories import make_session, make_theater
from booking.tests.paying import checkout_paid
from theater_site.celery import app as celery_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en-GB": {
        "find": "Find booking",
        "change": "Change this booking",
        "exchange_link": "Exchange tickets for other seats or another date",
        "exchange": "Exchange",
        "moved": "Your tickets were moved",
        "cancel": "Cancel the ticked tickets",
        "canceled": "The tickets were canceled",
        "seat": "Row A, seat 1",
    },
    "de-DE": {
        "find": "Buchung finden",
        "change": "Diese Buchung ändern",
        "exchange_link": "Tickets gegen andere Plätze oder einen anderen Termin umtauschen",
        "exchange": "Umtauschen",
        "moved": "Ihre Tickets wurden umgetauscht",
        "cancel": "Die angekreuzten Tickets stornieren",
        "canceled": "Die Tickets wurden storniert",
        "seat": "Reihe A, Platz 1",
    },
}


@pytest.mark.parametrize("width", [390, 1366])
@pytest.mark.parametrize("locale", ["en-GB", "de-DE"])
def test_a_buyer_exchanges_one_ticket_and_cancels_the_other(chromium, live_server, shot, locale, width):
    words = WORDS[locale]
    theater = make_theater()
    rules = self_service.Rules(exchange=True, cancel=True, hours_before=48, fee=100, transfer=True)
    self_service.set_theater_rules(theater_id=theater["_id"], rules=rules)
    session = make_session(theater, days=5, name="Tosca")
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["1:2", "1:3"])  # two premium seats, 35.00 each
    order = checkout_paid("s:ada", cart.cart_id, "Ada Lovelace", "ada@example.com")
    context = chromium.new_context(base_url=live_server.url, viewport={"width": width, "height": 844}, locale=locale)
    context.set_default_timeout(10000)
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
        page.goto("/find-booking/")
        page.locator("input[name=ref]").fill(order["ref"])
        page.locator("input[name=email]").fill("ada@example.com")
        page.locator("form button[type=submit]").last.click()
        expect(page).to_have_url(re.compile(rf"/orders/{order['ref']}/$"))
        expect(page.get_by_role("heading", name=words["change"])).to_be_visible()
        page.get_by_role("heading", name=words["change"]).scroll_into_view_if_needed()
        shot(page, f"order-{locale}-{width}", full_page=False)

        page.get_by_role("link", name=words["exchange_link"]).click()
        # another buyer takes a seat while this one looks: the picker learns it without a reload
        expect(page.locator("#pick-map input[value='0:5']")).to_be_enabled()
        holds.hold_seats(session["_id"], "s:bob", None, ["0:5", "0:6", "0:7", "0:8"])
        # the picker re-reads every 4 s without push: give it three rounds on a busy machine
        expect(page.locator("#pick-map input[value='0:5']")).to_be_disabled(timeout=15_000)
        first = order["lines"][0]["ticket"]
        page.locator(f"input[name=ticket][value='{first}']").check()
        page.get_by_label(words["seat"]).first.check()
        shot(page, f"exchange-picked-{locale}-{width}")
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing wider than the screen
        page.get_by_role("button", name=words["exchange"], exact=True).click()
        expect(page.locator(".messages")).to_contain_text(words["moved"])
        shot(page, f"exchanged-{locale}-{width}")

        stored = mongo.orders().find_one({"_id": order["_id"]})
        assert sorted(x["key"] for x in stored["lines"]) == ["0:0", "1:3"]
        assert stored["refunds"][-1]["amount"] == 3500 - 2000 - 100

        form = page.locator("form.change-form").filter(has=page.locator("input[name=fingerprint]"))
        form.locator(f"input[name=ticket][value='{order['lines'][1]['ticket']}']").check()
        form.get_by_role("button", name=words["cancel"]).click()
        expect(page.locator(".messages")).to_contain_text(words["canceled"])
        shot(page, f"canceled-{locale}-{width}")
        stored = mongo.orders().find_one({"_id": order["_id"]})
        assert [x["key"] for x in stored["lines"]] == ["0:0"] and stored["state"] == "partially_refunded"
    finally:
        context.close()
        celery_app.control.purge()  # the mails queued by the pages: no worker runs here


def test_the_exchange_picker_learns_a_seat_taken_by_push_under_asgi(chromium, asgi_url, shot):
    """Served by uvicorn as in production: the picker's stream tells it at once that another buyer
    took a seat, well before its 4 s re-read, and it re-reads nothing."""
    theater = make_theater()
    rules = self_service.Rules(exchange=True, cancel=True, hours_before=48, fee=100)
    self_service.set_theater_rules(theater_id=theater["_id"], rules=rules)
    session = make_session(theater, days=5, name="Tosca")
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["1:2", "1:3"])
    order = checkout_paid("s:ada", cart.cart_id, "Ada Lovelace", "ada@example.com")
    context = chromium.new_context(base_url=asgi_url, viewport={"width": 1366, "height": 900}, locale="en-GB")
    context.set_default_timeout(10000)
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
        page.goto("/find-booking/")
        page.locator("input[name=ref]").fill(order["ref"])
        page.locator("input[name=email]").fill("ada@example.com")
        page.locator("form button[type=submit]").last.click()
        expect(page).to_have_url(re.compile(rf"/orders/{order['ref']}/$"))
        streams: list[str] = []
        rereads: list[str] = []
        page.on("request", lambda r: streams.append(r.url) if "/live/" in r.url else None)
        page.on("request", lambda r: rereads.append(r.url) if r.headers.get("x-picker") else None)
        with page.expect_response(lambda r: "/live/" in r.url and r.status == 200):
            page.get_by_role("link", name=WORDS["en-GB"]["exchange_link"]).click()
        seat = page.locator("#pick-map input[value='0:5']")
        expect(seat).to_be_enabled()
        time.sleep(0.5)  # the stream's hello heard: the picker stops polling

        holds.hold_seats(session["_id"], "s:bob", None, ["0:5", "0:6", "0:7", "0:8"])
        expect(seat).to_be_disabled(timeout=2500)  # under the 4 s re-read: only push is this quick
        expect(page.locator("#pick-map input[value='0:8']")).to_be_disabled()
        shot(page, "picker-pushed")
        time.sleep(4.5)  # a re-read period passes: while the stream is heard, none is sent
        assert streams and rereads == [], (streams, rereads)
    finally:
        context.close()
        celery_app.control.purge()
