"""Server cursors: the first batch of a cursor reply, the documents left for ``getMore``, and
``getMore`` / ``killCursors``; idle cursors expire after ten minutes.

A ``find`` cursor holds the stored documents it matched, not copies: each later batch encodes
them as they are then, leaving out those deleted or no longer matching since, so that later writes
are seen between batches, as on MongoDB (whose cursors are not snapshots; documents inserted
later are not picked up here). Other cursors (aggregate, listIndexes...) hold their results
encoded."""

import random
import time

from bson.int64 import Int64

from .errors import MongoError
from .limits import CURSOR_TIMEOUT, DEFAULT_FIRST_BATCH, MAX_BSON_SIZE


class Cursor:
    stream = False  # change-stream cursors (changestreams.py) are True
    __slots__ = ("ns", "docs", "pos", "last_used", "encode")

    def __init__(self, ns, docs, pos, encode=None):
        self.ns = ns
        self.docs = docs  # encoded results, or (with ``encode``) stored documents
        self.pos = pos
        self.last_used = time.monotonic()
        self.encode = encode  # stored document -> its encoding now, or None: left out


def new_cursor_id(engine):
    while True:
        cid = random.getrandbits(62) + 1
        if cid not in engine.cursors:
            return cid


def _expire_cursors(engine):
    now = time.monotonic()
    for cid in [c for c, cur in engine.cursors.items() if now - cur.last_used > CURSOR_TIMEOUT]:
        del engine.cursors[cid]


def kill_ns_cursors(engine, ns_prefix):
    """Close the cursors of a collection (``db.coll``) or of a whole database (``db``). Change
    streams stay open: they end with their ``invalidate`` event."""
    for cid in [
        c
        for c, cur in engine.cursors.items()
        if not cur.stream and (cur.ns == ns_prefix or cur.ns.startswith(ns_prefix + "."))
    ]:
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


def take_live(docs, pos, count, encode):
    """As :func:`take`, encoding stored documents now (``encode`` None: left out)."""
    out = []
    size = 0
    i = pos
    n = len(docs)
    while i < n and (count is None or len(out) < count):
        raw = encode(docs[i])
        if raw is not None:
            size += len(raw.raw)
            if size > MAX_BSON_SIZE and out:
                break
            out.append(raw)
        i += 1
    return out, i


def _register(engine, cursor):
    engine.cursor_creations += 1
    if engine.cursor_creations % 256 == 0:
        _expire_cursors(engine)
    cid = new_cursor_id(engine)
    engine.cursors[cid] = cursor
    return cid


def cursor_reply(engine, ns, docs, batch_size=None, single_batch=False):
    """docs: a list of RawBSONDocument. Opens a server cursor if more remain."""
    first_n = DEFAULT_FIRST_BATCH if batch_size is None else batch_size
    batch, pos = take(docs, 0, first_n)
    cid = 0
    if pos < len(docs) and not single_batch:
        cid = _register(engine, Cursor(ns, docs, pos))
    return {"cursor": {"firstBatch": batch, "id": Int64(cid), "ns": ns}, "ok": 1.0}


def live_cursor_reply(engine, ns, docs, encode_first, encode_later, batch_size=None, single_batch=False):
    """docs: stored documents. The first batch is encoded with ``encode_first``; a cursor left
    open encodes the rest at each getMore with ``encode_later``."""
    first_n = DEFAULT_FIRST_BATCH if batch_size is None else batch_size
    batch, pos = take_live(docs, 0, first_n, encode_first)
    cid = 0
    if pos < len(docs) and not single_batch:
        cid = _register(engine, Cursor(ns, docs, pos, encode_later))
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
            raise MongoError(
                13,
                f"Requested getMore on namespace '{db}.{coll}', but cursor belongs to a different namespace {cur.ns}",
            )
        if not cur.stream:
            if cur.encode is not None:
                batch, pos = take_live(cur.docs, cur.pos, batch_size(cmd) or None, cur.encode)
            else:
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
    return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [], "cursorsUnknown": [], "ok": 1.0}
