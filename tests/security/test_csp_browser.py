"""The Content-Security-Policy in a real browser: htmx works under it (a seat click holds the seat
and the map and cart update), nothing on the buyer's pages or the staff site is refused, and htmx
talks only to its own origin. Debian's Chromium through Playwright; screenshots go to
test-artifacts/security/."""

import os
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from booking.tests.factories import make_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API keeps a loop here

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "security"


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.BOOKING_HOLD_RATE = ""


@pytest.fixture
def in_browser(chromium, live_server):
    """in_browser(steps) runs steps(page, refused) in a browser context of its own (in the
    session's Chromium, the root conftest.py) and returns its result."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def run(steps):
        context = chromium.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(8000)
        page = context.new_page()
        refused = []
        page.on(
            "console",
            lambda msg: (
                refused.append(msg.text) if "Content Security Policy" in msg.text or "Refused to" in msg.text else None
            ),
        )
        page.on("pageerror", lambda exc: refused.append(f"page error: {exc}"))
        try:
            return steps(page, refused)
        finally:
            context.close()

    return run


def test_htmx_works_under_the_policy_and_nothing_is_refused(in_browser):
    session = make_session()

    def steps(page, refused):
        response = page.goto(f"/sessions/{session['_id']}/")
        assert "script-src 'self'" in response.headers["content-security-policy"]
        config = page.evaluate("() => ({self: htmx.config.selfRequestsOnly, version: htmx.version})")
        assert config["self"] is True  # htmx refuses requests to any other origin
        assert config["version"].startswith("2.")

        page.locator("#s0-0").click()  # a seat click: an htmx POST with the CSRF header
        page.locator("#cart-summary .countdown").wait_for()
        # Waits out htmx's settling: for ~20 ms a swapped-in element keeps the old one's classes.
        expect(page.locator("#s0-0")).to_have_class(re.compile(r"\bme\b"))
        page.screenshot(path=str(ARTIFACTS / "csp-seat-held.png"), full_page=True)

        # A request to another origin is refused by htmx itself (and by connect-src behind it).
        blocked = page.evaluate(
            """() => new Promise(resolve => {
                document.body.addEventListener('htmx:invalidPath', () => resolve('refused by htmx'), {once: true});
                htmx.ajax('GET', 'https://example.org/steal').catch(() => resolve('refused'));
                setTimeout(() => resolve('sent'), 2000);
            })"""
        )
        assert blocked.startswith("refused")
        for path in ("/", "/cart/", "/find-booking/"):
            page.goto(path)
        return refused

    assert in_browser(steps) == []


def test_the_staff_site_works_under_the_policy(in_browser):
    make_session()
    get_user_model().objects.create_superuser("boss", "boss@example.org", "a-long-test-password-1")

    def steps(page, refused):
        page.goto("/admin/login/")
        page.fill("#id_username", "boss")
        page.fill("#id_password", "a-long-test-password-1")
        page.click("input[type=submit]")
        page.wait_for_url("**/admin/")
        for path in ("/admin/booking/theater/", "/admin/booking/session/", "/admin/booking/theater/add/"):
            page.goto(path)
        page.screenshot(path=str(ARTIFACTS / "csp-admin.png"), full_page=True)
        return refused

    assert in_browser(steps) == []
