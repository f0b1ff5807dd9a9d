"""Snapshots for ``--data``: a stream of BSON documents, written atomically.

File layout (all BSON): a header ``{"devmongo": "snapshot", "version": 2}``, then per collection
a ``{"collection": {"db", "name", "indexes", "count"}}`` document followed by ``count`` stored
documents; in the replica-set mode then ``{"changeLog": {"completeFrom", "last", "count",
"clean"}}`` followed by ``count`` change events (the change history, see ``oplog.py``; ``clean``:
written when the server stopped, so nothing after it can have been lost). Written to a temp file
in the same directory, fsynced, then ``os.replace``-d. Version 1 files (no change log) load too.
"""

import logging
import os
import tempfile
import threading
import time

import bson
from bson.codec_options import CodecOptions

from .keys import id_key

log = logging.getLogger("devmongo")

_CODEC = CodecOptions(document_class=dict, tz_aware=False)
_HEADER = {"devmongo": "snapshot", "version": 2}
_READABLE = ({"devmongo": "snapshot", "version": 1}, _HEADER)


def _encode_collection(db, name, store):
    indexes = [
        {"name": n, "key": [[f, d] for f, d in spec["key"]], "options": {k: v for k, v in spec.items() if k != "key"}}
        for n, spec in store.indexes.items()
    ]
    meta = {"collection": {"db": db, "name": name, "indexes": indexes, "count": len(store._documents)}}
    parts = [bson.encode(meta)]
    parts.extend(bson.encode(d) for d in store._documents.values())
    return b"".join(parts)


def load_snapshot(engine, path):
    """Load a snapshot into an empty engine. A missing file means an empty database."""
    if not os.path.exists(path):
        log.info("devmongo: no snapshot at %s, starting empty", path)
        return False
    started = time.monotonic()
    ndocs = 0
    with engine.lock, open(path, "rb") as f:
        it = bson.decode_file_iter(f, _CODEC)
        header = next(it, None)
        if header not in _READABLE:
            raise ValueError(f"{path} is not a devmongo snapshot (header {header!r})")
        store = None
        remaining = 0
        for doc in it:
            if remaining:
                store._documents[id_key(doc["_id"])] = doc
                remaining -= 1
                ndocs += 1
                continue
            if "changeLog" in doc:
                meta = doc["changeLog"]
                bodies = [bson.encode(next(it)) for _ in range(meta["count"])]
                if engine.changes is not None:
                    engine.changes.load(meta, bodies, bool(meta.get("clean")))
                continue
            meta = doc["collection"]
            store = engine.server_store[meta["db"]][meta["name"]]
            store.create()
            for index in meta["indexes"]:
                spec = {"key": [tuple(kd) for kd in index["key"]]}
                spec.update(index["options"])
                store.create_index(index["name"], spec)
            store._ttl_indexes.clear()  # expiry is devmongo's TTL monitor's (ttl.py)
            remaining = meta["count"]
            engine.invalidate(meta["db"], meta["name"])  # lookups are rebuilt from the loaded data
        if remaining:
            raise ValueError(f"{path} is truncated")
    log.info("devmongo: loaded %d documents from %s in %.2fs", ndocs, path, time.monotonic() - started)
    return True


class SnapshotWriter:
    """Writes the snapshot periodically (when something changed) and on stop."""

    def __init__(self, engine, path, interval=2.0):
        self.engine = engine
        self.path = os.path.abspath(path)
        self.interval = interval
        self._cache = {}  # (db, coll) -> encoded bytes
        self._written_counter = None
        self._stop = threading.Event()
        self._thread = None
        self._write_lock = threading.Lock()
        self._last_cost = 0.0

    def start(self):
        self._thread = threading.Thread(target=self._run, name="devmongo-snapshot", daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.write(final=True)

    def _run(self):
        while not self._stop.is_set():
            # Keep time spent holding the global lock for snapshots to ~10% at most.
            wait = max(self.interval, self._last_cost * 10)
            if self._stop.wait(wait):
                break
            try:
                self.write()
            except Exception:  # noqa: BLE001
                log.exception("devmongo: snapshot to %s failed", self.path)

    def write(self, final=False):
        """Write the snapshot if something changed (``final``: on stop, marking the change log
        complete, so that resume tokens from before the stop stay valid after a restart)."""
        with self._write_lock:
            started = time.monotonic()
            engine = self.engine
            with engine.lock:
                if (
                    engine.change_counter == self._written_counter
                    and os.path.exists(self.path)
                    and not (final and engine.changes is not None)
                ):
                    return False
                counter = engine.change_counter
                dirty, engine.dirty = engine.dirty, set()
                live = []
                for db_name, dbs in engine.server_store._databases.items():
                    for coll_name, store in dbs._collections.items():
                        if store.is_created:
                            live.append((db_name, coll_name))
                            if (db_name, coll_name) in dirty or (db_name, coll_name) not in self._cache:
                                self._cache[(db_name, coll_name)] = _encode_collection(db_name, coll_name, store)
                live_set = set(live)
                for key in [k for k in self._cache if k not in live_set]:
                    del self._cache[key]
                chunks = [self._cache[k] for k in live]
                changes = engine.changes.export() if engine.changes is not None else None
            self._last_cost = time.monotonic() - started
            directory = os.path.dirname(self.path) or "."
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".devmongo-", suffix=".tmp", dir=directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(bson.encode(_HEADER))
                    for chunk in chunks:
                        f.write(chunk)
                    if changes is not None:
                        meta, bodies = changes
                        meta["clean"] = final
                        f.write(bson.encode({"changeLog": meta}))
                        f.write(b"".join(bodies))
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            self._written_counter = counter
            log.debug(
                "devmongo: snapshot written to %s (%d collections) in %.3fs",
                self.path,
                len(chunks),
                time.monotonic() - started,
            )
            return True
