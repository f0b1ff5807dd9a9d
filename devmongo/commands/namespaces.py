"""Collections and databases: listCollections, create, drop, dropDatabase, listDatabases,
renameCollection, collStats, dbStats."""

from ..cursors import batch_size, cursor_reply, kill_ns_cursors
from ..errors import MongoError
from ..keys import encode
from ..matching import generic_applies
from .args import check_collation, coll_name


def list_collections(engine, db, cmd, conn_id):
    dbs = engine.server_store._databases.get(db)
    names = dbs.list_created_collection_names() if dbs is not None else []
    name_only = bool(cmd.get("nameOnly"))
    flt = cmd.get("filter") or {}
    docs = []
    for name in sorted(names):
        if name_only:
            doc = {"name": name, "type": "collection"}
        else:
            doc = {
                "name": name,
                "type": "collection",
                "options": {},
                "info": {"readOnly": False},
                "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"},
            }
        if flt and not generic_applies(flt, doc):
            continue
        docs.append(encode(doc))
    return cursor_reply(engine, f"{db}.$cmd.listCollections", docs, batch_size(cmd.get("cursor")))


def create(engine, db, cmd, conn_id):
    engine.check_db(db)
    coll = coll_name(cmd, "create")
    for opt in (
        "capped",
        "validator",
        "viewOn",
        "timeseries",
        "clusteredIndex",
        "changeStreamPreAndPostImages",
        "encryptedFields",
    ):
        if cmd.get(opt):
            raise MongoError(115, f"devmongo does not support collection option '{opt}'")
    check_collation(cmd)
    if engine.existing_store(db, coll) is not None:
        raise MongoError(48, f"Collection {db}.{coll} already exists.")
    engine.store(db, coll).create()
    engine.mark(db, coll)
    return {"ok": 1.0}


def drop(engine, db, cmd, conn_id):
    coll = coll_name(cmd, "drop")
    store = engine.existing_store(db, coll)
    engine.invalidate(db, coll)
    if store is None:
        return {"ok": 1.0}
    was = len(store.indexes) + 1
    store.drop()
    engine.server_store[db]._collections.pop(coll, None)
    kill_ns_cursors(engine, f"{db}.{coll}")
    engine.mark(db, coll)
    if engine.changes is not None:
        engine.changes.drop(db, coll)
    return {"nIndexesWas": was, "ns": f"{db}.{coll}", "ok": 1.0}


def drop_database(engine, db, cmd, conn_id):
    dbs = engine.server_store._databases.get(db)
    engine.invalidate(db)
    if dbs is not None:
        dropped = False
        for name, store in list(dbs._collections.items()):
            existed = store.is_created
            store.drop()
            engine.mark(db, name)
            if existed and engine.changes is not None:
                engine.changes.drop(db, name)
                dropped = True
        dbs._collections.clear()
        if dropped:
            engine.changes.drop_database(db)
    kill_ns_cursors(engine, db)
    return {"dropped": db, "ok": 1.0}


def _db_size(dbs):
    return sum(len(st._documents) for st in dbs._collections.values()) * 256 + 8192


def list_databases(engine, db, cmd, conn_id):
    out = []
    total = 0
    for name in sorted(engine.server_store.list_created_database_names()):
        dbs = engine.server_store._databases[name]
        size = _db_size(dbs)
        total += size
        entry = {"name": name} if cmd.get("nameOnly") else {"name": name, "sizeOnDisk": float(size), "empty": False}
        flt = cmd.get("filter")
        if flt and not generic_applies(flt, entry):
            continue
        out.append(entry)
    reply = {"databases": out}
    if not cmd.get("nameOnly"):
        reply["totalSize"] = float(total)
        reply["totalSizeMb"] = total // (1024 * 1024)
    reply["ok"] = 1.0
    return reply


def rename_collection(engine, db, cmd, conn_id):
    source = cmd["renameCollection"]
    to = cmd.get("to")
    if db != "admin":
        raise MongoError(13, "renameCollection may only be run against the admin database.")
    if not isinstance(source, str) or not isinstance(to, str) or "." not in source or "." not in to:
        raise MongoError(73, "Invalid namespace specified")
    sdb, scoll = source.split(".", 1)
    tdb, tcoll = to.split(".", 1)
    if sdb != tdb:
        raise MongoError(115, "devmongo does not support renaming across databases")
    if engine.existing_store(sdb, scoll) is None:
        raise MongoError(26, f"Source collection {source} does not exist")
    if engine.existing_store(tdb, tcoll) is not None:
        if not cmd.get("dropTarget"):
            raise MongoError(48, "target namespace exists")
        drop(engine, tdb, {"drop": tcoll}, conn_id)
    engine.server_store[sdb].rename(scoll, tcoll)
    engine.invalidate(sdb)
    kill_ns_cursors(engine, source)
    engine.mark(sdb, scoll)
    engine.mark(tdb, tcoll)
    if engine.changes is not None:
        engine.changes.rename(sdb, scoll, tdb, tcoll)
    return {"ok": 1.0}


def coll_stats(engine, db, cmd, conn_id):
    coll = coll_name(cmd, "collStats")
    store = engine.existing_store(db, coll)
    count = len(store._documents) if store is not None else 0
    return {
        "ns": f"{db}.{coll}",
        "count": count,
        "size": count * 256,
        "avgObjSize": 256 if count else 0,
        "storageSize": count * 256,
        "nindexes": (len(store.indexes) + 1) if store is not None else 0,
        "ok": 1.0,
    }


def db_stats(engine, db, cmd, conn_id):
    dbs = engine.server_store._databases.get(db)
    names = dbs.list_created_collection_names() if dbs is not None else []
    objects = sum(len(dbs._collections[n]._documents) for n in names)
    return {
        "db": db,
        "collections": len(names),
        "views": 0,
        "objects": objects,
        "dataSize": float(objects * 256),
        "ok": 1.0,
    }
