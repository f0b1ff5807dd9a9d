"""The production ASGI application with its health check and the waiting room's pages held for
``SLOW_SECONDS`` at fault points, so a test can tell how many slow requests one worker answers side
by side. Only tests/deploy/test_asgi_threads.py starts a server with it."""

import os
import time

from booking.core import faults

SLOW_SECONDS = float(os.environ.get("SLOW_SECONDS", "2"))


def hold_slow_pages(name: str) -> None:
    if name in ("healthz.before_checks", "queue.answer"):
        time.sleep(SLOW_SECONDS)


faults.set_hook(hold_slow_pages)

from theater_site.asgi import application  # noqa: E402 - the hook is set before any request

__all__ = ["application"]
