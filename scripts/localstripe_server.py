"""localstripe (a fake Stripe server, PyPI ``localstripe``) that honours idempotency keys as
Stripe does. Development (``scripts/run.sh``) and the tests start it instead of the plain
``localstripe`` command; the arguments are the same (``--port N``, ``--from-scratch``).

localstripe itself ignores the ``Idempotency-Key`` header, so a retried POST (the ``stripe``
library retries a request whose answer was lost, with the same key) would make a second
PaymentIntent or refund where Stripe would not. One aiohttp middleware, put in front of
localstripe's own, does what Stripe documents
(https://docs.stripe.com/api/idempotent_requests):

- the first answer to a POST with a key is kept (per API key and idempotency key) and given
  again, unchanged, to every later POST with that key (with ``Idempotent-Replayed: true``);
  declines (4xx) are kept too, and so are 5xx answers ("including 500 errors": Stripe keeps
  whatever its endpoint answered once it began to run);
- the same key with other parameters (another path or body) is refused: 400 ``idempotency_error``;
- the same key while its first request is still running: 409 ``idempotency_key_in_use`` (the
  ``stripe`` library retries that).

Keys are kept in memory for the life of the process (Stripe: 24 hours); ``DELETE /_config/data``
(localstripe's flush) forgets them. For tests, ``GET /_config/requests`` lists every POST the
server received under ``/v1/``: its path, its ``Idempotency-Key`` and whether it was replayed, and
``POST /_config/idempotency`` with ``{"honour": false}`` makes it ignore the keys again as plain
localstripe does (``true``: back to Stripe's way), so a test can show that our own guards alone
never charge or refund twice. ``POST /_config/fail_next`` with ``{"path": "/v1/refunds",
"times": 1}`` makes the next POSTs to that path answer 500 from inside the endpoint, without doing
anything (an outage at Stripe after the request was taken in): kept under their keys as above.

Where it keeps its objects: localstripe itself pickles its whole store to one fixed file,
``/tmp/localstripe.pickle``, on every write, for every instance on the machine (the tests start
one per worker): instances overwrote each other's file, and one killed while writing left a
truncated file that every later start without ``--from-scratch`` died on (the dev stack with it).
Here the store is kept in memory unless ``--data PATH`` names a file (``run.sh``: ``.run/``),
written whole to a temporary file and renamed over it; a file that cannot be read is set aside
(``PATH.unreadable``) and the server starts empty, saying so.
"""

import asyncio
import hashlib
import logging
import os
import pickle
import sys
from collections import deque

from aiohttp import web
from localstripe import resources, server

Scope = tuple[str, str]  # (Authorization header: the API key, Idempotency-Key)

_answers: dict[Scope, tuple[str, int, bytes, str]] = {}  # -> (fingerprint, status, body, content type)
_running: set[Scope] = set()
_requests: deque[dict] = deque(maxlen=100_000)  # what tests ask about; bounded for a long dev run
_lock = asyncio.Lock()
_honour_keys = [True]  # POST /_config/idempotency {"honour": false}: plain localstripe's way
_fail_next: dict[str, int] = {}  # path -> how many more POSTs to it answer 500 (POST /_config/fail_next)


def _error(status: int, kind: str, message: str) -> web.Response:
    return server.json_response({"error": {"type": kind, "message": message}}, status=status)


@web.middleware
async def idempotency_middleware(request: web.Request, handler):
    if request.method == "DELETE" and request.path == "/_config/data":
        _answers.clear()
        _requests.clear()
        _fail_next.clear()
        return await handler(request)
    if request.method != "POST" or not request.path.startswith("/v1/"):
        return await handler(request)
    key = request.headers.get("Idempotency-Key")
    seen = {"path": request.path, "key": key, "replayed": False}
    _requests.append(seen)
    if not key or not _honour_keys[0]:
        return await _failing_or(handler, request)
    scope = (request.headers.get("Authorization", ""), key)
    fingerprint = hashlib.sha256(request.path.encode() + b"\0" + await request.read()).hexdigest()
    async with _lock:
        first = _answers.get(scope)
        if first is None and scope in _running:
            return _error(
                409,
                "idempotency_error",
                f"There is currently another in-progress request using this Idempotency Key: {key}",
            )
        if first is None:
            _running.add(scope)
    if first is not None:
        if first[0] != fingerprint:
            return _error(
                400,
                "idempotency_error",
                f"Keys for idempotent requests can only be used with the same parameters they were first used with: "
                f"{key}",
            )
        seen["replayed"] = True
        response = web.Response(status=first[1], body=first[2], content_type=first[3])
        response.headers["Idempotent-Replayed"] = "true"
        response.headers["Idempotency-Key"] = key
        return response
    try:
        response = await _failing_or(handler, request)
        _answers[scope] = (fingerprint, response.status, bytes(response.body or b""), response.content_type)
        return response
    finally:
        _running.discard(scope)


async def _failing_or(handler, request: web.Request) -> web.Response:
    """The endpoint's answer, or a 500 while a test asked for failures on this path."""
    if _fail_next.get(request.path, 0) > 0:
        _fail_next[request.path] -= 1
        return _error(500, "api_error", "An unknown error occurred (failure asked for by /_config/fail_next).")
    return await handler(request)


async def fail_next(request: web.Request) -> web.Response:
    asked = await request.json()
    _fail_next[str(asked["path"])] = int(asked.get("times", 1))
    return server.json_response({"path": asked["path"], "times": _fail_next[str(asked["path"])]})


async def requests_received(request: web.Request) -> web.Response:
    return server.json_response(list(_requests))


async def honour_keys(request: web.Request) -> web.Response:
    _honour_keys[0] = bool((await request.json()).get("honour", True))
    return server.json_response({"honour": _honour_keys[0]})


def keep_store_at(path: str | None) -> None:
    """The store on disk at ``path`` only (None: in memory), written atomically."""

    def load(store) -> None:
        if path is None:
            return
        try:
            with open(path, "rb") as f:
                old = pickle.load(f)  # noqa: S301 - the dev stack's own file, written by dump() below
        except FileNotFoundError:
            return
        except Exception as exc:  # noqa: BLE001 - any unreadable file: start empty, keep it for a look
            os.replace(path, path + ".unreadable")
            logging.warning("localstripe: %s could not be read (%s): starting empty", path, exc)
            return
        store.clear()
        store.update(old)

    def dump(store) -> None:
        if path is None:
            return
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "wb") as f:
            pickle.dump(dict(store), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)

    resources.Store.try_load_from_disk = load
    resources.Store.dump_to_disk = dump


def take_data_option(argv: list[str]) -> str | None:
    """``--data PATH`` out of ``argv`` (localstripe parses the rest)."""
    if "--data" not in argv:
        return None
    at = argv.index("--data")
    path = argv[at + 1]
    del argv[at : at + 2]
    return path


def main() -> None:
    keep_store_at(take_data_option(sys.argv))
    server.app.middlewares.insert(0, idempotency_middleware)  # outermost: it sees declines as answers
    server.app.router.add_get("/_config/requests", requests_received)
    server.app.router.add_post("/_config/idempotency", honour_keys)
    server.app.router.add_post("/_config/fail_next", fail_next)
    server.start()  # localstripe's own argument parsing and server


if __name__ == "__main__":
    main()
