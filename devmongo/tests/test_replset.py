"""The replica-set mode: discovery as a one-member set, write concerns, retryable writes,
transactions refused; and the standalone's own errors for what needs a replica set."""

import time

import pymongo
import pytest
from bson import Int64, Timestamp
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError, WriteConcernError
from pymongo.write_concern import WriteConcern


def test_uri_names_the_set(rs_server):
    assert rs_server.uri == f"mongodb://127.0.0.1:{rs_server.port}/?replicaSet=rs0"


def test_discovered_as_the_primary_of_a_one_member_set(rs_server, rs_client):
    rs_client.admin.command("ping")
    topology = rs_client.topology_description
    assert topology.topology_type_name == "ReplicaSetWithPrimary"
    assert rs_client.primary == ("127.0.0.1", rs_server.port)
    hello = rs_client.admin.command("hello")
    me = f"127.0.0.1:{rs_server.port}"
    assert hello["setName"] == "rs0"
    assert hello["hosts"] == [me] and hello["me"] == me and hello["primary"] == me
    assert hello["isWritablePrimary"] is True and hello["secondary"] is False
    assert set(hello["topologyVersion"]) == {"processId", "counter"}
    assert isinstance(hello["operationTime"], Timestamp)
    assert isinstance(hello["$clusterTime"]["clusterTime"], Timestamp)
    assert hello["lastWrite"]["opTime"]["t"] == 1


def test_wrong_set_name_finds_no_primary(rs_server):
    c = pymongo.MongoClient(f"mongodb://127.0.0.1:{rs_server.port}/?replicaSet=other", serverSelectionTimeoutMS=300)
    with pytest.raises(ServerSelectionTimeoutError):
        c.admin.command("ping")
    c.close()


def test_awaitable_hello_waits_when_nothing_changed(rs_client):
    hello = rs_client.admin.command("hello")
    started = time.monotonic()
    rs_client.admin.command({"hello": 1, "topologyVersion": hello["topologyVersion"], "maxAwaitTimeMS": 300})
    assert time.monotonic() - started >= 0.25
    started = time.monotonic()  # an unknown topology version is answered at once
    rs_client.admin.command(
        {
            "hello": 1,
            "maxAwaitTimeMS": 3000,
            "topologyVersion": {"processId": hello["topologyVersion"]["processId"], "counter": Int64(7)},
        }
    )
    assert time.monotonic() - started < 1


def test_repl_set_get_status_and_config(rs_server, rs_client):
    status = rs_client.admin.command("replSetGetStatus")
    assert status["set"] == "rs0" and status["myState"] == 1
    [member] = status["members"]
    assert member["stateStr"] == "PRIMARY" and member["self"] is True
    assert member["name"] == f"127.0.0.1:{rs_server.port}"
    config = rs_client.admin.command("replSetGetConfig")["config"]
    assert config["_id"] == "rs0" and [m["host"] for m in config["members"]] == [member["name"]]
    with pytest.raises(OperationFailure) as exc:
        rs_client.admin.command("replSetInitiate")
    assert exc.value.code == 23


def test_operation_time_on_every_reply(rdb):
    reply = rdb.command("insert", "c", documents=[{"_id": 1}])
    first = reply["operationTime"]
    reply = rdb.command("insert", "c", documents=[{"_id": 2}])
    assert reply["operationTime"] > first
    with pytest.raises(OperationFailure) as exc:
        rdb.command("nosuchcommand")
    assert isinstance(exc.value.details["operationTime"], Timestamp)


# --------------------------------------------------------------------------- write concern


def test_majority_write_concern_is_acknowledged(rdb):
    coll = rdb.get_collection("c", write_concern=WriteConcern(w="majority", wtimeout=1000))
    assert coll.insert_one({"_id": 1}).acknowledged
    assert coll.update_one({"_id": 1}, {"$set": {"a": 1}}).modified_count == 1
    assert coll.find_one_and_update({"_id": 1}, {"$inc": {"a": 1}}, return_document=ReturnDocument.AFTER)["a"] == 2
    assert coll.delete_one({"_id": 1}).deleted_count == 1


def test_w_more_than_members_is_a_write_concern_error_after_the_write(rdb):
    coll = rdb.get_collection("c", write_concern=WriteConcern(w=2))
    with pytest.raises(WriteConcernError) as exc:
        coll.insert_one({"_id": 1})
    assert exc.value.code == 100
    assert exc.value.details["codeName"] == "UnsatisfiableWriteConcern"
    assert exc.value.details["errmsg"] == "Not enough data-bearing nodes"
    assert rdb.c.find_one({"_id": 1}) == {"_id": 1}  # written, as MongoDB does


