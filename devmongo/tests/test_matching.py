"""devmongo.matching decides exactly as its generic path (mongomock's ``filter_applies`` over the
filter with MongoDB's boolean/number equality and ``$exists: false``, ``generic_applies``):
a differential test over random documents and filters built from the hot paths' shapes (dotted
numeric paths into nested arrays, arrays of subdocuments, missing fields, values of every type),
plus the shapes it must leave to the generic path."""

import datetime
import math

import pytest
from bson import Decimal128, Int64, ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devmongo.matching import Unsupported, generic_applies, matcher, matches
from devmongo.update import _array_filter_matcher

T0 = datetime.datetime(2030, 1, 1, 12, 0)
OIDS = [ObjectId("650000000000000000000001"), ObjectId("650000000000000000000002")]

operands = st.sampled_from(
    [
        0,
        1,
        2,
        -1,
        Int64(1),
        1.0,
        2.5,
        math.nan,
        "a",
        "b",
        "",
        "1",
        str(OIDS[0]),
        T0,
        T0 + datetime.timedelta(days=1),
        *OIDS,
    ]
)
leaves = st.one_of(
    operands,
    st.sampled_from([None, True, False, Decimal128("1"), b"x", {"k": 1}, [], {}]),
)
FIELDS = ["a", "b", "3", "_id"]


def values(depth=3):
    if depth == 0:
        return leaves
    sub = st.deferred(lambda: values(depth - 1))
    return st.one_of(
        leaves,
        st.lists(sub, max_size=4),
        st.dictionaries(st.sampled_from(FIELDS), sub, max_size=3),
    )


documents = st.dictionaries(st.sampled_from(FIELDS), values(), max_size=4)
paths = st.lists(st.sampled_from(["a", "b", "3", "0", "1", "_id"]), min_size=1, max_size=4).map(".".join)
field_conditions = st.one_of(
    operands,
    st.dictionaries(st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), operands, min_size=1, max_size=2),
    st.fixed_dictionaries({"$in": st.lists(operands, max_size=3)}),
    st.fixed_dictionaries({"$nin": st.lists(operands, max_size=3)}),
    st.fixed_dictionaries({"$exists": st.sampled_from([True, False, 0, 1])}),
    st.fixed_dictionaries({"$ne": operands, "$nin": st.lists(operands, max_size=2)}),
    st.fixed_dictionaries({"$exists": st.booleans(), "$ne": operands}),
)
plain_filters = st.dictionaries(paths, field_conditions, min_size=1, max_size=3)
filters = st.one_of(
    plain_filters,
    st.builds(
        lambda k, subs: {k: subs},
        st.sampled_from(["$and", "$or", "$nor"]),
        st.lists(plain_filters, min_size=1, max_size=3),
    ),
    st.builds(
        lambda f, subs: {**f, "$and": [{"$or": subs}]}, plain_filters, st.lists(plain_filters, min_size=1, max_size=3)
    ),
)


def generic(flt, doc):
    try:
        return generic_applies(flt, doc)
    except Exception as exc:  # noqa: BLE001 - both sides must raise alike
        return type(exc)


def through_matcher(flt, doc):
    try:
        return matcher(flt)(doc)
    except Exception as exc:  # noqa: BLE001
        return type(exc)


def fast(flt, doc):
    try:
        return matches(flt, doc)  # never Unsupported for these shapes: the fast path is taken
    except Unsupported:
        raise
    except Exception as exc:  # noqa: BLE001
        return type(exc)


def same(a, b):
    if isinstance(a, type) or isinstance(b, type):
        return a is b
    return bool(a) == bool(b)


@pytest.mark.slow
@settings(max_examples=2500, deadline=None, suppress_health_check=list(HealthCheck))
@given(filters, documents)
def test_matches_agrees_with_filter_applies(flt, doc):
    assert same(fast(flt, doc), generic(flt, doc)), (flt, doc)
    assert same(through_matcher(flt, doc), generic(flt, doc)), (flt, doc)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(filters, st.dictionaries(paths, values(), min_size=1, max_size=2)), documents)
