"""Sale windows in real Chromium: a session going on sale while its page is open becomes
clickable at the second, without a reload (static/booking/onsale.js, server time)."""

import re
import time
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from booking.core import clock
from booking.sales import selectors
from booking.sales import sessions as session_service
from booking.tests.factories import make_session
from booking.venues.seat_grid import HELD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(
    "viewport", [{"width": 1366, "height": 768}, {"width": 390, "height": 844}], ids=["1366x768", "390x844"]
)
def test_the_map_becomes_clickable_at_the_second(new_page, shot, viewport):
    session = make_session(name="Rush Night")
    opens = clock.now().replace(microsecond=0) + timedelta(seconds=12)  # room for a loaded test machine
    session_service.set_sale_window(session["_id"], published=True, sale_opens=opens, sale_closes=None)
    page = new_page(viewport)
    page.goto(f"/sessions/{session['_id']}/")
    seat = page.get_by_role("button", name=re.compile(r"^Row A, seat 1,"))
    expect(page.locator("#sale-countdown")).to_contain_text(re.compile(r"00:00:(0\d|1[0-2])"))
    expect(seat).to_be_disabled()
    shot(page, "before-on-sale")

    # When the page unlocked the map, by the browser's own clock (the same machine's): measured
    # in the page, so a loaded test machine's polling delay is not counted against the page
    page.evaluate(
        """() => { const lock = document.querySelector("fieldset.map-lock");
        new MutationObserver(() => { if (!lock.disabled && !window.unlockedAt) window.unlockedAt = Date.now(); })
          .observe(lock, {attributes: true, attributeFilter: ["disabled"]}); }"""
    )
    expect(seat).to_be_enabled(timeout=20000)
    enabled_at = datetime.fromtimestamp(page.evaluate("window.unlockedAt") / 1000, tz=UTC)
    assert enabled_at >= opens - timedelta(milliseconds=100), enabled_at  # not before the second
    assert enabled_at <= opens + timedelta(milliseconds=900), enabled_at  # at the second
    expect(page.locator("#sale-countdown")).to_contain_text("On sale now")
    shot(page, "on-sale")
    time.sleep(0.05)
    seat.click()
    expect(seat).to_have_accessible_name(re.compile("held by you", re.I))
    assert selectors.get_session(session["_id"])["seats"][0][0] == HELD
    shot(page, "held")
