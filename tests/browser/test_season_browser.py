"""A manager enters a season on the staff site and bulk-edits its prices, in English on a desktop
(1366 px) and in German on a phone (390 px): preview of the dates, drafts created, one price of
the whole series changed. No sideways scroll. Screenshots go to test-artifacts/browser/."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

from booking.core import mongo
from booking.tests.factories import make_theater

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

PASSWORD = "pw-for-the-season-test-1"

WORDS = {
    "en": {
        "preview": "Preview the dates",
        "create": "Create the sessions",
        "count": "4 performances will be created",
        "created": "4 created",
        "edit": "Edit the whole series",
        "action": "Change a category's price",
        "apply": "Apply to these performances",
        "done": "4 performances changed",
    },
    "de": {
        "preview": "Termine ansehen",
        "count": "4 Vorstellungen werden angelegt",
        "edit": "Die ganze Reihe bearbeiten",
    },
}


def no_sideways_scroll(page, width):
    scroll = page.evaluate("document.scrollingElement.scrollWidth")
    assert scroll <= width + 1, f"the page scrolls sideways: {scroll}px"


@pytest.mark.parametrize(("language", "width"), [("en", 1366), ("de", 390)])
def test_a_season_is_created_and_its_prices_changed_at_once(chromium, live_server, shot, language, width):
    theater = make_theater(name="Main Hall")
    User.objects.create_superuser("manager", "m@theater.example", PASSWORD)
    context = chromium.new_context(
        base_url=live_server.url,
        viewport={"width": width, "height": 900},
        locale="de-DE" if language == "de" else "en-US",
    )
    context.set_default_timeout(10000)
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
    page.goto(f"/admin/booking/session/add-series/?theater={theater['_id']}")
    page.locator("#id_username").fill("manager")
    page.locator("#id_password").fill(PASSWORD)
    page.locator("input[type=submit]").click()
    today = timezone.localdate()
    monday = today + timedelta(days=7 - today.weekday())
    page.locator("#id_name").fill("Carmen")
    page.locator("#id_name_de").fill("Carmen (Oper)")
    page.locator("#id_first_day").fill(monday.isoformat())
    page.locator("#id_last_day").fill((monday + timedelta(days=13)).isoformat())
    page.locator("input[name=weekdays][value='2']").check()
    page.locator("input[name=weekdays][value='5']").check()
    page.locator("#id_times_5").fill("15:00, 19:30")
    page.locator("#id_skip_dates").fill((monday + timedelta(days=12)).isoformat())  # the second Saturday
    page.locator("#id_price_s").fill("20")
    page.locator("#id_price_p").fill("30")
    page.locator("#id_box_office").check()
    page.locator("button[name=preview]").click()
    words = {**WORDS["en"], **WORDS[language]} if language == "en" else WORDS["de"]
    expect(page.locator(".season-preview")).to_contain_text(words["count"])
    expect(page.locator(".season-dates li")).to_have_count(4)
    no_sideways_scroll(page, width)
    shot(page, "preview")

    page.locator("#series-page input.default[type=submit]").click()
    expect(page.locator(".series-result")).to_be_visible()
    assert mongo.sessions().count_documents({"theaterId": theater["_id"], "status": "draft"}, hint=[("_id", 1)]) == 4
    no_sideways_scroll(page, width)
    shot(page, "created")

    page.get_by_role("link", name=words["edit"]).click()
    page.locator("input[name=action][value=prices]").check()
    page.locator("#id_category").select_option("s")
    page.locator("#id_price").fill("25")
    page.locator(".submit-row button:not([name])").click()
    expect(page.locator(".series-preview input[name=sessions]")).to_have_count(4)
    no_sideways_scroll(page, width)
    shot(page, "price-preview")
    page.locator("button[name=apply]").click()
    expect(page.locator(".messagelist")).to_be_visible()
    prices = [s["prices"]["s"] for s in mongo.sessions().find({"theaterId": theater["_id"]}, hint=[("_id", 1)])]
    assert prices == [2500] * 4
    no_sideways_scroll(page, width)
    shot(page, "prices-changed")
    context.close()
