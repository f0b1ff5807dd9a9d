"""Real Chromium (the session's one, the root conftest.py) against pytest-django's live server.

MongoDB and Redis come from the root conftest. Screenshots of every step go to
test-artifacts/browser/ so a person can look at what the buyer saw.
"""

import os
import re
import shutil
from pathlib import Path

import pytest

# Playwright's sync API keeps an event loop in this thread; the test database teardown is plain
# synchronous code and safe here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"


@pytest.fixture(autouse=True)
def _browser_settings(settings):
    settings.BOOKING_HOLD_RATE = ""  # every browser here is 127.0.0.1


@pytest.fixture
def new_page(chromium, live_server):
    """new_page(name) -> a page in its own browser context (its own cookies: one buyer)."""
    contexts = []

    def make(viewport=None):
        context = chromium.new_context(base_url=live_server.url, viewport=viewport or {"width": 1280, "height": 900})
        context.set_default_timeout(8000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def shot(request):
    """shot(page, "step") saves test-artifacts/browser/<test>/<nn>-<step>.png."""
    folder = ARTIFACTS / re.sub(r"[^\w-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    counter = iter(range(1, 100))

    def save(page, step: str, full_page: bool = True):
        page.screenshot(path=str(folder / f"{next(counter):02d}-{step}.png"), full_page=full_page)

    return save
