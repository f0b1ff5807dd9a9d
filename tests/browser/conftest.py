"""Real Chromium (the session's one, the root conftest.py) against pytest-django's live server.

MongoDB and Redis come from the root conftest. Screenshots of every step go to
test-artifacts/browser/ so a person can look at what the buyer saw.
"""

import os
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError

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
        path = str(folder / f"{next(counter):02d}-{step}.png")
        try:
            page.screenshot(path=path, full_page=full_page)
        except PlaywrightError:  # Chromium now and then cannot capture under load: a screenshot is no assertion
            page.wait_for_timeout(500)
            page.screenshot(path=path, full_page=full_page)

    return save


@pytest.fixture
def asgi_url(live_server):
    """The site under uvicorn in a thread of this process, as production's application serves it
    (theater_site/asgi.py): same settings and test database as ``live_server`` (which is only asked
    for its database setup)."""
    import uvicorn
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    from booking.tests.ports import free_port
    from booking.web import push
    from theater_site.asgi import serve

    push.reset_hub()
    port = free_port()
    config = uvicorn.Config(
        ASGIStaticFilesHandler(serve),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        # The pages' event streams are still open at teardown: without a limit uvicorn waits for
        # them, the join below gave up after 10 s and left the server running in its thread.
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    push.reset_hub()
