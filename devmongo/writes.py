"""Writing one document: insert, update in place, upsert and delete, each keeping the unique-index
maps, the index lookups and the BSON cache current and marking the collection changed.

MongoDB's limits on stored documents are enforced here: at most 100 levels of nesting (code 15
Overflow, on insert and update) and 16 MB after an update (17419, "Resulting document after
update is larger than 16777216"). The size of an updated document is known without encoding it
each time: ``engine.doc_sizes`` keeps an upper bound per document (its exact size when last
measured, plus what each update since may have added); it is encoded only when the bound
passes 16 MB, or on its first update.
"""

import datetime
import re

import bson
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.raw_bson import RawBSONDocument

from .errors import MongoError
from .expressions import process_pipeline
from .keys import id_key
from .limits import MAX_BSON_SIZE
from .reads import maintained_lookups, remember_encoding
from .unique import unique_specs
from .update import apply_update, clone, upsert_seed

MAX_DEPTH = 100  # levels of nesting of a stored document (the document itself is level 1)
_SIZES_MAX = 50000
_FIXED_SIZES = {type(None): 1, bool: 1, int: 8, Int64: 8, float: 8, datetime.datetime: 8, ObjectId: 12}


def _depth(value, budget):
    """Levels of non-empty documents/arrays in ``value`` (0 for a scalar or an empty one), not
    counted further than ``budget`` + 1."""
    t = type(value)
    if t is dict:
        children = value.values()
    elif t is list:
        children = value
    else:
        return 0
    if not children:
        return 0
    if budget <= 0:
        return 1
    deepest = 0
    for child in children:
        tc = type(child)
        if tc is dict or tc is list:
            d = _depth(child, budget - 1)
            if d > deepest:
                deepest = d
                if deepest >= budget:
                    break
    return 1 + deepest


def document_depth(doc):
    return 1 + max((_depth(v, MAX_DEPTH) for v in doc.values()), default=0)


def _value_size(value):
    """An upper bound of a value's BSON size."""
    size = _FIXED_SIZES.get(type(value))
    if size is not None:
        return size
    if type(value) is str:
        return 6 + (len(value) if value.isascii() else len(value.encode()))
    if isinstance(value, (dict, list)):
        return len(bson.encode({"": value}))
    if isinstance(value, bytes):
        return 5 + len(value)
    return 64


_SHRINKING = frozenset({"$unset", "$pull", "$pullAll", "$pop"})
_ADDING = frozenset({"$push", "$addToSet"})
_CONTAINERS = (dict, list)


def _value_at(doc, parts):
    node = doc
    for part in parts:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _operator_update_bounds(doc, undo):
    """(an upper bound of how much an operator update grew the document, whether it nested
    something deeper than 100 levels), from what it wrote: its paths, values and padded arrays."""
    grown = 0
    too_deep = False
    for op, parts, value in undo.concrete:
        if op in _SHRINKING:
            continue
        n = len(parts)
        path = 2 + 6 * n
        for p in parts:
            path += len(p)
        if op in _ADDING:
            items = value["$each"] if type(value) is dict and "$each" in value else (value,)
            for v in items:
                grown += path + 12 + _value_size(v)
                if type(v) in _CONTAINERS and n + 1 + _depth(v, MAX_DEPTH) > MAX_DEPTH:
                    too_deep = True
        elif op == "$rename":
            grown += 2 + len(value) + 6 * value.count(".")
            dest = value.split(".")
            if len(dest) + _depth(_value_at(doc, dest), MAX_DEPTH) > MAX_DEPTH:
                too_deep = True
        elif op in ("$set", "$setOnInsert", "$min", "$max"):
            grown += path + _value_size(value)
            if n > MAX_DEPTH or (type(value) in _CONTAINERS and n + _depth(value, MAX_DEPTH) > MAX_DEPTH):
                too_deep = True
        else:  # $inc $mul $bit $currentDate: a number or a date
            grown += path + 16
            if n > MAX_DEPTH:
                too_deep = True
    for container, key, old in undo.entries:  # arrays padded with nulls ($set: {"a.1000": x})
        if key is None and type(container) is list and len(container) > len(old):
            grown += 10 * (len(container) - len(old))
    return grown, too_deep


def _check_updated_size(engine, doc, growth, encoded_before):
    """Raise 17419 when the updated document is over 16 MB; keep its size bound current.
    ``growth``: an upper bound of what the update added (None: unknown). Returns the document's
    encoding when it had to be encoded (None otherwise)."""
    sizes = engine.doc_sizes
    entry = sizes.get(id(doc))
    base = None
    if encoded_before is not None:
        base = len(encoded_before.raw)
    elif entry is not None and entry[0] is doc:
        base = entry[1]
    size = None
    encoded = None
    if base is not None and growth is not None:
        size = base + growth
    if size is None or size > MAX_BSON_SIZE:
        raw = bson.encode(doc)
        size = len(raw)
        encoded = RawBSONDocument(raw)
    if size > MAX_BSON_SIZE:
        raise MongoError(17419, f"Resulting document after update is larger than {MAX_BSON_SIZE}")
    if len(sizes) >= _SIZES_MAX:
        sizes.clear()
    sizes[id(doc)] = (doc, size)
    return encoded


def insert_doc(engine, db, coll, store, doc):
    if not isinstance(doc, dict):
        raise MongoError(2, "document to insert must be an object")
    if document_depth(doc) > MAX_DEPTH:
        raise MongoError(15, f"cannot insert document because it exceeds {MAX_DEPTH} levels of nesting")
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
            f"E11000 duplicate key error collection: {db}.{coll} index: _id_ dup key: {{ _id: {_id!r} }}",
            keyPattern={"_id": 1},
            keyValue={"_id": _id},
        )
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
            if name not in ("$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith"):
                raise MongoError(72, f"{name} is not allowed to be used within an update")
        [new] = process_pipeline([clone(doc)], database, pipeline)
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
    encoded_before = engine.encoded.pop(id(doc), None)
    if encoded_before is not None:
        encoded_before = encoded_before[1] if encoded_before[0] is doc else None
    specs = unique_specs(store)
    own_key = id_key(doc.get("_id"))
    old_keys = None
    if specs:
        old_keys = engine.unique.current_keys(db, coll, store, doc, specs)
    undo = apply_update(doc, upd, query, False, pipeline_runner(engine, db) if upd.kind == "pipeline" else None)
    if not undo.changed():
        if encoded_before is not None:
            remember_encoding(engine, doc, encoded_before)
        return False
    try:
        if undo.concrete is None:  # replacement or pipeline: the whole document
            growth = None
            too_deep = document_depth(doc) > MAX_DEPTH
        else:
            growth, too_deep = _operator_update_bounds(doc, undo)
        if too_deep:
            raise MongoError(15, f"Document exceeds maximum nesting depth of {MAX_DEPTH}")
        if specs:
            new_keys = engine.unique.check(db, coll, store, doc, own_key, specs)
        encoded_after = _check_updated_size(engine, doc, growth, encoded_before)
    except MongoError:
        undo.undo()
        raise
    if specs:
        engine.unique.register(new_keys, own_key, old_keys)
    if encoded_after is not None:
        remember_encoding(engine, doc, encoded_after)
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
        apply_update(new, upd, query, True, pipeline_runner(engine, db) if upd.kind == "pipeline" else None)
    return insert_doc(engine, db, coll, store, new)


def delete_doc(engine, db, coll, store, doc):
    key = id_key(doc.get("_id"))
    if store._documents.pop(key, None) is not None:
        engine.doc_sizes.pop(id(doc), None)
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
