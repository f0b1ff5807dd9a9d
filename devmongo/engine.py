"""Command execution: MongoDB commands run against one mongomock store under one global lock."""

import datetime
import itertools
import logging
import operator
import os
import random
import re
import threading
import time

import bson
import mongomock
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.raw_bson import RawBSONDocument
from mongomock import aggregate as mm_aggregate
from mongomock import helpers as mm_helpers
from mongomock.filtering import BsonComparable, bson_compare, filter_applies

from .errors import MongoError
from .lookup import Lookups
from .matching import matcher
from .update import MISSING, apply_update, clone, prepare_update, upsert_seed

log = logging.getLogger("devmongo")

MAX_BSON_SIZE = 16 * 1024 * 1024
MAX_MESSAGE_SIZE = 48000000
MAX_WRITE_BATCH = 100000
DEFAULT_FIRST_BATCH = 101
CURSOR_TIMEOUT = 600.0

_SIMPLE_ID_TYPES = (str, int, Int64, ObjectId, float, datetime.datetime)
# Stored documents at least this large (BSON bytes) keep their encoding until they change.
_ENCODED_MIN_SIZE = 8192
_ENCODED_MAX_ENTRIES = 256
_IGNORED_COLLATION = ({"locale": "simple"},)


def encode(doc):
    return RawBSONDocument(bson.encode(doc))


def id_key(value):
    if isinstance(value, dict):
        return mm_helpers.hashdict(value)
    return value


