"""The change log of the replica-set mode: what MongoDB's oplog is to change streams.

Every write (insert, update, replace, delete, drop, rename, dropDatabase) is recorded, under the
global lock, as one entry ``(key, db, coll, op, body)``: ``key`` is its cluster time as an integer
(``Timestamp(t, i)`` is ``t << 32 | i``; every entry has its own), ``body`` the change event without
its ``_id`` (the resume token, made when it is read), encoded to BSON at once (a copy: stored
documents change in place later). The log is bounded in bytes (``--oplog-size``): the oldest
entries go first, and ``complete_from`` records up to where history is lost. Every entry with a
key above ``complete_from`` is in the log.

Change-stream ``getMore``s wait for new entries on ``cond`` without holding the global lock.
"""

import bisect
import datetime
import threading
import time

import bson
from bson.codec_options import CodecOptions
from bson.int64 import Int64
from bson.timestamp import Timestamp

from .update import strict_equal

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
_CODEC = CodecOptions(document_class=dict, tz_aware=False)
_OVERHEAD = 80  # bytes counted per entry besides its body


def key_ts(key):
    return Timestamp(key >> 32, key & 0xFFFFFFFF)


def ts_key(ts):
    return (ts.time << 32) | ts.inc


def _now_key():
    return int(time.time()) << 32


_EPOCH = datetime.datetime(1970, 1, 1)


def _wall():
    """Now, as a naive UTC datetime with millisecond precision (as BSON dates)."""
    return _EPOCH + datetime.timedelta(milliseconds=int(time.time() * 1000))


