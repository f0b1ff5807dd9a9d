"""find with real server-side cursors: first batch, getMore, killCursors."""

import pymongo
import pytest
from bson.int64 import Int64
from pymongo import monitoring


class Events(monitoring.CommandListener):
    def __init__(self):
        self.commands = []
        self.replies = []

    def started(self, event):
        self.commands.append((event.command_name, event.command))

    def succeeded(self, event):
        self.replies.append((event.command_name, event.reply))

    def failed(self, event):
        self.replies.append((event.command_name, None))

    def names(self):
        return [name for name, _ in self.commands]


@pytest.fixture
def watched(devmongo_server, db):
    events = Events()
    client = pymongo.MongoClient(devmongo_server.uri, event_listeners=[events])
    yield client[db.name], events
    client.close()


@pytest.fixture
def big(db):
    db.big.insert_many([{"_id": i, "v": i % 7, "pad": "x" * 20} for i in range(10000)])
    return db.big


def test_cursor_over_10000_documents(big, watched):
    wdb, events = watched
    docs = list(wdb.big.find())
    assert len(docs) == 10000
    assert sorted(d["_id"] for d in docs) == list(range(10000))
    names = events.names()
    assert names.count("find") == 1
    assert names.count("getMore") >= 1
    find_reply = next(r for n, r in events.replies if n == "find")
    assert len(find_reply["cursor"]["firstBatch"]) == 101
    assert find_reply["cursor"]["id"] != 0
    last = [r for n, r in events.replies if n == "getMore"][-1]
    assert last["cursor"]["id"] == 0


def test_batch_size_controls_get_more(big, watched):
    wdb, events = watched
    docs = list(wdb.big.find({"v": 3}).batch_size(100))
    assert len(docs) == len([i for i in range(10000) if i % 7 == 3])
    sizes = [
        len(r["cursor"].get("firstBatch", r["cursor"].get("nextBatch")))
        for n, r in events.replies
        if n in ("find", "getMore")
    ]
    assert all(s <= 100 for s in sizes)
    assert events.names().count("getMore") >= 14


def test_kill_cursors_on_early_close(big, watched, devmongo_server):
    wdb, events = watched
    cursor = wdb.big.find()
    next(cursor)
    cursor_id = cursor.cursor_id
    assert cursor_id
    assert cursor_id in devmongo_server.engine.cursors
    cursor.close()
    assert "killCursors" in events.names()
    kill = [c for n, c in events.commands if n == "killCursors"][-1]
    assert kill["cursors"] == [cursor_id]
    assert cursor_id not in devmongo_server.engine.cursors


def test_sort_skip_limit_projection(big):
    docs = list(big.find({"v": {"$in": [1, 2]}}, {"pad": 0}).sort([("v", -1), ("_id", 1)]).skip(3).limit(5))
    assert [d["_id"] for d in docs] == [23, 30, 37, 44, 51]
    assert all(set(d) == {"_id", "v"} for d in docs)
    only = big.find_one({"_id": 5}, {"v": 1, "_id": 0})
    assert only == {"v": 5}


def test_single_batch_and_limit(big, watched):
    wdb, events = watched
    docs = list(wdb.big.find().limit(-150))
    assert len(docs) == 150
    assert "getMore" not in events.names()
    docs = list(wdb.big.find().limit(250))
    assert len(docs) == 250


def test_get_more_unknown_cursor(db):
    with pytest.raises(pymongo.errors.OperationFailure) as exc:
        db.command({"getMore": Int64(12345), "collection": "x"})
    assert exc.value.code == 43


def test_aggregate_cursor_over_many_documents(big):
    docs = list(big.aggregate([{"$match": {"v": 0}}, {"$project": {"_id": 1}}], batchSize=50))
    assert len(docs) == len(range(0, 10000, 7))
