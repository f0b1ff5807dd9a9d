"""Read commands: find, count, distinct, aggregate."""

import random

from ..changestreams import open_stream
from ..cursors import batch_size as parse_batch_size
from ..cursors import cursor_reply, live_cursor_reply
from ..errors import MongoError
from ..expressions import process_pipeline
from ..keys import canon, encode, id_key, leaf_values
from ..matching import matcher, translate
from ..planner import check_table_scan
from ..projection import Projection
from ..reads import encode_stored, index_walk, match, sort_docs, top_level_projector
from ..update import clone
from .args import check_collation, coll_name


def find(engine, db, cmd, conn_id):
    engine.check_db(db)
    coll = coll_name(cmd, "find")
    check_collation(cmd)
    for unsupported in ("tailable", "awaitData", "returnKey", "showRecordId", "min", "max", "let"):
        if cmd.get(unsupported):
            raise MongoError(115, f"devmongo does not support find option '{unsupported}'")
    flt = cmd.get("filter") or {}
    skip = cmd.get("skip") or 0
    limit = cmd.get("limit") or 0
    if skip < 0:
        raise MongoError(51024, f"BSON field 'skip' value must be >= 0, actual value '{skip}'")
    if limit < 0:
        raise MongoError(51024, f"BSON field 'limit' value must be >= 0, actual value '{limit}'")
    batch_size = parse_batch_size(cmd)
    sort = cmd.get("sort")
    projection = cmd.get("projection")
    store = engine.existing_store(db, coll)
    hint = cmd.get("hint")
    if engine.notablescan or hint is not None:
        check_table_scan(engine, db, coll, store, flt, sort, hint)
    walked = index_walk(engine, db, coll, store, flt, sort, skip + limit) if sort and limit else None
    if walked is not None:
        docs = walked  # in the sort's order already
    else:
        docs = match(engine, store, flt, max_count=0 if sort or not limit else skip + limit)
    if sort and walked is None:
        docs = sort_docs(docs, sort, engine.random_tie_break)
    if skip:
        docs = docs[skip:]
    if limit:
        docs = docs[:limit]
    projector = top_level_projector(projection) if projection else None
    if projector is not None:

        def encode_first(d):
            return encode(projector(d))
    elif projection:
        compiled = Projection(projection)

        def encode_first(d):
            return encode(compiled.apply(d, flt))
    else:

        def encode_first(d):
            return encode_stored(engine, d)

    single_batch = bool(cmd.get("singleBatch"))
    if single_batch and batch_size is None and limit:
        batch_size = limit
    still = None

    def encode_later(d):  # a getMore: as the document is now, if it is still a match
        nonlocal still
        if still is None:
            still = _still_there(store, flt)
        return encode_first(d) if still(d) else None

    return live_cursor_reply(
        engine, f"{db}.{coll}", docs, encode_first, encode_later, batch_size, single_batch or limit == 1
    )


def _still_there(store, flt):
    """Whether a document a cursor matched is still stored and still matches (the matcher is
    made at the first getMore)."""
    documents = store._documents if store is not None else {}
    applies = None

    def still(d):
        nonlocal applies
        if documents.get(id_key(d.get("_id"))) is not d:
            return False
        if not flt:
            return True
        if applies is None:
            applies = matcher(flt)
        return applies(d)

    return still


def count(engine, db, cmd, conn_id):
    coll = coll_name(cmd, "count")
    check_collation(cmd)
    store = engine.existing_store(db, coll)
    hint = cmd.get("hint")
    if engine.notablescan or hint is not None:
        check_table_scan(engine, db, coll, store, cmd.get("query") or {}, None, hint, "count")
    n = len(match(engine, store, cmd.get("query") or {}))
    skip = int(cmd.get("skip") or 0)
    limit = int(cmd.get("limit") or 0)
    n = max(0, n - skip)
    if limit:
        n = min(n, abs(limit))
    return {"n": n, "ok": 1.0}


def distinct(engine, db, cmd, conn_id):
    coll = coll_name(cmd, "distinct")
    check_collation(cmd)
    key = cmd.get("key")
    if not isinstance(key, str):
        raise MongoError(14, "BSON field 'distinct.key' is the wrong type, expected type 'string'")
    store = engine.existing_store(db, coll)
    if engine.notablescan or cmd.get("hint") is not None:
        check_table_scan(
            engine, db, coll, store, cmd.get("query") or {}, None, cmd.get("hint"), "distinct", distinct_key=key
        )
    parts = key.split(".")
    seen = set()
    values = []
    for doc in match(engine, store, cmd.get("query") or {}):
        for v in leaf_values(doc, parts):
            for item in v if isinstance(v, list) else [v]:
                c = canon(item)
                if c not in seen:
                    seen.add(c)
                    values.append(clone(item))
    return {"values": values, "ok": 1.0}


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
        ((name, arg),) = stage.items()
        if name == "$match" and not skip and not limit and not flt and isinstance(arg, dict):
            flt = arg
        elif name == "$skip" and not limit and isinstance(arg, int):
            skip = arg
        elif name == "$limit" and isinstance(arg, int):
            limit = arg
        else:
            return None
    return flt, skip, limit


