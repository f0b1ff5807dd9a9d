"""The engine: the server's state (one mongomock store, cursors, unique-index maps) and the
dispatcher that runs one command document under the global lock and always answers.

The commands themselves are in ``commands/`` (the table in ``commands/__init__.py``), reading and
writing documents in ``reads.py`` / ``writes.py``, cursors in ``cursors.py``.
"""

import logging
import threading
import time

import mongomock

from .commands import COMMANDS
from .errors import MongoError, to_mongo_error
from .expressions import install as install_expressions
from .keys import encode, id_key  # noqa: F401 - re-exported (persistence, callers)
from .limits import (  # noqa: F401 - re-exported
    CURSOR_TIMEOUT,
    DEFAULT_FIRST_BATCH,
    MAX_BSON_SIZE,
    MAX_MESSAGE_SIZE,
    MAX_WRITE_BATCH,
)
from .oplog import DEFAULT_MAX_BYTES, ChangeLog
from .reads import compile_simple_filter, drop_lookups  # noqa: F401 - re-exported
from .replset import (
    RETRYABLE_COMMANDS,
    ReplSet,
    RetryableWrites,
    check_write_concern,
    cluster_time_fields,
    session_key,
)
from .unique import UniqueIndexes

install_expressions()  # every aggregation expression is evaluated by devmongo's parser

log = logging.getLogger("devmongo")


