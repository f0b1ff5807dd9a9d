"""Writing one document: insert, update in place, upsert and delete, each keeping the unique-index
maps, the index lookups and the BSON cache current and marking the collection changed."""

import re

import bson
from bson.objectid import ObjectId
from mongomock import aggregate as mm_aggregate

from .errors import MongoError
from .keys import id_key
from .reads import maintained_lookups
from .unique import unique_specs
from .update import apply_update, clone, upsert_seed


def insert_doc(engine, db, coll, store, doc):
    if not isinstance(doc, dict):
        raise MongoError(2, "document to insert must be an object")
    if "_id" not in doc:
        new = {"_id": ObjectId()}
        new.update(doc)
        doc = new
    elif next(iter(doc)) != "_id":
        new = {"_id": doc["_id"]}
        new.update(doc)
        doc = new
    _id = doc["_id"]
    if isinstance(_id, list):
        raise MongoError(53, "The '_id' value cannot be of type array")
    if isinstance(_id, (re.Pattern, bson.regex.Regex)):
        raise MongoError(2, "can't use a regex for _id")
    key = id_key(_id)
    if key in store._documents:
        raise MongoError(
            11000,
            f"E11000 duplicate key error collection: {db}.{coll} index: _id_ dup key: "
            f"{{ _id: {_id!r} }}",
            keyPattern={"_id": 1}, keyValue={"_id": _id})
    specs = unique_specs(store)
    if specs:
        new_keys = engine.unique.check(db, coll, store, doc, key, specs)
        engine.unique.register(new_keys, key)
    lookups = maintained_lookups(store)
    store._documents[key] = doc
    if lookups is not None:
        lookups.add(key, doc)
    engine.mark(db, coll)
    if engine.changes is not None:
        engine.changes.insert(db, coll, doc)
    return doc


def pipeline_runner(engine, db):
    """A function applying an update pipeline to (a copy of) one document."""
    database = engine.client[db]

    def run(doc, pipeline):
        for stage in pipeline:
            if not isinstance(stage, dict) or len(stage) != 1:
                raise MongoError(2, "Invalid pipeline stage")
            name = next(iter(stage))
            if name not in ("$addFields", "$set", "$project", "$unset", "$replaceRoot",
                            "$replaceWith"):
                raise MongoError(72, f"{name} is not allowed to be used within an update")
        [new] = mm_aggregate.process_pipeline([clone(doc)], database, pipeline, None)
        return new
    return run


def touched_fields(upd):
    """The top-level fields an update may write; None when it may write any."""
    if upd.kind != "ops":
        return None
    out = set()
    for op, _path, parts, value in upd.ops:
        if parts[0].startswith("$"):
            return None
        out.add(parts[0])
        if op == "$rename":
            out.add(value.split(".")[0])
    return out


def update_one_doc(engine, db, coll, store, doc, upd, query):
    """Apply an update to one stored document; returns True if it was modified."""
    engine.encoded.pop(id(doc), None)
    specs = unique_specs(store)
    own_key = id_key(doc.get("_id"))
    old_keys = None
    if specs:
        old_keys = engine.unique.current_keys(db, coll, store, doc, specs)
    undo = apply_update(doc, upd, query, False, pipeline_runner(engine, db)
                        if upd.kind == "pipeline" else None)
    if not undo.changed():
        return False
    if specs:
        try:
            new_keys = engine.unique.check(db, coll, store, doc, own_key, specs)
        except MongoError:
            undo.undo()
            raise
        engine.unique.register(new_keys, own_key, old_keys)
    lookups = maintained_lookups(store)
    if lookups is not None:
        lookups.refile(own_key, doc, touched_fields(upd))
    engine.mark(db, coll)
    if engine.changes is not None:
        if upd.kind == "replace":
            engine.changes.replace(db, coll, doc)
        else:
            engine.changes.update(db, coll, doc, undo)
    return True


def upsert_doc(engine, db, coll, store, upd, query):
    """Insert the document an upsert that matched nothing creates; returns it."""
    if upd.kind == "replace":
        new = clone(upd.replacement)
        if "_id" not in new:
            seed = upsert_seed(query)
            if "_id" in seed:
                new = {"_id": seed["_id"], **new}
    else:
        new = upsert_seed(query)
        apply_update(new, upd, query, True, pipeline_runner(engine, db)
                     if upd.kind == "pipeline" else None)
    return insert_doc(engine, db, coll, store, new)


def delete_doc(engine, db, coll, store, doc):
    key = id_key(doc.get("_id"))
    if store._documents.pop(key, None) is not None:
        if store.indexes:
            engine.unique.unregister(db, coll, store, doc, key)
        lookups = maintained_lookups(store)
        if lookups is not None:
            lookups.remove(key)
        engine.mark(db, coll)
        if engine.changes is not None:
            engine.changes.delete(db, coll, doc.get("_id"))
        return True
    return False
