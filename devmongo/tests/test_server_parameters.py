"""Server parameters: notablescan (MongoDB's planner rule, and devmongo's strict variant), hint
validation, random tie-breaking of sorts, and the TTL monitor."""

import datetime
import time

import pymongo
import pytest
from pymongo.errors import OperationFailure, WriteError

from devmongo import DevMongoServer


@pytest.fixture(scope="module")
def nts_server():
    server = DevMongoServer(port=0, notablescan=True).start()
    yield server
    server.stop()


@pytest.fixture
def ndb(nts_server, request):
    client = pymongo.MongoClient(nts_server.uri)
    name = "n_" + "".join(ch if ch.isalnum() else "_" for ch in request.node.name)[:50]
    client.drop_database(name)
    db = client[name]
    db.c.insert_many(
        [
            {
                "_id": i,
                "a": i % 3,
                "b": i,
                "c": i,
                "d": i,
                "s": i,
                "p": i,
                "state": "active" if i % 2 else "done",
                "r": [{"_id": i}],
            }
            for i in range(10)
        ]
    )
    db.c.create_index("a")
    db.c.create_index([("c", 1), ("d", -1)])
    db.c.create_index("s", sparse=True)
    db.c.create_index("p", partialFilterExpression={"state": "active"})
    db.c.create_index("r._id")
    yield db
    client.drop_database(name)
    client.close()


def _refused(code=291):
    return pytest.raises(OperationFailure, match="notablescan" if code == 291 else None)


def test_get_and_set_parameter(client):
    admin = client.admin
    assert admin.command("getParameter", 1, notablescan=1) == {"notablescan": False, "ok": 1.0}
    assert admin.command("setParameter", 1, notablescan=True) == {"was": False, "ok": 1.0}
    try:
        assert admin.command("getParameter", 1, notablescan=1)["notablescan"] is True
        everything = admin.command("getParameter", "*")
        for name in (
            "notablescan",
            "ttlMonitorEnabled",
            "ttlMonitorSleepSecs",
            "devmongoRandomTieBreak",
            "devmongoNotablescanStrict",
            "featureCompatibilityVersion",
        ):
            assert name in everything
    finally:
        admin.command("setParameter", 1, notablescan=False)
    with pytest.raises(OperationFailure) as exc:
        admin.command("setParameter", 1, noSuchParameter=1)
    assert exc.value.code == 72
    with pytest.raises(OperationFailure) as exc:
        client.other.command("setParameter", 1, notablescan=True)
    assert exc.value.code == 13


def test_a_query_without_an_indexed_plan_is_refused(ndb):
    with pytest.raises(OperationFailure) as exc:
        list(ndb.c.find({"b": 1}))
    assert exc.value.code == 291
    assert exc.value.details["codeName"] == "NoQueryExecutionPlans"
    assert "No indexed plans available, and running with 'notablescan'" in str(exc.value)


@pytest.mark.parametrize(
    "flt",
    [
        {"a": 1},
        {"a": {"$gt": 0}},
        {"a": {"$in": [1, 2]}},
        {"a": 1, "b": 2},
        {"_id": 3},
        {"_id": {"$gte": 3}, "b": 3},
        {"a": {"$ne": 1}},
        {"a": {"$exists": True}},
        {"$or": [{"a": 1}, {"_id": 2}]},
        {"$and": [{"b": 2}, {"a": 1}]},
        {"c": 5},
        {"r._id": 1},
        {"r": {"$elemMatch": {"_id": 1}}},
        {"s": 4},
        {"p": 3, "state": "active"},
        {"b": 1, "$or": [{"a": 1}, {"c": 2}]},
    ],
)
def test_index_backed_queries_run(ndb, flt):
    assert isinstance(list(ndb.c.find(flt)), list)


@pytest.mark.parametrize(
    "flt",
    [
        {"b": 1},
        {"d": 1},
        {"$or": [{"a": 1}, {"b": 2}]},
        {"a": {"$size": 2}},
        {"$expr": {"$eq": ["$a", 1]}},
        {"$nor": [{"a": 1}]},
        {"s": None},
        {"s": {"$exists": False}},
        {"p": 3},
        {"r": {"$elemMatch": {"x": 1}}},
    ],
)
def test_collection_scans_are_refused(ndb, flt):
    with _refused():
        list(ndb.c.find(flt))


