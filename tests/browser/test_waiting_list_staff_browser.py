"""Staff see a sold-out performance's waiting list on a phone (390 px) and a laptop (1366 px), in
English and German: who waits in which place, for how many seats, and the offer made with its
seats, deadline and mail, the states in the staff's language."""

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.sales import holds, waiting_list
from booking.tests.factories import make_session, make_theater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GRID = "A: ssssss\nB: pppppp\n"
SIZES = [(390, 844), (1366, 900)]
WORDS = {
    "en": {
        "title": "Waiting list",
        "offered": "offered",
        "waiting": "waiting",
        "counts": "1 waiting, 1 with an open offer",
    },
    "de": {"title": "Warteliste", "offered": "angeboten", "waiting": "wartet", "counts": "1 wartend"},
}


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("size", SIZES, ids=["390", "1366"])
def test_staff_see_who_waits_and_the_offers_made(chromium, live_server, shot, size, language):
    words = WORDS[language]
    session = make_session(make_theater(GRID), name="The Seagull")
    cart = holds.hold_seats(session["_id"], "s:first", None, ["0:0", "0:1", "0:2", "0:3", "0:4", "0:5"])
    holds.hold_seats(session["_id"], "s:second", None, ["1:0", "1:1", "1:2", "1:3", "1:4", "1:5"])
    for email, count in (("first@example.com", 2), ("second@example.com", 4)):
        waiting_list.join(
            session_id=session["_id"], email=email, count=count, together=True, category=None, language="en"
        )
    holds.release_seats(session["_id"], "s:first", cart.cart_id, ["0:4", "0:5"])
    assert waiting_list.offer_free_seats(session["_id"]).offered == 1
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")

    context = chromium.new_context(
        base_url=live_server.url,
        viewport={"width": size[0], "height": size[1]},
        locale="de-DE" if language == "de" else "en-GB",
        timezone_id="Europe/Berlin",
    )
    context.set_default_timeout(10_000)
    context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page = context.new_page()
    try:
        page.goto("/admin/login/")
        page.locator("#id_username").fill("boss")
        page.locator("#id_password").fill("a-long-test-password")
        page.locator("input[type=submit]").click()
        page.goto(f"/admin/booking/session/{session['_id']}/waiting-list/")
        expect(page.get_by_role("heading", name=words["title"])).to_be_visible()
        rows = page.locator("#waiting-list-table tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.nth(0)).to_contain_text("first@example.com")
        expect(rows.nth(0)).to_contain_text(words["offered"])
        expect(rows.nth(0)).to_contain_text("5")  # the offered seats in words: row A, seats 5-6
        expect(rows.nth(1)).to_contain_text("second@example.com")
        expect(rows.nth(1)).to_contain_text(words["waiting"])
        expect(rows.nth(1).locator("td").first).to_have_text("1")  # first in line now
        if language == "en":
            expect(page.locator("#waiting-list-counts")).to_contain_text(words["counts"])
        assert page.evaluate("document.documentElement.scrollWidth") <= size[0] + 1, "the page scrolls sideways"
        shot(page, "waiting-list")
    finally:
        context.close()
