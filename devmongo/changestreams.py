"""Change streams (replica-set mode): ``aggregate`` with ``$changeStream`` and the ``getMore``s
that wait for events.

A stream reads the change log (``oplog.py``) from a position (a cluster-time key, exclusive):
events of its namespace (a collection, a database, or with ``allChangesForCluster`` every
database), through the stages after ``$changeStream`` (``$match`` by devmongo's matcher, the
others by mongomock). A collection stream ends with an ``invalidate`` event after its collection
is dropped or renamed, a database stream after its database is dropped.

Resume tokens are ``{_data: "82" + 16 hex digits of the cluster time + 2 of a kind}``: an event,
an ``invalidate``, or a high-water mark (``postBatchResumeToken``). Resuming from a point older
than the log's complete history fails with ChangeStreamHistoryLost (286); from an event token the
log does not hold, with ChangeStreamFatalError (280). Events are never skipped silently.
"""

import time

from bson.int64 import Int64
from bson.timestamp import Timestamp

from .cursors import batch_size as parse_batch_size
from .cursors import new_cursor_id
from .errors import MongoError
from .expressions import process_pipeline
from .keys import encode, id_key
from .limits import MAX_BSON_SIZE
from .matching import matcher
from .oplog import ChangeLog, key_ts, ts_key
from .update import clone

EVENT, INVALIDATE, HIGH_WATER_MARK = 0, 1, 2
_NO, _YES, _INVALIDATES = 0, 1, 2
_DEFAULT_AWAIT = 1.0  # seconds a getMore waits for events without maxTimeMS, as MongoDB
_STAGES = frozenset({"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$redact"})
_SPEC_FIELDS = frozenset(
    {
        "fullDocument",
        "fullDocumentBeforeChange",
        "resumeAfter",
        "startAfter",
        "startAtOperationTime",
        "allChangesForCluster",
        "showExpandedEvents",
    }
)
_INTERNAL_DBS = ("admin", "config", "local")


# --------------------------------------------------------------------------- resume tokens


def make_token(key, kind=EVENT):
    return {"_data": f"82{key:016X}{kind:02X}"}


def parse_token(token):
    """(cluster-time key, kind) of a resume token."""
    if not isinstance(token, dict) or not isinstance(token.get("_data"), str):
        raise MongoError(40647, "The change stream resume token has a missing or wrong-typed _data field.")
    data = token["_data"]
    try:
        if len(data) != 20 or not data.startswith("82"):
            raise ValueError(data)
        key, kind = int(data[2:18], 16), int(data[18:], 16)
    except ValueError:
        raise MongoError(260, f"Invalid resume token: {data!r} is not a resume token of this server") from None
    if kind not in (EVENT, INVALIDATE, HIGH_WATER_MARK):
        raise MongoError(260, f"Invalid resume token: {data!r}")
    return key, kind


def _history_lost():
    return MongoError(
        286, "Resume of change stream was not possible, as the resume point may no longer be in the oplog."
    )


# --------------------------------------------------------------------------- the cursor


class ChangeStreamCursor:
    stream = True
    __slots__ = (
        "ns",
        "db",
        "coll",
        "stages",
        "lookup",
        "position",
        "invalidate_at",
        "closed",
        "last_used",
        "invalidated",
    )

    def __init__(self, ns, db, coll, stages, lookup, position):
        self.ns = ns
        self.db = db  # None: every database (allChangesForCluster)
        self.coll = coll  # None: a database or cluster stream
        self.stages = stages  # [(name, argument, compiled $match or None)]
        self.lookup = lookup  # fullDocument: updateLookup
        self.position = position  # events after this key are next
        self.invalidate_at = None  # resumed right after an invalidating event: its key
        self.invalidated = None  # key of the invalidate this stream ended with
        self.closed = False
        self.last_used = time.monotonic()

    def visibility(self, db, coll, op):
        if self.coll is not None:
            if db != self.db or coll != self.coll:
                return _NO
            return _INVALIDATES if op in ("drop", "rename") else _YES
        if self.db is not None:
            if db != self.db or (coll is not None and coll.startswith("system.")):
                return _NO
            return _INVALIDATES if op == "dropDatabase" else _YES
        if db in _INTERNAL_DBS or (coll is not None and coll.startswith("system.")):
            return _NO
        return _YES

    def post_batch_token(self):
        if self.invalidated is not None:
            return make_token(self.invalidated, INVALIDATE)
        return make_token(self.position, HIGH_WATER_MARK)

    def get_more(self, engine, cid, cmd):
        """A getMore: the events available now, or wait (without the global lock) up to
        ``maxTimeMS`` (default 1 s) for some."""
        limit = parse_batch_size(cmd) or None
        max_time = cmd.get("maxTimeMS")
        wait = _DEFAULT_AWAIT if max_time is None else max(0, max_time) / 1000.0
        deadline = time.monotonic() + wait
        log = engine.changes
        while True:
            with engine.lock:
                if engine.cursors.get(cid) is not self:
                    raise MongoError(43, f"cursor id {cid} not found")
                batch = next_batch(engine, self, limit)
                seen = log.last
                self.last_used = now = time.monotonic()
                if batch or self.closed or now >= deadline or log.stopping:
                    out_id = cid
                    if self.closed:
                        del engine.cursors[cid]
                        out_id = 0
                    return {
                        "cursor": {
                            "nextBatch": batch,
                            "postBatchResumeToken": self.post_batch_token(),
                            "id": Int64(out_id),
                            "ns": self.ns,
                        },
                        "ok": 1.0,
                    }
            log.wait(seen, deadline - now)


