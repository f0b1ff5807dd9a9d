"""Collection, database, index, count, distinct and aggregate commands."""

import pytest
from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.errors import DuplicateKeyError, OperationFailure


def test_create_list_drop_collections(db, client):
    db.command("create", "a")
    with pytest.raises(OperationFailure) as exc:
        db.command("create", "a")
    assert exc.value.code == 48
    db.b.insert_one({"x": 1})
    assert sorted(db.list_collection_names()) == ["a", "b"]
    infos = {c["name"]: c for c in db.list_collections()}
    assert infos["a"]["type"] == "collection"
    assert [c["name"] for c in db.list_collections(filter={"name": "b"})] == ["b"]
    assert db.name in client.list_database_names()
    assert any(d["name"] == db.name for d in client.list_databases())
    db.drop_collection("a")
    db.drop_collection("does_not_exist")
    assert db.list_collection_names() == ["b"]
    client.drop_database(db.name)
    assert db.name not in client.list_database_names()


def test_databases_are_separate(client):
    client.sep1.c.insert_one({"_id": 1, "db": 1})
    client.sep2.c.insert_one({"_id": 1, "db": 2})
    assert client.sep1.c.find_one() == {"_id": 1, "db": 1}
    assert client.sep2.c.find_one() == {"_id": 1, "db": 2}
    client.drop_database("sep1")
    assert client.sep2.c.count_documents({}) == 1
    client.drop_database("sep2")


def test_indexes(db):
    name = db.c.create_index([("a", ASCENDING), ("b", DESCENDING)], unique=True)
    assert name == "a_1_b_-1"
    db.c.create_indexes([IndexModel("e", unique=True, sparse=True), IndexModel("z")])
    info = db.c.index_information()
    assert set(info) == {"_id_", "a_1_b_-1", "e_1", "z_1"}
    assert info["a_1_b_-1"]["key"] == [("a", 1), ("b", -1)]
    assert info["a_1_b_-1"]["unique"] is True
    db.c.insert_one({"a": 1, "b": 1})
    db.c.insert_one({"a": 1, "b": 2})
    with pytest.raises(DuplicateKeyError) as exc:
        db.c.insert_one({"a": 1, "b": 2})
    assert exc.value.details["keyPattern"] == {"a": 1, "b": -1}
    # sparse unique: many documents without "e" are fine
    db.c.insert_many([{"a": 2, "b": i} for i in range(3)])
    db.c.insert_one({"a": 3, "e": "x"})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"a": 4, "e": "x"})
    # an update that would collide is rejected and leaves the document unchanged
    with pytest.raises(DuplicateKeyError):
        db.c.update_one({"a": 2, "b": 0}, {"$set": {"b": 1}})
    assert db.c.count_documents({"a": 2, "b": 0}) == 1
    # after a delete the key is free again
    db.c.delete_one({"a": 3})
    db.c.insert_one({"a": 5, "e": "x"})
    db.c.drop_index("e_1")
    db.c.insert_one({"a": 6, "e": "x"})
    db.c.drop_indexes()
    assert set(db.c.index_information()) == {"_id_"}
    with pytest.raises(OperationFailure) as exc:
        db.c.drop_index("nope_1")
    assert exc.value.code == 27


def test_unique_index_on_existing_duplicates_fails(db):
    db.c.insert_many([{"k": 1}, {"k": 1}])
    with pytest.raises(DuplicateKeyError):
        db.c.create_index("k", unique=True)
    assert set(db.c.index_information()) == {"_id_"}


def test_unordered_insert_reports_all_errors(db):
    from pymongo.errors import BulkWriteError

    db.c.insert_one({"_id": 2})
    with pytest.raises(BulkWriteError) as exc:
        db.c.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}, {"_id": 2}], ordered=False)
    details = exc.value.details
    assert details["nInserted"] == 2
    assert [e["index"] for e in details["writeErrors"]] == [1, 3]
    assert all(e["code"] == 11000 for e in details["writeErrors"])
    with pytest.raises(BulkWriteError) as exc:
        db.c.insert_many([{"_id": 4}, {"_id": 1}, {"_id": 5}])
    assert exc.value.details["nInserted"] == 1
    assert db.c.count_documents({}) == 4


