"""Reading a collection: the documents a filter matches (with the ``_id``, index-lookup and
simple-filter fast paths), sorting, projection and BSON encoding of stored documents.

Each fast path gives exactly the generic path's answer (mongomock's ``filter_applies`` over the
whole collection, in natural order) and hands back what it does not fully handle.
"""

import datetime
import itertools
import operator
import random

from bson.int64 import Int64
from bson.objectid import ObjectId
from mongomock.filtering import BsonComparable, filter_applies

from . import ordered
from .errors import MongoError
from .keys import encode, sort_key
from .lookup import Lookups, valid_filter
from .matching import generic_applies, matcher
from .projection import Projection
from .update import MISSING

_SIMPLE_ID_TYPES = (str, int, Int64, ObjectId, float, datetime.datetime)
# Stored documents at least this large (BSON bytes) keep their encoding until they change.
_ENCODED_MIN_SIZE = 8192
_ENCODED_MAX_ENTRIES = 256


# --------------------------------------------------------------------------- matching


def match(engine, store, flt, first_only=False, max_count=0):
    """The stored documents matching a filter (live objects, not copies), in natural order.

    ``first_only``/``max_count`` stop the scan early (natural order, no sort). Only the
    candidates of an ``_id`` or index lookup are matched when the filter allows one.
    """
    if first_only:
        max_count = 1
    if flt is None:
        flt = {}
    if not isinstance(flt, dict):
        raise MongoError(2, "the match filter must be an expression in an object")
    if store is None:
        filter_applies(flt, {})
        return []
    docs = store._documents
    if not flt:
        if max_count:
            return list(itertools.islice(docs.values(), max_count))
        return list(docs.values())
    applies = matcher(flt)
    idv = flt.get("_id", MISSING)
    if idv is not MISSING:
        if type(idv) in _SIMPLE_ID_TYPES:
            d = docs.get(idv)
            if d is None:
                applies({})
                return []
            return [d] if applies(d) else []
        if (
            type(idv) is dict
            and len(idv) == 1
            and type(idv.get("$in")) is list
            and all(type(v) in _SIMPLE_ID_TYPES for v in idv["$in"])
        ):
            out = []
            seen = set()
            for v in idv["$in"]:
                d = docs.get(v)
                if d is not None and id(d) not in seen and applies(d):
                    seen.add(id(d))
                    out.append(d)
            # Like MongoDB's _id index scan: results in _id order.
            out.sort(key=lambda d: BsonComparable(d["_id"]))
            if max_count:
                out = out[:max_count]
            applies({})
            return out
    if not docs:
        applies({})
        return []
    pool = candidates(engine, store, flt)
    if pool is None:
        pool = docs.values()
    elif not pool:
        applies({})
        return []
    decide = compile_simple_filter(flt)
    if decide is not None:

        def applies(d):
            answer = decide(d)
            return generic_applies(flt, d) if answer is None else answer

    if max_count:
        out = []
        for d in pool:
            if applies(d):
                out.append(d)
                if len(out) >= max_count:
                    break
        return out
    return [d for d in pool if applies(d)]


# --------------------------------------------------------------------------- index-ordered reads


def index_walk(engine, db, coll, store, flt, sort, count):
    """The first ``count`` matches of a sorted, limited query read in the order of an index that
    serves the sort (ordered.py), or None: match and sort instead."""
    if store is None or not store.indexes or not engine.use_lookups or not isinstance(flt, dict):
        return None
    if not store._documents or not ordered.walkable(flt):
        return None
    plan = None
    if flt and valid_filter(flt):
        lookups = store.__dict__.get("_devmongo_lookups")
        if lookups is None or not lookups.current_for(store):
            lookups = store._devmongo_lookups = Lookups(store)
        plan = lookups.plan(flt)
    size = plan[0] if plan is not None else None
    applies = matcher(flt) if flt else (lambda d: True)
    decide = compile_simple_filter(flt) if flt else None
    if decide is not None:

        def applies(d):
            answer = decide(d)
            return generic_applies(flt, d) if answer is None else answer

    return ordered.walk(engine, store, flt, sort, count, applies, size, engine.writes.get((db, coll), 0))