def test_matcher_with_any_operand_agrees_with_filter_applies(flt, doc):
    """Operands it does not handle (documents, arrays, null, booleans...) go to mongomock."""
    try:
        expected = generic_applies(flt, doc)
    except Exception as exc:  # noqa: BLE001
        with pytest.raises(type(exc)):
            matcher(flt)(doc)
        return
    assert bool(matcher(flt)(doc)) == bool(expected), (flt, doc)


SESSION = {
    "_id": OIDS[0],
    "status": "on_sale",
    "layoutRev": 0,
    "start": T0,
    "seats": [[0, 1, 0, -1], [1, 0, 0, 0], [0, 0, 2, 0]],
    "reservations": [
        {"_id": OIDS[1], "seats": ["0:1", "1:0"], "total": 7800},
        {"_id": ObjectId("650000000000000000000003"), "seats": ["2:2"]},
    ],
}


@pytest.mark.parametrize(
    "flt,expected",
    [
        ({"_id": OIDS[0], "status": "on_sale", "seats.0.0": 0, "seats.1.1": 0}, True),
        ({"seats.0.1": 0}, False),
        ({"seats.0.9": 0}, False),  # index out of range: no candidate
        ({"seats.0.9": {"$ne": 0}}, True),
        ({"seats.0.9": {"$exists": False}}, True),
        ({"seats.9.0": {"$exists": False}}, True),
        ({"seats.0": 0}, True),  # an array candidate matches when an element does
        ({"reservations._id": OIDS[1]}, True),
        ({"reservations._id": {"$ne": OIDS[1]}}, False),
        ({"reservations._id": {"$ne": OIDS[0]}}, True),
        ({"reservations.seats": "2:2"}, True),
        ({"reservations.total": {"$gt": 0}}, True),
        # MongoDB's answer: one reservation has a total (mongomock alone would say True)
        ({"reservations.total": {"$exists": False}}, False),
        ({"reservations.1.total": {"$exists": False}}, True),
        ({"start": {"$gt": T0 - datetime.timedelta(1)}, "layoutRev": {"$lt": 1}}, True),
        ({"start": {"$gt": 0}}, False),  # type bracketing
        ({"$and": [{"$or": [{"seats.0.2": {"$ne": 0}}, {"seats.0.3": 0}]}]}, False),
        ({"$or": [{"seats.0.2": {"$ne": 0}}, {"seats.0.3": -1}]}, True),
        ({"$nor": [{"status": "draft"}]}, True),
        ({"status": {"$in": ["draft", "on_sale"]}, "missing": {"$nin": [1]}}, True),
    ],
)
def test_hot_path_filters(flt, expected):
    assert matches(flt, SESSION) is expected
    assert generic_applies(flt, SESSION) is expected


@pytest.mark.parametrize(
    "flt",
    [
        {"a": None},
        {"a": True},
        {"a": {"b": 1}},
        {"a": [1]},
        {"a": {}},
        {"a": {"$elemMatch": {"b": 1}}},
        {"a": {"$all": [1]}},
        {"a": {"$size": 1}},
        {"a": {"$type": "int"}},
        {"a": {"$not": {"$gt": 1}}},
        {"a": {"$regex": "x"}},
        {"a": {"$in": [None]}},
        {"a": {"$in": "x"}},
        {"a": {"$gt": Decimal128("1")}},
        {"a": {"$eq": None}},
        {"$or": []},
        {"$or": [{"a": None}]},
        {"$expr": {"$eq": ["$a", 1]}},
        {"$where": "1"},
        {"a.-1": 1},
        {"a. 1": 1},
        {"a..b": 1},
        {"a.$b": 1},
        {"a": {"$ne": 1, "x": 2}},
    ],
)
def test_other_shapes_use_the_generic_matcher(flt):
    doc = {"a": [1, {"b": 1}], "x": 2}
    with pytest.raises(Unsupported):
        matches(flt, doc)
    try:
        expected = generic_applies(flt, doc)
    except Exception as exc:  # noqa: BLE001
        with pytest.raises(type(exc)):
            matcher(flt)(doc)
    else:
        assert matcher(flt)(doc) == expected


def test_a_scan_falls_back_once_it_meets_an_unhandled_part():
    applies = matcher({"x": 1, "a": {"$size": 2}})
    assert applies({"x": 2}) is False  # decided before reaching $size, as mongomock does
    assert applies({"x": 1, "a": [1, 2]}) is True  # $size: mongomock from here on
    assert applies({"x": 1, "a": [1]}) is False


