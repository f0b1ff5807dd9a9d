"""Live seat maps pushed from one MongoDB change stream per web process (docs/architecture.md,
"Live updates").

``hub()`` is this process's ``Hub``. It is started by the first viewer that subscribes (so a process
that serves no live map, e.g. the Celery worker, never opens a stream) and keeps one change stream
on the database in a thread of its own, filtered on the server (``$match``) to the ``sessions``
collection's updates that bump a session's ``version`` (every seat change does) and its
deletes/replaces. (On the database, not the collection: a collection's stream ends for good when the
collection is dropped, a database's goes on.) Each change is turned into a small message (the new
version, the cells that changed and their states, seats available) from the event's
``updateDescription`` alone: no ``fullDocument``, no read per change.

The fan-out does the per-change work once, not per viewer: the message is encoded as one SSE event
(bytes) in the stream's thread, handed to each event loop that has viewers of that session
(``loop.call_soon_threadsafe``, once per loop and change), and appended there to every viewer's
pending list, which wakes the viewer's response to write it. Nothing waits for a viewer: a viewer
that does not read (a slow phone, a stalled connection) only lets its own list grow, up to
``QUEUE_SIZE`` events; then its list is replaced by one ``reload`` event (fetch the map once), so a
slow viewer costs bounded memory and never delays the others. A viewer that is behind gets all it
missed in one write. Heartbeats are one timer per event loop for all its viewers. An idle viewer
costs a list, an ``asyncio.Event`` and no MongoDB read.

A broken stream is reopened from its last resume token (nothing missed); when the server cannot
resume from it (history lost, token invalid) the stream starts afresh and every viewer is told to
fetch its map once (``reload``). When the server refuses change streams (a standalone MongoDB:
40573, or 76/20 from servers without replication), the hub says so (``available()`` is False) and
the pages keep polling; it asks again after ``RETRY_UNAVAILABLE_SECONDS``.
"""

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC

from bson import ObjectId
from pymongo.errors import OperationFailure, PyMongoError

from booking.core import mongo

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 20  # an SSE comment this often keeps proxies and load balancers from closing an idle stream
AWAIT_MS = 1000  # getMore waits this long on the server for changes
QUEUE_SIZE = 256  # per viewer; a viewer this far behind is told to fetch its map instead
RETRY_UNAVAILABLE_SECONDS = 60
# Server errors meaning "this server keeps no change streams": a standalone (40573), no
# replication (76), "only supported on replica sets" (20 from some versions), not a member (13435).
UNSUPPORTED = {40573, 76, 20, 13435}
# The stream cannot go on from its token: history lost (286), bad/unknown token (260, 280).
CANNOT_RESUME = {286, 260, 280}

# Fields of a session whose change the pushed message describes; the rest (reservations) are
# ignored, and any other field (layout, prices, status, ...) makes the viewers fetch the map.
IGNORED_PREFIXES = ("reservations",)

PIPELINE = [
    {
        "$match": {
            "ns.coll": "sessions",
            "$or": [
                {"operationType": "update", "updateDescription.updatedFields.version": {"$exists": True}},
                {"operationType": {"$in": ["replace", "delete"]}},
            ],
        }
    },
    {"$project": {"operationType": 1, "documentKey": 1, "updateDescription": 1, "wallTime": 1}},
]

STARTING, LIVE, UNAVAILABLE, RECONNECTING = "starting", "live", "unavailable", "reconnecting"


def message_from_change(change: dict) -> tuple[ObjectId, dict] | None:
    """(session id, message) for one change event, or None when it is not about a session's map.

    The message: ``{"v": version, "seats": {"r:c": state}, "avail": n}``; ``"reload": True`` when
    the change is more than seat states (the viewer fetches its map once)."""
    key = change.get("documentKey") or {}
    sid = key.get("_id")
    if sid is None:
        return None
    if change.get("operationType") != "update":
        return sid, {"v": None, "reload": True}
    fields = (change.get("updateDescription") or {}).get("updatedFields") or {}
    removed = (change.get("updateDescription") or {}).get("removedFields") or []
    message: dict = {"v": fields.get("version"), "seats": {}}
    reload = any(not name.startswith(IGNORED_PREFIXES) for name in removed)
    for name, value in fields.items():
        if name == "version" or name.startswith(IGNORED_PREFIXES):
            continue
        if name == "seatsAvailable":
            message["avail"] = value
            continue
        parts = name.split(".")
        if parts[0] == "seats" and len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            message["seats"][f"{parts[1]}:{parts[2]}"] = value
        elif parts[0] == "seats" and len(parts) == 2 and parts[1].isdigit() and isinstance(value, list):
            for c, state in enumerate(value):  # a whole row rewritten
                message["seats"][f"{parts[1]}:{c}"] = state
        else:
            reload = True  # the grid, layout, prices, status...: more than seat states
    if reload:
        message = {"v": message["v"], "reload": True}
    return sid, message


