"""Change streams in the replica-set mode, through pymongo's ``watch()`` over TCP: every operation
type, updateLookup, ``$match`` on event fields, database and cluster streams, invalidate, resume
tokens (after a disconnect, after a restart with --data, lost history), and getMore's wait."""

import datetime
import os
import signal
import threading
import time

import pymongo
import pytest
from bson import Timestamp
from pymongo.errors import OperationFailure

from devmongo import DevMongoServer

from .cli_support import free_port, start_cli

AWAIT = 200  # maxAwaitTimeMS of the streams here


def _next(stream, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        change = stream.try_next()
        if change is not None:
            return change
        if not stream.alive:
            break
    raise AssertionError("no change event")


def _none_within(stream, seconds=0.5):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        change = stream.try_next()
        if change is not None:
            return change
    return None


def _ops(events):
    return [e["operationType"] for e in events]


# --------------------------------------------------------------------------- event shapes


def test_every_operation_type_on_a_collection_stream(rdb):
    c = rdb.shows
    c.insert_one({"_id": 0})
    with c.watch(max_await_time_ms=AWAIT) as stream:
        assert stream.resume_token is not None  # postBatchResumeToken of the empty first batch
        c.insert_one({"_id": 1, "seats": [[0, 0], [0, 0]], "tags": ["a"], "x": {"y": 1}})
        c.update_one(
            {"_id": 1},
            {
                "$set": {"seats.1.0": 1, "new.deep": 2},
                "$inc": {"version": 1},
                "$push": {"tags": "b"},
                "$unset": {"x.y": ""},
            },
        )
        c.update_one({"_id": 1}, {"$pull": {"tags": "a"}})
        c.replace_one({"_id": 1}, {"name": "replaced"})
        c.delete_one({"_id": 1})
        c.update_one({"_id": 0}, {"$set": {"a": None}})
        c.update_one({"_id": 0}, {"$set": {"a": None}})  # no change: no event, as MongoDB
        events = [_next(stream) for _ in range(6)]
        assert _none_within(stream, 0.3) is None

    insert, update, pull, replace, delete, last = events
    assert _ops(events) == ["insert", "update", "update", "replace", "delete", "update"]
    for e in events:
        assert set(e["_id"]) == {"_data"}
        assert isinstance(e["clusterTime"], Timestamp)
        assert isinstance(e["wallTime"], datetime.datetime)
        assert e["ns"] == {"db": rdb.name, "coll": "shows"}
    assert [e["clusterTime"] for e in events] == sorted(e["clusterTime"] for e in events)
    assert insert["fullDocument"] == {"_id": 1, "seats": [[0, 0], [0, 0]], "tags": ["a"], "x": {"y": 1}}
    assert insert["documentKey"] == {"_id": 1}
    assert update["updateDescription"] == {
        "updatedFields": {"seats.1.0": 1, "new": {"deep": 2}, "version": 1, "tags.1": "b"},
        "removedFields": ["x.y"],
        "truncatedArrays": [],
    }
    assert "fullDocument" not in update
    assert pull["updateDescription"]["updatedFields"] == {"tags": ["b"]}
    assert replace["fullDocument"] == {"_id": 1, "name": "replaced"}
    assert delete["documentKey"] == {"_id": 1} and "fullDocument" not in delete
    assert last["updateDescription"]["updatedFields"] == {"a": None}


def test_array_filters_and_positional_updates_report_concrete_paths(rdb):
    c = rdb.sessions
    c.insert_one(
        {"_id": 1, "reservations": [{"_id": "a", "v": 0, "seats": [1, 2]}, {"_id": "b", "v": 0, "seats": [3]}]}
    )
    with c.watch(max_await_time_ms=AWAIT) as stream:
        c.update_one(
            {"_id": 1},
            {"$set": {"reservations.$[r].v": 5}, "$pull": {"reservations.$[r].seats": 3}},
            array_filters=[{"r._id": "b"}],
        )
        c.update_one({"_id": 1, "reservations._id": "a"}, {"$inc": {"reservations.$.v": 1}})
        first, second = _next(stream), _next(stream)
    assert first["updateDescription"]["updatedFields"] == {"reservations.1.v": 5, "reservations.1.seats": []}
    assert second["updateDescription"]["updatedFields"] == {"reservations.0.v": 1}


def test_update_lookup_gives_the_current_document(rdb):
    c = rdb.c
    c.insert_one({"_id": 1, "n": 0})
    with c.watch(full_document="updateLookup", max_await_time_ms=AWAIT) as stream:
        c.update_one({"_id": 1}, {"$inc": {"n": 1}})
        assert _next(stream)["fullDocument"] == {"_id": 1, "n": 1}
        c.update_one({"_id": 1}, {"$inc": {"n": 1}})
        c.delete_one({"_id": 1})
        change = _next(stream)  # looked up when read: the document is gone by then
        assert change["operationType"] == "update" and change["fullDocument"] is None
        assert _next(stream)["operationType"] == "delete"


def test_match_stage_on_event_fields(rdb):
    c = rdb.sessions
    c.insert_many([{"_id": i, "version": 0, "seats": [0, 0], "name": "x"} for i in range(3)])
    pipeline = [
        {
            "$match": {
                "$or": [
                    {"operationType": {"$in": ["insert", "delete"]}},
                    {"updateDescription.updatedFields.version": {"$exists": True}},
                ],
                "documentKey._id": {"$ne": 2},
                "ns.coll": "sessions",
            }
        }
    ]
    with c.watch(pipeline, max_await_time_ms=AWAIT) as stream:
        c.update_one({"_id": 0}, {"$set": {"name": "y"}})  # no version: filtered out
        c.update_one({"_id": 1}, {"$set": {"seats.0": 1}, "$inc": {"version": 1}})
        c.update_one({"_id": 2}, {"$inc": {"version": 1}})  # _id 2: filtered out
        c.insert_one({"_id": 3})
        c.delete_one({"_id": 0})
        got = [_next(stream) for _ in range(3)]
        assert _none_within(stream, 0.3) is None
    assert [(e["operationType"], e["documentKey"]["_id"]) for e in got] == [("update", 1), ("insert", 3), ("delete", 0)]


def test_project_stage_keeps_the_token_or_fails(rdb):
    c = rdb.c
    with c.watch([{"$project": {"operationType": 1, "documentKey": 1}}], max_await_time_ms=AWAIT) as stream:
        c.insert_one({"_id": 1, "big": "x" * 100})
        change = _next(stream)
        assert set(change) == {"_id", "operationType", "documentKey"}
    with c.watch([{"$project": {"_id": 0}}], max_await_time_ms=AWAIT) as stream:
        c.insert_one({"_id": 2})
        with pytest.raises(OperationFailure) as exc:
            _next(stream)
    assert exc.value.code == 280


def test_stages_not_allowed_after_change_stream(rdb):
    with pytest.raises(OperationFailure) as exc:
        rdb.c.watch([{"$group": {"_id": None}}])
    assert exc.value.code == 20
    with pytest.raises(OperationFailure) as exc:
        rdb.c.aggregate([{"$match": {}}, {"$changeStream": {}}])
    assert exc.value.code == 40602


def test_database_stream_and_invalidate_on_drop_database(rdb):
    with rdb.watch(max_await_time_ms=AWAIT) as stream:
        rdb.a.insert_one({"_id": 1})
        rdb.b.insert_one({"_id": 2})
        rdb.a.drop()  # a collection drop does not end a database stream
        rdb.b.insert_one({"_id": 3})
        rdb.client.drop_database(rdb.name)
        events = [_next(stream) for _ in range(7)]
        assert not stream.alive
    assert [(e["operationType"], e.get("ns", {}).get("coll")) for e in events] == [
        ("insert", "a"),
        ("insert", "b"),
        ("drop", "a"),
        ("insert", "b"),
        ("drop", "b"),
        ("dropDatabase", None),
        ("invalidate", None),
    ]


def test_cluster_stream_sees_every_database(rs_client, rdb):
    other = rs_client[rdb.name + "_2"]
    with rs_client.watch(max_await_time_ms=AWAIT) as stream:
        rdb.c.insert_one({"_id": 1})
        other.c.insert_one({"_id": 2})
        got = [_next(stream)["ns"]["db"] for _ in range(2)]
    rs_client.drop_database(other.name)
    assert got == [rdb.name, other.name]


def test_invalidate_on_collection_drop_and_rename(rdb):
    rdb.c.insert_one({"_id": 0})
    with rdb.c.watch(max_await_time_ms=AWAIT) as stream:
        rdb.c.insert_one({"_id": 1})
        rdb.other.insert_one({"_id": 9})  # another collection: not seen
        rdb.c.drop()
        events = [_next(stream) for _ in range(3)]
        assert not stream.alive
    assert _ops(events) == ["insert", "drop", "invalidate"]
    invalidate = events[-1]
    assert set(invalidate) == {"_id", "operationType", "clusterTime", "wallTime"}

    # resumeAfter an invalidate is refused; startAfter it starts the new collection's stream
    with pytest.raises(OperationFailure) as exc:
        rdb.c.watch(resume_after=invalidate["_id"])
    assert exc.value.code == 260
    rdb.c.insert_one({"_id": 2})
    with rdb.c.watch(start_after=invalidate["_id"], max_await_time_ms=AWAIT) as stream:
        assert _next(stream)["fullDocument"] == {"_id": 2}
    # resuming after the drop event itself gives the invalidate at once
    with rdb.c.watch(resume_after=events[1]["_id"], max_await_time_ms=AWAIT) as stream:
        assert _next(stream)["operationType"] == "invalidate"

    with rdb.c.watch(max_await_time_ms=AWAIT) as stream:
        rdb.client.admin.command("renameCollection", f"{rdb.name}.c", to=f"{rdb.name}.d")
        rename, invalidate = _next(stream), _next(stream)
    assert rename["operationType"] == "rename"
    assert rename["to"] == {"db": rdb.name, "coll": "d"}
    assert invalidate["operationType"] == "invalidate"


# --------------------------------------------------------------------------- resuming


def test_resume_after_a_token_and_start_at_operation_time(rdb):
    c = rdb.c
    with c.watch(max_await_time_ms=AWAIT) as stream:
        c.insert_one({"_id": 1})
        first = _next(stream)
    c.insert_one({"_id": 2})
    c.insert_one({"_id": 3})
    with c.watch(resume_after=first["_id"], max_await_time_ms=AWAIT) as stream:
        assert [_next(stream)["documentKey"]["_id"] for _ in range(2)] == [2, 3]
    with c.watch(start_at_operation_time=first["clusterTime"], max_await_time_ms=AWAIT) as stream:
        assert [_next(stream)["documentKey"]["_id"] for _ in range(3)] == [1, 2, 3]
    with pytest.raises(OperationFailure) as exc:
        c.watch(resume_after={"_data": "82" + "0" * 18 + "1"})
    assert exc.value.code == 260


def test_resume_after_a_client_disconnect(rs_server, rdb):
    client = pymongo.MongoClient(rs_server.uri, serverSelectionTimeoutMS=5000)
    c = client[rdb.name].c
    with c.watch(max_await_time_ms=AWAIT) as stream:
        c.insert_one({"_id": 1})
        assert _next(stream)["documentKey"] == {"_id": 1}
        rs_server.drop_connections()  # every connection of every client breaks
        rdb.c.insert_one({"_id": 2})
        rdb.c.insert_one({"_id": 3})
        # pymongo resumes from its token on the network error: nothing lost, nothing twice
        assert [_next(stream)["documentKey"]["_id"] for _ in range(2)] == [2, 3]
        assert _none_within(stream, 0.3) is None
    client.close()


def test_resume_after_killed_cursor(rdb):
    c = rdb.c
    with c.watch(max_await_time_ms=AWAIT) as stream:
        c.insert_one({"_id": 1})
        _next(stream)
        rdb.command("killCursors", "c", cursors=[stream._cursor.cursor_id])
        c.insert_one({"_id": 2})
        assert _next(stream)["documentKey"] == {"_id": 2}  # CursorNotFound: resumed


def test_lost_history_fails_with_change_stream_history_lost():
    server = DevMongoServer(port=0, replset="rs0", oplog_size_mb=0.02).start()  # ~20 KB
    client = pymongo.MongoClient(server.uri)
    c = client.t.c
    with c.watch(max_await_time_ms=AWAIT) as stream:
        c.insert_one({"_id": 0})
        early = _next(stream)["_id"]
    c.insert_many([{"_id": i, "pad": "x" * 1000} for i in range(1, 60)])
    with pytest.raises(OperationFailure) as exc:
        c.watch(resume_after=early)
    assert exc.value.code == 286
    assert exc.value.details["codeName"] == "ChangeStreamHistoryLost"
    with pytest.raises(OperationFailure) as exc:
        c.watch(start_at_operation_time=Timestamp(1, 1))
    assert exc.value.code == 286
    # a stream still within the history resumes (its last event is recent)
    with c.watch(max_await_time_ms=AWAIT) as stream:
        c.insert_one({"_id": 100})
        recent = _next(stream)["_id"]
    c.insert_one({"_id": 101})
    with c.watch(resume_after=recent, max_await_time_ms=AWAIT) as stream:
        assert _next(stream)["documentKey"] == {"_id": 101}
    client.close()
    server.stop()


def test_a_getmore_waits_without_holding_the_lock(rs_server, rdb):
    c = rdb.c
    waiter = pymongo.MongoClient(rs_server.uri)
    got = []
    with waiter[rdb.name].c.watch(max_await_time_ms=3000) as stream:
        started = time.monotonic()

        def wait():
            got.append(stream.try_next())
            got.append(time.monotonic() - started)

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.3)  # the getMore is waiting now
        before = time.monotonic()
        for i in range(20):
            c.find_one({"_id": i})
        assert time.monotonic() - before < 1.0  # not blocked by the waiting getMore
        c.insert_one({"_id": "wake"})
        t.join(5)
    waiter.close()
    assert got[0]["documentKey"] == {"_id": "wake"}
    assert got[1] < 2.0  # woken by the insert, not by maxAwaitTimeMS
    with c.watch(max_await_time_ms=300) as stream:  # nothing happens: waits that long
        started = time.monotonic()
        assert stream.try_next() is None
        assert 0.25 <= time.monotonic() - started < 2.0