# --------------------------------------------------------------------------- index lookups


def candidates(engine, store, flt):
    """The documents an index lookup says may match ``flt`` (natural order, a superset of
    the matches), or None when the collection must be scanned."""
    if not store.indexes or not engine.use_lookups:
        return None
    lookups = store.__dict__.get("_devmongo_lookups")
    if lookups is None or not lookups.current_for(store):
        lookups = store._devmongo_lookups = Lookups(store)
    plan = lookups.plan(flt)
    if plan is None or plan[0] >= len(store._documents):
        return None
    found = lookups.candidates(plan[1])
    if found is None:  # out of step with the store: rebuild on the next query
        drop_lookups(store)
    return found


def maintained_lookups(store):
    """The store's lookups for a write to keep current, or None (none built, or built for
    a dict or indexes the store no longer has: those are dropped)."""
    lookups = store.__dict__.get("_devmongo_lookups")
    if lookups is not None and (lookups.docs is not store._documents or lookups.n_indexes != len(store.indexes)):
        store._devmongo_lookups = lookups = None
    return lookups


def drop_lookups(store):
    store.__dict__.pop("_devmongo_lookups", None)


# --------------------------------------------------------------------------- simple filters
# The commonest filters and sorts (top-level fields against plain scalars) decided without
# mongomock's generic matcher and BsonComparable keys. Each gives what the generic path gives;
# anything else goes to the generic path (a whole filter, a document, or a sort).

