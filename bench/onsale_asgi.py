"""ASGI entry point for the on-sale simulation's pushed runs (bench/onsale.py): the app's ASGI
application, as production serves it (Procfile: gunicorn with uvicorn workers), wrapped.

Every answer's head gets ``X-Server-Time-Us`` (microseconds from the request to its head: for an
event stream, until the stream starts). ``GET /__bench/onsale`` answers this worker's pid, its
MongoDB commands by name since it started (a command listener that only counts), and how many
waiting-room pages its hub holds open, so the simulation can tell what waiting buyers cost.
With BENCH_READY_DIR set, the worker leaves a file named by its pid there once the app is loaded.
Not for production.
"""

import json
import os
import threading
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from pymongo import monitoring  # noqa: E402

from booking.core import mongo  # noqa: E402
from booking.presale import queue_push  # noqa: E402
from theater_site.asgi import application as django_application  # noqa: E402 - the production app


class _Count(monitoring.CommandListener):
    def __init__(self):
        self.by_name: Counter = Counter()
        self.lock = threading.Lock()

    def started(self, event):
        with self.lock:
            self.by_name[event.command_name] += 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


commands = _Count()
mongo.add_listener(commands)

if os.environ.get("BENCH_READY_DIR"):
    Path(os.environ["BENCH_READY_DIR"], str(os.getpid())).touch()


def _peak_rss_mb() -> float:
    """This worker's most memory in use so far (VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


async def application(scope, receive, send):
    if scope["type"] != "http":
        await django_application(scope, receive, send)
        return
    if scope.get("path") == "/__bench/onsale":
        with commands.lock:
            counts = dict(commands.by_name)
        state = {"pid": os.getpid(), "commands": counts, "queue_viewers": queue_push.hub().count()}
        body = json.dumps({**state, "peak_rss_mb": _peak_rss_mb()})
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body.encode()})
        return
    started = time.perf_counter_ns()

    async def timed_send(message):
        if message["type"] == "http.response.start":
            took = (time.perf_counter_ns() - started) // 1000
            message = {**message, "headers": [*message.get("headers", []), (b"x-server-time-us", str(took).encode())]}
        await send(message)

    await django_application(scope, receive, timed_send)
