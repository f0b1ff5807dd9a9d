"""Server cursors: the first batch of a cursor reply, the documents left for ``getMore``, and
``getMore`` / ``killCursors``. A cursor holds its documents already encoded (a snapshot taken when
it was opened); idle cursors expire after ten minutes."""

import random
import time

from bson.int64 import Int64

from .errors import MongoError
from .limits import CURSOR_TIMEOUT, DEFAULT_FIRST_BATCH, MAX_BSON_SIZE


class Cursor:
    stream = False  # change-stream cursors (changestreams.py) are True
    __slots__ = ("ns", "docs", "pos", "last_used")

    def __init__(self, ns, docs, pos):
        self.ns = ns
        self.docs = docs
        self.pos = pos
        self.last_used = time.monotonic()


def new_cursor_id(engine):
    while True:
        cid = random.getrandbits(62) + 1
        if cid not in engine.cursors:
            return cid


def _expire_cursors(engine):
    now = time.monotonic()
    for cid in [c for c, cur in engine.cursors.items()
                if now - cur.last_used > CURSOR_TIMEOUT]:
        del engine.cursors[cid]


def kill_ns_cursors(engine, ns_prefix):
    """Close the cursors of a collection (``db.coll``) or of a whole database (``db``). Change
    streams stay open: they end with their ``invalidate`` event."""
    for cid in [c for c, cur in engine.cursors.items() if not cur.stream
                and (cur.ns == ns_prefix or cur.ns.startswith(ns_prefix + "."))]:
        del engine.cursors[cid]


def take(docs, pos, count):
    """Take up to ``count`` (None: unlimited) encoded docs within the 16MB batch limit."""
    end = len(docs)
    if count is not None:
        end = min(end, pos + count)
    size = 0
    i = pos
    while i < end:
        size += len(docs[i].raw)
        if size > MAX_BSON_SIZE and i > pos:
            break
        i += 1
    return docs[pos:i], i


def cursor_reply(engine, ns, docs, batch_size=None, single_batch=False):
    """docs: a list of RawBSONDocument. Opens a server cursor if more remain."""
    first_n = DEFAULT_FIRST_BATCH if batch_size is None else batch_size
    batch, pos = take(docs, 0, first_n)
    cid = 0
    if pos < len(docs) and not single_batch:
        engine.cursor_creations += 1
        if engine.cursor_creations % 256 == 0:
            _expire_cursors(engine)
        cid = new_cursor_id(engine)
        engine.cursors[cid] = Cursor(ns, docs, pos)
    return {"cursor": {"firstBatch": batch, "id": Int64(cid), "ns": ns}, "ok": 1.0}


def batch_size(spec, field="batchSize"):
    """A command's (or its ``cursor`` document's) batch size; None when not given."""
    value = spec.get(field) if isinstance(spec, dict) else None
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise MongoError(2, f"{field} value must be non-negative, but received: {value}")
    return int(value)


def get_more(engine, db, cmd, conn_id):
    """getMore; runs without the global lock so that a change stream's can wait for events."""
    cid = cmd["getMore"]
    if not isinstance(cid, int):
        raise MongoError(14, "getMore cursor id must be a long")
    coll = cmd.get("collection")
    with engine.lock:
        cur = engine.cursors.get(cid)
        if cur is None:
            raise MongoError(43, f"cursor id {cid} not found")
        if coll is not None and cur.ns != f"{db}.{coll}" and not cur.ns.startswith(f"{db}.$cmd"):
            raise MongoError(13, f"Requested getMore on namespace '{db}.{coll}', but cursor "
                                 f"belongs to a different namespace {cur.ns}")
        if not cur.stream:
            batch, pos = take(cur.docs, cur.pos, batch_size(cmd) or None)
            cur.pos = pos
            cur.last_used = time.monotonic()
            if pos >= len(cur.docs):
                del engine.cursors[cid]
                cid = 0
            return {"cursor": {"nextBatch": batch, "id": Int64(cid), "ns": cur.ns}, "ok": 1.0}
    return cur.get_more(engine, cid, cmd)


def kill_cursors(engine, db, cmd, conn_id):
    killed, not_found = [], []
    for cid in cmd.get("cursors") or []:
        if engine.cursors.pop(cid, None) is not None:
            killed.append(Int64(cid))
        else:
            not_found.append(Int64(cid))
    return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [],
            "cursorsUnknown": [], "ok": 1.0}