# BSON comparison class of the scalar types decided here. bool is left out (mongomock's equality
# has True == 1), as are null, arrays, documents, Decimal128, binary, regexes; NaN is handed back.
_SCALAR_CLASS = {str: 1, int: 2, Int64: 2, float: 2, datetime.datetime: 3, ObjectId: 4}
_SIMPLE_OPS = {"$eq": operator.eq, "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def _scalar_class(value):
    cls = _SCALAR_CLASS.get(type(value))
    if cls == 2 and value != value:  # NaN
        return None
    return cls


def compile_simple_filter(flt):
    """For a filter of top-level fields each equal to a scalar or compared with ``$eq $gt $gte
    $lt $lte`` against scalars (``{"status": "on_sale", "start": {"$gt": t}}``): a function of a
    document answering True/False when every field it reads holds a plain scalar, and None when
    one does not (missing, null, array, embedded document, bool, NaN...): the generic matcher then
    decides that document. Type bracketing as in MongoDB: a comparison across classes is false.
    None when the filter has another shape."""
    conds = []
    for field, cond in flt.items():
        if not isinstance(field, str) or not field or "." in field or field.startswith("$"):
            return None
        if type(cond) is dict:
            if not cond:
                return None
            tests = []
            for op, operand in cond.items():
                fn = _SIMPLE_OPS.get(op)
                cls = _scalar_class(operand)
                if fn is None or cls is None:
                    return None
                tests.append((fn, operand, cls))
        else:
            cls = _scalar_class(cond)
            if cls is None:
                return None
            tests = [(operator.eq, cond, cls)]
        conds.append((field, tuple(tests)))
    if not conds:
        return None

    def decide(doc):
        for field, tests in conds:
            value = doc.get(field, MISSING)
            cls = _SCALAR_CLASS.get(type(value))
            if cls is None or (cls == 2 and value != value):
                return None
            for fn, operand, operand_cls in tests:
                if cls != operand_cls or not fn(value, operand):
                    return False
        return True

    return decide


# --------------------------------------------------------------------------- sorting


def _simple_sort(docs, key, descending):
    """Sort on one top-level field holding scalars of one comparison class in every document
    (dates, strings, numbers without NaN, ObjectIds): Python's own order is BSON's there. Stable,
    like the generic path. False (docs untouched) when a value is anything else."""
    cls = None
    for d in docs:
        value = d.get(key, MISSING)
        c = _SCALAR_CLASS.get(type(value))
        if c is None or (c == 2 and value != value) or (cls is not None and c != cls):
            return False
        cls = c
    docs.sort(key=operator.itemgetter(key), reverse=descending)
    return True


def sort_docs(docs, sort, shuffle=False):
    """``docs`` sorted by a sort document (stable: ties keep their order; with ``shuffle`` they
    come in a random order, devmongoRandomTieBreak)."""
    if not sort:
        return docs
    if not isinstance(sort, dict):
        raise MongoError(2, "sort must be an object")
    result = list(docs)
    if shuffle:
        random.shuffle(result)
    if len(sort) == 1:
        ((key, direction),) = sort.items()
        if (
            direction in (1, -1)
            and not isinstance(direction, bool)
            and isinstance(key, str)
            and key
            and "." not in key
            and not key.startswith("$")
            and _simple_sort(result, key, direction < 0)
        ):
            return result
    for key, direction in reversed(list(sort.items())):
        if isinstance(direction, dict):
            raise MongoError(115, f"devmongo does not support sorting by {direction}")
        if direction not in (1, -1):
            raise MongoError(
                2, f"$sort key ordering must be 1 (for ascending) or -1 (for descending), got {direction!r} for {key}"
            )
        if key == "$natural":
            if direction < 0:
                result.reverse()
            continue
        parts = key.split(".")
        desc = direction < 0
        result.sort(key=lambda d, p=parts, r=desc: sort_key(d, p, r), reverse=desc)
    return result


# --------------------------------------------------------------------------- projection, BSON


def top_level_projector(projection):
    """For the common projection of whole top-level fields: a function projecting one document
    without mongomock's deep copy (find and findAndModify encode the reply to BSON at once, under
    the lock). Fields keep the document's order, ``_id`` first, as in MongoDB. None when the
    projection needs the general path (dotted paths, $elemMatch/$slice, mixed modes)."""
    if not isinstance(projection, dict):
        return None
    flags = {}
    for key, value in projection.items():
        if "." in key or key.startswith("$") or not isinstance(value, (bool, int)):
            return None
        flags[key] = bool(value)
    keep_id = flags.pop("_id", True)
    modes = set(flags.values())
    if not modes and keep_id:  # {"_id": 1}: only the _id
        modes = {True}
    if modes == {True}:
        keys = set(flags) | ({"_id"} if keep_id else set())
        return lambda doc: {k: v for k, v in doc.items() if k in keys}
    if modes <= {False}:
        dropped = set(flags) | (set() if keep_id else {"_id"})
        return lambda doc: {k: v for k, v in doc.items() if k not in dropped}
    return None


def project(engine, db, coll, doc, projection, query=None):
    """A projected copy of ``doc`` (``projection.py``)."""
    if not projection:
        return doc
    return Projection(projection).apply(doc, query or {})


def encode_stored(engine, doc):
    """A stored document as BSON. Large ones (a session is ~40 KB and takes ~0.3 ms to
    encode) are remembered until they change: only ``apply_update`` changes a stored
    document in place, and ``writes.update_one_doc`` forgets the document before calling it. The
    entry holds the document, so its id cannot be reused while remembered."""
    cache = engine.encoded
    hit = cache.get(id(doc))
    if hit is not None and hit[0] is doc:
        return hit[1]
    raw = encode(doc)
    if len(raw.raw) >= _ENCODED_MIN_SIZE:
        if len(cache) >= _ENCODED_MAX_ENTRIES:
            cache.clear()
        cache[id(doc)] = (doc, raw)
    return raw


def remember_encoding(engine, doc, raw):
    """Keep a large stored document's encoding (made anyway) for its next whole read."""
    if len(raw.raw) >= _ENCODED_MIN_SIZE:
        cache = engine.encoded
        if len(cache) >= _ENCODED_MAX_ENTRIES:
            cache.clear()
        cache[id(doc)] = (doc, raw)


def encode_projected(engine, db, coll, doc, projection, query=None):
    """One document as BSON, projected; whole top-level fields without a general copy."""
    if not projection:
        return encode_stored(engine, doc)
    projector = top_level_projector(projection)
    if projector is not None:
        return encode(projector(doc))
    return encode(project(engine, db, coll, doc, projection, query))
