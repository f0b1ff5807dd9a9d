"""gunicorn entry point for the benchmark: the app's WSGI application, wrapped.

Every response gets ``X-Server-Time-Us`` (microseconds inside Django). A request carrying
``X-Bench-Account: 1`` is also counted by the MongoDB command monitor (the process must run with
BOOKING_MONGO_MONITOR=1) and answered with ``X-Mongo-Commands`` (count), ``X-Mongo-Writes``,
``X-Mongo-Bytes-Out``, ``X-Mongo-Bytes-In`` and ``X-Mongo-Command-List``. Timed requests do not
carry the header, so encoding sizes never slows them down.
"""

import os
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from django.core.wsgi import get_wsgi_application  # noqa: E402

from booking.command_monitor import monitor  # noqa: E402

django_application = get_wsgi_application()


def application(environ, start_response):
    account = environ.get("HTTP_X_BENCH_ACCOUNT") == "1"
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
