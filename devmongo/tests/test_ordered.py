"""Index-ordered reads (devmongo/ordered.py) give exactly the generic path's answers: random
documents (dates, numbers, strings, ObjectIds, null, missing, and values the walk does not order:
arrays, bools, documents), random writes between the reads, and sorted, limited finds with
equalities, ranges and page-cursor ``$or``s, against the same collection without indexes. Then:
the walk reads only what it returns when an index serves the query."""

import datetime

import bson
import pytest
from bson import ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devmongo.engine import Engine

T0 = datetime.datetime(2030, 1, 1, 12, 0)
TIMES = [T0 + datetime.timedelta(minutes=m) for m in range(4)]
INDEXES = [
    {"key": {"t": -1, "_id": -1}, "name": "newest"},
    {"key": {"s": 1, "t": -1, "_id": -1}, "name": "s_newest"},
    {"key": {"s": 1, "t": 1, "_id": 1}, "name": "s_oldest"},
]
plain_times = st.sampled_from(TIMES)
# values the walk orders (mostly), and now and then one it does not (the collection falls back)
ORDERED = [None, 3, 2.5, "x", ObjectId("650000000000000000000001")]
UNORDERED = [True, [T0], {"a": 1}]
t_values = st.sampled_from(TIMES * 40 + ORDERED * 4 + UNORDERED)
s_values = st.sampled_from(["a", "b", "c"] * 40 + [None, 1] * 4 + [["a"], False])
ABSENT = "absent"


@st.composite
def documents(draw):
    doc = {"_id": draw(st.integers(0, 40))}
    for field, values in (("t", t_values), ("s", s_values)):
        if draw(st.integers(0, 5)):
            doc[field] = draw(values)
    return doc


cursor_ors = st.builds(
    lambda t, i, op: {"$or": [{"t": {op: t}}, {"t": t, "_id": {op: i}}]},
    plain_times,
    st.integers(0, 40),
    st.sampled_from(["$lt", "$gt"]),
)
conditions = st.one_of(
    st.builds(lambda s: {"s": s}, st.sampled_from(["a", "b", None])),
    st.builds(lambda t: {"t": {"$gte": t}}, plain_times),
    st.builds(lambda t: {"t": {"$lt": t}}, plain_times),
    st.builds(lambda a, b: {"t": {"$gte": a, "$lte": b}}, plain_times, plain_times),
    st.builds(lambda s: {"s": {"$in": s}}, st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2)),
    cursor_ors,
    st.just({"s": {"$ne": "a"}}),
)
filters = st.lists(conditions, max_size=3).map(lambda cs: {"$and": cs} if len(cs) > 1 else (cs[0] if cs else {}))
sorts = st.sampled_from([{"t": -1, "_id": -1}, {"t": 1, "_id": 1}])
writes = st.one_of(
    st.builds(lambda d: ("insert", d), documents()),
    st.builds(lambda i, t: ("update", i, t), st.integers(0, 40), t_values),
    st.builds(lambda i: ("delete", i), st.integers(0, 40)),
)


def found(engine, coll, flt, sort, limit):
    reply = engine.run_command("t", {"find": coll, "filter": flt, "sort": sort, "limit": limit})
    assert reply["ok"] == 1, reply
    return [bson.decode(d.raw)["_id"] for d in reply["cursor"]["firstBatch"]]


def write(engine, coll, op):
    kind = op[0]
    if kind == "insert":
        engine.run_command("t", {"insert": coll, "documents": [bson.decode(bson.encode(op[1]))], "ordered": False})
    elif kind == "update":
        engine.run_command("t", {"update": coll, "updates": [{"q": {"_id": op[1]}, "u": {"$set": {"t": op[2]}}}]})
    else:
        engine.run_command("t", {"delete": coll, "deletes": [{"q": {"_id": op[1]}, "limit": 1}]})


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(documents(), max_size=30),
    st.lists(st.tuples(filters, sorts, st.integers(1, 6), st.lists(writes, max_size=2)), min_size=1, max_size=6),
)
def test_index_walks_answer_as_match_and_sort(initial, reads):
    engine = Engine()
    engine.run_command("t", {"createIndexes": "idx", "indexes": INDEXES})
    engine.run_command("t", {"create": "raw"})
    for coll in ("idx", "raw"):
        for doc in initial:
            engine.run_command("t", {"insert": coll, "documents": [bson.decode(bson.encode(doc))], "ordered": False})
    for flt, sort, limit, then in reads:
        assert found(engine, "idx", flt, sort, limit) == found(engine, "raw", flt, sort, limit), (flt, sort, limit)
        for op in then:
            write(engine, "idx", op)
            write(engine, "raw", op)


def test_a_served_query_walks_only_to_its_limit():
    engine = Engine()
    engine.run_command("t", {"createIndexes": "c", "indexes": INDEXES})
    docs = [{"_id": i, "s": "ab"[i % 2], "t": T0 + datetime.timedelta(seconds=i // 3)} for i in range(3000)]
    engine.run_command("t", {"insert": "c", "documents": docs})
    store = engine.server_store["t"]["c"]
    newest = found(engine, "c", {"s": "b"}, {"t": -1, "_id": -1}, 5)
    assert newest == [2999, 2997, 2995, 2993, 2991]
    [index] = store.__dict__["_devmongo_ordered"].values()  # an index led by s: the one value pinned
    assert index.fields == ["s", "t", "_id"]
    assert len(index.docs) == 3000
    # a page after a cursor: the walk starts at the cursor's time (a bisection), not at the newest
    cursor = {"$or": [{"t": {"$lt": docs[1500]["t"]}}, {"t": docs[1500]["t"], "_id": {"$lt": 1500}}]}
    start, end = index.span((3, "a"), None, (9, docs[1500]["t"]))
    assert end - start < 800
    assert found(engine, "c", {"$and": [{"s": "a"}, cursor]}, {"t": -1, "_id": -1}, 2) == [1498, 1496]
    # a write: the next read sees it
    later = {"_id": 5000, "s": "b", "t": T0 + datetime.timedelta(days=1)}
    engine.run_command("t", {"insert": "c", "documents": [later]})
    assert found(engine, "c", {"s": "b"}, {"t": -1, "_id": -1}, 1) == [5000]
