"""Index commands: createIndexes, listIndexes, dropIndexes."""

from ..cursors import batch_size, cursor_reply
from ..errors import MongoError
from ..keys import encode, index_keys
from ..unique import dup_error
from ..update import clone
from .args import coll_name

_INDEX_OPTIONS = (
    "unique",
    "sparse",
    "expireAfterSeconds",
    "partialFilterExpression",
    "collation",
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
    "2dsphereIndexVersion",
    "bits",
    "min",
    "max",
    "hidden",
    "wildcardProjection",
)


def _key_list(key):
    out = []
    for field, direction in key.items():
        if direction in ("text", "2d", "2dsphere", "geoHaystack", "wildcard") or (field.endswith("$**")):
            raise MongoError(115, f"devmongo does not support {direction!r} indexes")
        if direction not in (1, -1, "hashed") and not (isinstance(direction, (int, float)) and direction != 0):
            raise MongoError(67, f"Values in index key pattern must be numbers or 'hashed': {field}: {direction!r}")
        out.append((field, direction))
    return out


def _check_unique_build(db, coll, store, name, index_dict):
    """Building a unique index over existing data fails on the first duplicate."""
    seen = {}
    for k, d in store._documents.items():
        for ik in index_keys(index_dict, d):
            if ik in seen and seen[ik] != k:
                err = dup_error(db, coll, name, index_dict, d)
                raise MongoError(11000, "Index build failed: " + err.errmsg, **err.extra)
            seen[ik] = k


def _equivalent(a, b):
    """Same key pattern and the same identifying options: MongoDB keeps one of them."""
    return (
        a["key"] == b["key"]
        and a.get("partialFilterExpression") == b.get("partialFilterExpression")
        and a.get("collation") == b.get("collation")
    )


def create_indexes(engine, db, cmd, conn_id):
    engine.check_db(db)
    coll = coll_name(cmd, "createIndexes")
    indexes = cmd.get("indexes")
    if not isinstance(indexes, list) or not indexes:
        raise MongoError(2, "Must specify at least one index to create")
    store = engine.store(db, coll)
    created_auto = not store.is_created
    before = len(store.indexes) + 1 if store.is_created else 0
    note = None
    for spec in indexes:
        key = spec.get("key")
        name = spec.get("name")
        if not isinstance(key, dict) or not key:
            raise MongoError(67, "Index keys cannot be empty.")
        if not isinstance(name, str) or not name:
            raise MongoError(
                9, "Error in specification: the 'name' field is a required property of an index specification"
            )
        key_list = _key_list(key)
        index_dict = {"key": key_list}
        for opt in _INDEX_OPTIONS:
            if opt in spec and spec[opt] is not None and spec[opt] is not False:
                index_dict[opt] = spec[opt]
        if "collation" in index_dict:
            raise MongoError(115, "devmongo does not support index collations")
        if name == "_id_" or key_list == [("_id", 1)]:
            note = "all indexes already exist"
            continue
        existing = store.indexes.get(name)
        if existing is not None:
            if not _equivalent(existing, index_dict):
                raise MongoError(
                    86,
                    f"An existing index has the same name as the requested "
                    f"index. When index names are not specified, they are "
                    f"auto generated and can cause conflicts. Requested "
                    f"index: {spec}, existing index: {index_doc(name, existing)}",
                )
            if existing != index_dict:
                raise MongoError(
                    85,
                    f"An equivalent index already exists with the same name "
                    f"but different options. Requested index: {spec}, "
                    f"existing index: {index_doc(name, existing)}",
                )
            note = "all indexes already exist"
            continue
        # As MongoDB: one index per key pattern and identifying options (partial filter,
        # collation), whatever its name.
        for other_name, other in store.indexes.items():
            if not _equivalent(other, index_dict):
                continue
            if other != index_dict:
                raise MongoError(
                    85,
                    f"An equivalent index already exists with a different name "
                    f"and options. Requested index: {spec}, existing index: "
                    f"{index_doc(other_name, other)}",
                )
            raise MongoError(85, f"Index already exists with a different name: {other_name}")
        if index_dict.get("unique"):
            _check_unique_build(db, coll, store, name, index_dict)
        store.create_index(name, index_dict)
        store._ttl_indexes.clear()  # expiry is devmongo's TTL monitor's (ttl.py)
        engine.invalidate(db, coll)
    store.create()
    engine.mark(db, coll)
    reply = {
        "numIndexesBefore": before,
        "numIndexesAfter": len(store.indexes) + 1,
        "createdCollectionAutomatically": created_auto,
    }
    if note and reply["numIndexesAfter"] == before:
        reply["note"] = note
    reply["ok"] = 1.0
    return reply


def index_doc(name, spec):
    """An index as ``listIndexes`` shows it."""
    doc = {"v": 2, "key": dict(spec["key"]), "name": name}
    for k, v in spec.items():
        if k != "key":
            doc[k] = clone(v)
    return doc


def list_indexes(engine, db, cmd, conn_id):
    coll = coll_name(cmd, "listIndexes")
    store = engine.existing_store(db, coll)
    if store is None:
        raise MongoError(26, f"ns does not exist: {db}.{coll}")
    docs = [{"v": 2, "key": {"_id": 1}, "name": "_id_"}]
    docs.extend(index_doc(n, s) for n, s in store.indexes.items())
    return cursor_reply(engine, f"{db}.{coll}", [encode(d) for d in docs], batch_size(cmd.get("cursor")))


def drop_indexes(engine, db, cmd, conn_id):
    coll = coll_name(cmd, next(iter(cmd)))
    store = engine.existing_store(db, coll)
    if store is None:
        raise MongoError(26, f"ns not found {db}.{coll}")
    was = len(store.indexes) + 1
    index = cmd.get("index")
    if index == "*":
        names = list(store.indexes)
    elif isinstance(index, str):
        names = [index]
    elif isinstance(index, list):
        names = index
    elif isinstance(index, dict):
        key_list = list(index.items())
        names = [n for n, s in store.indexes.items() if s["key"] == key_list]
        if not names:
            if key_list == [("_id", 1)]:
                raise MongoError(72, "cannot drop _id index")
            raise MongoError(27, f"can't find index with key: {index}")
    else:
        raise MongoError(14, "dropIndexes 'index' must be a string, array or object")
    for name in names:
        if name == "_id_":
            raise MongoError(72, "cannot drop _id index")
        if name not in store.indexes:
            raise MongoError(27, f"index not found with name [{name}]")
    for name in names:
        store.drop_index(name)
    engine.invalidate(db, coll)
    engine.mark(db, coll)
    return {"nIndexesWas": was, "ok": 1.0}
