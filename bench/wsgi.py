"""gunicorn entry point for the benchmark: the app's WSGI application, wrapped.

Every response gets ``X-Server-Time-Us`` (microseconds inside Django). In a process started with
BOOKING_MONGO_MONITOR=1 (bench/stack.py's accounting server), a request carrying
``X-Bench-Account: 1`` is also counted by the MongoDB command monitor and answered with
``X-Mongo-Commands`` (count), ``X-Mongo-Writes``, ``X-Mongo-Bytes-Out``, ``X-Mongo-Bytes-In`` and
``X-Mongo-Command-List``. Without the monitor those headers are left out, not sent as zeros, so an
accounting request sent to the timed server fails loudly (bench/run.py's ``account``) instead of
reporting no commands.

With BENCH_READY_DIR set, each worker leaves a file named by its pid there once the app is loaded:
bench/stack.py waits for all of them before anything is timed.
"""

import os
import time
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from django.core.wsgi import get_wsgi_application  # noqa: E402

from booking.core.command_monitor import enabled as monitor_enabled  # noqa: E402
from booking.core.command_monitor import monitor  # noqa: E402

django_application = get_wsgi_application()
MONITORED = monitor_enabled()

if os.environ.get("BENCH_READY_DIR"):
    Path(os.environ["BENCH_READY_DIR"], str(os.getpid())).touch()


def application(environ, start_response):
    account = MONITORED and environ.get("HTTP_X_BENCH_ACCOUNT") == "1"
    if account:
        monitor.begin()
    started = time.perf_counter_ns()

    def start(status, headers, exc_info=None):
        headers = list(headers)
        headers.append(("X-Server-Time-Us", str((time.perf_counter_ns() - started) // 1000)))
        if account:
            tally = monitor.end()
            if tally is not None:
                headers += [
                    ("X-Mongo-Commands", str(len(tally.commands))),
                    ("X-Mongo-Writes", str(tally.writes)),
                    ("X-Mongo-Bytes-Out", str(tally.bytes_out)),
                    ("X-Mongo-Bytes-In", str(tally.bytes_in)),
                    ("X-Mongo-Command-List", ", ".join(tally.commands)),
                ]
        return start_response(status, headers, exc_info)

    return django_application(environ, start)