# --------------------------------------------------------------------------- opening a stream


def open_stream(engine, db, cmd, coll):
    """``aggregate`` whose first stage is ``$changeStream``. ``coll`` is the collection, or None
    for ``aggregate: 1``."""
    log = engine.changes
    if log is None:
        raise MongoError(40573, "The $changeStream stage is only supported on replica sets")
    pipeline = cmd["pipeline"]
    spec = pipeline[0]["$changeStream"]
    if not isinstance(spec, dict):
        raise MongoError(14, "$changeStream stage expects a document as argument")
    for field in spec:
        if field not in _SPEC_FIELDS:
            raise MongoError(40415, f"BSON field '$changeStream.{field}' is an unknown field.")
    cluster = bool(spec.get("allChangesForCluster"))
    if coll is None:
        if cluster and db != "admin":
            raise MongoError(
                72,
                "A $changeStream with 'allChangesForCluster:true' may only be "
                "opened on the 'admin' database, and with no collection name",
            )
        if db == "admin" and not cluster:
            raise MongoError(73, "$changeStream may not be opened on the internal admin database")
        ns = f"{db}.$cmd.aggregate"
    else:
        if cluster:
            raise MongoError(
                72,
                "A $changeStream with 'allChangesForCluster:true' may only be "
                "opened on the 'admin' database, and with no collection name",
            )
        if db in _INTERNAL_DBS:
            raise MongoError(73, f"$changeStream may not be opened on the internal {db} database")
        if coll.startswith("system."):
            raise MongoError(73, f"$changeStream may not be opened on the internal {db}.{coll} collection")
        ns = f"{db}.{coll}"
    lookup = _full_document_option(spec)
    stages = _parse_stages(pipeline[1:])
    cur = ChangeStreamCursor(ns, None if cluster else db, coll, stages, lookup, log.last)
    _resume_point(log, spec, cur)
    batch = next_batch(engine, cur, parse_batch_size(cmd.get("cursor")))
    cid = 0
    if not cur.closed:
        cid = new_cursor_id(engine)
        engine.cursors[cid] = cur
    return {
        "cursor": {"firstBatch": batch, "postBatchResumeToken": cur.post_batch_token(), "id": Int64(cid), "ns": ns},
        "ok": 1.0,
    }


def _full_document_option(spec):
    mode = spec.get("fullDocument", "default")
    if mode not in ("default", "updateLookup", "whenAvailable", "required"):
        raise MongoError(2, f"Enumeration value '{mode}' for field '$changeStream.fullDocument' is not a valid value.")
    if mode in ("whenAvailable", "required"):
        raise MongoError(115, f"devmongo does not support fullDocument: '{mode}' (no post-images)")
    before = spec.get("fullDocumentBeforeChange", "off")
    if before not in ("off", "whenAvailable", "required"):
        raise MongoError(
            2, f"Enumeration value '{before}' for field '$changeStream.fullDocumentBeforeChange' is not a valid value."
        )
    if before != "off":
        raise MongoError(115, "devmongo does not support fullDocumentBeforeChange (no pre-images)")
    if spec.get("showExpandedEvents"):
        raise MongoError(115, "devmongo does not support showExpandedEvents")
    return mode == "updateLookup"


def _parse_stages(stages):
    out = []
    for stage in stages:
        if not isinstance(stage, dict) or len(stage) != 1:
            raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
        ((name, arg),) = stage.items()
        if name == "$changeStream":
            raise MongoError(40602, "$changeStream is only valid as the first stage in a pipeline")
        if name not in _STAGES:
            raise MongoError(20, f"{name} is not permitted in a $changeStream pipeline")
        if name == "$match":
            if not isinstance(arg, dict):
                raise MongoError(15959, "the match filter must be an expression in an object")
            applies = matcher(arg)
            applies({})  # unknown operators fail now, as MongoDB fails the aggregate
            out.append((name, arg, applies))
        else:
            out.append((name, arg, None))
    return out


