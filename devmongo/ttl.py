"""TTL indexes, as MongoDB expires documents: a background monitor deletes expired documents
every ``ttlMonitorSleepSecs`` (60 s by default, as MongoDB's TTL monitor); until it runs, expired
documents are still there and still read, as on MongoDB. ``DevMongoServer.run_ttl_monitor()``
runs one pass at once (tests).

A document expires when its indexed field holds a date (or an array holding dates: the earliest
counts) at least ``expireAfterSeconds`` in the past; other values never expire. Only
single-field TTL indexes count (as MongoDB); a partial TTL index expires only the documents its
filter selects. Deletions go through the normal delete path (unique maps, lookups, change-stream
``delete`` events in the replica-set mode).
"""

import datetime
import logging
import threading

from .keys import leaf_values
from .matching import generic_applies
from .writes import delete_doc

log = logging.getLogger("devmongo")


def _earliest_date(values):
    dates = []
    for v in values:
        for x in v if isinstance(v, list) else (v,):
            if isinstance(x, datetime.datetime):
                dates.append(x.replace(tzinfo=None) if x.tzinfo else x)
    return min(dates) if dates else None


def expire_documents(engine, now=None):
    """Delete every expired document; returns how many. Runs under the global lock."""
    if now is None:
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    removed = 0
    for db_name, dbs in list(engine.server_store._databases.items()):
        for coll_name, store in list(dbs._collections.items()):
            if not store.indexes:
                continue
            for spec in list(store.indexes.values()):
                seconds = spec.get("expireAfterSeconds")
                if seconds is None or len(spec["key"]) != 1:
                    continue
                try:
                    limit = now - datetime.timedelta(seconds=float(seconds))
                except (TypeError, ValueError, OverflowError):
                    continue
                parts = spec["key"][0][0].split(".")
                pfe = spec.get("partialFilterExpression")
                expired = []
                for doc in store._documents.values():
                    earliest = _earliest_date(leaf_values(doc, parts))
                    if earliest is not None and earliest <= limit and (pfe is None or generic_applies(pfe, doc)):
                        expired.append(doc)
                for doc in expired:
                    if delete_doc(engine, db_name, coll_name, store, doc):
                        removed += 1
    return removed


class TTLMonitor:
    """The background thread: a pass every ``engine.ttl_sleep_secs`` while enabled."""

    def __init__(self, engine):
        self.engine = engine
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, name="devmongo-ttl", daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def run_once(self):
        with self.engine.lock:
            return expire_documents(self.engine)

    def _run(self):
        while not self._stop.wait(max(1, self.engine.ttl_sleep_secs)):
            if not self.engine.ttl_enabled:
                continue
            try:
                removed = self.run_once()
                if removed:
                    log.debug("devmongo: TTL monitor deleted %d documents", removed)
            except Exception:  # noqa: BLE001
                log.exception("devmongo: TTL monitor pass failed")
