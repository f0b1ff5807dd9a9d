"""The what's-on page kept for a second (booking/web/page_cache.py) in a real browser. A page
built for one buyer is served to the next with the next buyer's own CSRF token, so the header's
language switch (a POST) works for each of them; phone first, then a laptop."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from booking.tests.factories import make_session
from booking.web import page_cache

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/shots/perf")


@pytest.fixture(autouse=True)
def kept_page(settings):
    settings.BOOKING_WHATS_ON_CACHE_SECONDS = 60  # long enough that every visit here is the kept page
    page_cache.clear()
    yield
    page_cache.clear()


@pytest.mark.parametrize("viewport", [{"width": 390, "height": 844}, {"width": 1366, "height": 768}])
def test_each_buyer_switches_language_on_the_kept_page(new_page, shot, viewport):
    SHOTS.mkdir(parents=True, exist_ok=True)
    make_session(name="Hamlet", name_de="Hamlet (deutsch)", days=1)
    first = new_page(viewport)
    first.goto("/")
    expect(first.locator("li.show").first).to_contain_text("24 seats left")
    make_session(name="Added later", days=2)  # after the English page was kept: not on it for 60 s
    for label in ("second-buyer", "third-buyer"):
        buyer = new_page(viewport)
        buyer.goto("/")
        expect(buyer.locator("li.show")).to_have_count(1)  # the kept page, not a new build
        buyer.get_by_role("button", name="Deutsch").click()
        expect(buyer.locator("html")).to_have_attribute("lang", "de")
        expect(buyer.get_by_role("heading", level=1)).to_have_text("Spielplan")
        expect(buyer.locator("li.show").first).to_contain_text("Hamlet (deutsch)")
        width = viewport["width"]
        buyer.screenshot(path=str(SHOTS / f"whats-on-kept-{label}-de-{width}.png"), full_page=True)
        shot(buyer, f"{label}-de")
    first.reload()
    expect(first.locator("html")).to_have_attribute("lang", "en")  # the others' choice is theirs alone