# --------------------------------------------------------------------------- restarts


def test_resume_after_restart_with_data(tmp_path):
    path = str(tmp_path / "data.bson")
    server = DevMongoServer(port=0, replset="rs0", data_path=path).start()
    port = server.port
    client = pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=10000)
    c = client.app.c
    with c.watch(max_await_time_ms=AWAIT) as stream:
        c.insert_one({"_id": 1})
        assert _next(stream)["documentKey"] == {"_id": 1}
        c.insert_one({"_id": 2})  # written before the stop, not yet read by the stream
        server.stop()
        server = DevMongoServer(port=port, replset="rs0", data_path=path).start()
        c.insert_one({"_id": 3})
        # the stream's getMore fails on the closed connection; pymongo resumes from its token
        assert [_next(stream, 15)["documentKey"]["_id"] for _ in range(2)] == [2, 3]
    client.close()
    server.stop()


def test_cli_restarts_sigterm_resumes_kill_9_loses_history(tmp_path):
    path = str(tmp_path / "cli.bson")
    port = free_port()
    uri = f"mongodb://127.0.0.1:{port}/?replicaSet=rs0"
    proc = start_cli(port, path, "--replset", "rs0", "--snapshot-interval", "0.2")
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=15000)
    c = client.app.c
    try:
        stream = c.watch(max_await_time_ms=AWAIT)
        c.insert_one({"_id": 1})
        assert _next(stream)["documentKey"] == {"_id": 1}
        proc.send_signal(signal.SIGTERM)  # a clean stop writes the whole history
        proc.communicate(timeout=30)
        proc = start_cli(port, path, "--replset", "rs0", "--snapshot-interval", "0.2")
        c.insert_one({"_id": 2})
        assert _next(stream, 15)["documentKey"] == {"_id": 2}

        time.sleep(0.6)  # a periodic snapshot has the insert of _id 2
        c.insert_one({"_id": 3})
        assert _next(stream)["documentKey"] == {"_id": 3}  # seen, maybe not yet on disk
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        proc = start_cli(port, path, "--replset", "rs0", "--snapshot-interval", "0.2")
        # The stream's position may be past what the snapshot kept: resuming must not skip
        # silently. It fails with MongoDB's error for lost history.
        with pytest.raises(OperationFailure) as exc:
            _next(stream, 15)
        assert exc.value.code == 286
        stream.close()
    finally:
        client.close()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
