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
from .keys import encode, id_key  # noqa: F401 - re-exported (persistence, callers)
from .limits import (  # noqa: F401 - re-exported
    CURSOR_TIMEOUT,
    DEFAULT_FIRST_BATCH,
    MAX_BSON_SIZE,
    MAX_MESSAGE_SIZE,
    MAX_WRITE_BATCH,
)
from .reads import compile_simple_filter, drop_lookups  # noqa: F401 - re-exported
from .unique import UniqueIndexes

log = logging.getLogger("devmongo")


class Engine:
    """Executes MongoDB commands against an in-memory mongomock store."""

    use_lookups = True  # False: every query scans (tests compare both)

    def __init__(self):
        self.lock = threading.Lock()
        self.client = mongomock.MongoClient()
        self.server_store = self.client._store
        self.cursors = {}  # cursor id -> cursors.Cursor
        self.cursor_creations = 0
        self.started = time.time()
        self.change_counter = 0
        self.dirty = set()  # (db, coll) changed since the last snapshot
        self.connections = 0
        self.unique = UniqueIndexes()
        self.encoded = {}  # id(stored document) -> (document, RawBSONDocument)
        self._valid_db_names = set()
        self.handlers = dict(COMMANDS)

    # ------------------------------------------------------------------ dispatch

    def run_command(self, db, cmd, conn_id=0):
        """Run one command document; always returns a reply document."""
        try:
            name = next(iter(cmd))
        except StopIteration:
            return MongoError(59, "no such command: ''").to_reply()
        handler = self.handlers.get(name)
        if handler is None:
            log.debug("conn%d: unknown command %r", conn_id, name)
            return MongoError(59, f"no such command: '{name}'").to_reply()
        try:
            if db is None:
                raise MongoError(40571, "OP_MSG requests require a $db argument")
            if "txnNumber" in cmd or "startTransaction" in cmd or "autocommit" in cmd:
                raise MongoError(20, "Transaction numbers are only allowed on a replica set "
                                     "member or mongos")
            if handler.locked:
                with self.lock:
                    reply = handler.fn(self, db, cmd, conn_id)
            else:
                reply = handler.fn(self, db, cmd, conn_id)
            if log.isEnabledFor(logging.DEBUG) and (
                    "writeErrors" in reply or reply.get("ok") == 0):
                log.debug("conn%d: %s failed: %s", conn_id, name,
                          reply.get("writeErrors") or reply.get("errmsg"))
            return reply
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error reply
            err = to_mongo_error(exc)
            if err.code == 1:
                log.warning("conn%d: internal error in %s", conn_id, name, exc_info=True)
            else:
                log.debug("conn%d: %s failed: %s (%d)", conn_id, name, err.errmsg, err.code)
            return err.to_reply()

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
