"""A manager sets the quota of a whole series on the staff site (preview, then apply), in English
on a desktop (1366 px) and in German on a phone (390 px); a performance that reaches it reads as
sold out in what's on. No sideways scroll. Screenshots go to test-artifacts/browser/."""

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.core import mongo
from booking.sales import holds
from booking.tests.factories import make_session, make_theater

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

PASSWORD = "pw-for-the-quota-test-1"
WORDS = {
    "en": {"preview": "quota 2 seats (0 taken now)", "sold_out": "Sold out"},
    "de": {"preview": "Kontingent 2 Plätze (0 jetzt vergeben)", "sold_out": "Ausverkauft"},
}


def no_sideways_scroll(page, width):
    scroll = page.evaluate("document.scrollingElement.scrollWidth")
    assert scroll <= width + 1, f"the page scrolls sideways: {scroll}px"


@pytest.mark.parametrize(("language", "width"), [("en", 1366), ("de", 390)])
def test_a_series_quota_is_set_and_a_full_performance_reads_sold_out(chromium, live_server, shot, language, width):
    theater = make_theater(name="Main Hall")
    shows = [make_session(theater, days=d) for d in (1, 2, 3)]
    User.objects.create_superuser("manager", "m@theater.example", PASSWORD)
    context = chromium.new_context(
        base_url=live_server.url,
        viewport={"width": width, "height": 900},
        locale="de-DE" if language == "de" else "en-US",
    )
    context.set_default_timeout(10000)
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
    page.goto(f"/admin/booking/session/{shows[0]['_id']}/series-actions/")
    page.locator("#id_username").fill("manager")
    page.locator("#id_password").fill(PASSWORD)
    page.locator("input[type=submit]").click()
    page.locator("input[name=action][value=quota]").check()
    page.locator("#id_quota").fill("2")
    page.locator(".submit-row button:not([name])").click()
    expect(page.locator(".series-preview input[name=sessions]")).to_have_count(3)
    expect(page.locator(".series-preview")).to_contain_text(WORDS[language]["preview"])
    no_sideways_scroll(page, width)
    shot(page, "quota-preview")
    page.locator("button[name=apply]").click()
    expect(page.locator(".messagelist")).to_be_visible()
    assert [s.get("quota") for s in mongo.sessions().find({"theaterId": theater["_id"]}, hint=[("_id", 1)])] == [2] * 3
    no_sideways_scroll(page, width)
    shot(page, "quota-set")

    holds.hold_seats(shows[1]["_id"], "s:buyer", None, ["0:0", "0:1"])  # the second reaches its quota
    page.goto("/")
    expect(page.locator(".show.sold-out")).to_have_count(1)
    expect(page.locator(".show.sold-out")).to_contain_text(WORDS[language]["sold_out"])
    no_sideways_scroll(page, width)
    shot(page, "whats-on")
    context.close()
