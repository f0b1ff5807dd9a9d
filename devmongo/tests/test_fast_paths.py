"""The fast paths for simple filters and one-field sorts (top-level fields against plain scalars)
give MongoDB's results: type bracketing, arrays, missing fields, NaN, booleans; and the same
results as the generic matcher (reached by wrapping the filter in ``$and``) for every shape."""

import datetime
import itertools
import math

import pytest
from bson import Decimal128, Int64, ObjectId
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError, WriteError

from devmongo.engine import compile_simple_filter
from devmongo.matching import generic_applies

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


# ---------------------------------------------------------------- the hot paths' command shapes


def test_projection_of_only_the_id(db):
    """{_id: 1} alone projects the _id only (it used to return the whole document in find)."""
    db.p.insert_one({"_id": 1, "b": 2, "a": {"x": 1}})
    assert db.p.find_one({}, {"_id": 1}) == {"_id": 1}
    assert list(db.p.find({"b": 2}, {"_id": 1})) == [{"_id": 1}]
    assert db.p.find_one_and_update({"_id": 1}, {"$inc": {"b": 1}}, projection={"_id": 1}) == {"_id": 1}


def test_find_and_modify_projects_like_find(db):
    db.p.insert_one({"_id": 1, "b": 2, "a": {"x": 1}, "c": [1], "version": 0})
    for projection in [{"version": 1, "b": 1}, {"a": 1, "_id": 0}, {"c": 0, "a": 0}, {"_id": 0}, {"a.x": 1}]:
        after = db.p.find_one_and_update(
            {"_id": 1}, {"$inc": {"version": 1}}, projection=projection, return_document=ReturnDocument.AFTER
        )
        found = db.p.find_one({"_id": 1}, projection)
        assert after == found and list(after) == list(found), projection
        before = db.p.find_one_and_update({"_id": 1}, {"$inc": {"version": 1}}, projection=projection)
        assert list(before) == list(found), projection
    assert list(db.p.find_one_and_update({"_id": 1}, {"$set": {"z": 1}}, projection={"version": 1, "b": 1})) == [
        "_id",
        "b",
        "version",
    ]  # document order, _id first, as in MongoDB


def _session(n_reservations=3):
    return {
        "_id": OIDS[0],
        "status": "on_sale",
        "layoutRev": 0,
        "start": T0,
        "seats": [[0, 0, 1, 0], [0, 2, 0, 0]],
        "seatsAvailable": 6,
        "version": 0,
        "reservations": [
            {"_id": ObjectId(f"6600000000000000000000{i:02x}"), "seats": [f"9:{i}"], "total": 1, "v": "t"}
            for i in range(n_reservations)
        ],
    }


def test_conditional_hold_and_release_as_the_booking_engine_sends_them(db):
    db.s.insert_one(_session())
    me = OIDS[1]
    hold = {
        "_id": OIDS[0],
        "status": "on_sale",
        "layoutRev": 0,
        "start": {"$gt": T0 - DAY},
        "seats.0.0": 0,
        "seats.0.1": 0,
        "reservations._id": {"$ne": me},
        "$and": [{"$or": [{"seats.0.2": {"$ne": 0}}, {"seats.0.3": 0}]}],
    }
    update = {
        "$set": {"seats.0.0": 1, "seats.0.1": 1},
        "$inc": {"seatsAvailable": -2, "version": 1},
        "$push": {"reservations": {"_id": me, "seats": ["0:0", "0:1"], "total": 2, "v": "a"}},
    }
    fields = {"version": 1, "seatsAvailable": 1}
    written = db.s.find_one_and_update(hold, update, projection=fields, return_document=ReturnDocument.AFTER)
    assert written == {"_id": OIDS[0], "version": 1, "seatsAvailable": 4}
    assert db.s.find_one_and_update(hold, update, projection=fields) is None  # seats taken, reservation exists
    assert db.s.find_one({"_id": OIDS[0], "reservations._id": me}, {"_id": 1}) == {"_id": OIDS[0]}
    # more seats into my reservation: two paths share one array filter
    more = db.s.find_one_and_update(
        {"_id": OIDS[0], "status": "on_sale", "seats.1.0": 0, "reservations._id": me},
        {
            "$set": {"seats.1.0": 1, "reservations.$[r].v": "b"},
            "$inc": {"seatsAvailable": -1, "version": 1, "reservations.$[r].total": 1},
            "$push": {"reservations.$[r].seats": {"$each": ["1:0"]}},
        },
        projection=fields,
        array_filters=[{"r._id": me}],
        return_document=ReturnDocument.AFTER,
    )
    assert more == {"_id": OIDS[0], "version": 2, "seatsAvailable": 3}
    doc = db.s.find_one({"_id": OIDS[0]})
    mine = [r for r in doc["reservations"] if r["_id"] == me]
    assert mine == [{"_id": me, "seats": ["0:0", "0:1", "1:0"], "total": 3, "v": "b"}]
    assert [r["v"] for r in doc["reservations"] if r["_id"] != me] == ["t", "t", "t"]
    # give one back, then the rest
    db.s.find_one_and_update(
        {"_id": OIDS[0]},
        {"$set": {"seats.1.0": 0, "reservations.$[r].v": "c"}, "$pull": {"reservations.$[r].seats": {"$in": ["1:0"]}}},
        array_filters=[{"r._id": me}],
    )
    assert [r for r in db.s.find_one({"_id": OIDS[0]})["reservations"] if r["_id"] == me][0]["seats"] == ["0:0", "0:1"]
    db.s.find_one_and_update({"_id": OIDS[0]}, {"$pull": {"reservations": {"_id": me}}})
    assert [r["_id"] for r in db.s.find_one({"_id": OIDS[0]})["reservations"]] == [
        ObjectId(f"6600000000000000000000{i:02x}") for i in range(3)
    ]


