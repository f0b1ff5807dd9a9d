"""ASGI entry point for the push benchmark (bench/push.py): the app's ASGI application, plus
``GET /__bench/push`` answering this worker's MongoDB command counts (by command name) and its
hub's state, viewers and counters, so the benchmark can tell how many MongoDB commands idle
viewers cost. Not for production."""

import json
import os
import threading
from collections import Counter

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from django.core.asgi import get_asgi_application  # noqa: E402
from pymongo import monitoring  # noqa: E402

django_application = get_asgi_application()

from booking import mongo, push  # noqa: E402


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


async def application(scope, receive, send):
    if scope["type"] == "http" and scope["path"] == "/__bench/push":
        hub = push.hub()
        with commands.lock:
            counts = dict(commands.by_name)
        body = json.dumps(
            {"pid": os.getpid(), "commands": counts, "state": hub.state, "viewers": hub.viewers(), "stats": hub.stats}
        ).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
        return
    await django_application(scope, receive, send)