array_filters = st.one_of(
    st.dictionaries(paths.map(lambda p: "e." + p), field_conditions, min_size=1, max_size=2),
    st.dictionaries(st.just("e"), field_conditions, min_size=1, max_size=1),
    st.builds(
        lambda subs: {"$or": subs},
        st.lists(
            st.dictionaries(paths.map(lambda p: "e." + p), field_conditions, min_size=1, max_size=2),
            min_size=1,
            max_size=2,
        ),
    ),
)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(array_filters, values())
def test_array_filter_matcher_agrees_with_filter_applies(fdoc, element):
    """``$[e]`` filters: matching the element without the identifier gives the same answers."""
    expected = generic(fdoc, {"e": element})
    try:
        got = _array_filter_matcher("e", fdoc)(element)
    except Exception as exc:  # noqa: BLE001
        got = type(exc)
    assert same(got, expected), (fdoc, element)


@pytest.mark.parametrize(
    "flt,doc,expected",
    [
        # booleans are not numbers (mongomock alone says True to each of these)
        ({"a": True}, {"a": 1}, False),
        ({"a": 1}, {"a": True}, False),
        ({"a": 0}, {"a": False}, False),
        ({"a": {"$eq": 1}}, {"a": [True]}, False),
        ({"a": {"$in": [1, 2]}}, {"a": True}, False),
        ({"a": {"$in": [True]}}, {"a": 1}, False),
        ({"a": {"$ne": 1}}, {"a": True}, True),
        ({"a": {"$nin": [0]}}, {"a": False}, True),
        ({"a": {"$all": [1]}}, {"a": [True]}, False),
        ({"a": [1, True]}, {"a": [True, 1]}, False),
        ({"a": {"b": 1}}, {"a": {"b": True}}, False),
        ({"a": True}, {"a": True}, True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": True}, {"a": [0, True]}, True),
        ({"a": {"$elemMatch": {"b": 1}}}, {"a": [{"b": True}]}, False),
        # $exists: false through arrays: no element may have the field
        ({"a.b": {"$exists": False}}, {"a": [{"b": 1}, {"c": 2}]}, False),
        ({"a.b": {"$exists": False}}, {"a": [{"c": 1}, {"c": 2}]}, True),
        ({"a.b": {"$exists": False}}, {"a": []}, True),
        ({"a.b": {"$exists": 0, "$ne": 3}}, {"a": [{"c": 1}]}, True),
        ({"a.b": {"$exists": True}}, {"a": [{"b": 1}, {"c": 2}]}, True),
    ],
)
def test_mongodb_equality_and_exists(flt, doc, expected):
    assert generic_applies(flt, doc) is expected
    assert bool(matcher(flt)(doc)) is expected
    try:
        assert matches(flt, doc) is expected
    except Unsupported:
        pass  # the shapes the fast path leaves to the generic path


def test_one_large_in_list_answers_as_the_generic_path_for_every_kind_of_stored_value():
    """A theater's orders are asked for with a $in of its sessions; the operand is looked up as a
    set, so each stored value must be found (or not) exactly as by comparing with each element."""
    sessions = [ObjectId() for _ in range(500)]
    flt = {"$or": [{"lines.sessionId": {"$in": [*sessions, 1, 2.5, "x", T0]}}, {"n": {"$in": [1]}}]}
    docs = [
        {"lines": [{"sessionId": sessions[-1]}]},
        {"lines": [{"sessionId": ObjectId()}]},
        {"lines": [{"sessionId": {"nested": sessions[0]}}]},  # a document: unhashable, equal to none
        {"lines": [{"sessionId": [sessions[3]]}]},
        {"lines": {"sessionId": Int64(1)}},
        {"lines": [{"sessionId": 1.0}, {"sessionId": True}]},
        {"lines": [{"sessionId": 2.5}]},
        {"lines": [{"sessionId": T0}]},
        {"lines": [{"sessionId": float("nan")}]},
        {"n": True},
        {"n": 1.0},
        {},
    ]
    applies = matcher(flt)
    for doc in docs:
        assert applies(doc) is generic_applies(flt, doc), doc
    expected = [True, False, False, True, True, True, True, True, False, False, True, False]
    assert [applies(doc) for doc in docs] == expected