def test_sort_served_by_an_index(ndb):
    list(ndb.c.find({"b": 1}).sort("a", 1))
    list(ndb.c.find({"b": 1}).sort("a", -1))  # the index read backwards
    list(ndb.c.find({"b": 1}).sort([("c", -1), ("d", 1)]))  # reversed compound
    list(ndb.c.find({"b": 1}).sort("_id", 1))
    for sort in ([("a", 1), ("b", 1)], [("c", 1), ("d", 1)], [("d", 1)], [("s", 1)]):
        with _refused():
            list(ndb.c.find({"b": 1}).sort(sort))


def test_every_command_is_planned(ndb):
    with _refused():
        ndb.c.count_documents({"b": 1})
    with _refused():
        ndb.c.distinct("a", {"b": 1})
    with _refused():
        ndb.c.find_one_and_update({"b": 1}, {"$set": {"x": 1}})
    with pytest.raises(WriteError) as exc:
        ndb.c.update_one({"b": 1}, {"$set": {"x": 1}})
    assert exc.value.code == 291
    with pytest.raises(WriteError) as exc:
        ndb.c.delete_many({"b": 1})
    assert exc.value.code == 291
    with _refused():
        list(ndb.c.aggregate([{"$match": {"b": 1}}, {"$group": {"_id": "$a"}}]))
    assert ndb.c.count_documents({"a": 1}) == 3
    assert ndb.c.update_one({"_id": 1}, {"$set": {"x": 1}}).modified_count == 1
    assert ndb.c.delete_many({"a": 2, "b": {"$gt": 100}}).deleted_count == 0
    assert list(ndb.c.aggregate([{"$match": {"a": 1}}, {"$count": "n"}])) == [{"n": 3}]
    assert sorted(ndb.c.distinct("b", {"a": 0})) == [0, 3, 6, 9]


def test_what_mongodb_lets_through(ndb):
    assert len(list(ndb.c.find({}))) == 10  # an empty filter (SERVER-274)
    assert ndb.c.count_documents({}) == 10
    assert ndb.c.estimated_document_count() == 10
    assert len(list(ndb.c.aggregate([{"$group": {"_id": "$a"}}]))) == 3
    assert list(ndb.nosuchcollection.find({"b": 1})) == []  # no collection: no plan needed
    assert len(list(ndb.c.find({"b": 1}).hint("a_1"))) == 1  # a hint names the index
    with pytest.raises(OperationFailure) as exc:
        list(ndb.c.find({"b": 1}).hint([("$natural", 1)]))
    assert exc.value.code == 291


def test_strict_mode_also_refuses_empty_filters(ndb, nts_server):
    ndb.client.admin.command("setParameter", 1, devmongoNotablescanStrict=True)
    try:
        with _refused():
            list(ndb.c.find({}))
        with _refused():
            ndb.c.count_documents({})
        with _refused():
            list(ndb.c.aggregate([{"$group": {"_id": "$a"}}]))
        with _refused():
            ndb.c.distinct("b")
        assert ndb.c.estimated_document_count() == 10  # the collection's size, no scan
        assert len(list(ndb.c.find({}).sort("_id", 1))) == 10
        assert len(list(ndb.c.aggregate([{"$sort": {"a": 1}}]))) == 10
        assert sorted(ndb.c.distinct("a")) == [0, 1, 2]
    finally:
        ndb.client.admin.command("setParameter", 1, devmongoNotablescanStrict=False)


# --------------------------------------------------------------------------- hint


def test_hint_naming_no_index_is_refused(db):
    db.c.create_index("a")
    db.c.insert_many([{"_id": i, "a": i} for i in range(3)])
    assert len(list(db.c.find().hint("a_1"))) == 3
    assert len(list(db.c.find().hint([("a", 1)]))) == 3
    assert len(list(db.c.find().hint("_id_"))) == 3
    assert len(list(db.c.find().hint([("$natural", 1)]))) == 3
    for hint in ("nope", [("a", -1)], [("b", 1)]):
        with pytest.raises(OperationFailure) as exc:
            list(db.c.find().hint(hint))
        assert exc.value.code == 2
        assert "hint provided does not correspond to an existing index" in str(exc.value)
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"a": 1}, {"$set": {"x": 1}}, hint="nope")
    assert exc.value.code == 2
    with pytest.raises(OperationFailure) as exc:
        db.c.count_documents({}, hint="nope")
    assert exc.value.code == 2
    assert db.c.delete_one({"a": 1}, hint="a_1").deleted_count == 1


