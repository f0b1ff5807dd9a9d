"""ASGI entry point for the push benchmark (bench/push.py): the app's ASGI application, plus
``GET /__bench/push`` answering this worker's MongoDB command counts (by command name), its hub's
state, viewers and counters, and the trace below, so the benchmark can tell how many MongoDB
commands idle viewers cost and where a change's time goes. Not for production.

The trace, per change (``"<session id>:<version>"``): when devmongo logged the write, when this
process received it from the change stream and when its fan-out began (``Hub.trace``), and the
wall-clock time each viewer's write of it returned (the live streams' ``send`` is wrapped: uvicorn
has handed the bytes to the socket by then). ``?reset=1`` empties it.
"""

import json
import os
import re
import threading
import time
from collections import Counter, defaultdict

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from pymongo import monitoring  # noqa: E402

from booking.core import mongo  # noqa: E402
from booking.web import push  # noqa: E402
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

TRACE: dict[str, dict] = {"logged": {}, "received": {}, "fanout": {}}
WRITTEN: defaultdict[str, list[float]] = defaultdict(list)
SEATS_EVENT = re.compile(rb'event: seats\ndata: \{"v":(\d+)')


def trace(stage, sid, version, at):
    TRACE[stage].setdefault(f"{sid}:{version}", at)


push.hub().trace = trace


async def application(scope, receive, send):
    path = scope.get("path", "")
    if scope["type"] == "http" and path == "/__bench/push":
        hub = push.hub()
        with commands.lock:
            counts = dict(commands.by_name)
        answer = {"pid": os.getpid(), "commands": counts, "state": hub.state, "viewers": hub.viewers()}
        answer["stats"] = hub.stats
        answer["written"] = sum(len(times) for times in WRITTEN.values())
        if b"trace=1" in scope.get("query_string", b""):
            answer["trace"] = {**TRACE, "written": WRITTEN}
        if b"reset=1" in scope.get("query_string", b""):
            for stage in TRACE.values():
                stage.clear()
            WRITTEN.clear()
        body = json.dumps(answer).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
        return
    if scope["type"] == "http" and path.endswith("/live/"):
        sid = path.split("/")[2]

        async def timed_send(message):
            await send(message)
            body = message.get("body")
            if body and message["type"] == "http.response.body":
                now = time.time()
                for match in SEATS_EVENT.finditer(body):
                    WRITTEN[f"{sid}:{int(match[1])}"].append(now)

        await django_application(scope, receive, timed_send)
        return
    await django_application(scope, receive, send)
