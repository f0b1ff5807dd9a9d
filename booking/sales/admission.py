"""Admission to a queued sale: the signed token a buyer gets when the waiting room lets them in,
and the gate the hold service keeps with it.

A session (or every section of a performance) marked "high demand" carries
``waitingRoom: {queueId, ...}`` (``sales/waiting_room.py``). Seats of such a session are held
only for a buyer who presents a valid admission for that queue:

- The token is ``<queue id>|<owner digest>|<expiry ms>`` signed with SECRET_KEY (Django's
  ``Signer``, salted for this use). It is bound to the buyer's owner token (the signed ``buyer``
  cookie, ``booking/web/buyer.py``) through a digest of it, to the queue, and it expires
  ``BOOKING_QUEUE_ADMISSION_SECONDS`` after the admission (the time the waiting room admitted the
  buyer, not the time the token was written). Checking it needs no Redis and no database.
- The web layer verifies the tokens a request brings (``verified_queues``) and hands the verified
  queue ids to the hold service (``holds.HoldContext.admitted_queues``). The hold's
  conditional write requires ``waitingRoom.queueId`` to be absent or one of them
  (``hold_clause``), so a session put in a queue a moment ago is guarded by the same atomic write
  that takes the seats; a write that misses reads the session and ``check`` says why.
"""

import hashlib

from bson import ObjectId
from django.conf import settings
from django.core import signing
from django.urls import reverse
from django.utils.translation import gettext

from booking.core import clock
from booking.core.domain import Session
from booking.core.errors import BookingError

SALT = "booking.waiting_room.admission"
COOKIE_PREFIX = "wr_"  # one cookie per queue: wr_<queue id>


class AdmissionRequired(BookingError):
    """Seats of a queued sale were asked for without a valid admission."""

    code = "admission_required"

    def __init__(self, queue_id: ObjectId):
        super().__init__(
            gettext(
                "Seats for this performance are sold through a waiting room. "
                "Please wait for your turn there (your admission is missing or has ended)."
            ),
            queue_id=queue_id,
        )
        self.queue_id = queue_id

    @property
    def queue_url(self) -> str:
        return reverse("booking:queue", args=[str(self.queue_id)])


def owner_digest(owner: str) -> str:
    return hashlib.sha256(owner.encode()).hexdigest()[:20]


def _signer() -> signing.Signer:
    return signing.Signer(salt=SALT)


def issue(queue_id: ObjectId, owner: str, admitted_at_ms: int, seconds: int | None = None) -> str:
    """The admission token of ``owner`` for ``queue_id``, valid ``seconds`` after the admission."""
    seconds = settings.BOOKING_QUEUE_ADMISSION_SECONDS if seconds is None else seconds
    expires_ms = int(admitted_at_ms) + int(seconds) * 1000
    return _signer().sign(f"{queue_id}|{owner_digest(owner)}|{expires_ms}")


def expiry_ms(token: str) -> int | None:
    """When a (validly signed) token ends, in ms since the epoch; None when it is not ours."""
    try:
        _queue, _digest, expires = _signer().unsign(token).split("|")
        return int(expires)
    except (signing.BadSignature, ValueError):
        return None


def verify(token: str | None, queue_id: ObjectId, owner: str | None, now_ms: int | None = None) -> bool:
    """True when ``token`` admits ``owner`` to ``queue_id`` now: our signature, this queue, this
    buyer, not expired. Anything else (forged, another buyer's, another queue's, expired,
    malformed) is False."""
    if not token or not owner or not isinstance(token, str) or len(token) > 200:
        return False
    try:
        queue, digest, expires = _signer().unsign(token).split("|")
        expires_ms = int(expires)
    except (signing.BadSignature, ValueError):
        return False
    now_ms = clock_ms() if now_ms is None else now_ms
    return queue == str(queue_id) and digest == owner_digest(owner) and now_ms < expires_ms


def clock_ms() -> int:
    return int(clock.now().timestamp() * 1000)


def cookie_name(queue_id) -> str:
    return f"{COOKIE_PREFIX}{queue_id}"


def tokens_in(cookies) -> dict[ObjectId, str]:
    """The admission tokens among a request's cookies, by queue id (unverified)."""
    found = {}
    for name, value in cookies.items():
        if name.startswith(COOKIE_PREFIX) and ObjectId.is_valid(name[len(COOKIE_PREFIX) :]):
            found[ObjectId(name[len(COOKIE_PREFIX) :])] = value
    return found


def verified_queues(owner: str | None, tokens: dict[ObjectId, str], now_ms: int | None = None) -> frozenset[ObjectId]:
    """The queues these tokens admit ``owner`` to (each verified: signature, queue, buyer, expiry)."""
    if not owner:
        return frozenset()
    return frozenset(qid for qid, token in tokens.items() if verify(token, qid, owner, now_ms))


def hold_clause(*, admitted: frozenset[ObjectId]) -> dict:
    """The hold write's filter clause (one entry of its ``$and``): the session is in no queue, or
    in one this buyer was admitted to. Written as ``$exists`` (and ``$or`` only for a buyer with an admission) rather
    than ``$in: [null, ...]``: the stand-in's compiled matcher takes these, a null operand would
    send every hold's filter to its slow path (devmongo/matching.py)."""
    absent = {"waitingRoom.queueId": {"$exists": False}}
    if not admitted:
        return absent
    return {"$or": [absent, {"waitingRoom.queueId": {"$in": sorted(admitted)}}]}


def check(session: Session, *, admitted: frozenset[ObjectId]) -> None:
    """Raise AdmissionRequired when ``session`` (as read) is queued and ``admitted`` (the buyer's
    verified admissions) does not name its queue."""
    room = session.get("waitingRoom")
    queue_id = room.get("queueId") if isinstance(room, dict) else None
    if queue_id is not None and queue_id not in admitted:
        raise AdmissionRequired(queue_id)