def _resume_point(log, spec, cur):
    resume_after = spec.get("resumeAfter")
    start_after = spec.get("startAfter")
    at = spec.get("startAtOperationTime")
    if resume_after is not None and start_after is not None:
        raise MongoError(50865, "Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage")
    token = resume_after if resume_after is not None else start_after
    if token is not None:
        if at is not None:
            raise MongoError(40674, "Only one type of resume option is allowed, but multiple were found")
        key, kind = parse_token(token)
        if kind == INVALIDATE and resume_after is not None:
            raise MongoError(
                260,
                "Attempting to resume a change stream using 'resumeAfter' is "
                "not allowed from an invalidate notification",
            )
        if log.lost(key):
            raise _history_lost()
        if kind == EVENT and key > log.complete_from:
            entry = log.entry(key)
            if entry is None:
                raise MongoError(280, f"cannot resume stream; the resume token was not found. {token}")
            if cur.visibility(entry[1], entry[2], entry[3]) == _INVALIDATES:
                cur.invalidate_at = key
        cur.position = key
    elif at is not None:
        if not isinstance(at, Timestamp):
            raise MongoError(
                14, "BSON field '$changeStream.startAtOperationTime' is the wrong type, expected type 'timestamp'"
            )
        key = ts_key(at) - 1
        if log.lost(key):
            raise _history_lost()
        cur.position = key


# --------------------------------------------------------------------------- reading events


def next_batch(engine, cur, limit):
    """The events after the cursor's position (encoded), up to ``limit`` and 16 MB; advances
    the position past every entry examined. Runs under the global lock."""
    log = engine.changes
    out = []
    if cur.closed:
        return out
    if cur.invalidate_at is not None:
        entry = log.entry(cur.invalidate_at)
        out.append(_invalidate(cur, cur.invalidate_at, entry))
        return out
    entries = log.entries
    i = log.index_after(cur.position)
    size = 0
    while i < len(entries):
        if limit is not None and len(out) >= limit:
            break
        entry = entries[i]
        key, db, coll, op, _raw = entry
        vis = cur.visibility(db, coll, op)
        if vis:
            event = _transform(engine, cur, _event(engine, cur, entry))
            if event is not None:
                raw = encode(event)
                if out and size + len(raw.raw) > MAX_BSON_SIZE:
                    break
                size += len(raw.raw)
                out.append(raw)
            if vis == _INVALIDATES:
                cur.position = key
                out.append(_invalidate(cur, key, entry))
                return out
        cur.position = key
        i += 1
    if i >= len(entries) and log.last > cur.position:
        cur.position = log.last
    return out


def _invalidate(cur, key, entry):
    wall = entry and ChangeLog.decode(entry).get("wallTime")
    event = {"_id": make_token(key, INVALIDATE), "operationType": "invalidate", "clusterTime": key_ts(key)}
    if wall is not None:
        event["wallTime"] = wall
    cur.closed = True
    cur.invalidated = key
    cur.invalidate_at = None
    return encode(event)


def _event(engine, cur, entry):
    key, db, coll, op, _raw = entry
    event = {"_id": make_token(key)}
    event.update(ChangeLog.decode(entry))
    if cur.lookup and op == "update":
        store = engine.existing_store(db, coll)
        doc = None
        if store is not None:
            doc = store._documents.get(id_key(event["documentKey"]["_id"]))
        event["fullDocument"] = doc
    return event


def _transform(engine, cur, event):
    """The event after the stream's stages, or None when a ``$match`` drops it."""
    if not cur.stages:
        return event
    token = event["_id"]
    copied = False
    for name, arg, applies in cur.stages:
        if applies is not None:
            if not applies(event):
                return None
            continue
        if not copied:  # the other stages may change what they are given (a stored document)
            event = clone(event)
            copied = True
        results = process_pipeline([event], engine.client[cur.db or "admin"], [{name: arg}])
        if not results:
            return None
        event = results[0]
    if event.get("_id") != token:
        raise MongoError(
            280,
            "Encountered an event whose _id field, which contains the resume "
            "token, was modified by the pipeline. Modifying the _id field of "
            "an event makes it impossible to resume the stream from that "
            "point. Only transformations that retain the unmodified _id field "
            "are allowed.",
        )
    return event
