import pymongo
import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure


def test_handshake_and_ping(client):
    hello = client.admin.command("hello")
    assert hello["isWritablePrimary"] is True
    assert hello["maxWireVersion"] == 21
    assert hello["minWireVersion"] == 0
    assert hello["maxBsonObjectSize"] == 16777216
    assert hello["maxMessageSizeBytes"] == 48000000
    assert hello["maxWriteBatchSize"] == 100000
    assert hello["logicalSessionTimeoutMinutes"] == 30
    assert "setName" not in hello
    assert "localTime" in hello and "connectionId" in hello
    legacy = client.admin.command("isMaster")
    assert legacy["ismaster"] is True
    assert client.admin.command("ping")["ok"] == 1.0
    assert client.admin.command("buildInfo")["version"] == "7.0.0"
    assert client.topology_description.topology_type_name == "Single"


def test_insert_find_update_delete(db):
    db.c.insert_one({"_id": 1, "a": 1})
    db.c.insert_many([{"_id": i, "a": i} for i in range(2, 10)])
    assert db.c.find_one({"_id": 3}) == {"_id": 3, "a": 3}
    r = db.c.update_one({"_id": 3}, {"$set": {"b": 1}})
    assert (r.matched_count, r.modified_count, r.upserted_id) == (1, 1, None)
    r = db.c.update_one({"_id": 3}, {"$set": {"b": 1}})
    assert (r.matched_count, r.modified_count) == (1, 0)
    r = db.c.update_many({"a": {"$gte": 5}}, {"$inc": {"a": 10}})
    assert (r.matched_count, r.modified_count) == (5, 5)
    r = db.c.delete_one({"a": {"$gte": 10}})
    assert r.deleted_count == 1
    r = db.c.delete_many({"a": {"$gte": 10}})
    assert r.deleted_count == 4
    assert db.c.count_documents({}) == 4


def test_duplicate_key_on_insert(db):
    db.c.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 1})


def test_unknown_command(db):
    with pytest.raises(OperationFailure) as exc:
        db.command("xyz")
    assert exc.value.code == 59
    assert exc.value.details["codeName"] == "CommandNotFound"
    assert exc.value.details["errmsg"] == "no such command: 'xyz'"


def test_array_filters_booking(db):
    db.shows.insert_one(
        {
            "_id": "s1",
            "seats": [[0] * 6 for _ in range(5)],
            "seatsAvailable": 30,
            "reservations": [{"_id": "c1", "seats": [], "v": 0}, {"_id": "c2", "seats": [], "v": 0}],
        }
    )
    r = db.shows.update_one(
        {"_id": "s1", "seats.3.5": 0},
        {
            "$push": {"reservations.$[r].seats": {"$each": ["3:5"]}},
            "$inc": {"reservations.$[r].v": 1, "seatsAvailable": -1},
            "$set": {"seats.3.5": 1},
        },
        array_filters=[{"r._id": "c2"}],
    )
    assert (r.matched_count, r.modified_count) == (1, 1)
    doc = db.shows.find_one({"_id": "s1"})
    assert doc["seats"][3][5] == 1
    assert doc["seatsAvailable"] == 29
    assert doc["reservations"][1] == {"_id": "c2", "seats": ["3:5"], "v": 1}
    assert doc["reservations"][0] == {"_id": "c1", "seats": [], "v": 0}
    r = db.shows.update_one({"_id": "s1", "seats.3.5": 0}, {"$set": {"seats.3.5": 1}})
    assert (r.matched_count, r.modified_count) == (0, 0)
    r = db.shows.update_one(
        {"_id": "s1"}, {"$pull": {"reservations.$[r].seats": "3:5"}}, array_filters=[{"r._id": "c2"}]
    )
    assert r.modified_count == 1
    assert db.shows.find_one()["reservations"][1]["seats"] == []


def test_find_one_and_update_after(db):
    db.c.insert_one({"_id": 1, "n": 1})
    doc = db.c.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=pymongo.ReturnDocument.AFTER)
    assert doc == {"_id": 1, "n": 2}
    doc = db.c.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}})
    assert doc == {"_id": 1, "n": 2}


def test_end_sessions_and_admin_commands(client):
    assert client.admin.command("endSessions", [])["ok"] == 1.0
    assert client.admin.command("connectionStatus")["ok"] == 1.0
    assert client.admin.command("serverStatus")["version"] == "7.0.0"


def test_unacknowledged_writes(db):
    from pymongo import WriteConcern

    w0 = db.c.with_options(write_concern=WriteConcern(w=0))
    w0.insert_one({"_id": 1})
    w0.update_one({"_id": 1}, {"$set": {"a": 1}})
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "a": 1}


def test_find_one_and_update_unique_conflict_is_command_error(db):
    db.c.create_index("k", unique=True)
    db.c.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 2}])
    with pytest.raises(DuplicateKeyError) as exc:
        db.c.find_one_and_update({"_id": 2}, {"$set": {"k": 1}})
    assert exc.value.code == 11000
    assert db.c.find_one({"_id": 2}) == {"_id": 2, "k": 2}


def test_transactions_are_refused_like_a_standalone(client, db):
    db.c.insert_one({"_id": 1})
    with client.start_session() as session, pytest.raises(OperationFailure) as exc, session.start_transaction():
        db.c.insert_one({"_id": 2}, session=session)
    assert exc.value.code == 20


def test_find_projections_keep_mongodb_semantics(db):
    db.p.insert_one({"_id": 1, "b": 2, "a": {"x": 1, "y": [1, 2]}, "c": [[0, 1]], "d": 4})
    assert list(db.p.find({}, {"d": 1, "a": 1})[0]) == ["_id", "a", "d"]  # document order, _id kept
    assert db.p.find_one({}, {"a": 1, "_id": 0}) == {"a": {"x": 1, "y": [1, 2]}}
    assert db.p.find_one({}, {"c": 0, "a": 0}) == {"_id": 1, "b": 2, "d": 4}
    assert db.p.find_one({}, {"_id": 0}) == {"b": 2, "a": {"x": 1, "y": [1, 2]}, "c": [[0, 1]], "d": 4}
    assert db.p.find_one({}, {"a.x": 1}) == {"_id": 1, "a": {"x": 1}}  # the general path
    with pytest.raises(pymongo.errors.OperationFailure):
        db.p.find_one({}, {"a": 1, "b": 0})