# --------------------------------------------------------------------------- random tie-break


def _orders(coll, n=12, **kw):
    return {tuple(d["_id"] for d in coll.find({}, **kw).sort("k", 1)) for _ in range(n)}


def test_random_tie_break_shuffles_ties_only(client, db):
    db.c.insert_many([{"_id": i, "k": i % 2} for i in range(20)])
    assert len(_orders(db.c)) == 1  # off: ties keep their (insertion) order
    client.admin.command("setParameter", 1, devmongoRandomTieBreak=True)
    try:
        orders = _orders(db.c)
        assert len(orders) > 1
        for order in orders:  # still sorted by k
            assert [i % 2 for i in order] == [0] * 10 + [1] * 10
        with_id = {tuple(d["_id"] for d in db.c.find().sort([("k", 1), ("_id", 1)])) for _ in range(5)}
        assert len(with_id) == 1  # a sort without ties is not affected
        agg = {tuple(d["_id"] for d in db.c.aggregate([{"$sort": {"k": 1}}])) for _ in range(12)}
        assert len(agg) > 1
        first = {db.c.find_one_and_update({"k": 0}, {"$inc": {"n": 1}}, sort=[("k", 1)])["_id"] for _ in range(12)}
        assert len(first) > 1
    finally:
        client.admin.command("setParameter", 1, devmongoRandomTieBreak=False)


# --------------------------------------------------------------------------- TTL


def _past(seconds):
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(seconds=seconds)


def test_ttl_documents_go_when_the_monitor_runs(devmongo_server, db):
    db.c.create_index("at", expireAfterSeconds=60)
    db.c.insert_many(
        [
            {"_id": "old", "at": _past(120)},
            {"_id": "new", "at": _past(10)},
            {"_id": "array", "at": [_past(10), _past(600)]},  # the earliest date counts
            {"_id": "text", "at": "yesterday"},  # not a date: never expires
            {"_id": "none"},
        ]
    )
    # until the monitor's pass, expired documents are still there (as on MongoDB)
    assert db.c.count_documents({}) == 5
    assert devmongo_server.run_ttl_monitor() == 2
    assert sorted(d["_id"] for d in db.c.find()) == ["new", "none", "text"]


def test_ttl_partial_and_compound_indexes(devmongo_server, db):
    db.c.create_index("at", expireAfterSeconds=0, partialFilterExpression={"kind": "temp"})
    db.d.create_index([("at", 1), ("x", 1)], expireAfterSeconds=0)  # compound: no TTL
    db.c.insert_many([{"_id": 1, "at": _past(5), "kind": "temp"}, {"_id": 2, "at": _past(5), "kind": "keep"}])
    db.d.insert_one({"_id": 1, "at": _past(5), "x": 1})
    devmongo_server.run_ttl_monitor()
    assert [d["_id"] for d in db.c.find()] == [2]
    assert db.d.count_documents({}) == 1


def test_ttl_monitor_runs_every_ttl_monitor_sleep_secs():
    server = DevMongoServer(port=0, replset="rs0", ttl_monitor_sleep_secs=1).start()
    client = pymongo.MongoClient(server.uri)
    c = client.t.c
    try:
        c.create_index("at", expireAfterSeconds=1)
        with c.watch(max_await_time_ms=200) as stream:
            c.insert_one({"_id": 1, "at": _past(0)})
            deadline = time.monotonic() + 10
            while c.count_documents({}) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert c.count_documents({}) == 0
            ops = []
            while len(ops) < 2 and time.monotonic() < deadline:
                change = stream.try_next()
                if change:
                    ops.append((change["operationType"], change["documentKey"]))
            assert ops == [("insert", {"_id": 1}), ("delete", {"_id": 1})]  # a delete event
        client.admin.command("setParameter", 1, ttlMonitorEnabled=False)
        c.insert_one({"_id": 2, "at": _past(5)})
        time.sleep(2.5)
        assert c.count_documents({}) == 1
    finally:
        client.close()
        server.stop()
