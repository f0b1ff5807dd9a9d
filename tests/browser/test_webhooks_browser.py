"""A manager wires the theater's CRM to its events in real Chromium: registers an endpoint at a
receiver the test starts, sees a sale's delivery with its failed and successful attempts, sends
it again; the pages fit a phone (no sideways scroll at 390 px) and read in German."""

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.core import mongo
from booking.sales import outbox
from booking.tests.admin_support import sell
from booking.tests.factories import make_session, make_theater
from booking.tests.webhook_support import deliver_order_events, receiver
from tests.browser.test_admin_browser import log_in_as_boss

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LIST = "/admin/booking/webhookendpoint/"


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_a_manager_registers_an_endpoint_and_sends_a_failed_delivery_again(new_page, shot, settings):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = True  # the receiver is http://127.0.0.1
    session = make_session(make_theater(name="Globe"))
    with receiver([500, 200, 200]) as got:
        page = log_in_as_boss(new_page, {"width": 1366, "height": 900}, then=f"{LIST}add/")
        page.get_by_label("Theater").select_option(label="Globe")
        page.get_by_label("URL").fill(got.url)
        page.get_by_label("Order paid", exact=True).check()
        page.get_by_label("Description").fill("CRM")
        page.get_by_role("button", name="Save").click()
        secret = page.locator("code.webhook-secret")
        expect(secret).to_contain_text("whsec_")
        got.secret = secret.inner_text()
        shot(page, "endpoint-registered")

        order = sell(session["_id"], ["0:0"])
        deliver_order_events(order["_id"])  # the worker's task: a 500, then delivered on the retry
        page.reload()
        page.get_by_role("link", name="order.paid").click()
        attempts = page.locator("table.webhook-attempts tbody tr")
        expect(attempts).to_have_count(2)
        expect(attempts.nth(0)).to_contain_text("500")
        expect(page.locator("pre.webhook-body")).to_contain_text(order["ref"])
        shot(page, "delivery-attempts")

        page.get_by_role("button", name="Send again").click()
        expect(page.get_by_role("button", name="Send again")).to_have_count(0)  # pending: not twice
        assert mongo.webhook_deliveries().find_one()["state"] == "pending"

        page.set_viewport_size({"width": 390, "height": 844})
        for path in (LIST, page.url):
            page.goto(path)
            wide = page.evaluate(  # what sticks out, named in the failure
                "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 391)"
                ".map(e => e.tagName + '.' + e.className).slice(0, 8)"
            )
            assert page_width(page) <= 390, (path, wide)
        shot(page, "delivery-phone")
    assert [r["verified"] for r in got.received] == [True, True]
    assert got.types() == [outbox.ORDER_PAID, outbox.ORDER_PAID]


def test_the_endpoint_pages_read_in_german(chromium, live_server, shot, settings):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = True
    make_session(make_theater(name="Globe"))
    context = chromium.new_context(base_url=live_server.url, locale="de-DE", viewport={"width": 390, "height": 844})
    try:
        User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
        page = context.new_page()
        page.goto(f"/admin/login/?next={LIST}add/")
        page.get_by_label("Benutzername").fill("boss")
        page.get_by_label("Passwort").fill("a-long-test-password")
        page.get_by_role("button", name="Anmelden").click()
        expect(page.get_by_label("Spielstätte")).to_be_visible()
        expect(page.get_by_label("Bestellung bezahlt", exact=True)).to_be_visible()
        expect(page.get_by_role("button", name="Speichern")).to_be_visible()
        assert page_width(page) <= 390
        shot(page, "endpoint-form-de")
    finally:
        context.close()
