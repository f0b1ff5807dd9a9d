"""BSON types round-trip as MongoDB stores them."""

import datetime

from bson import Decimal128, ObjectId
from bson.int64 import Int64


def test_types_round_trip(db):
    oid = ObjectId()
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.UTC)
    db.c.insert_one(
        {
            "_id": oid,
            "when": when,
            "big": Int64(2**40),
            "small": Int64(5),
            "grid": [[0, 1, [2, 3]], []],
            "f": 1.5,
            "s": "é",
            "b": True,
            "n": None,
            "bin": b"\x00\x01",
            "dec": Decimal128("1.10"),
        }
    )
    doc = db.c.find_one({"_id": oid})
    assert doc["_id"] == oid
    # MongoDB stores milliseconds; pymongo returns naive UTC datetimes by default
    assert doc["when"] == datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
    assert doc["big"] == 2**40 and isinstance(doc["big"], Int64)
    assert isinstance(doc["small"], Int64)
    assert doc["grid"] == [[0, 1, [2, 3]], []]
    assert doc["bin"] == b"\x00\x01"
    assert doc["dec"] == Decimal128("1.10")
    assert db.c.find_one({"when": {"$gte": datetime.datetime(2024, 5, 6)}})["_id"] == oid
    assert db.c.find_one({"when": {"$lt": datetime.datetime(2024, 5, 6)}}) is None
    db.c.update_one({"_id": oid}, {"$inc": {"small": 1}})
    assert isinstance(db.c.find_one({"_id": oid})["small"], Int64)


def test_objectid_generated_when_missing(db):
    r = db.c.insert_one({"x": 1})
    assert isinstance(r.inserted_id, ObjectId)
    raw = db.command("insert", "c", documents=[{"y": 1}])
    assert raw["n"] == 1
    doc = db.c.find_one({"y": 1})
    assert isinstance(doc["_id"], ObjectId) and list(doc)[0] == "_id"
