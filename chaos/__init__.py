"""The chaos harness: the real stack on loopback, a rush of simulated buyers, faults, then proof.

``python -m chaos --size ci`` (or ``make chaos-ci``) runs it small; ``make chaos`` at full size;
``--control`` weakens the hold's conditional filter and expects the harness to catch double
selling. See docs/reliability.md.

- ``stack``: starts and kills the processes (MongoDB stand-in, Redis, gunicorn, Celery).
- ``buyers``: simulated buyers over HTTP (httpx + asyncio), each with its own cookie jar.
- ``faults``: the fault schedule (kill -9 web and worker processes, Redis down, MongoDB restart).
- ``verify``: the final checks after one reconcile pass.
"""