def to_mongo_error(exc):
    """Turn any exception raised while executing a command into a MongoError."""
    if isinstance(exc, MongoError):
        return exc
    if isinstance(exc, mongomock.DuplicateKeyError):
        return MongoError(11000, str(exc) or "E11000 duplicate key error")
    if isinstance(exc, mongomock.OperationFailure):
        code = getattr(exc, "code", None) or 2
        return MongoError(code, str(exc))
    if isinstance(exc, NotImplementedError):
        return MongoError(115, f"devmongo does not support this operation: {exc}")
    if isinstance(exc, (ValueError, TypeError, bson.errors.InvalidDocument)):
        return MongoError(2, f"{exc}")
    return MongoError(1, f"devmongo internal error: {type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------- index keys

def _leaf_values(node, parts, i=0):
    """Values at a dotted path, following arrays like a MongoDB multikey index."""
    if i == len(parts):
        return [node]
    part = parts[i]
    if isinstance(node, dict):
        if part in node:
            return _leaf_values(node[part], parts, i + 1)
        return []
    if isinstance(node, list):
        out = []
        if part.isdigit() and int(part) < len(node):
            out.extend(_leaf_values(node[int(part)], parts, i + 1))
        for elem in node:
            if isinstance(elem, dict):
                out.extend(_leaf_values(elem, parts, i))
        return out
    return []


def _canon(value):
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)
    if isinstance(value, dict):
        return ("d", tuple((k, _canon(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("l", tuple(_canon(v) for v in value))
    if value is None:
        return ("z",)
    try:
        hash(value)
        return (type(value).__name__, value)
    except TypeError:
        return (type(value).__name__, repr(value))


_EMPTY_ARRAY = ("emptyarray",)


def index_keys(spec, doc):
    """The set of (canonical) keys ``doc`` contributes to an index, empty if not indexed."""
    pfe = spec.get("partialFilterExpression")
    if pfe is not None and not filter_applies(pfe, doc):
        return set()
    per_field = []
    present = False
    for field, _direction in spec["key"]:
        values = _leaf_values(doc, field.split("."))
        if not values:
            per_field.append([("z",)])
            continue
        present = True
        keys = []
        for v in values:
            if isinstance(v, list):
                if not v:
                    keys.append(_EMPTY_ARRAY)
                else:
                    keys.extend(_canon(x) for x in v)
            else:
                keys.append(_canon(v))
        per_field.append(keys)
    if spec.get("sparse") and not present:
        return set()
    if len(per_field) == 1:
        return set(per_field[0])
    return set(itertools.product(*per_field))


def _key_value(spec, doc):
    out = {}
    for field, _d in spec["key"]:
        values = _leaf_values(doc, field.split("."))
        out[field] = values[0] if len(values) == 1 else (values or None)
    return out


def _fmt_key_value(kv):
    return "{ " + ", ".join(f"{k}: {v!r}" for k, v in kv.items()) + " }"


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


def _sort_key(doc, parts, descending):
    """MongoDB sort key: arrays sort by their smallest (ascending) or largest element."""
    values = []
    empty = False
    for v in _leaf_values(doc, parts):
        if isinstance(v, list):
            if v:
                values.extend(v)
            else:
                empty = True
        else:
            values.append(v)
    if not values:
        return (0,) if empty else (1, BsonComparable(None))
    best = values[0]
    cmp = operator.gt if descending else operator.lt
    for v in values[1:]:
        if bson_compare(cmp, v, best):
            best = v
    return (1, BsonComparable(best))


# --------------------------------------------------------------------------- fast paths
# The commonest filters and sorts (top-level fields against plain scalars) decided without
# mongomock's generic matcher and BsonComparable keys. Each gives what the generic path gives;
# anything else goes to the generic path (a whole filter, a document, or a sort).

# BSON comparison class of the scalar types decided here. bool is left out (mongomock's equality
# has True == 1), as are null, arrays, documents, Decimal128, binary, regexes; NaN is handed back.
_SCALAR_CLASS = {str: 1, int: 2, Int64: 2, float: 2, datetime.datetime: 3, ObjectId: 4}
_SIMPLE_OPS = {"$eq": operator.eq, "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt,
               "$lte": operator.le}


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


class _Cursor:
    __slots__ = ("ns", "docs", "pos", "last_used")

    def __init__(self, ns, docs, pos):
        self.ns = ns
        self.docs = docs
        self.pos = pos
        self.last_used = time.monotonic()


class _Handler:
    __slots__ = ("fn", "locked", "writes")

    def __init__(self, fn, locked=True, writes=False):
        self.fn = fn
        self.locked = locked
        self.writes = writes


class Engine:
    """Executes MongoDB commands against an in-memory mongomock store."""

    def __init__(self):
        self.lock = threading.Lock()
        self.client = mongomock.MongoClient()
        self.server_store = self.client._store
        self.cursors = {}
        self.started = time.time()
        self.change_counter = 0
        self.dirty = set()  # (db, coll) changed since the last snapshot
        self.connections = 0
        self._uniq = {}  # (db, coll) -> {index name: {key: id key}}
        self._cursor_creations = 0
        self._valid_db_names = set()
        self._encoded = {}  # id(stored document) -> (document, RawBSONDocument)
        h = _Handler
        self.handlers = {
            "hello": h(self.cmd_hello, locked=False),
            "isMaster": h(self.cmd_hello, locked=False),
            "ismaster": h(self.cmd_hello, locked=False),
            "ping": h(self.cmd_ok, locked=False),
            "buildInfo": h(self.cmd_build_info, locked=False),
            "buildinfo": h(self.cmd_build_info, locked=False),
            "endSessions": h(self.cmd_ok, locked=False),
            "killAllSessions": h(self.cmd_ok, locked=False),
            "refreshSessions": h(self.cmd_ok, locked=False),
            "whatsmyuri": h(self.cmd_ok, locked=False),
            "connectionStatus": h(self.cmd_connection_status, locked=False),
            "hostInfo": h(self.cmd_host_info, locked=False),
            "serverStatus": h(self.cmd_server_status, locked=False),
            "getParameter": h(self.cmd_get_parameter, locked=False),
            "getCmdLineOpts": h(self.cmd_get_cmd_line_opts, locked=False),
            "insert": h(self.cmd_insert, writes=True),
            "find": h(self.cmd_find),
            "getMore": h(self.cmd_get_more),
            "killCursors": h(self.cmd_kill_cursors),
            "update": h(self.cmd_update, writes=True),
            "delete": h(self.cmd_delete, writes=True),
            "findAndModify": h(self.cmd_find_and_modify, writes=True),
            "findandmodify": h(self.cmd_find_and_modify, writes=True),
            "count": h(self.cmd_count),
            "distinct": h(self.cmd_distinct),
            "aggregate": h(self.cmd_aggregate, writes=True),
            "createIndexes": h(self.cmd_create_indexes, writes=True),
            "listIndexes": h(self.cmd_list_indexes),
            "dropIndexes": h(self.cmd_drop_indexes, writes=True),
            "deleteIndexes": h(self.cmd_drop_indexes, writes=True),
            "listCollections": h(self.cmd_list_collections),
            "create": h(self.cmd_create, writes=True),
            "drop": h(self.cmd_drop, writes=True),
            "dropDatabase": h(self.cmd_drop_database, writes=True),
            "listDatabases": h(self.cmd_list_databases),
            "renameCollection": h(self.cmd_rename_collection, writes=True),
            "collStats": h(self.cmd_coll_stats),
            "dbStats": h(self.cmd_db_stats),
        }

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
                    reply = handler.fn(db, cmd)
            else:
                reply = handler.fn(db, cmd, conn_id)
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

    # ------------------------------------------------------------------ helpers

    def _mark(self, db, coll):
        self.change_counter += 1
        self.dirty.add((db, coll))

    def _store(self, db, coll):
        return self.server_store[db][coll]

    def _existing_store(self, db, coll):
        dbs = self.server_store._databases.get(db)
        if dbs is None:
            return None
        st = dbs._collections.get(coll)
        if st is None or not st.is_created:
            return None
        return st

    @staticmethod
    def _coll_name(cmd, key):
        name = cmd[key]
        if not isinstance(name, str):
            raise MongoError(2, f"collection name has invalid type {type(name).__name__}")
        if not name or "$" in name or "\0" in name or name.startswith("."):
            raise MongoError(73, f"Invalid collection name: {name!r}")
        return name

    def _check_db(self, db):
        if type(db) is str and db in self._valid_db_names:
            return
        if not db or any(c in db for c in '/\\. "$\0'):
            raise MongoError(73, f"Invalid database name: '{db}'")
        if len(self._valid_db_names) < 10000:
            self._valid_db_names.add(db)

    @staticmethod
    def _check_collation(cmd_or_stmt):
        collation = cmd_or_stmt.get("collation")
        if collation and collation not in _IGNORED_COLLATION:
            raise MongoError(115, "devmongo does not support collations")

    def _match(self, store, flt, first_only=False, max_count=0):
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
        if store._ttl_indexes:
            before = len(store._documents)
            store._remove_expired_documents()
            if len(store._documents) != before:
                self._drop_lookups(store)
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
            if (type(idv) is dict and len(idv) == 1 and type(idv.get("$in")) is list
                    and all(type(v) in _SIMPLE_ID_TYPES for v in idv["$in"])):
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
        pool = self._candidates(store, flt)
        if pool is None:
            pool = docs.values()
        elif not pool:
            applies({})
            return []
        decide = compile_simple_filter(flt)
        if decide is not None:
            def applies(d):
                answer = decide(d)
                return filter_applies(flt, d) if answer is None else answer
        if max_count:
            out = []
            for d in pool:
                if applies(d):
                    out.append(d)
                    if len(out) >= max_count:
                        break
            return out
        return [d for d in pool if applies(d)]

    # ------------------------------------------------------------------ index lookups

    use_lookups = True  # False: every query scans (tests compare both)

    def _candidates(self, store, flt):
        """The documents an index lookup says may match ``flt`` (natural order, a superset of
        the matches), or None when the collection must be scanned."""
        if not store.indexes or not self.use_lookups:
            return None
        lookups = store.__dict__.get("_devmongo_lookups")
        if lookups is None or not lookups.current_for(store):
            lookups = store._devmongo_lookups = Lookups(store)
        plan = lookups.plan(flt)
        if plan is None or plan[0] >= len(store._documents):
            return None
        found = lookups.candidates(plan[1])
        if found is None:  # out of step with the store: rebuild on the next query
            self._drop_lookups(store)
        return found

    @staticmethod
    def _maintained_lookups(store):
        """The store's lookups for a write to keep current, or None (none built, or built for
        a dict or indexes the store no longer has: those are dropped)."""
        lookups = store.__dict__.get("_devmongo_lookups")
        if lookups is not None and (lookups.docs is not store._documents
                                    or lookups.n_indexes != len(store.indexes)):
            store._devmongo_lookups = lookups = None
        return lookups

    @staticmethod
    def _drop_lookups(store):
        store.__dict__.pop("_devmongo_lookups", None)

    @staticmethod
    def _touched_fields(upd):
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

    @staticmethod
    def _sort(docs, sort):
        if not sort:
            return docs
        if not isinstance(sort, dict):
            raise MongoError(2, "sort must be an object")
        result = list(docs)
        if len(sort) == 1:
            (key, direction), = sort.items()
            if (direction in (1, -1) and not isinstance(direction, bool) and isinstance(key, str)
                    and key and "." not in key and not key.startswith("$")
                    and _simple_sort(result, key, direction < 0)):
                return result
        for key, direction in reversed(list(sort.items())):
            if isinstance(direction, dict):
                raise MongoError(115, f"devmongo does not support sorting by {direction}")
            if direction not in (1, -1):
                raise MongoError(2, f"$sort key ordering must be 1 (for ascending) or -1 (for "
                                    f"descending), got {direction!r} for {key}")
            if key == "$natural":
                if direction < 0:
                    result.reverse()
                continue
            parts = key.split(".")
            desc = direction < 0
            result.sort(key=lambda d, p=parts, r=desc: _sort_key(d, p, r), reverse=desc)
        return result

    def _project(self, db, coll, doc, projection):
        if not projection:
            return doc
        if not isinstance(projection, dict):
            raise MongoError(2, "projection must be an object")
        for key, value in projection.items():
            if key.endswith(".$") or ".$." in key:
                raise MongoError(115, "devmongo does not support the positional $ projection")
            if isinstance(value, dict) and not ({"$elemMatch", "$slice"} >= set(value)):
                raise MongoError(115, f"devmongo does not support projection expressions: "
                                      f"{key}: {value!r}")
            if isinstance(value, str):
                raise MongoError(115, "devmongo does not support literal/field-path projections")
        mcoll = self.client[db][coll]
        try:
            return mcoll._copy_only_fields(doc, dict(projection), dict)
        except ValueError as exc:
            raise MongoError(31254, f"Cannot do exclusion on a field in inclusion projection: "
                                    f"{exc}") from exc

    def _encode_stored(self, doc):
        """A stored document as BSON. Large ones (a session is ~40 KB and takes ~0.3 ms to
        encode) are remembered until they change: only ``apply_update`` changes a stored
        document in place, and ``_update_one_doc`` forgets the document before calling it. The
        entry holds the document, so its id cannot be reused while remembered."""
        hit = self._encoded.get(id(doc))
        if hit is not None and hit[0] is doc:
            return hit[1]
        raw = encode(doc)
        if len(raw.raw) >= _ENCODED_MIN_SIZE:
            if len(self._encoded) >= _ENCODED_MAX_ENTRIES:
                self._encoded.clear()
            self._encoded[id(doc)] = (doc, raw)
        return raw

    def _encode_projected(self, db, coll, doc, projection):
        """One document as BSON, projected; whole top-level fields without mongomock's copy."""
        if not projection:
            return self._encode_stored(doc)
        project = top_level_projector(projection)
        if project is not None:
            return encode(project(doc))
        return encode(self._project(db, coll, doc, projection))

    # ------------------------------------------------------------------ unique indexes

    def _unique_specs(self, store):
        if not store.indexes:
            return ()
        return [(n, s) for n, s in store.indexes.items() if s.get("unique")]

    def _uniq_map(self, db, coll, store, name, spec):
        maps = self._uniq.setdefault((db, coll), {})
        m = maps.get(name)
        if m is None:
            m = {}
            for k, d in store._documents.items():
                for key in index_keys(spec, d):
                    m.setdefault(key, k)
            maps[name] = m
        return m

    def _dup_error(self, db, coll, name, spec, doc):
        kv = _key_value(spec, doc)
        return MongoError(
            11000,
            f"E11000 duplicate key error collection: {db}.{coll} index: {name} dup key: "
            f"{_fmt_key_value(kv)}",
            keyPattern=dict(spec["key"]), keyValue=clone(kv))

    def _check_unique(self, db, coll, store, doc, own_key, specs):
        """Raise 11000 if ``doc`` collides with another document; return its keys."""
        new_keys = []
        for name, spec in specs:
            m = self._uniq_map(db, coll, store, name, spec)
            keys = index_keys(spec, doc)
            for k in keys:
                owner = m.get(k, MISSING)
                if owner is MISSING or owner == own_key:
                    continue
                other = store._documents.get(owner)
                if other is not None and other is not doc and k in index_keys(spec, other):
                    raise self._dup_error(db, coll, name, spec, doc)
            new_keys.append((m, keys))
        return new_keys

    @staticmethod
    def _register_keys(new_keys, own_key, old_keys=None):
        if old_keys:
            for (m, keys), (_m2, new) in zip(old_keys, new_keys, strict=True):
                for k in keys - new:
                    if m.get(k) == own_key:
                        del m[k]
        for m, keys in new_keys:
            for k in keys:
                m[k] = own_key

    def _unregister(self, db, coll, store, doc, own_key):
        maps = self._uniq.get((db, coll))
        if not maps:
            return
        for name, spec in self._unique_specs(store):
            m = maps.get(name)
            if m is None:
                continue
            for k in index_keys(spec, doc):
                if m.get(k) == own_key:
                    del m[k]

    def _invalidate(self, db, coll=None):
        """Forget the unique-key maps and index lookups of a collection (all of ``db``'s when
        ``coll`` is None); both are rebuilt when next needed."""
        if coll is None:
            for key in [k for k in self._uniq if k[0] == db]:
                del self._uniq[key]
        else:
            self._uniq.pop((db, coll), None)
        dbs = self.server_store._databases.get(db)
        if dbs is not None:
            stores = dbs._collections.values() if coll is None else [dbs._collections.get(coll)]
            for store in stores:
                if store is not None:
                    self._drop_lookups(store)

    # ------------------------------------------------------------------ writes

    def _insert_doc(self, db, coll, store, doc):
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
        specs = self._unique_specs(store)
        if specs:
            new_keys = self._check_unique(db, coll, store, doc, key, specs)
            self._register_keys(new_keys, key)
        lookups = self._maintained_lookups(store)
        store._documents[key] = doc
        if lookups is not None:
            lookups.add(key, doc)
        self._mark(db, coll)
        return doc

    def cmd_insert(self, db, cmd):
        self._check_db(db)
        coll = self._coll_name(cmd, "insert")
        docs = cmd.get("documents") or []
        if len(docs) > MAX_WRITE_BATCH:
            raise MongoError(16, "Write batch sizes must be between 1 and 100000")
        ordered = cmd.get("ordered", True)
        store = self._store(db, coll)
        n = 0
        errors = []
        for i, doc in enumerate(docs):
            try:
                self._insert_doc(db, coll, store, doc)
                n += 1
            except Exception as exc:  # noqa: BLE001
                errors.append(to_mongo_error(exc).to_write_error(i))
                if ordered:
                    break
        reply = {"n": n}
        if errors:
            reply["writeErrors"] = errors
        reply["ok"] = 1.0
        return reply

    def _pipeline_runner(self, db):
        database = self.client[db]

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

    def _update_one_doc(self, db, coll, store, doc, upd, query):
        """Apply an update to one stored document; returns True if it was modified."""
        self._encoded.pop(id(doc), None)
        specs = self._unique_specs(store)
        own_key = id_key(doc.get("_id"))
        old_keys = None
        if specs:
            old_keys = [(self._uniq_map(db, coll, store, n, s), index_keys(s, doc))
                        for n, s in specs]
        undo = apply_update(doc, upd, query, False, self._pipeline_runner(db)
                            if upd.kind == "pipeline" else None)
        if not undo.changed():
            return False
        if specs:
            try:
                new_keys = self._check_unique(db, coll, store, doc, own_key, specs)
            except MongoError:
                undo.undo()
                raise
            self._register_keys(new_keys, own_key, old_keys)
        lookups = self._maintained_lookups(store)
        if lookups is not None:
            lookups.refile(own_key, doc, self._touched_fields(upd))
        self._mark(db, coll)
        return True

    def _upsert_doc(self, db, coll, store, upd, query):
        if upd.kind == "replace":
            new = clone(upd.replacement)
            if "_id" not in new:
                seed = upsert_seed(query)
                if "_id" in seed:
                    new = {"_id": seed["_id"], **new}
        else:
            new = upsert_seed(query)
            apply_update(new, upd, query, True, self._pipeline_runner(db)
                         if upd.kind == "pipeline" else None)
        return self._insert_doc(db, coll, store, new)

    def _update_statement(self, db, coll, store, stmt):
        if not isinstance(stmt, dict) or "u" not in stmt:
            raise MongoError(40414, "BSON field 'update.updates.u' is missing but a required "
                                    "field")
        self._check_collation(stmt)
        if stmt.get("let") is not None:
            raise MongoError(115, "devmongo does not support 'let'")
        query = stmt.get("q") or {}
        multi = bool(stmt.get("multi", False))
        upd = prepare_update(stmt["u"], stmt.get("arrayFilters"))
        if multi and upd.kind == "replace":
            raise MongoError(9, "multi update is not supported for replacement-style update")
        docs = self._match(store, query, first_only=not multi)
        matched = modified = 0
        for doc in docs:
            matched += 1
            if self._update_one_doc(db, coll, store, doc, upd, query):
                modified += 1
        upserted = MISSING
        if not docs and stmt.get("upsert"):
            upserted = self._upsert_doc(db, coll, store, upd, query)["_id"]
        return matched, modified, upserted

    def cmd_update(self, db, cmd):
        self._check_db(db)
        coll = self._coll_name(cmd, "update")
        stmts = cmd.get("updates") or []
        if len(stmts) > MAX_WRITE_BATCH:
            raise MongoError(16, "Write batch sizes must be between 1 and 100000")
        ordered = cmd.get("ordered", True)
        store = self._store(db, coll)
        n = n_modified = 0
        upserted = []
        errors = []
        for i, stmt in enumerate(stmts):
            try:
                matched, modified, up_id = self._update_statement(db, coll, store, stmt)
            except Exception as exc:  # noqa: BLE001
                errors.append(to_mongo_error(exc).to_write_error(i))
                if ordered:
                    break
                continue
            n += matched
            n_modified += modified
            if up_id is not MISSING:
                n += 1
                upserted.append({"index": i, "_id": clone(up_id)})
        reply = {"n": n, "nModified": n_modified}
        if upserted:
            reply["upserted"] = upserted
        if errors:
            reply["writeErrors"] = errors
        reply["ok"] = 1.0
        return reply

    def _delete_doc(self, db, coll, store, doc):
        key = id_key(doc.get("_id"))
        if store._documents.pop(key, None) is not None:
            if store.indexes:
                self._unregister(db, coll, store, doc, key)
            lookups = self._maintained_lookups(store)
            if lookups is not None:
                lookups.remove(key)
            self._mark(db, coll)
            return True
        return False

    def cmd_delete(self, db, cmd):
        self._check_db(db)
        coll = self._coll_name(cmd, "delete")
        stmts = cmd.get("deletes") or []
        ordered = cmd.get("ordered", True)
        store = self._existing_store(db, coll)
        n = 0
        errors = []
        for i, stmt in enumerate(stmts):
            try:
                if not isinstance(stmt, dict) or "q" not in stmt:
                    raise MongoError(40414, "BSON field 'delete.deletes.q' is missing but a "
                                            "required field")
                self._check_collation(stmt)
                limit = stmt.get("limit", 0)
                if limit not in (0, 1):
                    raise MongoError(9, f"The limit field in delete objects must be 0 or 1. Got "
                                        f"{limit}")
                for doc in self._match(store, stmt["q"], first_only=limit == 1):
                    if self._delete_doc(db, coll, store, doc):
                        n += 1
            except Exception as exc:  # noqa: BLE001
                errors.append(to_mongo_error(exc).to_write_error(i))
                if ordered:
                    break
        reply = {"n": n}
        if errors:
            reply["writeErrors"] = errors
        reply["ok"] = 1.0
        return reply

    def cmd_find_and_modify(self, db, cmd):
        self._check_db(db)
        coll = self._coll_name(cmd, next(iter(cmd)))
        self._check_collation(cmd)
        if cmd.get("let") is not None:
            raise MongoError(115, "devmongo does not support 'let'")
        query = cmd.get("query") or {}
        sort = cmd.get("sort")
        remove = bool(cmd.get("remove", False))
        update = cmd.get("update")
        new = bool(cmd.get("new", False))
        upsert = bool(cmd.get("upsert", False))
        fields = cmd.get("fields")
        if remove:
            if update is not None:
                raise MongoError(9, "Cannot specify both an update and remove=true")
            if new:
                raise MongoError(9, "Cannot specify both new=true and remove=true; 'remove' "
                                    "always returns the deleted document")
            if upsert:
                raise MongoError(9, "Cannot specify both upsert=true and remove=true")
        elif update is None:
            raise MongoError(9, "Either an update or remove=true must be specified")
        upd = None if remove else prepare_update(update, cmd.get("arrayFilters"))
        store = self._store(db, coll) if not remove else self._existing_store(db, coll)
        docs = self._match(store, query, first_only=not sort)
        if sort and docs:
            docs = self._sort(docs, sort)
        target = docs[0] if docs else None
        leo = {}
        value = None
        if target is not None and remove:
            value = self._encode_projected(db, coll, target, fields)
            self._delete_doc(db, coll, store, target)
            leo = {"n": 1}
        elif target is not None:
            before = None if new else self._encode_projected(db, coll, target, fields)
            self._update_one_doc(db, coll, store, target, upd, query)
            value = self._encode_projected(db, coll, target, fields) if new else before
            leo = {"n": 1, "updatedExisting": True}
        elif upsert:
            doc = self._upsert_doc(db, coll, store, upd, query)
            if new:
                value = self._encode_projected(db, coll, doc, fields)
            leo = {"n": 1, "updatedExisting": False, "upserted": clone(doc["_id"])}
        else:
            leo = {"n": 0} if remove else {"n": 0, "updatedExisting": False}
        return {"lastErrorObject": leo, "value": value, "ok": 1.0}

    # ------------------------------------------------------------------ reads and cursors

    def _new_cursor_id(self):
        while True:
            cid = random.getrandbits(62) + 1
            if cid not in self.cursors:
                return cid

    def _expire_cursors(self):
        now = time.monotonic()
        for cid in [c for c, cur in self.cursors.items()
                    if now - cur.last_used > CURSOR_TIMEOUT]:
            del self.cursors[cid]

    @staticmethod
    def _take(docs, pos, count):
        """Take up to ``count`` (None: unlimited) encoded docs within the 16MB batch limit."""
        end = len(docs)
        if count is not None:
            end = min(end, pos + count)
        size = 0
        i = pos
        while i < end:
            size += len(docs[i].raw)
            if size > MAX_BSON_SIZE and i > pos:
                break
            i += 1
        return docs[pos:i], i

    def _cursor_reply(self, ns, docs, batch_size=None, single_batch=False):
        """docs: a list of RawBSONDocument. Opens a server cursor if more remain."""
        first_n = DEFAULT_FIRST_BATCH if batch_size is None else batch_size
        batch, pos = self._take(docs, 0, first_n)
        cid = 0
        if pos < len(docs) and not single_batch:
            self._cursor_creations += 1
            if self._cursor_creations % 256 == 0:
                self._expire_cursors()
            cid = self._new_cursor_id()
            self.cursors[cid] = _Cursor(ns, docs, pos)
        return {"cursor": {"firstBatch": batch, "id": Int64(cid), "ns": ns}, "ok": 1.0}

    @staticmethod
    def _batch_size(spec, field="batchSize"):
        value = spec.get(field) if isinstance(spec, dict) else None
        if value is None:
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise MongoError(2, f"{field} value must be non-negative, but received: {value}")
        return int(value)

    def cmd_find(self, db, cmd):
        self._check_db(db)
        coll = self._coll_name(cmd, "find")
        self._check_collation(cmd)
        for unsupported in ("tailable", "awaitData", "returnKey", "showRecordId", "min", "max",
                            "let"):
            if cmd.get(unsupported):
                raise MongoError(115, f"devmongo does not support find option '{unsupported}'")
        flt = cmd.get("filter") or {}
        skip = cmd.get("skip") or 0
        limit = cmd.get("limit") or 0
        if skip < 0:
            raise MongoError(51024, f"BSON field 'skip' value must be >= 0, actual value "
                                    f"'{skip}'")
        if limit < 0:
            raise MongoError(51024, f"BSON field 'limit' value must be >= 0, actual value "
                                    f"'{limit}'")
        batch_size = self._batch_size(cmd)
        sort = cmd.get("sort")
        projection = cmd.get("projection")
        store = self._existing_store(db, coll)
        docs = self._match(store, flt, max_count=0 if sort or not limit else skip + limit)
        if sort:
            docs = self._sort(docs, sort)
        if skip:
            docs = docs[skip:]
        if limit:
            docs = docs[:limit]
        project = top_level_projector(projection) if projection else None
        if project is not None:
            encoded = [encode(project(d)) for d in docs]
        elif projection:
            encoded = [encode(self._project(db, coll, d, projection)) for d in docs]
        else:
            encoded = [self._encode_stored(d) for d in docs]
        single_batch = bool(cmd.get("singleBatch"))
        if single_batch and batch_size is None and limit:
            batch_size = limit
        return self._cursor_reply(f"{db}.{coll}", encoded, batch_size, single_batch or limit == 1)

    def cmd_get_more(self, db, cmd):
        cid = cmd["getMore"]
        if not isinstance(cid, int):
            raise MongoError(14, "getMore cursor id must be a long")
        coll = cmd.get("collection")
        cur = self.cursors.get(cid)
        if cur is None:
            raise MongoError(43, f"cursor id {cid} not found")
        if coll is not None and cur.ns != f"{db}.{coll}" and not cur.ns.startswith(f"{db}.$cmd"):
            raise MongoError(13, f"Requested getMore on namespace '{db}.{coll}', but cursor "
                                 f"belongs to a different namespace {cur.ns}")
        batch, pos = self._take(cur.docs, cur.pos, self._batch_size(cmd) or None)
        cur.pos = pos
        cur.last_used = time.monotonic()
        if pos >= len(cur.docs):
            del self.cursors[cid]
            cid = 0
        return {"cursor": {"nextBatch": batch, "id": Int64(cid), "ns": cur.ns}, "ok": 1.0}

    def cmd_kill_cursors(self, db, cmd):
        killed, not_found = [], []
        for cid in cmd.get("cursors") or []:
            if self.cursors.pop(cid, None) is not None:
                killed.append(Int64(cid))
            else:
                not_found.append(Int64(cid))
        return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [],
                "cursorsUnknown": [], "ok": 1.0}

    def cmd_count(self, db, cmd):
        coll = self._coll_name(cmd, "count")
        self._check_collation(cmd)
        store = self._existing_store(db, coll)
        n = len(self._match(store, cmd.get("query") or {}))
        skip = int(cmd.get("skip") or 0)
        limit = int(cmd.get("limit") or 0)
        n = max(0, n - skip)
        if limit:
            n = min(n, abs(limit))
        return {"n": n, "ok": 1.0}

    def cmd_distinct(self, db, cmd):
        coll = self._coll_name(cmd, "distinct")
        self._check_collation(cmd)
        key = cmd.get("key")
        if not isinstance(key, str):
            raise MongoError(14, "BSON field 'distinct.key' is the wrong type, expected type "
                                 "'string'")
        store = self._existing_store(db, coll)
        parts = key.split(".")
        seen = set()
        values = []
        for doc in self._match(store, cmd.get("query") or {}):
            for v in _leaf_values(doc, parts):
                for item in (v if isinstance(v, list) else [v]):
                    c = _canon(item)
                    if c not in seen:
                        seen.add(c)
                        values.append(clone(item))
        return {"values": values, "ok": 1.0}

    @staticmethod
    def _count_pipeline(pipeline):
        """Recognise pymongo's count_documents pipeline; return (filter, skip, limit)."""
        if not pipeline or len(pipeline) > 4:
            return None
        last = pipeline[-1]
        if last != {"$group": {"_id": 1, "n": {"$sum": 1}}}:
            return None
        flt, skip, limit = {}, 0, 0
        for stage in pipeline[:-1]:
            if len(stage) != 1:
                return None
            (name, arg), = stage.items()
            if name == "$match" and not skip and not limit and not flt and isinstance(arg, dict):
                flt = arg
            elif name == "$skip" and not limit and isinstance(arg, int):
                skip = arg
            elif name == "$limit" and isinstance(arg, int):
                limit = arg
            else:
                return None
        return flt, skip, limit

    @staticmethod
    def _rewrite_stages(stages):
        """Rewrite stages mongomock gets wrong into their documented equivalents."""
        out = []
        for stage in stages:
            if "$count" in stage:
                name = stage["$count"]
                if not isinstance(name, str) or not name or name.startswith("$") or "." in name:
                    raise MongoError(40156, "the count field must be a non-empty string, not "
                                            "start with '$' and not contain '.'")
                out.append({"$group": {"_id": None, name: {"$sum": 1}}})
                out.append({"$project": {"_id": 0}})
            else:
                out.append(stage)
        return out

    def cmd_aggregate(self, db, cmd):
        self._check_db(db)
        target = cmd["aggregate"]
        pipeline = cmd.get("pipeline")
        if not isinstance(pipeline, list):
            raise MongoError(14, "'pipeline' option must be specified as an array")
        if cmd.get("explain"):
            raise MongoError(115, "devmongo does not support explain")
        if "cursor" not in cmd:
            raise MongoError(9, "The 'cursor' option is required, except for aggregate with the "
                                "explain argument")
        self._check_collation(cmd)
        if cmd.get("let") is not None:
            raise MongoError(115, "devmongo does not support 'let'")
        if not isinstance(target, str):
            raise MongoError(115, "devmongo does not support database-level aggregation")
        coll = self._coll_name(cmd, "aggregate")
        batch_size = self._batch_size(cmd.get("cursor"))
        store = self._existing_store(db, coll)
        ns = f"{db}.{coll}"
        counting = self._count_pipeline(pipeline)
        if counting is not None:
            flt, skip, limit = counting
            n = max(0, len(self._match(store, flt)) - skip)
            if limit:
                n = min(n, limit)
            docs = [encode({"_id": 1, "n": n})] if n else []
            return self._cursor_reply(ns, docs, batch_size)
        for stage in pipeline:
            if not isinstance(stage, dict) or len(stage) != 1:
                raise MongoError(40323, "A pipeline stage specification object must contain "
                                        "exactly one field.")
        writes = [next(iter(s)) for s in pipeline if next(iter(s)) in ("$out", "$merge")]
        if "$merge" in writes:
            raise MongoError(115, "devmongo does not support $merge")
        stages = pipeline
        if stages and "$match" in stages[0]:
            docs = self._match(store, stages[0]["$match"])
            stages = stages[1:]
        else:
            docs = self._match(store, {})
        results = [clone(d) for d in docs]
        database = self.client[db]
        for stage in self._rewrite_stages(stages):
            if "$group" in stage and not results:
                continue  # MongoDB: $group over no documents yields no documents
            results = list(mm_aggregate.process_pipeline(results, database, [stage], None))
        encoded = [encode(d) for d in results]
        if writes:
            out = pipeline[-1]["$out"]
            out_coll = out if isinstance(out, str) else out.get("coll")
            self._invalidate(db)
            self._mark(db, out_coll)
            encoded = []
        return self._cursor_reply(ns, encoded, batch_size)

    # ------------------------------------------------------------------ indexes

    _INDEX_OPTIONS = ("unique", "sparse", "expireAfterSeconds", "partialFilterExpression",
                      "collation", "weights", "default_language", "language_override",
                      "textIndexVersion", "2dsphereIndexVersion", "bits", "min", "max", "hidden",
                      "wildcardProjection")

    def cmd_create_indexes(self, db, cmd):
        self._check_db(db)
        coll = self._coll_name(cmd, "createIndexes")
        indexes = cmd.get("indexes")
        if not isinstance(indexes, list) or not indexes:
            raise MongoError(2, "Must specify at least one index to create")
        store = self._store(db, coll)
        created_auto = not store.is_created
        before = len(store.indexes) + 1 if store.is_created else 0
        note = None
        for spec in indexes:
            key = spec.get("key")
            name = spec.get("name")
            if not isinstance(key, dict) or not key:
                raise MongoError(67, "Index keys cannot be empty.")
            if not isinstance(name, str) or not name:
                raise MongoError(9, "Error in specification: the 'name' field is a required "
                                    "property of an index specification")
            key_list = []
            for field, direction in key.items():
                if direction in ("text", "2d", "2dsphere", "geoHaystack", "wildcard") or (
                        field.endswith("$**")):
                    raise MongoError(115, f"devmongo does not support {direction!r} indexes")
                if direction not in (1, -1, "hashed") and not (
                        isinstance(direction, (int, float)) and direction != 0):
                    raise MongoError(67, f"Values in index key pattern must be numbers or "
                                         f"'hashed': {field}: {direction!r}")
                key_list.append((field, direction))
            index_dict = {"key": key_list}
            for opt in self._INDEX_OPTIONS:
                if opt in spec and spec[opt] is not None and spec[opt] is not False:
                    index_dict[opt] = spec[opt]
            if "collation" in index_dict:
                raise MongoError(115, "devmongo does not support index collations")
            if name == "_id_" or key_list == [("_id", 1)]:
                if index_dict.get("unique") is False:
                    pass
                note = "all indexes already exist"
                continue
            existing = store.indexes.get(name)
            if existing is not None:
                if existing["key"] != key_list:
                    raise MongoError(86, f"An existing index has the same name as the requested "
                                         f"index. When index names are not specified, they are "
                                         f"auto generated and can cause conflicts. Requested "
                                         f"index: {spec}, existing index: {existing}")
                if existing != index_dict:
                    raise MongoError(85, f"An existing index has the same name as the requested "
                                         f"index but different options: {name}")
                note = "all indexes already exist"
                continue
            for other_name, other in store.indexes.items():
                if other["key"] == key_list and other != index_dict:
                    raise MongoError(85, f"Index already exists with a different name: "
                                         f"{other_name}")
                if other["key"] == key_list:
                    note = "all indexes already exist"
                    break
            else:
                if index_dict.get("unique"):
                    seen = {}
                    for k, d in store._documents.items():
                        for ik in index_keys(index_dict, d):
                            if ik in seen and seen[ik] != k:
                                err = self._dup_error(db, coll, name, index_dict, d)
                                raise MongoError(11000, "Index build failed: " + err.errmsg,
                                                 **err.extra)
                            seen[ik] = k
                store.create_index(name, index_dict)
                self._invalidate(db, coll)
        store.create()
        self._mark(db, coll)
        reply = {"numIndexesBefore": before, "numIndexesAfter": len(store.indexes) + 1,
                 "createdCollectionAutomatically": created_auto}
        if note and reply["numIndexesAfter"] == before:
            reply["note"] = note
        reply["ok"] = 1.0
        return reply

    @staticmethod
    def _index_doc(name, spec):
        doc = {"v": 2, "key": dict(spec["key"]), "name": name}
        for k, v in spec.items():
            if k != "key":
                doc[k] = clone(v)
        return doc

    def cmd_list_indexes(self, db, cmd):
        coll = self._coll_name(cmd, "listIndexes")
        store = self._existing_store(db, coll)
        if store is None:
            raise MongoError(26, f"ns does not exist: {db}.{coll}")
        docs = [{"v": 2, "key": {"_id": 1}, "name": "_id_"}]
        docs.extend(self._index_doc(n, s) for n, s in store.indexes.items())
        return self._cursor_reply(f"{db}.{coll}", [encode(d) for d in docs],
                                  self._batch_size(cmd.get("cursor")))

    def cmd_drop_indexes(self, db, cmd):
        coll = self._coll_name(cmd, next(iter(cmd)))
        store = self._existing_store(db, coll)
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
        self._invalidate(db, coll)
        self._mark(db, coll)
        return {"nIndexesWas": was, "ok": 1.0}

    # ------------------------------------------------------------------ collections, databases

    def cmd_list_collections(self, db, cmd):
        dbs = self.server_store._databases.get(db)
        names = dbs.list_created_collection_names() if dbs is not None else []
        name_only = bool(cmd.get("nameOnly"))
        flt = cmd.get("filter") or {}
        docs = []
        for name in sorted(names):
            if name_only:
                doc = {"name": name, "type": "collection"}
            else:
                doc = {"name": name, "type": "collection", "options": {},
                       "info": {"readOnly": False},
                       "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}
            if flt and not filter_applies(flt, doc):
                continue
            docs.append(encode(doc))
        return self._cursor_reply(f"{db}.$cmd.listCollections", docs,
                                  self._batch_size(cmd.get("cursor")))

    def cmd_create(self, db, cmd):
        self._check_db(db)
        coll = self._coll_name(cmd, "create")
        for opt in ("capped", "validator", "viewOn", "timeseries", "clusteredIndex",
                    "changeStreamPreAndPostImages", "encryptedFields"):
            if cmd.get(opt):
                raise MongoError(115, f"devmongo does not support collection option '{opt}'")
        self._check_collation(cmd)
        if self._existing_store(db, coll) is not None:
            raise MongoError(48, f"Collection {db}.{coll} already exists.")
        self._store(db, coll).create()
        self._mark(db, coll)
        return {"ok": 1.0}

    def _kill_ns_cursors(self, ns_prefix):
        for cid in [c for c, cur in self.cursors.items()
                    if cur.ns == ns_prefix or cur.ns.startswith(ns_prefix + ".")]:
            del self.cursors[cid]

    def cmd_drop(self, db, cmd):
        coll = self._coll_name(cmd, "drop")
        store = self._existing_store(db, coll)
        self._invalidate(db, coll)
        if store is None:
            return {"ok": 1.0}
        was = len(store.indexes) + 1
        store.drop()
        self.server_store[db]._collections.pop(coll, None)
        self._kill_ns_cursors(f"{db}.{coll}")
        self._mark(db, coll)
        return {"nIndexesWas": was, "ns": f"{db}.{coll}", "ok": 1.0}

    def cmd_drop_database(self, db, cmd):
        dbs = self.server_store._databases.get(db)
        self._invalidate(db)
        if dbs is not None:
            for name, store in list(dbs._collections.items()):
                store.drop()
                self._mark(db, name)
            dbs._collections.clear()
        self._kill_ns_cursors(db)
        return {"dropped": db, "ok": 1.0}

    def _db_size(self, dbs):
        return sum(len(st._documents) for st in dbs._collections.values()) * 256 + 8192

    def cmd_list_databases(self, db, cmd):
        out = []
        total = 0
        for name in sorted(self.server_store.list_created_database_names()):
            dbs = self.server_store._databases[name]
            size = self._db_size(dbs)
            total += size
            entry = {"name": name} if cmd.get("nameOnly") else {
                "name": name, "sizeOnDisk": float(size), "empty": False}
            flt = cmd.get("filter")
            if flt and not filter_applies(flt, entry):
                continue
            out.append(entry)
        reply = {"databases": out}
        if not cmd.get("nameOnly"):
            reply["totalSize"] = float(total)
            reply["totalSizeMb"] = total // (1024 * 1024)
        reply["ok"] = 1.0
        return reply

    def cmd_rename_collection(self, db, cmd):
        source = cmd["renameCollection"]
        to = cmd.get("to")
        if db != "admin":
            raise MongoError(13, "renameCollection may only be run against the admin database.")
        if not isinstance(source, str) or not isinstance(to, str) or "." not in source \
                or "." not in to:
            raise MongoError(73, "Invalid namespace specified")
        sdb, scoll = source.split(".", 1)
        tdb, tcoll = to.split(".", 1)
        if sdb != tdb:
            raise MongoError(115, "devmongo does not support renaming across databases")
        if self._existing_store(sdb, scoll) is None:
            raise MongoError(26, f"Source collection {source} does not exist")
        if self._existing_store(tdb, tcoll) is not None:
            if not cmd.get("dropTarget"):
                raise MongoError(48, "target namespace exists")
            self.cmd_drop(tdb, {"drop": tcoll})
        self.server_store[sdb].rename(scoll, tcoll)
        self._invalidate(sdb)
        self._kill_ns_cursors(source)
        self._mark(sdb, scoll)
        self._mark(tdb, tcoll)
        return {"ok": 1.0}

    def cmd_coll_stats(self, db, cmd):
        coll = self._coll_name(cmd, "collStats")
        store = self._existing_store(db, coll)
        count = len(store._documents) if store is not None else 0
        return {"ns": f"{db}.{coll}", "count": count, "size": count * 256,
                "avgObjSize": 256 if count else 0, "storageSize": count * 256,
                "nindexes": (len(store.indexes) + 1) if store is not None else 0, "ok": 1.0}

    def cmd_db_stats(self, db, cmd):
        dbs = self.server_store._databases.get(db)
        names = dbs.list_created_collection_names() if dbs is not None else []
        objects = sum(len(dbs._collections[n]._documents) for n in names)
        return {"db": db, "collections": len(names), "views": 0, "objects": objects,
                "dataSize": float(objects * 256), "ok": 1.0}

    # ------------------------------------------------------------------ handshake & admin

    def cmd_hello(self, db, cmd, conn_id):
        now = datetime.datetime.now(datetime.UTC)
        name = next(iter(cmd))
        reply = {"helloOk": True}
        if name == "hello":
            reply["isWritablePrimary"] = True
        else:
            reply["ismaster"] = True
        reply.update({
            "maxBsonObjectSize": MAX_BSON_SIZE,
            "maxMessageSizeBytes": MAX_MESSAGE_SIZE,
            "maxWriteBatchSize": MAX_WRITE_BATCH,
            "localTime": now.replace(microsecond=now.microsecond // 1000 * 1000),
            "logicalSessionTimeoutMinutes": 30,
            "connectionId": conn_id,
            "minWireVersion": 0,
            "maxWireVersion": 21,
            "readOnly": False,
            "ok": 1.0,
        })
        return reply

    def cmd_ok(self, db, cmd, conn_id):
        return {"ok": 1.0}

    def cmd_build_info(self, db, cmd, conn_id):
        return {"version": "7.0.0", "gitVersion": "devmongo", "versionArray": [7, 0, 0, 0],
                "modules": [], "allocator": "system", "javascriptEngine": "none",
                "sysInfo": "deprecated", "bits": 64, "debug": False,
                "maxBsonObjectSize": MAX_BSON_SIZE, "storageEngines": ["devmongo"],
                "openssl": {"running": "disabled"}, "ok": 1.0}

    def cmd_connection_status(self, db, cmd, conn_id):
        return {"authInfo": {"authenticatedUsers": [], "authenticatedUserRoles": []},
                "ok": 1.0}

    def cmd_host_info(self, db, cmd, conn_id):
        return {"system": {"hostname": os.uname().nodename, "cpuArch": os.uname().machine,
                           "numCores": os.cpu_count() or 1},
                "os": {"type": os.uname().sysname}, "extra": {}, "ok": 1.0}

    def cmd_server_status(self, db, cmd, conn_id):
        return {"host": os.uname().nodename, "version": "7.0.0", "process": "devmongo",
                "pid": Int64(os.getpid()), "uptime": float(time.time() - self.started),
                "localTime": datetime.datetime.now(datetime.UTC),
                "connections": {"current": self.connections}, "ok": 1.0}

    def cmd_get_parameter(self, db, cmd, conn_id):
        reply = {}
        if cmd.get("featureCompatibilityVersion") or cmd.get("getParameter") == "*":
            reply["featureCompatibilityVersion"] = {"version": "7.0"}
        if not reply:
            raise MongoError(72, "no option found to get")
        reply["ok"] = 1.0
        return reply

    def cmd_get_cmd_line_opts(self, db, cmd, conn_id):
        return {"argv": ["devmongo"], "parsed": {}, "ok": 1.0}