def test_pull_by_equality_matches_like_the_generic_matcher(db):
    items = [{"k": 1}, {"k": 1.0}, {"k": Int64(1)}, {"k": True}, {"k": "1"}, {"k": [1, 2]}, {"j": 1}, 1, None]
    items.append([{"k": 1}])
    db.a.insert_one({"_id": 1, "items": items})
    db.a.update_one({"_id": 1}, {"$pull": {"items": {"k": 1}}})
    expected = [e for e in items if not (isinstance(e, dict) and generic_applies({"k": 1}, e))]
    # {"k": True} stays: a boolean is not the number 1 (MongoDB; mongomock alone pulls it)
    assert db.a.find_one({"_id": 1})["items"] == expected == [{"k": True}, {"k": "1"}, {"j": 1}, 1, None, [{"k": 1}]]


def test_array_filters_with_nested_identifiers(db):
    db.n.insert_one({"_id": 1, "g": [{"n": 1, "v": [{"w": 1}, {"w": 2}]}, {"n": 2, "v": [{"w": 1}]}]})
    db.n.update_one(
        {"_id": 1}, {"$set": {"g.$[a].v.$[b].x": 9}, "$inc": {"g.$[a].n": 10}}, array_filters=[{"a.n": 1}, {"b.w": 1}]
    )
    assert db.n.find_one({"_id": 1})["g"] == [{"n": 11, "v": [{"w": 1, "x": 9}, {"w": 2}]}, {"n": 2, "v": [{"w": 1}]}]


def test_scans_with_unhandled_operators_match_like_mongomock(mixed):
    flt = {"s": "on_sale", "v": {"$type": "number"}}
    assert ids(mixed.find(flt)) == ids(mixed.find({"$and": [{"s": "on_sale"}, {"v": {"$type": "number"}}]}))
    assert ids(mixed.find({"$or": [{"v": {"$gt": 6}}, {"v": None}]})) == [2, 16, 21, 22]
    assert ids(mixed.find({"$or": [{"_id": 1}, {"v": {"$size": 2}}]})) == [1, 16]


def test_large_documents_read_after_every_kind_of_change(db):
    """Large documents keep their BSON encoding between reads; every change is seen."""
    big = {"_id": 1, "seats": [[0] * 32 for _ in range(30)], "layout": [{"label": str(i)} for i in range(600)], "n": 0}
    db.b.insert_one(big)
    db.b.create_index("u", unique=True, sparse=True)

    def read():
        return db.b.find_one({"_id": 1})

    assert read() == big
    assert read() == big  # from the remembered encoding
    db.b.update_one({"_id": 1}, {"$set": {"seats.3.4": 1}})
    assert read()["seats"][3][4] == 1
    db.b.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}})
    assert read()["n"] == 1
    assert db.b.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=ReturnDocument.AFTER)["n"] == 2
    assert db.b.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}})["n"] == 2  # the document before
    assert read()["n"] == 3
    db.b.update_one({"_id": 1}, [{"$set": {"p": "$n"}}])  # pipeline update
    assert read()["p"] == 3
    db.b.insert_one({"_id": 2, "u": 5})
    with pytest.raises(DuplicateKeyError):  # rolls the update back
        db.b.update_one({"_id": 1}, {"$set": {"u": 5, "n": 99}})
    assert read()["n"] == 3 and "u" not in read()
    with pytest.raises(WriteError):  # $inc of an array: rolls the update back
        db.b.update_one({"_id": 1}, {"$set": {"n": 100}, "$inc": {"layout": 1}})
    assert read()["n"] == 3
    db.b.replace_one({"_id": 1}, {**big, "n": 7})
    assert read()["n"] == 7 and list(db.b.find({"_id": 1})) == [read()]
    db.b.delete_one({"_id": 1})
    assert read() is None
    db.b.insert_one(big)
    assert read() == big