def test_unknown_write_concern_mode(rdb):
    reply = rdb.command("insert", "c", documents=[{"_id": 1}], writeConcern={"w": "dc2"})
    assert reply["n"] == 1
    assert reply["writeConcernError"]["code"] == 79


def test_retryable_writes_of_pymongo_just_work(rdb):
    # pymongo sends lsid + txnNumber on every single-document write to a replica set
    rdb.c.insert_one({"_id": 1, "n": 0})
    for _ in range(3):
        rdb.c.update_one({"_id": 1}, {"$inc": {"n": 1}})
    assert rdb.c.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=ReturnDocument.AFTER)["n"] == 4


# pymongo reuses server sessions (and their txnNumbers) from a pool: numbers far above them,
# on a client of its own (closing it ends its sessions, so the shared client's are not spoiled)
T = 10**12


def test_retried_write_is_executed_once_and_answers_the_first_result(rs_server, rdb):
    own = pymongo.MongoClient(rs_server.uri)
    rdb = own[rdb.name]
    with own.start_session() as s:
        insert = {"insert": "c", "documents": [{"_id": 1, "n": 0}], "txnNumber": Int64(T + 1)}
        first = rdb.command(dict(insert), session=s)
        again = rdb.command(dict(insert), session=s)  # a retry: no duplicate key error
        assert first["n"] == again["n"] == 1 and "writeErrors" not in again
        assert rdb.c.count_documents({}) == 1

        fam = {
            "findAndModify": "c",
            "query": {"_id": 1},
            "update": {"$inc": {"n": 1}},
            "new": True,
            "txnNumber": Int64(T + 2),
        }
        first = rdb.command(dict(fam), session=s)
        again = rdb.command(dict(fam), session=s)
        assert first["value"] == again["value"] == {"_id": 1, "n": 1}
        assert rdb.c.find_one()["n"] == 1  # incremented once

        update = {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 10}}}], "txnNumber": Int64(T + 3)}
        assert rdb.command(dict(update), session=s)["nModified"] == 1
        assert rdb.command(dict(update), session=s)["nModified"] == 1
        assert rdb.c.find_one()["n"] == 11

        # a new txnNumber runs again (and fails on the duplicate _id)
        reply = rdb.command({**insert, "txnNumber": Int64(T + 4)}, session=s)
        assert reply["writeErrors"][0]["code"] == 11000
        with pytest.raises(OperationFailure) as exc:  # an older one than the newest
            rdb.command({**insert, "txnNumber": Int64(T + 2)}, session=s)
        assert exc.value.code == 225
        assert exc.value.details["codeName"] == "TransactionTooOld"

        with own.start_session() as other:  # another session's txnNumbers are its own
            assert other.session_id != s.session_id
            reply = rdb.command({"insert": "c", "documents": [{"_id": 2}], "txnNumber": Int64(T + 1)}, session=other)
            assert reply["n"] == 1
    own.close()


def test_txn_number_on_a_read_is_refused(rs_client, rdb):
    with rs_client.start_session() as s, pytest.raises(OperationFailure) as exc:
        rdb.command({"find": "c", "txnNumber": Int64(1)}, session=s)
    assert exc.value.code == 50768


def test_transactions_are_refused(rs_client, rdb):
    rdb.c.insert_one({"_id": 0})
    with rs_client.start_session() as s, pytest.raises(OperationFailure) as exc, s.start_transaction():
        rdb.c.insert_one({"_id": 1}, session=s)
    assert exc.value.code == 20
    assert rdb.c.count_documents({}) == 1


# --------------------------------------------------------------------------- a standalone


def test_standalone_refuses_what_needs_a_replica_set(client, db):
    with pytest.raises(OperationFailure) as exc:
        db.c.watch()
    assert exc.value.code == 40573
    with pytest.raises(OperationFailure) as exc:
        client.admin.command("replSetGetStatus")
    assert exc.value.code == 76
    with pytest.raises(OperationFailure) as exc:
        db.get_collection("c", write_concern=WriteConcern(w=2)).insert_one({"_id": 1})
    assert exc.value.code == 2
    assert exc.value.details["errmsg"] == "cannot use 'w' > 1 when a host is not replicated"
    with pytest.raises(OperationFailure) as exc:
        db.command("insert", "c", documents=[{"_id": 2}], writeConcern={"w": "dc2"})
    assert exc.value.code == 2
    assert db.c.count_documents({}) == 0  # refused before writing
    majority = db.get_collection("c", write_concern=WriteConcern(w="majority"))
    assert majority.insert_one({"_id": 3}).acknowledged
    with client.start_session() as s, pytest.raises(OperationFailure) as exc:
        db.command({"insert": "c", "documents": [{"_id": 4}], "txnNumber": Int64(1)}, session=s)
    assert exc.value.code == 20
