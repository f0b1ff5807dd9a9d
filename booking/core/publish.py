"""Publishing a Celery task after the buyer's answer instead of before it.

A Celery publish to Redis costs 2 ms of CPU and 6-8 ms of wall time here (kombu builds the message
and a Redis client object each time; a bare LPUSH is 0.2 ms), and the buyer waited for it. The
tasks published through ``soon`` are ones whose work is written to MongoDB first, in the same
write as what it is about (a box-office reservation's notice is inserted with its order), so a
publish lost with the process is queued again by reconcile, as one lost by an unreachable broker
is: handing it to a thread of this process changes when it happens, not whether.

One thread per process publishes them in order. ``settings.BOOKING_PUBLISH_AFTER_ANSWER`` False
publishes in the caller's thread (the tests do, so what a request queued is there when it returns;
``test_publish.py`` turns it on).
"""

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_pid: int | None = None  # a forked child (Celery's prefork) makes its own: threads do not fork


def soon(publish: Callable[..., object], *args) -> None:
    """``publish(*args)`` after this request's answer (or now, when the setting is off). ``publish``
    must handle its own failures (log them: reconcile queues the work again)."""
    if not settings.BOOKING_PUBLISH_AFTER_ANSWER:
        publish(*args)
        return
    _publisher().submit(publish, *args)


def _publisher() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    pid = os.getpid()
    if _pool is None or _pool_pid != pid:
        with _lock:
            if _pool is None or _pool_pid != pid:
                _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="publish")
                _pool_pid = pid
    return _pool


def wait() -> None:
    """Return once everything handed over so far is published (tests, a clean shutdown)."""
    if _pool is not None and _pool_pid == os.getpid():
        _pool.submit(lambda: None).result()
