"""The production ASGI application with its health check held for ``SLOW_SECONDS`` at a fault
point, so a test can tell whether one worker answers two slow requests side by side. Only
tests/deploy/test_asgi_threads.py starts a server with it."""

import os
import time

from booking.core import faults

SLOW_SECONDS = float(os.environ.get("SLOW_SECONDS", "2"))


def hold_health_check(name: str) -> None:
    if name == "healthz.before_checks":
        time.sleep(SLOW_SECONDS)


faults.set_hook(hold_health_check)

from theater_site.asgi import application  # noqa: E402 - the hook is set before any request

__all__ = ["application"]
