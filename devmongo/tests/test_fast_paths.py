"""The fast paths for simple filters and one-field sorts (top-level fields against plain scalars)
give MongoDB's results: type bracketing, arrays, missing fields, NaN, booleans; and the same
results as the generic matcher (reached by wrapping the filter in ``$and``) for every shape."""

import datetime
import itertools
import math

import pytest
from bson import Decimal128, Int64, ObjectId

from devmongo.engine import compile_simple_filter

T0 = datetime.datetime(2030, 1, 1, 12, 0)
DAY = datetime.timedelta(days=1)
OIDS = [ObjectId("650000000000000000000001"), ObjectId("650000000000000000000002")]

# _id -> value of "v" (None: the field is missing); "s" is "on_sale" on even _ids
VALUES = {
    1: 5,
    2: Int64(7),
    3: 5.0,
    4: 2.5,
    5: math.nan,
    6: True,
    7: False,
    8: "on_sale",
    9: "7",
    10: "abc",
    11: T0 - DAY,
    12: T0,
    13: T0 + DAY,
    14: OIDS[0],
    15: OIDS[1],
    16: [1, 9],
    17: [T0 + 2 * DAY],
    18: [],
    19: {"a": 1},
    20: "",
    21: None,  # v: null
    22: ...,  # no v at all
    23: -3,
    24: 0,
}


@pytest.fixture
def mixed(db):
    docs = []
    for _id, value in VALUES.items():
        doc = {"_id": _id, "s": "on_sale" if _id % 2 == 0 else "draft"}
        if value is not ...:
            doc["v"] = value
        docs.append(doc)
    db.m.insert_many(docs)
    return db.m


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


@pytest.mark.parametrize(
    "flt,expected",
    [
        # a range on a date matches dates only (and arrays holding one), never numbers or strings
        ({"v": {"$gt": T0}}, [13, 17]),
        ({"v": {"$gte": T0}}, [12, 13, 17]),
        ({"v": {"$lt": T0}}, [11]),
        ({"v": {"$gt": T0 - 2 * DAY, "$lt": T0 + DAY}}, [11, 12]),
        ({"v": T0}, [12]),
        # numbers: int, long and double compare by value; no NaN, no booleans, no strings
        ({"v": {"$gte": 5}}, [1, 2, 3, 16]),
        ({"v": {"$lt": 5}}, [4, 16, 23, 24]),
        ({"v": {"$gt": 2, "$lte": 5}}, [1, 3, 4, 16]),
        ({"v": 5}, [1, 3]),
        ({"v": {"$eq": 7}}, [2]),
        ({"v": 7.0}, [2]),
        ({"v": 9}, [16]),
        ({"v": {"$gte": -100}}, [1, 2, 3, 4, 16, 23, 24]),
        # strings: binary order, strings only
        ({"v": "7"}, [9]),
        ({"v": {"$lt": "b"}}, [9, 10, 20]),
        ({"v": {"$gte": "on"}}, [8]),
        # ObjectIds
        ({"v": {"$gt": OIDS[0]}}, [15]),
        ({"v": OIDS[0]}, [14]),
        # several fields: all must hold; documents without the field never match a range
        ({"s": "on_sale", "v": {"$gt": T0 - 2 * DAY}}, [12]),
        ({"s": "on_sale", "v": {"$lt": 100}}, [2, 4, 16, 24]),
        ({"s": "draft"}, [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23]),
        ({"s": "on_sale", "_id": {"$gte": 20}}, [20, 22, 24]),
        ({"v": ""}, [20]),
        ({"nothing": {"$gt": 0}}, []),
    ],
)
def test_simple_filters_give_mongodbs_results(mixed, flt, expected):
    assert compile_simple_filter(flt) is not None  # these do take the fast path
    assert ids(mixed.find(flt)) == expected
    assert mixed.count_documents(flt) == len(expected)
    assert ids(mixed.find({"$and": [flt]})) == expected  # the generic matcher agrees


