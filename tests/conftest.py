"""Shared by the suites under tests/: one Chromium per test session (per xdist worker).

The browser tests (tests/browser/) and the Content-Security-Policy tests (tests/security/) open
their own browser contexts (own cookies: one buyer each) in it; launching Chromium costs a second
or two, a context a few milliseconds.
"""

import os

import pytest

# Playwright's sync API keeps an event loop in this thread; the test database teardown is plain
# synchronous code and safe here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"  # Debian's, never a downloaded one
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def chromium():
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def launch_chromium(chromium):
    """launch_chromium(*flags): a Chromium of its own with these extra command-line flags (a fake
    camera, say), for the one test that needs them; closed after the test."""
    browsers = []

    def launch(*flags: str):
        browser = chromium.browser_type.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *flags])
        browsers.append(browser)
        return browser

    yield launch
    for browser in browsers:
        browser.close()
