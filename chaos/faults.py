"""The fault schedule: what breaks when, relative to the run's length.

- kill -9 a gunicorn worker (twice; the gunicorn master starts a new one);
- kill -9 the Celery worker (with its pool) and start it again a few seconds later;
- stop Redis for a while and start it again (broker and rate-limit counters are lost: Redis runs
  without persistence, the worst case);
- optionally stop the MongoDB stand-in cleanly and start it again (the site answers 503 with
  Retry-After meanwhile; with a real MongoDB this fault is skipped).
"""

import logging
import random
import threading
import time
from dataclasses import dataclass, field

from .stack import Stack

logger = logging.getLogger("chaos.faults")


@dataclass
class FaultLog:
    injected: list = field(default_factory=list)  # (seconds into the run, what)

    def add(self, started: float, what: str) -> None:
        self.injected.append((round(time.monotonic() - started, 1), what))
        logger.info("fault: %s", what)


def schedule(duration: float, *, mongo: bool) -> list[tuple[float, str]]:
    plan = [
        (0.12, "kill_web_worker"),
        (0.25, "kill_celery_worker"),
        (0.40, "redis_down"),
        (0.55, "kill_web_worker"),
        (0.65, "kill_celery_worker"),
    ]
    if mongo:
        plan.append((0.75, "mongo_down"))
    return [(fraction * duration, what) for fraction, what in plan]


def run_faults(stack: Stack, duration: float, stop: threading.Event, log: FaultLog, *, seed: int, mongo: bool):
    rng = random.Random(seed)
    started = time.monotonic()
    outage = max(3.0, min(10.0, duration / 20))
    for at, what in schedule(duration, mongo=mongo and stack.can_restart_mongo()):
        if stop.wait(max(0.0, started + at - time.monotonic())):
            return
        if what == "kill_web_worker":
            pid = stack.kill_web_worker(rng)
            log.add(started, f"kill -9 gunicorn worker {pid}")
        elif what == "kill_celery_worker":
            stack.kill_celery_worker()
            log.add(started, "kill -9 celery worker (and its pool)")
            stop.wait(outage / 2)
            stack.restart_celery_worker()
            log.add(started, "celery worker started again")
        elif what == "redis_down":
            stack.stop_redis()
            log.add(started, f"redis stopped for {outage:.0f}s")
            stop.wait(outage)
            stack.start_redis()
            log.add(started, "redis started again")
        elif what == "mongo_down":
            stack.stop_mongo()
            log.add(started, f"mongodb stopped for {outage / 2:.0f}s")
            stop.wait(outage / 2)
            stack.start_mongo()
            log.add(started, "mongodb started again")