class Engine:
    """Executes MongoDB commands against an in-memory mongomock store.

    ``replset``: a replica-set name for the replica-set mode (see ``replset.py``), None for a
    standalone; ``oplog_bytes``: the change log's bound in that mode.
    """

    use_lookups = True  # False: every query scans (tests compare both)

    def __init__(self, replset=None, oplog_bytes=DEFAULT_MAX_BYTES):
        self.lock = threading.Lock()
        self.client = mongomock.MongoClient()
        self.server_store = self.client._store
        self.cursors = {}  # cursor id -> cursors.Cursor
        self.cursor_creations = 0
        self.started = time.time()
        self.change_counter = 0
        self.dirty = set()  # (db, coll) changed since the last snapshot
        self.writes = {}  # (db, coll) -> writes so far: an index-ordered read's list is as old as this
        self.connections = 0
        self.unique = UniqueIndexes()
        self.encoded = {}  # id(stored document) -> (document, RawBSONDocument)
        self.doc_sizes = {}  # id(stored document) -> (document, upper bound of its BSON size)
        self._valid_db_names = set()
        self.handlers = dict(COMMANDS)
        self.stopped = threading.Event()  # set when the server stops (wakes waiting hellos)
        self.replset = ReplSet(replset) if replset else None
        self.changes = ChangeLog(oplog_bytes) if replset else None
        self.retryable = RetryableWrites() if replset else None
        # Server parameters (getParameter/setParameter, commands/admin.py PARAMETERS)
        self.notablescan = False  # MongoDB's: refuse queries that need a collection scan
        self.notablescan_strict = False  # devmongo's: ...empty filters included
        self.random_tie_break = False  # devmongo's: documents whose sort keys tie, shuffled
        self.ttl_enabled = True  # MongoDB's ttlMonitorEnabled
        self.ttl_sleep_secs = 60  # MongoDB's ttlMonitorSleepSecs

    # ------------------------------------------------------------------ dispatch

    def run_command(self, db, cmd, conn_id=0):
        """Run one command document; always returns a reply document."""
        try:
            name = next(iter(cmd))
        except StopIteration:
            return MongoError(59, "no such command: ''").to_reply()
        handler = self.handlers.get(name)
        try:
            if handler is None:
                raise MongoError(59, f"no such command: '{name}'")
            if db is None:
                raise MongoError(40571, "OP_MSG requests require a $db argument")
            if self.replset is not None:
                reply = self._run_on_replset(name, handler, db, cmd, conn_id)
            else:
                if "txnNumber" in cmd or "startTransaction" in cmd or "autocommit" in cmd:
                    raise MongoError(20, "Transaction numbers are only allowed on a replica set member or mongos")
                if handler.writes and "writeConcern" in cmd:
                    check_write_concern(None, cmd["writeConcern"])
                if handler.locked:
                    with self.lock:
                        reply = handler.fn(self, db, cmd, conn_id)
                else:
                    reply = handler.fn(self, db, cmd, conn_id)
            if log.isEnabledFor(logging.DEBUG) and ("writeErrors" in reply or reply.get("ok") == 0):
                log.debug("conn%d: %s failed: %s", conn_id, name, reply.get("writeErrors") or reply.get("errmsg"))
            return reply
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error reply
            err = to_mongo_error(exc)
            if err.code == 1:
                log.warning("conn%d: internal error in %s", conn_id, name, exc_info=True)
            else:
                log.debug("conn%d: %s failed: %s (%d)", conn_id, name, err.errmsg, err.code)
            reply = err.to_reply()
            if self.replset is not None:
                reply["operationTime"], reply["$clusterTime"] = cluster_time_fields(self)
            return reply

    def _run_on_replset(self, name, handler, db, cmd, conn_id):
        """A command on the primary of a one-member set: write concerns, retryable writes, and
        the cluster time on every reply."""
        wc_error = None
        if handler.writes and "writeConcern" in cmd:
            wc_error = check_write_concern(self.replset, cmd["writeConcern"])
        if "startTransaction" in cmd or "autocommit" in cmd:
            raise MongoError(20, "devmongo does not support multi-document transactions (only retryable writes)")
        txn = cmd.get("txnNumber")
        if txn is not None:
            if name not in RETRYABLE_COMMANDS:
                raise MongoError(
                    50768,
                    "txnNumber may only be provided for multi-document "
                    "transactions and retryable write commands. "
                    f"autocommit:false was not provided, and {name} is not "
                    "a retryable write command.",
                )
            if "lsid" not in cmd:
                raise MongoError(72, "Transaction number requires a session ID")
            lsid = cmd["lsid"]
            key = session_key(lsid)
            with self.lock:
                reply = self.retryable.replay(key, txn, lsid)
                if reply is None:
                    reply = handler.fn(self, db, cmd, conn_id)
                    if reply.get("ok"):
                        self.retryable.record(key, txn, reply)
            reply = dict(reply)  # the recorded one stays as it was
        elif handler.locked:
            with self.lock:
                reply = handler.fn(self, db, cmd, conn_id)
        else:
            reply = handler.fn(self, db, cmd, conn_id)
        if wc_error is not None and reply.get("ok"):
            reply["writeConcernError"] = wc_error
        reply["operationTime"], reply["$clusterTime"] = cluster_time_fields(self)
        return reply

    # ------------------------------------------------------------------ namespaces

    def store(self, db, coll):
        """The collection's store (created lazily by mongomock, not yet listed)."""
        return self.server_store[db][coll]

    def existing_store(self, db, coll):
        """The collection's store if the collection exists, else None."""
        dbs = self.server_store._databases.get(db)
        if dbs is None:
            return None
        st = dbs._collections.get(coll)
        if st is None or not st.is_created:
            return None
        return st

    def check_db(self, db):
        if type(db) is str and db in self._valid_db_names:
            return
        if not db or any(c in db for c in '/\\. "$\0'):
            raise MongoError(73, f"Invalid database name: '{db}'")
        if len(self._valid_db_names) < 10000:
            self._valid_db_names.add(db)

    def mark(self, db, coll):
        """Note a change of the collection (for the snapshot writer)."""
        self.change_counter += 1
        self.dirty.add((db, coll))
        self.writes[(db, coll)] = self.writes.get((db, coll), 0) + 1  # index-ordered reads (ordered.py)

    def invalidate(self, db, coll=None):
        """Forget the unique-key maps and index lookups of a collection (all of ``db``'s when
        ``coll`` is None); both are rebuilt when next needed."""
        self.unique.forget(db, coll)
        dbs = self.server_store._databases.get(db)
        if dbs is not None:
            stores = dbs._collections.values() if coll is None else [dbs._collections.get(coll)]
            for store in stores:
                if store is not None:
                    drop_lookups(store)
                    store.__dict__.pop("_devmongo_ordered", None)
