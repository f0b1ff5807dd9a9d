"""Idempotency keys of the REST API's POSTs (``Idempotency-Key``): a retried request gets the
first answer again and changes nothing a second time.

The key is claimed before anything runs, by inserting ``{_id: "<token id>:<key>"}`` (collection
``api_idempotency``): the unique ``_id`` lets exactly one of two racing requests in. The winner
runs and stores its answer (status and body) on the claim; the other waits for that answer (up to
``WAIT_SECONDS``) and returns it, else answers 409 "still running". The same key with another
request (method, path or body differ) is refused: 422. A request that fails without an answer (a
crash, a 5xx) drops its claim, so the client may retry; a claim whose process died holds for
``LEASE_SECONDS`` and is then taken over. Keys are kept a day (TTL index on ``createdOn``).
"""

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from booking.core import clock, mongo

KEY_RE = re.compile(r"^[\x21-\x7e]{1,255}$")  # printable ASCII, no spaces (as Stripe's)
WAIT_SECONDS = 10.0
POLL_SECONDS = 0.05
LEASE_SECONDS = 60


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict | list | None
    replayed: bool = False


class KeyReused(Exception):
    """The key was used with another request."""


class StillRunning(Exception):
    """The first request with this key has not answered yet."""


def valid_key(key: str) -> bool:
    return bool(KEY_RE.match(key))


def fingerprint(method: str, path: str, body: bytes) -> str:
    return hashlib.sha256(method.encode() + b" " + path.encode("utf-8", "surrogatepass") + b"\n" + body).hexdigest()


def once(*, owner: str, key: str, request_fingerprint: str, run: Callable[[], Answer]) -> Answer:
    """The answer of the first request of ``owner`` with ``key``: ``run`` once, its answer kept."""
    claim_id = f"{owner}:{key}"
    now = clock.now()
    claim = {
        "_id": claim_id,
        "fingerprint": request_fingerprint,
        "state": "running",
        "until": now + timedelta(seconds=LEASE_SECONDS),
        "createdOn": now,
    }
    try:
        mongo.api_idempotency().insert_one(claim)
    except DuplicateKeyError:
        return _answer_of_first(owner, key, request_fingerprint, run)
    return _run_claimed(claim_id, run)


def _run_claimed(claim_id: str, run: Callable[[], Answer]) -> Answer:
    try:
        answer = run()
    except BaseException:
        mongo.api_idempotency().delete_one({"_id": claim_id, "state": "running"})
        raise
    if answer.status >= 500:
        mongo.api_idempotency().delete_one({"_id": claim_id, "state": "running"})
        return answer
    mongo.api_idempotency().update_one(
        {"_id": claim_id, "state": "running"},
        {"$set": {"state": "done", "status": answer.status, "body": answer.body}},
    )
    return answer


def _answer_of_first(owner: str, key: str, request_fingerprint: str, run: Callable[[], Answer]) -> Answer:
    claim_id = f"{owner}:{key}"
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        found = mongo.api_idempotency().find_one({"_id": claim_id})
        if found is None:  # the first one failed and dropped its claim: this one may go
            return once(owner=owner, key=key, request_fingerprint=request_fingerprint, run=run)
        if found["fingerprint"] != request_fingerprint:
            raise KeyReused
        if found["state"] == "done":
            return Answer(found["status"], found.get("body"), replayed=True)
        now = clock.now()
        if found["until"] <= now:  # its process died: take the claim over
            taken = mongo.api_idempotency().find_one_and_update(
                {"_id": claim_id, "state": "running", "until": found["until"]},
                {"$set": {"until": now + timedelta(seconds=LEASE_SECONDS)}},
                return_document=ReturnDocument.AFTER,
            )
            if taken is not None:
                return _run_claimed(claim_id, run)
            continue
        if time.monotonic() >= deadline:
            raise StillRunning
        time.sleep(POLL_SECONDS)