@pytest.mark.parametrize("ordered", [True, False])
def test_update_and_delete_batches_stop_at_an_error_only_when_ordered(db, ordered):
    from pymongo import DeleteOne, UpdateOne
    from pymongo.errors import BulkWriteError

    db.c.insert_many([{"_id": i, "n": i} for i in range(4)])
    with pytest.raises(BulkWriteError) as exc:
        db.c.bulk_write(
            [
                UpdateOne({"_id": 0}, {"$inc": {"n": 10}}),
                UpdateOne({"_id": 1}, {"$inc": {"n": "not a number"}}),
                UpdateOne({"_id": 2}, {"$inc": {"n": 10}}),
                UpdateOne({"_id": 9}, {"$set": {"n": 9}}, upsert=True),
            ],
            ordered=ordered,
        )
    details = exc.value.details
    assert [e["index"] for e in details["writeErrors"]] == [1]
    assert details["writeErrors"][0]["code"] == 14  # TypeMismatch, as MongoDB
    if ordered:
        assert (details["nMatched"], details["nUpserted"]) == (1, 0)
        assert [d["n"] for d in db.c.find(sort=[("_id", 1)])] == [10, 1, 2, 3]
    else:
        assert (details["nMatched"], details["nUpserted"]) == (2, 1)
        assert details["upserted"] == [{"index": 3, "_id": 9}]
        assert [d["n"] for d in db.c.find(sort=[("_id", 1)])] == [10, 1, 12, 3, 9]

    with pytest.raises(BulkWriteError) as exc:
        db.c.bulk_write(
            [DeleteOne({"_id": 0}), DeleteOne({"n": {"$unknownOperator": 1}}), DeleteOne({"_id": 3})],
            ordered=ordered,
        )
    assert [e["index"] for e in exc.value.details["writeErrors"]] == [1]
    assert exc.value.details["nRemoved"] == (1 if ordered else 2)


def test_bulk_update_many_statements(db):
    from pymongo import DeleteOne, InsertOne, UpdateMany, UpdateOne

    db.c.insert_many([{"_id": i, "g": i % 2} for i in range(6)])
    r = db.c.bulk_write(
        [
            UpdateOne({"_id": 0}, {"$set": {"x": 1}}),
            UpdateMany({"g": 1}, {"$set": {"x": 2}}),
            UpdateOne({"_id": 50}, {"$set": {"x": 3}}, upsert=True),
            InsertOne({"_id": 60}),
            DeleteOne({"_id": 2}),
        ]
    )
    assert r.matched_count == 4 and r.modified_count == 4
    assert r.upserted_ids == {2: 50}
    assert r.inserted_count == 1 and r.deleted_count == 1


def test_count_and_distinct(db):
    db.c.insert_many([{"k": i % 3, "t": ["a", "b"] if i % 2 else ["c"]} for i in range(10)])
    assert db.command("count", "c")["n"] == 10
    assert db.command("count", "c", query={"k": 1})["n"] == 3
    assert db.c.estimated_document_count() == 10
    assert db.c.count_documents({"k": 0}, skip=1, limit=2) == 2
    assert sorted(db.c.distinct("k")) == [0, 1, 2]
    assert sorted(db.c.distinct("t", {"k": 0})) == ["a", "b", "c"]


def test_aggregate_stages(db):
    db.sales.insert_many(
        [
            {"_id": 1, "item": "a", "qty": 2, "tags": ["x", "y"]},
            {"_id": 2, "item": "b", "qty": 5, "tags": ["y"]},
            {"_id": 3, "item": "a", "qty": 1, "tags": []},
            {"_id": 4, "item": "c", "qty": 7, "tags": ["x"]},
        ]
    )
    out = list(
        db.sales.aggregate(
            [
                {"$match": {"qty": {"$gte": 1}}},
                {"$group": {"_id": "$item", "total": {"$sum": "$qty"}}},
                {"$sort": {"total": -1}},
                {"$skip": 1},
                {"$limit": 2},
            ]
        )
    )
    assert out == [{"_id": "b", "total": 5}, {"_id": "a", "total": 3}]
    out = list(
        db.sales.aggregate(
            [
                {"$unwind": "$tags"},
                {"$project": {"_id": 0, "tags": 1}},
                {"$group": {"_id": "$tags", "n": {"$sum": 1}}},
                {"$sort": {"_id": 1}},
            ]
        )
    )
    assert out == [{"_id": "x", "n": 2}, {"_id": "y", "n": 2}]
    assert list(db.sales.aggregate([{"$match": {"item": "a"}}, {"$count": "n"}])) == [{"n": 2}]
    assert list(db.sales.aggregate([{"$match": {"item": "zzz"}}, {"$count": "n"}])) == []


def test_unsupported_aggregate_stage_is_an_error(db):
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure):
        list(db.c.aggregate([{"$bogusStage": {}}]))
    with pytest.raises(OperationFailure):
        list(db.c.aggregate([{"$merge": {"into": "other"}}]))
