"""A buyer on a phone signs in with the mailed link and finds their bookings, in both languages."""

import re

import pytest
from playwright.sync_api import expect

from booking.notifications.sign_in import sign_in_message
from booking.tests.admin_support import sell
from booking.tests.factories import make_session
from theater_site.celery import app as celery_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en-GB": {
        "nav": "My bookings",
        "send": "Send me a sign-in link",
        "sent": "Check your inbox",
        "enter": "Sign in and see my bookings",
        "coming": "Coming up",
        "out": "Sign out",
    },
    "de-DE": {
        "nav": "Meine Buchungen",
        "send": "Anmelde-Link senden",
        "sent": "Sehen Sie in Ihr Postfach",
        "enter": "Anmelden und meine Buchungen sehen",
        "coming": "Demnächst",
        "out": "Abmelden",
    },
}


@pytest.mark.parametrize("width", [320, 390])
@pytest.mark.parametrize("locale", ["en-GB", "de-DE"])
def test_a_buyer_signs_in_by_mail_and_sees_their_bookings(chromium, live_server, shot, settings, locale, width):
    settings.SITE_URL = live_server.url
    words = WORDS[locale]
    session = make_session(name="Tosca")
    order = sell(session["_id"], ["0:0"], email="ada@example.com", owner="s:another-device")
    context = chromium.new_context(base_url=live_server.url, viewport={"width": width, "height": 844}, locale=locale)
    try:
        page = context.new_page()
        page.goto("/")
        for link in page.get_by_role("navigation").get_by_role("link").all():  # every one still fits
            box = link.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, link.inner_text()
        nav = page.get_by_role("navigation").get_by_role("link", name=words["nav"])
        nav.click()
        page.get_by_role("textbox").fill("ada@example.com")
        page.get_by_role("button", name=words["send"]).click()
        expect(page.get_by_role("heading", name=words["sent"])).to_be_visible()
        shot(page, f"link-sent-{locale}-{width}", full_page=False)

        # the worker's mail, made here: its link is what the buyer taps
        link = re.search(
            r"http\S+/account/enter/\?sesame=\S+", sign_in_message(email="ada@example.com", language=locale[:2]).body
        )
        assert link is not None
        page.goto(link.group(0))
        page.get_by_role("button", name=words["enter"]).click()
        expect(page.get_by_role("heading", name=words["coming"])).to_be_visible()
        row = page.locator(".booking-row").filter(has_text=order["ref"])
        expect(row).to_contain_text("Tosca")
        shot(page, f"my-bookings-{locale}-{width}", full_page=False)
        row.get_by_role("link").click()
        expect(page).to_have_url(re.compile(rf"/orders/{order['ref']}/$"))
        page.goto("/account/")
        page.get_by_role("button", name=words["out"]).click()
        expect(page.get_by_role("button", name=words["send"])).to_be_visible()
    finally:
        context.close()
        celery_app.control.purge()  # the link mail queued by the page: no worker runs here