def test_other_shapes_are_left_to_the_generic_matcher(mixed):
    for flt in [
        {"v.a": 1},
        {"v": {"$in": [5, 7]}},
        {"v": {"$ne": 5}},
        {"v": None},
        {"v": True},
        {"v": {"$gt": None}},
        {"v": math.nan},
        {"v": {"a": 1}},
        {"v": {}},
        {"v": [1, 9]},
        {"v": {"$gt": Decimal128("1")}},
        {"$or": [{"v": 5}]},
        {},
    ]:
        assert compile_simple_filter(flt) is None, flt
    assert ids(mixed.find({"v": None})) == [21, 22]
    assert ids(mixed.find({"v": {"a": 1}})) == [19]
    assert ids(mixed.find({"v": [1, 9]})) == [16]


OPERANDS = [0, 5, Int64(7), 5.0, 6.5, -3, "7", "abc", "on_sale", "", T0 - DAY, T0, T0 + DAY, *OIDS]


@pytest.mark.parametrize("op", ["eq", "$eq", "$gt", "$gte", "$lt", "$lte"])
def test_fast_path_agrees_with_the_generic_matcher_for_every_operand(mixed, op):
    for operand, field in itertools.product(OPERANDS, ["v", "s", "missing"]):
        flt = {field: operand} if op == "eq" else {field: {op: operand}}
        assert compile_simple_filter(flt) is not None
        fast = ids(mixed.find(flt))
        assert fast == ids(mixed.find({"$and": [flt]})), flt
        both = {"s": "on_sale", **flt} if field != "s" else flt
        assert ids(mixed.find(both)) == ids(mixed.find({"$and": [both]})), both


def test_find_one_update_and_delete_use_the_same_matching(mixed):
    assert mixed.find_one({"s": "on_sale", "v": {"$gte": T0}}, sort=[("_id", 1)])["_id"] == 12
    r = mixed.update_many({"v": {"$gte": 5}}, {"$set": {"big": True}})
    assert r.matched_count == 4
    assert ids(mixed.find({"big": True})) == [1, 2, 3, 16]
    r = mixed.update_one({"s": "draft", "v": {"$lt": T0 + 5 * DAY}}, {"$set": {"first": 1}})
    assert r.matched_count == 1
    assert ids(mixed.find({"first": 1})) == [11]  # the first in natural order
    assert mixed.delete_many({"v": {"$lt": "zzz"}}).deleted_count == 4
    assert ids(mixed.find({"v": {"$type": "string"}})) == []


def test_sort_on_one_field_of_one_type(db):
    start = [T0 + 3 * DAY, T0, T0 + DAY, T0, T0 - DAY]
    db.s.insert_many(
        [{"_id": i, "start": t, "n": [3, 1.5, Int64(2), -1, 10][i], "w": "bAaBc"[i]} for i, t in enumerate(start)]
    )
    assert [d["_id"] for d in db.s.find().sort("start", 1)] == [4, 1, 3, 2, 0]
    assert [d["_id"] for d in db.s.find().sort("start", -1)] == [0, 2, 1, 3, 4]
    assert [d["_id"] for d in db.s.find().sort("start", 1).limit(2)] == [4, 1]
    assert [d["_id"] for d in db.s.find().sort("n", 1)] == [3, 1, 2, 0, 4]  # int, long, double by value
    assert [d["_id"] for d in db.s.find().sort("w", 1)] == [1, 3, 2, 0, 4]  # binary: capitals first
    assert [d["_id"] for d in db.s.find({"start": {"$gte": T0}}).sort("start", -1)] == [0, 2, 1, 3]


def test_sort_across_types_keeps_bson_order(db):
    db.s.insert_many(
        [
            {"_id": 1, "k": T0},
            {"_id": 2, "k": "x"},
            {"_id": 3, "k": 4},
            {"_id": 4},
            {"_id": 5, "k": None},
            {"_id": 6, "k": OIDS[0]},
            {"_id": 7, "k": True},
            {"_id": 8, "k": 2.5},
        ]
    )
    order = [d["_id"] for d in db.s.find().sort("k", 1)]
    # null and missing first, then numbers, strings, ObjectIds, booleans, dates
    assert order[:2] in ([4, 5], [5, 4])
    assert order[2:] == [8, 3, 2, 6, 7, 1]
