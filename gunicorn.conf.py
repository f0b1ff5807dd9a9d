"""gunicorn's settings file: gunicorn reads ./gunicorn.conf.py by default, so every gunicorn this
project starts from its top folder (Procfile, Dockerfile, the benchmark, chaos, tests) runs these
hooks; options given on the command line still apply."""

import gc

# A worker that has not told the master it is alive for this long is killed, with every stream it
# holds. uvicorn tells it from its event loop every timeout/2 seconds, so with the default 30 s an
# event loop slowed for 15 s by a saturated on-sale rush cost every waiting page its stream; a
# worker that is truly stuck is still replaced within two minutes.
timeout = 120


def post_worker_init(worker):
    """Freeze what the worker has loaded (Django, the app and everything they import), so Python's
    full garbage collections never walk it again. Each full collection holds the GIL over every
    tracked object: in a benchmark worker they took 110-340 ms, a stall of all its threads' requests
    (docs/performance.md). What requests allocate later is collected as before."""
    from django.apps import apps
    from django.urls import get_resolver

    if apps.ready:  # a Django application (every one this project serves)
        get_resolver().url_patterns  # noqa: B018 - imports every view module now, not in the first requests
        gc.collect()
        gc.freeze()