def _rewrite_stages(stages):
    """Rewrite stages mongomock gets wrong into their documented equivalents."""
    out = []
    for stage in stages:
        if "$count" in stage:
            name = stage["$count"]
            if not isinstance(name, str) or not name or name.startswith("$") or "." in name:
                raise MongoError(
                    40156, "the count field must be a non-empty string, not start with '$' and not contain '.'"
                )
            out.append({"$group": {"_id": None, name: {"$sum": 1}}})
            out.append({"$project": {"_id": 0}})
        elif "$match" in stage and isinstance(stage["$match"], dict):
            out.append({"$match": translate(stage["$match"])})  # MongoDB's equality (matching.py)
        else:
            out.append(stage)
    return out


def _check_pipeline_scan(engine, db, coll, store, pipeline, hint):
    """notablescan for a pipeline: its leading ``$match`` (and a ``$sort`` right after it, or
    leading) is the query MongoDB plans; anything else reads the whole collection."""
    flt, sort = {}, None
    stages = [s for s in pipeline if isinstance(s, dict) and len(s) == 1]
    if stages and "$match" in stages[0] and isinstance(stages[0]["$match"], dict):
        flt = stages[0]["$match"]
        stages = stages[1:]
    if stages and "$sort" in stages[0]:
        sort = stages[0]["$sort"]
    check_table_scan(engine, db, coll, store, flt, sort, hint, "aggregate")


def aggregate(engine, db, cmd, conn_id):
    engine.check_db(db)
    target = cmd["aggregate"]
    pipeline = cmd.get("pipeline")
    if not isinstance(pipeline, list):
        raise MongoError(14, "'pipeline' option must be specified as an array")
    if cmd.get("explain"):
        raise MongoError(115, "devmongo does not support explain")
    if "cursor" not in cmd:
        raise MongoError(9, "The 'cursor' option is required, except for aggregate with the explain argument")
    check_collation(cmd)
    if cmd.get("let") is not None:
        raise MongoError(115, "devmongo does not support 'let'")
    if pipeline and isinstance(pipeline[0], dict) and "$changeStream" in pipeline[0]:
        if len(pipeline[0]) != 1:
            raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
        if isinstance(target, str):
            return open_stream(engine, db, cmd, coll_name(cmd, "aggregate"))
        if target == 1 and not isinstance(target, bool):
            return open_stream(engine, db, cmd, None)
    if not isinstance(target, str):
        raise MongoError(115, "devmongo does not support database-level aggregation")
    coll = coll_name(cmd, "aggregate")
    batch_size = parse_batch_size(cmd.get("cursor"))
    store = engine.existing_store(db, coll)
    ns = f"{db}.{coll}"
    if engine.notablescan or cmd.get("hint") is not None:
        _check_pipeline_scan(engine, db, coll, store, pipeline, cmd.get("hint"))
    counting = _count_pipeline(pipeline)
    if counting is not None:
        flt, skip, limit = counting
        n = max(0, len(match(engine, store, flt)) - skip)
        if limit:
            n = min(n, limit)
        docs = [encode({"_id": 1, "n": n})] if n else []
        return cursor_reply(engine, ns, docs, batch_size)
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
    if any("$changeStream" in stage for stage in pipeline):
        raise MongoError(40602, "$changeStream is only valid as the first stage in a pipeline")
    writes = [next(iter(s)) for s in pipeline if next(iter(s)) in ("$out", "$merge")]
    if "$merge" in writes:
        raise MongoError(115, "devmongo does not support $merge")
    out_existed = False
    if writes:
        out = pipeline[-1]["$out"]
        out_existed = engine.existing_store(db, out if isinstance(out, str) else out.get("coll")) is not None
    stages = pipeline
    if stages and "$match" in stages[0]:
        docs = match(engine, store, stages[0]["$match"])
        stages = stages[1:]
    else:
        docs = match(engine, store, {})
    results = [clone(d) for d in docs]
    database = engine.client[db]
    shuffle = engine.random_tie_break
    for stage in _rewrite_stages(stages):
        if "$group" in stage and not results:
            continue  # MongoDB: $group over no documents yields no documents
        if shuffle and "$sort" in stage:
            random.shuffle(results)  # ties of the sort in a random order
        results = process_pipeline(results, database, [stage])
        if shuffle and "$group" in stage:
            random.shuffle(results)  # MongoDB promises no order of groups either
    encoded = [encode(d) for d in results]
    if writes:
        out = pipeline[-1]["$out"]
        out_coll = out if isinstance(out, str) else out.get("coll")
        engine.invalidate(db)
        engine.mark(db, out_coll)
        if engine.changes is not None:  # as a drop of the old target and inserts of the new
            if out_existed:
                engine.changes.drop(db, out_coll)
            written = engine.existing_store(db, out_coll)
            for doc in written._documents.values() if written is not None else ():
                engine.changes.insert(db, out_coll, doc)
        encoded = []
    return cursor_reply(engine, ns, encoded, batch_size)
