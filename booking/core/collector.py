"""Python's garbage collector in a web worker that keeps thousands of streams open.

A full collection walks every object the collector tracks while it holds the GIL. In an on-sale
rush a worker keeps about 8,000 waiting pages' streams open (some 120 tracked objects each), and
its full collections took 0.6-1.7 s, every 10 s or so: every hold, page and payment of that
process stood still meanwhile (docs/performance.md, "The rush, fourth round"). So what has lived
for a while is frozen (``gc.freeze``: left out of every later collection's walk, at no cost), and
the frozen objects go back to the collector (unfreeze, one full collection, freeze again) only
when the worker is nearly idle, or once an hour at worst. Refcounting still frees every object
the moment its last reference goes; only garbage in reference cycles that died while frozen waits
for that release.
"""

import gc
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# A worker counts as calm with at most this many requests in flight (open streams included).
CALM_REQUESTS = 20
# Frozen objects go back to the collector at most this often, and only when calm...
RELEASE_SECONDS = 10 * 60
# ...or at least this often, calm or not, so that cyclic garbage never piles up for long.
RELEASE_AT_LEAST_SECONDS = 60 * 60


@dataclass
class RequestsInFlight:
    """The requests a web process is answering now, streams included. Counted on the event loop
    (the ASGI application's entry) and read by the keeper's thread: an int read is atomic."""

    count: int = 0


@dataclass
class CollectorKeeper:
    """Freezes what has survived since the last tick; releases the frozen objects when due."""

    in_flight: RequestsInFlight
    release_seconds: float = RELEASE_SECONDS
    release_at_least_seconds: float = RELEASE_AT_LEAST_SECONDS
    calm_requests: int = CALM_REQUESTS
    clock: Callable[[], float] = time.monotonic
    last_release: float | None = None
    _pid: int | None = field(default=None, repr=False)
    _stopped: threading.Event = field(default_factory=threading.Event, repr=False)

    def tick(self) -> bool:
        """Freeze every object the collector tracks now; first give the frozen ones back to a
        full collection when that is due. Returns whether it did."""
        now = self.clock()
        if self.last_release is None:
            self.last_release = now
        since = now - self.last_release
        due = since >= self.release_at_least_seconds or (
            since >= self.release_seconds and self.in_flight.count <= self.calm_requests
        )
        if due:
            gc.unfreeze()
            gc.collect()
            self.last_release = now
        gc.freeze()
        return due

    def start(self, *, every: float) -> None:
        """Tick every ``every`` seconds on a thread of this process, once per process (a forked
        worker starts its own; the parent's thread does not cross a fork)."""
        if self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._stopped = threading.Event()  # a thread of its own: one stopped earlier may still be ending
        threading.Thread(target=self._run, args=(every, self._stopped), name="collector-keeper", daemon=True).start()

    def stop(self) -> None:
        """End this process's ticks (after the one under way); ``start`` begins them again."""
        self._stopped.set()
        self._pid = None

    def _run(self, every: float, stopped: threading.Event) -> None:
        while not stopped.wait(every):
            self.tick()