def sse_event(name: str, data: dict) -> bytes:
    """One Server-Sent Event, encoded once and written as is to every viewer."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


RELOAD = sse_event("seats", {"v": None, "reload": True})
HEARTBEAT = b": \n\n"  # an SSE comment: ignored by EventSource, keeps the connection in use


@dataclass(eq=False)
class Subscriber:
    """One viewer: the encoded events waiting to be written to it, in its event loop."""

    session_id: ObjectId
    loop: asyncio.AbstractEventLoop
    pending: list[bytes] = field(default_factory=list)
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    overflows: int = 0  # times it fell QUEUE_SIZE events behind and was told to reload

    def put(self, event: bytes) -> None:  # in the subscriber's loop; never waits
        if len(self.pending) >= QUEUE_SIZE:
            self.pending[:] = [RELOAD]  # what it missed is replaced by "fetch the map once"
            self.overflows += 1
        else:
            self.pending.append(event)
        self.wakeup.set()

    async def take(self) -> bytes:
        """Everything waiting, as one write (waits for the next event when nothing is)."""
        while not self.pending:
            self.wakeup.clear()
            await self.wakeup.wait()
        chunk = b"".join(self.pending) if len(self.pending) > 1 else self.pending[0]
        self.pending.clear()
        return chunk


class Hub:
    def __init__(self, db=None):
        self._db = db  # default: booking.core.mongo.get_db() (per process, fork-safe)
        self._lock = threading.Lock()
        # session -> event loop -> its viewers there (a loop's sets change only in that loop)
        self._subs: dict[ObjectId, dict[asyncio.AbstractEventLoop, set[Subscriber]]] = {}
        self._beating: set[asyncio.AbstractEventLoop] = set()  # loops with a heartbeat timer
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._state_changed = threading.Condition(self._lock)
        self.state = STARTING
        self.unavailable_since = 0.0
        self.known: dict[ObjectId, int] = {}  # last version seen per session (events, or one read)
        self.stats = {"events": 0, "messages": 0, "resumes": 0, "restarts": 0, "opened": 0}
        self.resume_token = None
        self.stream = None  # the open ChangeStream (tests break it)
        # bench/asgi.py: trace(stage, session id, version, wall time) when the server logged a
        # change ("logged"), when it arrived here ("received"), when its fan-out began ("fanout")
        self.trace: Callable[[str, ObjectId, int | None, float], None] | None = None

    # --- viewers (in their event loop) ---

    def subscribe(self, session_id: ObjectId) -> Subscriber:
        loop = asyncio.get_running_loop()
        sub = Subscriber(session_id, loop)
        with self._lock:
            self._subs.setdefault(session_id, {}).setdefault(loop, set()).add(sub)
            beating = loop in self._beating
            self._beating.add(loop)
        if not beating:
            loop.call_later(HEARTBEAT_SECONDS, self._heartbeat, loop)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        with self._lock:
            loops = self._subs.get(sub.session_id)
            if loops is None:
                return
            subs = loops.get(sub.loop)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del loops[sub.loop]
            if not loops:
                del self._subs[sub.session_id]

    def viewers(self, session_id: ObjectId | None = None) -> int:
        with self._lock:
            if session_id is not None:
                return sum(len(s) for s in self._subs.get(session_id, {}).values())
            return sum(len(s) for loops in self._subs.values() for s in loops.values())

    def _heartbeat(self, loop: asyncio.AbstractEventLoop) -> None:
        """One timer per event loop: a comment to each of its viewers, then again in a while."""
        with self._lock:
            subs = [sub for loops in self._subs.values() for sub in loops.get(loop, ())]
            if not subs:
                self._beating.discard(loop)
                return
        for sub in subs:
            if not sub.pending:
                sub.put(HEARTBEAT)
        loop.call_later(HEARTBEAT_SECONDS, self._heartbeat, loop)

    def available(self, wait: float = 2.0) -> bool:
        """Start the stream if needed; True once it is open, False when the server refuses one
        (or it did not open within ``wait`` seconds)."""
        self.start()
        deadline = time.monotonic() + wait
        with self._lock:
            while self.state == STARTING:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._state_changed.wait(left)
            if self.state == UNAVAILABLE and time.monotonic() - self.unavailable_since > RETRY_UNAVAILABLE_SECONDS:
                self.state = STARTING  # ask the server again (the thread is waiting for this)
                self._state_changed.notify_all()
            return self.state in (LIVE, RECONNECTING)

    # --- the stream (its own thread) ---

    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="seatmap-change-stream", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5) -> None:
        self._stop.set()
        stream = self.stream
        if stream is not None:
            try:
                stream.close()
            except Exception as exc:  # noqa: BLE001 - closing a broken stream may fail; we stop anyway
                log.debug("closing the change stream: %s", exc)
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        self._thread = None
        with self._lock:
            self.state = STARTING

    def _set_state(self, state: str) -> None:
        with self._lock:
            self.state = state
            if state == UNAVAILABLE:
                self.unavailable_since = time.monotonic()
            self._state_changed.notify_all()

    def _database(self):
        return self._db if self._db is not None else mongo.get_db()

    def _run(self) -> None:
        backoff = 0.2
        while not self._stop.is_set():
            try:
                with self._database().watch(
                    PIPELINE, start_after=self.resume_token, max_await_time_ms=AWAIT_MS
                ) as stream:
                    self.stream = stream
                    self.stats["opened"] += 1
                    self._set_state(LIVE)
                    backoff = 0.2
                    while not self._stop.is_set() and stream.alive:
                        change = stream.try_next()
                        if change is not None:
                            self._publish(change)
                        self.resume_token = stream.resume_token
            except OperationFailure as exc:
                if self._stop.is_set():
                    break
                if exc.code in UNSUPPORTED:
                    log.warning("change streams refused (%s): live maps fall back to polling", exc.code)
                    self._set_state(UNAVAILABLE)
                    self._wait_while_unavailable()
                    continue
                if exc.code in CANNOT_RESUME:
                    log.warning("change stream cannot resume (%s): starting afresh, viewers reload", exc.code)
                    self._restart_fresh()
                    continue
                log.warning("change stream failed (%s); reopening from its token", exc)
                self._reconnecting(backoff)
                backoff = min(backoff * 2, 5)
            except PyMongoError as exc:
                if self._stop.is_set():
                    break
                log.warning("change stream broke (%s); reopening from its token", exc)
                self._reconnecting(backoff)
                backoff = min(backoff * 2, 5)
            except Exception:  # noqa: BLE001 - the thread must not die: every viewer depends on it
                if self._stop.is_set():
                    break
                log.exception("change stream thread error; reopening from its token")
                self._reconnecting(backoff)
                backoff = min(backoff * 2, 5)
            finally:
                self.stream = None

    def _reconnecting(self, delay: float) -> None:
        self.stats["resumes"] += 1
        with self._lock:
            if self.state == LIVE:
                self.state = RECONNECTING
        self._stop.wait(delay)

    def _restart_fresh(self) -> None:
        self.stats["restarts"] += 1
        self.resume_token = None
        self.known.clear()
        with self._lock:
            sessions = list(self._subs)
        for sid in sessions:
            self._deliver(sid, None, RELOAD)

    def _wait_while_unavailable(self) -> None:
        with self._lock:
            while self.state == UNAVAILABLE and not self._stop.is_set():
                self._state_changed.wait(1)

    def _publish(self, change: dict) -> None:
        self.stats["events"] += 1
        found = message_from_change(change)
        if found is None:
            return
        sid, message = found
        version = message.get("v")
        if self.trace is not None:
            now = time.time()
            self.trace("received", sid, version, now)
            wall = change.get("wallTime")  # when the server logged the write (ms)
            self.trace("logged", sid, version, wall.replace(tzinfo=UTC).timestamp() if wall else now)
        if version is not None:
            self.known[sid] = max(self.known.get(sid, 0), version)
        else:
            self.known.pop(sid, None)
        self._deliver(sid, version, sse_event("seats", message))

    def _deliver(self, sid: ObjectId, version: int | None, event: bytes) -> None:
        """Hand one encoded event to each event loop with viewers of the session (in the stream's
        thread: nothing here touches a viewer)."""
        with self._lock:
            loops = list(self._subs.get(sid, {}))
        for loop in loops:
            try:
                loop.call_soon_threadsafe(self._fan_out, loop, sid, version, event)
            except RuntimeError:  # that loop is closed: its viewers are gone
                with self._lock:
                    self._beating.discard(loop)
                    loops_now = self._subs.get(sid)
                    if loops_now is not None:
                        loops_now.pop(loop, None)
                        if not loops_now:
                            del self._subs[sid]

    def _fan_out(self, loop: asyncio.AbstractEventLoop, sid: ObjectId, version: int | None, event: bytes) -> None:
        """In the viewers' loop: the event on every viewer's list (no await, no copy per viewer)."""
        if self.trace is not None:
            self.trace("fanout", sid, version, time.time())
        with self._lock:
            subs = tuple(self._subs.get(sid, {}).get(loop, ()))
        self.stats["messages"] += len(subs)
        for sub in subs:
            sub.put(event)


_hub: Hub | None = None
_hub_lock = threading.Lock()


def hub() -> Hub:
    """This process's hub (one change stream per process, started by its first viewer)."""
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = Hub()
        return _hub


def reset_hub() -> None:
    """Stop and forget this process's hub (tests; a forked child must not use the parent's)."""
    global _hub
    with _hub_lock:
        old, _hub = _hub, None
    if old is not None:
        old.stop()


def _forget_after_fork() -> None:
    global _hub
    _hub = None  # the parent's stream thread does not exist here; the first viewer starts one


import os  # noqa: E402 - kept beside its one use

os.register_at_fork(after_in_child=_forget_after_fork)
