"""Python's garbage collector in a web worker that keeps thousands of streams open.

A full collection walks every object the collector tracks while it holds the GIL. In an on-sale
rush a worker keeps about 8,000 waiting pages' streams open (some 120 tracked objects each), and
its full collections took 0.6-1.7 s, every 10 s or so: every hold, page and payment of that
process stood still meanwhile (docs/performance.md, "The rush, fourth round"). So what has lived
for a while is frozen (``gc.freeze``: left out of every later collection's walk, at no cost), and
the frozen objects go back to the collector (unfreeze, one full collection, freeze again) only
when the worker is nearly idle, or once an hour at worst.

Refcounting still frees every object the moment its last reference goes, and a closed stream
leaves no garbage in reference cycles; a page request does (about 70 objects, 15 KB), which waits
for the release if a freeze caught the request in flight. So a freeze waits for a moment with no
page in flight (a second at most), and a release is also due once freezes have caught
``RELEASE_AFTER_PAGES_CAUGHT`` pages, whatever the load: about 60 MB of such garbage at most.
"""

import gc
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# What is alive is frozen at least this often (sooner, at a moment with no page in flight)...
FREEZE_SECONDS = 1.0
# ...and such a moment is looked for this many times per FREEZE_SECONDS.
TICKS_PER_FREEZE = 10
# A worker counts as calm with at most this many requests in flight (open streams included).
CALM_REQUESTS = 20
# Frozen objects go back to the collector at most this often, and only when calm...
RELEASE_SECONDS = 10 * 60
# ...or at least this often, calm or not, so that cyclic garbage never piles up for long...
RELEASE_AT_LEAST_SECONDS = 60 * 60
# ...or once freezes have caught this many page requests in flight (their cyclic garbage).
RELEASE_AFTER_PAGES_CAUGHT = 4000


@dataclass
class RequestsInFlight:
    """The requests a web process is answering now: all of them (streams included) and the pages
    among them. Counted on the event loop (the ASGI application's entry) and read by the keeper's
    thread: an int read is atomic."""

    count: int = 0
    pages: int = 0

    def enter(self, *, page: bool) -> None:
        self.count += 1
        self.pages += page

    def leave(self, *, page: bool) -> None:
        self.count -= 1
        self.pages -= page


@dataclass
class CollectorKeeper:
    """Freezes what has survived since the last freeze; releases the frozen objects when due."""

    in_flight: RequestsInFlight
    freeze_seconds: float = FREEZE_SECONDS
    release_seconds: float = RELEASE_SECONDS
    release_at_least_seconds: float = RELEASE_AT_LEAST_SECONDS
    release_after_pages_caught: int = RELEASE_AFTER_PAGES_CAUGHT
    calm_requests: int = CALM_REQUESTS
    clock: Callable[[], float] = time.monotonic
    last_release: float | None = None
    last_freeze: float | None = None
    pages_caught: int = 0  # page requests in flight at the freezes since the last release
    _pid: int | None = field(default=None, repr=False)
    _stopped: threading.Event = field(default_factory=threading.Event, repr=False)

    def tick(self) -> str | None:
        """Release the frozen objects to a full collection when that is due ("release"), else
        freeze what is alive if no page is in flight or the last freeze is ``freeze_seconds``
        old ("freeze"), else nothing (None). A release freezes again after its collection."""
        now = self.clock()
        if self.last_release is None:
            self.last_release = now
        since = now - self.last_release
        calm = self.in_flight.count <= self.calm_requests
        if (
            since >= self.release_at_least_seconds
            or (since >= self.release_seconds and calm)
            or self.pages_caught >= self.release_after_pages_caught
        ):
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self.last_release = self.last_freeze = now
            self.pages_caught = 0
            return "release"
        pages = self.in_flight.pages
        if pages and self.last_freeze is not None and now - self.last_freeze < self.freeze_seconds:
            return None
        gc.freeze()
        self.last_freeze = now
        self.pages_caught += pages
        return "freeze"

    def start(self, *, freeze_seconds: float) -> None:
        """Tick on a thread of this process, ten times per ``freeze_seconds`` (a moment with no
        page in flight is looked for that often); once per process (a forked worker starts its
        own: the parent's thread does not cross a fork)."""
        if self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self.freeze_seconds = freeze_seconds
        self._stopped = threading.Event()  # a thread of its own: one stopped earlier may still be ending
        every = freeze_seconds / TICKS_PER_FREEZE
        threading.Thread(target=self._run, args=(every, self._stopped), name="collector-keeper", daemon=True).start()

    def stop(self) -> None:
        """End this process's ticks (after the one under way); ``start`` begins them again."""
        self._stopped.set()
        self._pid = None

    def _run(self, every: float, stopped: threading.Event) -> None:
        while not stopped.wait(every):
            self.tick()