class ChangeLog:
    """The bounded, in-memory change history of the replica-set mode."""

    def __init__(self, max_bytes=DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self.keys = []  # entry keys, ascending (bisect)
        self.entries = []  # (key, db, coll, op, body bytes)
        self.size = 0
        # The newest cluster time handed out. It starts a second ahead of the wall clock, so that
        # no token of an earlier run of the server (same second) can look newer than it.
        self.last = _now_key() + (1 << 32)
        self.last_wall = _wall()
        self.last_ts = None
        self.complete_from = self.last  # history is complete after this key...
        self.gaps = []  # ...except in these (low, high) key ranges: runs of the server lost
        self.cond = threading.Condition(threading.Lock())
        self.waiters = 0
        self.stopping = False

    # ------------------------------------------------------------------ the clock

    def tick(self):
        now = time.time()
        now_key = int(now) << 32
        self.last = key = self.last + 1 if self.last >= now_key else now_key + 1
        self.last_wall = _EPOCH + datetime.timedelta(milliseconds=int(now * 1000))
        self.last_ts = Timestamp(key >> 32, key & 0xFFFFFFFF)
        return key

    def cluster_time(self):
        """The newest cluster time as a Timestamp."""
        ts = self.last_ts
        if ts is None or ts.time != self.last >> 32 or ts.inc != self.last & 0xFFFFFFFF:
            ts = self.last_ts = key_ts(self.last)
        return ts

    # ------------------------------------------------------------------ recording

    def _append(self, db, coll, op, fields):
        key = self.tick()
        body = {"operationType": op, "clusterTime": self.last_ts, "wallTime": self.last_wall}
        body.update(fields)
        raw = bson.encode(body)
        self.keys.append(key)
        self.entries.append((key, db, coll, op, raw))
        self.size += len(raw) + _OVERHEAD
        if self.size > self.max_bytes:
            self._trim()
        if self.waiters:
            with self.cond:
                self.cond.notify_all()
        return key

    def _trim(self):
        """Drop the oldest entries down to 90% of the bound; their history is lost."""
        target = self.max_bytes * 9 // 10
        n = 0
        size = self.size
        while n < len(self.entries) - 1 and size > target:
            size -= len(self.entries[n][4]) + _OVERHEAD
            n += 1
        if n:
            self.complete_from = self.keys[n - 1]
            del self.keys[:n]
            del self.entries[:n]
            self.size = size

    def insert(self, db, coll, doc):
        self._append(
            db,
            coll,
            "insert",
            {"fullDocument": doc, "ns": {"db": db, "coll": coll}, "documentKey": {"_id": doc["_id"]}},
        )

    def replace(self, db, coll, doc):
        self._append(
            db,
            coll,
            "replace",
            {"fullDocument": doc, "ns": {"db": db, "coll": coll}, "documentKey": {"_id": doc["_id"]}},
        )

    def update(self, db, coll, doc, undo):
        self._append(
            db,
            coll,
            "update",
            {
                "ns": {"db": db, "coll": coll},
                "documentKey": {"_id": doc["_id"]},
                "updateDescription": describe_update(doc, undo),
            },
        )

    def delete(self, db, coll, doc_id):
        self._append(db, coll, "delete", {"ns": {"db": db, "coll": coll}, "documentKey": {"_id": doc_id}})

    def drop(self, db, coll):
        self._append(db, coll, "drop", {"ns": {"db": db, "coll": coll}})

    def rename(self, db, coll, to_db, to_coll):
        self._append(db, coll, "rename", {"ns": {"db": db, "coll": coll}, "to": {"db": to_db, "coll": to_coll}})

    def drop_database(self, db):
        self._append(db, None, "dropDatabase", {"ns": {"db": db}})

    # ------------------------------------------------------------------ reading

    def index_after(self, key):
        """Index of the first entry after ``key``."""
        return bisect.bisect_right(self.keys, key)

    def has_entry(self, key):
        i = bisect.bisect_left(self.keys, key)
        return i < len(self.keys) and self.keys[i] == key

    def entry(self, key):
        i = bisect.bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            return self.entries[i]
        return None

    @staticmethod
    def decode(entry):
        return bson.decode(entry[4], _CODEC)

    def wait(self, seen, timeout):
        """Wait (without the global lock) until an entry newer than ``seen`` is recorded, the
        server stops or ``timeout`` seconds pass."""
        if timeout <= 0:
            return
        with self.cond:
            self.waiters += 1
            try:
                if self.last == seen and not self.stopping:
                    self.cond.wait(timeout)
            finally:
                self.waiters -= 1

    def stop(self):
        with self.cond:
            self.stopping = True
            self.cond.notify_all()

    # ------------------------------------------------------------------ snapshots

    def export(self):
        """(meta, bodies) for a snapshot; taken under the global lock (cheap: references)."""
        meta = {
            "completeFrom": Int64(self.complete_from),
            "last": Int64(self.last),
            "gaps": [[Int64(lo), Int64(hi)] for lo, hi in self.gaps],
            "count": len(self.entries),
        }
        return meta, [e[4] for e in self.entries]

    def load(self, meta, bodies, clean):
        """Restore a snapshot's log. After an unclean stop (kill -9), events after the last
        snapshot may have been seen by clients and lost here: history before the restart is
        then treated as lost, so resuming from it fails rather than skipping events."""
        self.keys = []
        self.entries = []
        self.size = 0
        for raw in bodies:
            body = bson.decode(raw, _CODEC)
            key = ts_key(body["clusterTime"])
            ns = body.get("ns") or {}
            self.keys.append(key)
            self.entries.append((key, ns.get("db"), ns.get("coll"), body["operationType"], raw))
            self.size += len(raw) + _OVERHEAD
        saved_last = max(int(meta.get("last", 0)), self.keys[-1] if self.keys else 0)
        self.last = max(saved_last, _now_key()) + (1 << 32)
        self.last_wall = _wall()
        if clean:
            # Written when the server stopped: complete up to its last event. Positions between
            # that and now can only come from a later run whose snapshot was lost: a gap.
            self.complete_from = int(meta.get("completeFrom", 0))
            self.gaps = [(int(lo), int(hi)) for lo, hi in meta.get("gaps", ()) if hi > self.complete_from]
            self.gaps.append((saved_last, self.last))
        else:
            self.complete_from = self.last
            self.gaps = []
        if self.size > self.max_bytes:
            self._trim()

    def lost(self, key):
        """Whether the events after position ``key`` may not all be in the log."""
        return key < self.complete_from or any(lo < key < hi for lo, hi in self.gaps)


# --------------------------------------------------------------------------- update descriptions


def describe_update(doc, undo):
    """The ``updateDescription`` of an update, from what its undo log says it changed: each
    path as the operator named it (array indexes resolved), its new value, or the removed field.
    A path whose parent was created by the update is reported from the created field down
    (``{$set: {"a.b": 1}}`` without ``a``: ``updatedFields: {a: {b: 1}}``). An array appended to
    reports its new elements (``arr.3``); an array otherwise rewritten (``$pull``, ``$pop``,
    ``$push`` with ``$sort``/``$position``/``$slice``) is reported whole. A pipeline update is
    described field by field at the top level."""
    updated = {}
    removed = []
    touched = set()
    whole = {}
    for container, key, old in undo.entries:
        if key is None:
            whole.setdefault(id(container), old)
        else:
            touched.add((id(container), key))
    if undo.concrete is None:  # pipeline: compare the top-level fields
        old = whole.get(id(doc), {})
        for k, v in doc.items():
            if k not in old or not strict_equal(old[k], v):
                updated[k] = v
        removed.extend(k for k in old if k not in doc)
    else:
        for op, parts, value in undo.concrete:
            _describe_path(doc, parts, touched, whole, updated, removed)
            if op == "$rename":
                _describe_path(doc, value.split("."), touched, whole, updated, removed)
    return {"updatedFields": updated, "removedFields": removed, "truncatedArrays": []}


def _describe_path(doc, parts, touched, whole, updated, removed):
    node = doc
    for i, part in enumerate(parts):
        if isinstance(node, list):
            if id(node) in whole:
                _describe_array(node, whole[id(node)], parts[:i], updated)
                return
            if not part.isdigit():
                return
            key = int(part)
            present = key < len(node)
        elif isinstance(node, dict):
            key = part
            present = key in node
        else:
            return
        if (id(node), key) in touched:
            path = ".".join(parts[: i + 1])
            if present:
                updated[path] = node[key]
            elif path not in removed:
                removed.append(path)
            return
        if not present:
            return
        node = node[key]
    if isinstance(node, list) and id(node) in whole:
        _describe_array(node, whole[id(node)], parts, updated)


def _describe_array(arr, old, parts, updated):
    path = ".".join(parts)
    if len(arr) >= len(old) and all(a is b for a, b in zip(old, arr, strict=False)):
        for i in range(len(old), len(arr)):
            updated[f"{path}.{i}"] = arr[i]
    else:
        updated[path] = arr
