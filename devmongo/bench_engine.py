"""Engine-only timing (no sockets) of the commands the booking engine sends on its hot paths.

    python -m devmongo.bench_engine [--rounds 7] [--n 2000]

Each command is run ``--n`` times per round through ``Engine.run_command`` and its reply encoded
to BSON (as the wire loop does); the median and the minimum of the rounds' per-command CPU times
(``time.process_time``: the process's own CPU, so that other processes on a busy machine count
less) are printed, in microseconds. Used to check that refactorings of the engine keep its speed.
"""

import argparse
import datetime
import statistics
import time
import uuid

import bson
from bson.binary import Binary
from bson.int64 import Int64
from bson.objectid import ObjectId

from devmongo.engine import Engine

ROWS, COLS = 30, 40


def _session(sid):
    return {
        "_id": sid,
        "status": "on_sale",
        "layoutRev": 1,
        "version": 0,
        "seatsAvailable": ROWS * COLS,
        "seats": [[0] * COLS for _ in range(ROWS)],
        "reservations": [
            {
                "_id": ObjectId(),
                "seats": [f"{r}:{c}" for c in range(4)],
                "total": 40,
                "v": "x",
                "modifiedOn": datetime.datetime(2026, 1, 1),
            }
            for r in range(60)
        ],
    }


def setup(engine):
    sid = ObjectId()
    engine.run_command("b", {"insert": "sessions", "documents": [_session(sid)]})
    carts = [
        {
            "_id": ObjectId(),
            "owner": f"s:{i}",
            "client": f"10.0.0.{i % 50}",
            "state": "active",
            "expiresAt": datetime.datetime(2030, 1, 1),
            "items": [],
            "total": 0,
        }
        for i in range(400)
    ]
    engine.run_command("b", {"insert": "carts", "documents": carts})
    engine.run_command(
        "b",
        {
            "createIndexes": "carts",
            "indexes": [
                {"key": {"owner": 1}, "name": "owner"},
                {"key": {"client": 1, "state": 1}, "name": "client_state"},
            ],
        },
    )
    return sid, carts


def commands(sid, carts):
    cart = carts[7]
    cid = ObjectId()
    hold = {
        "findAndModify": "sessions",
        "query": {"_id": sid, "status": "on_sale", "layoutRev": 1, "seats.3.5": 0, "reservations._id": {"$ne": cid}},
        "update": {
            "$set": {"seats.3.5": 1},
            "$inc": {"seatsAvailable": -1, "version": 1},
            "$push": {"reservations": {"_id": cid, "seats": ["3:5"], "total": 10, "v": "y"}},
        },
        "fields": {"version": 1, "seatsAvailable": 1},
        "new": True,
    }
    release = {
        "findAndModify": "sessions",
        "query": {"_id": sid, "reservations": {"$elemMatch": {"_id": cid, "seats": {"$all": ["3:5"]}}}},
        "update": {
            "$set": {"seats.3.5": 0},
            "$inc": {"seatsAvailable": 1, "version": 1},
            "$pull": {"reservations": {"_id": cid}},
        },
        "fields": {"version": 1, "seatsAvailable": 1},
        "new": True,
    }
    return {
        "ping": [{"ping": 1}],
        "find session by _id, {version: 1}": [
            {"find": "sessions", "filter": {"_id": sid}, "projection": {"version": 1}, "limit": 1, "singleBatch": True}
        ],
        "find whole session by _id": [{"find": "sessions", "filter": {"_id": sid}, "limit": 1, "singleBatch": True}],
        "findAndModify hold + release (per command)": [hold, release],
        "update seat cell ($set/$inc)": [
            {
                "update": "sessions",
                "updates": [
                    {
                        "q": {"_id": sid, "seats.10.10": 0},
                        "u": {"$set": {"seats.10.10": 1}, "$inc": {"seatsAvailable": -1}},
                    }
                ],
            },
            {
                "update": "sessions",
                "updates": [
                    {
                        "q": {"_id": sid, "seats.10.10": 1},
                        "u": {"$set": {"seats.10.10": 0}, "$inc": {"seatsAvailable": 1}},
                    }
                ],
            },
        ],
        "findAndModify cart ($or lookup, $inc)": [
            {
                "findAndModify": "carts",
                "query": {"$or": [{"owner": cart["owner"]}, {"_id": cart["_id"]}], "state": "active"},
                "update": {"$inc": {"total": 1}, "$set": {"modifiedOn": datetime.datetime(2026, 1, 1)}},
                "new": True,
            }
        ],
        "find carts {client, state}": [
            {
                "find": "carts",
                "filter": {
                    "client": "10.0.0.3",
                    "state": "active",
                    "expiresAt": {"$gt": datetime.datetime(2026, 1, 1)},
                },
            }
        ],
        "insert + delete one": [
            {"insert": "tmp", "documents": [{"_id": 1, "a": "x"}]},
            {"delete": "tmp", "deletes": [{"q": {"_id": 1}, "limit": 1}]},
        ],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument(
        "--replset",
        action="store_true",
        help="replica-set mode, writes sent as retryable writes (lsid, txnNumber)"
        " as pymongo sends them to a replica set",
    )
    args = parser.parse_args(argv)
    engine = Engine(replset="rs0" if args.replset else None)
    cmds = commands(*setup(engine))
    lsid = {"id": Binary(uuid.uuid4().bytes, 4)}
    txn = 0
    for name, seq in cmds.items():
        times = []
        for _ in range(args.rounds):
            started = time.process_time()
            for _ in range(args.n):
                for cmd in seq:
                    cmd = dict(cmd)
                    if args.replset and next(iter(cmd)) in ("insert", "update", "delete", "findAndModify"):
                        txn += 1
                        cmd["lsid"] = lsid
                        cmd["txnNumber"] = Int64(txn)
                    reply = engine.run_command("b", cmd)
                    if reply.get("ok") != 1.0 or reply.get("writeErrors"):
                        raise SystemExit(f"{name}: {reply}")
                    bson.encode(reply)
            times.append((time.process_time() - started) / (args.n * len(seq)) * 1e6)
        print(f"{name:45s} {statistics.median(times):8.1f} us  (min {min(times):.1f})")


if __name__ == "__main__":
    main()
