"""Write commands: insert, update, delete, findAndModify."""

from ..errors import MongoError, to_mongo_error
from ..limits import MAX_WRITE_BATCH
from ..planner import check_table_scan
from ..reads import encode_projected, match, sort_docs
from ..update import MISSING, clone, prepare_update
from ..writes import delete_doc, insert_doc, update_one_doc, upsert_doc
from .args import check_collation, coll_name


def _apply_each(statements, ordered, apply):
    """Run `apply(index, statement)` over a write batch as MongoDB does: a failing statement
    becomes a write error at its index, and an ordered batch stops at the first one."""
    errors = []
    for i, statement in enumerate(statements):
        try:
            apply(i, statement)
        except Exception as exc:  # noqa: BLE001
            errors.append(to_mongo_error(exc).to_write_error(i))
            if ordered:
                break
    return errors


def _write_reply(reply, errors):
    if errors:
        reply["writeErrors"] = errors
    reply["ok"] = 1.0
    return reply


def _check_batch_size(items):
    if len(items) > MAX_WRITE_BATCH:
        raise MongoError(16, "Write batch sizes must be between 1 and 100000")


def insert(engine, db, cmd, conn_id):
    engine.check_db(db)
    coll = coll_name(cmd, "insert")
    docs = cmd.get("documents") or []
    _check_batch_size(docs)
    store = engine.store(db, coll)
    inserted = 0

    def insert_one(_index, doc):
        nonlocal inserted
        insert_doc(engine, db, coll, store, doc)
        inserted += 1

    errors = _apply_each(docs, cmd.get("ordered", True), insert_one)
    return _write_reply({"n": inserted}, errors)


def _update_statement(engine, db, coll, store, stmt):
    if not isinstance(stmt, dict) or "u" not in stmt:
        raise MongoError(40414, "BSON field 'update.updates.u' is missing but a required field")
    check_collation(stmt)
    if stmt.get("let") is not None:
        raise MongoError(115, "devmongo does not support 'let'")
    query = stmt.get("q") or {}
    multi = bool(stmt.get("multi", False))
    upd = prepare_update(stmt["u"], stmt.get("arrayFilters"))
    if multi and upd.kind == "replace":
        raise MongoError(9, "multi update is not supported for replacement-style update")
    hint = stmt.get("hint")
    if engine.notablescan or hint is not None:
        check_table_scan(engine, db, coll, engine.existing_store(db, coll), query, None, hint, "update")
    docs = match(engine, store, query, first_only=not multi)
    matched = modified = 0
    for doc in docs:
        matched += 1
        if update_one_doc(engine, db, coll, store, doc, upd, query):
            modified += 1
    upserted = MISSING
    if not docs and stmt.get("upsert"):
        upserted = upsert_doc(engine, db, coll, store, upd, query)["_id"]
    return matched, modified, upserted


def update(engine, db, cmd, conn_id):
    engine.check_db(db)
    coll = coll_name(cmd, "update")
    stmts = cmd.get("updates") or []
    _check_batch_size(stmts)
    store = engine.store(db, coll)
    n = n_modified = 0
    upserted = []

    def update_one(index, stmt):
        nonlocal n, n_modified
        matched, modified, up_id = _update_statement(engine, db, coll, store, stmt)
        n += matched
        n_modified += modified
        if up_id is not MISSING:
            n += 1
            upserted.append({"index": index, "_id": clone(up_id)})

    errors = _apply_each(stmts, cmd.get("ordered", True), update_one)
    reply = {"n": n, "nModified": n_modified}
    if upserted:
        reply["upserted"] = upserted
    return _write_reply(reply, errors)


def delete(engine, db, cmd, conn_id):
    engine.check_db(db)
    coll = coll_name(cmd, "delete")
    stmts = cmd.get("deletes") or []
    store = engine.existing_store(db, coll)
    deleted = 0

    def delete_matching(_index, stmt):
        nonlocal deleted
        if not isinstance(stmt, dict) or "q" not in stmt:
            raise MongoError(40414, "BSON field 'delete.deletes.q' is missing but a required field")
        check_collation(stmt)
        limit = stmt.get("limit", 0)
        if limit not in (0, 1):
            raise MongoError(9, f"The limit field in delete objects must be 0 or 1. Got {limit}")
        hint = stmt.get("hint")
        if engine.notablescan or hint is not None:
            check_table_scan(engine, db, coll, store, stmt["q"], None, hint, "delete")
        for doc in match(engine, store, stmt["q"], first_only=limit == 1):
            if delete_doc(engine, db, coll, store, doc):
                deleted += 1

    errors = _apply_each(stmts, cmd.get("ordered", True), delete_matching)
    return _write_reply({"n": deleted}, errors)


def find_and_modify(engine, db, cmd, conn_id):
    engine.check_db(db)
    coll = coll_name(cmd, next(iter(cmd)))
    check_collation(cmd)
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
            raise MongoError(
                9, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document"
            )
        if upsert:
            raise MongoError(9, "Cannot specify both upsert=true and remove=true")
    elif update is None:
        raise MongoError(9, "Either an update or remove=true must be specified")
    upd = None if remove else prepare_update(update, cmd.get("arrayFilters"))
    store = engine.store(db, coll) if not remove else engine.existing_store(db, coll)
    hint = cmd.get("hint")
    if engine.notablescan or hint is not None:
        check_table_scan(engine, db, coll, engine.existing_store(db, coll), query, sort, hint, "findAndModify")
    docs = match(engine, store, query, first_only=not sort)
    if sort and docs:
        docs = sort_docs(docs, sort, engine.random_tie_break)
    target = docs[0] if docs else None
    leo = {}
    value = None
    if target is not None and remove:
        value = encode_projected(engine, db, coll, target, fields, query)
        delete_doc(engine, db, coll, store, target)
        leo = {"n": 1}
    elif target is not None:
        before = None if new else encode_projected(engine, db, coll, target, fields, query)
        update_one_doc(engine, db, coll, store, target, upd, query)
        value = encode_projected(engine, db, coll, target, fields, query) if new else before
        leo = {"n": 1, "updatedExisting": True}
    elif upsert:
        doc = upsert_doc(engine, db, coll, store, upd, query)
        if new:
            value = encode_projected(engine, db, coll, doc, fields, query)
        leo = {"n": 1, "updatedExisting": False, "upserted": clone(doc["_id"])}
    else:
        leo = {"n": 0} if remove else {"n": 0, "updatedExisting": False}
    return {"lastErrorObject": leo, "value": value, "ok": 1.0}
