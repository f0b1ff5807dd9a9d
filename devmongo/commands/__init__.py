"""The command table: command name -> handler. ``Engine.run_command`` looks a command up here.

A handler is ``fn(engine, db, cmd, conn_id) -> reply``. ``locked`` handlers run under the engine's
global lock (one command at a time, so each is atomic); the others (handshake, admin) run
without it. ``writes`` marks commands that may change data.
"""

from .. import cursors
from . import admin, crud, indexes, namespaces, query


class Handler:
    __slots__ = ("fn", "locked", "writes")

    def __init__(self, fn, locked=True, writes=False):
        self.fn = fn
        self.locked = locked
        self.writes = writes

    def __repr__(self):
        return f"Handler({self.fn.__module__}.{self.fn.__name__})"


def _unlocked(fn):
    return Handler(fn, locked=False)


def _reads(fn):
    return Handler(fn)


def _writes(fn):
    return Handler(fn, writes=True)


COMMANDS = {
    # handshake and administration (commands/admin.py)
    "hello": _unlocked(admin.hello),
    "isMaster": _unlocked(admin.hello),
    "ismaster": _unlocked(admin.hello),
    "ping": _unlocked(admin.ok),
    "buildInfo": _unlocked(admin.build_info),
    "buildinfo": _unlocked(admin.build_info),
    "endSessions": _unlocked(admin.end_sessions),
    "killAllSessions": _unlocked(admin.ok),
    "refreshSessions": _unlocked(admin.ok),
    "whatsmyuri": _unlocked(admin.ok),
    "connectionStatus": _unlocked(admin.connection_status),
    "hostInfo": _unlocked(admin.host_info),
    "serverStatus": _unlocked(admin.server_status),
    "getParameter": _unlocked(admin.get_parameter),
    "setParameter": _unlocked(admin.set_parameter),
    "getCmdLineOpts": _unlocked(admin.get_cmd_line_opts),
    "replSetGetStatus": _unlocked(admin.repl_set_get_status),
    "replSetGetConfig": _unlocked(admin.repl_set_get_config),
    "replSetInitiate": _unlocked(admin.repl_set_initiate),
    # writes (commands/crud.py)
    "insert": _writes(crud.insert),
    "update": _writes(crud.update),
    "delete": _writes(crud.delete),
    "findAndModify": _writes(crud.find_and_modify),
    "findandmodify": _writes(crud.find_and_modify),
    # reads (commands/query.py, cursors.py)
    "find": _reads(query.find),
    "getMore": _unlocked(cursors.get_more),  # takes the lock itself
    "killCursors": _reads(cursors.kill_cursors),
    "count": _reads(query.count),
    "distinct": _reads(query.distinct),
    "aggregate": _writes(query.aggregate),  # $out writes
    # indexes (commands/indexes.py)
    "createIndexes": _writes(indexes.create_indexes),
    "listIndexes": _reads(indexes.list_indexes),
    "dropIndexes": _writes(indexes.drop_indexes),
    "deleteIndexes": _writes(indexes.drop_indexes),
    # collections and databases (commands/namespaces.py)
    "listCollections": _reads(namespaces.list_collections),
    "create": _writes(namespaces.create),
    "drop": _writes(namespaces.drop),
    "dropDatabase": _writes(namespaces.drop_database),
    "listDatabases": _reads(namespaces.list_databases),
    "renameCollection": _writes(namespaces.rename_collection),
    "collStats": _reads(namespaces.coll_stats),
    "dbStats": _reads(namespaces.db_stats),
}
