"""``python -m bench.waiting`` (``make bench-waiting``): what waiting buyers cost a web process.

The on-sale simulation (bench/onsale.py) runs everything at once on a shared machine, where
waiting and buying share the web workers' CPU. This measures the waiting room alone, in CPU
seconds rather than wall time (so a busy machine slows it but does not change the result much):

- **pushed**: N waiting pages in one process's hub (``presale/queue_push.QueueHub``, the code a
  web worker runs for its event streams) on the real queue (redis-server) and the real MongoDB
  stand-in, the sale open and buyers let in at 300 a minute (the simulation's rate and paces:
  ``bench.onsale.SIM_ENV``), for ``--seconds``. Reported: the process's CPU (every thread: the
  looks, their Redis round trips, the panels) as a share of one core, looks a second, MongoDB
  commands per waiting buyer (a command listener), Redis's CPU. The pages' socket writes are not
  in it (no sockets here): the simulation's push run has them.
- **polling**: the queue's panel poll (``GET /queue/<id>/status`` as htmx sends it, through
  Django's WSGI handler and every middleware, as gunicorn calls it: bench/profile.py's
  ``Browser``) for ``--polls`` buyers, each polling once in turn: CPU and wall time per poll, and
  MongoDB commands per poll.

Results: bench/results/waiting.md (and .json), with the load average before and after.
"""

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

from pymongo import monitoring

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

RESULTS = Path(__file__).resolve().parent / "results"


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Commands(monitoring.CommandListener):
    """Counts this process's MongoDB commands by name (a pymongo command listener)."""

    def __init__(self):
        super().__init__()
        self.by_name: Counter = Counter()
        self.lock = threading.Lock()

    def started(self, event):
        with self.lock:
            self.by_name[event.command_name] += 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass

    def total(self) -> int:
        with self.lock:
            return sum(self.by_name.values())


def pushed(buyers: int, seconds: float, stack, commands: Commands) -> dict:
    from bson import ObjectId

    from booking.core import clock
    from booking.presale import queue_push
    from booking.sales import waiting_room

    from .cpu import process_cpu_seconds
    from .onsale import seed_hall

    session = seed_hall()
    now = clock.now()
    config = waiting_room.enable(
        session["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now + timedelta(seconds=2), rate=300
    )
    owners = [f"s:{ObjectId()}" for _ in range(buyers)]
    waiting_room.poll_many(config, [(owner, None) for owner in owners])  # everybody came early
    redis_pid = stack._pids("redis")[0]

    async def run() -> dict:
        hub = queue_push.QueueHub()
        for owner in owners:
            hub.add(queue_push.QueueViewer(config.queue_id, owner, None, "en"))
        await asyncio.sleep(5)  # the on-sale's looks (spread over three seconds) and the first admissions
        looks_before = _looks(hub)
        cpu, redis_cpu, mongo = _cpu_seconds(), process_cpu_seconds(redis_pid), commands.total()
        started = time.monotonic()
        await asyncio.sleep(seconds)
        took = time.monotonic() - started
        cpu, redis_cpu = _cpu_seconds() - cpu, process_cpu_seconds(redis_pid) - redis_cpu
        mongo = commands.total() - mongo
        looks = _looks(hub) - looks_before
        waiting = hub.count(config.queue_id)
        for group in list(hub.viewers.values()):
            for viewer in list(group):
                hub.remove(viewer)
        return {
            "buyers": buyers,
            "still_waiting": waiting,
            "seconds": round(took, 1),
            "web_cpu_share_of_one_core": round(cpu / took, 3),
            "web_cpu_ms_per_look": round(cpu * 1000 / looks, 3) if looks else None,
            "looks_per_second": round(looks / took, 1),
            "redis_cpu_share_of_one_core": round(redis_cpu / took, 3),
            "mongo_commands": mongo,
            "mongo_commands_per_waiting_buyer": round(mongo / max(1, waiting), 4),
        }

    return asyncio.run(run())


def _looks(hub) -> int:
    return hub.looks


def polling(buyers: int, commands: Commands) -> dict:
    from django.core.handlers.wsgi import WSGIHandler

    from booking.core import clock
    from booking.sales import waiting_room

    from .onsale import seed_hall
    from .profile import Browser

    session = seed_hall()
    now = clock.now()
    config = waiting_room.enable(
        session["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now - timedelta(seconds=1), rate=1
    )
    queue = f"/queue/{config.queue_id}/"
    waiting_room.poll(config, "s:first")  # the minute's one admission: everybody after waits
    app = WSGIHandler()  # as gunicorn calls it: the middleware loaded once
    browsers = []
    for n in range(buyers):
        browser = Browser(app, f"10.1.{n >> 8 & 255}.{n & 255 or 1}")
        page = browser.request("GET", queue)
        assert page["status"] == 200, (page["status"], page["body"][:300])
        browsers.append(browser)
    cpu_ms, wall_ms, mongo = [], [], commands.total()
    for browser in browsers:
        cpu, wall = time.thread_time(), time.perf_counter()
        answer = browser.request("GET", queue + "status", headers={"HX-Request": "true"})
        wall_ms.append((time.perf_counter() - wall) * 1000)
        cpu_ms.append((time.thread_time() - cpu) * 1000)
        assert answer["status"] == 200, answer["status"]
    mongo = commands.total() - mongo
    cpu_ms.sort()
    wall_ms.sort()
    return {
        "polls": buyers,
        "cpu_ms_p50": round(statistics.median(cpu_ms), 3),
        "cpu_ms_p99": round(cpu_ms[int(0.99 * (len(cpu_ms) - 1))], 3),
        "wall_ms_p50": round(statistics.median(wall_ms), 3),
        "wall_ms_p99": round(wall_ms[int(0.99 * (len(wall_ms) - 1))], 3),
        "mongo_commands_per_poll": round(mongo / buyers, 4),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.waiting", description=__doc__.split("\n")[0])
    parser.add_argument("--buyers", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--polls", type=int, default=1000, help="buyers polling once each")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    import django

    from .onsale import SIM_ENV
    from .stack import app_env

    os.environ.update({**app_env(), **SIM_ENV})  # production settings, the simulation's paces
    django.setup()
    from django.conf import settings

    from booking.core import mongo

    from .stack import Stack

    settings.ALLOWED_HOSTS = ["*"]
    for name, value in SIM_ENV.items():
        setattr(settings, name, float(value) if "POLL" in name else int(value))
    commands = Commands()
    load_before = os.getloadavg()
    with Stack(web=False) as stack:
        stack.use_in_this_process()
        settings.DATABASES["default"]["NAME"] = str(stack.workdir / "django.sqlite3")  # migrated by the stack
        mongo.ensure_indexes()
        mongo.add_listener(commands)
        result = {"pushed": pushed(args.buyers, args.seconds, stack, commands)}
        result["polling"] = polling(args.polls, commands)
    result["load_before"] = [round(x, 2) for x in load_before]
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "waiting.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
