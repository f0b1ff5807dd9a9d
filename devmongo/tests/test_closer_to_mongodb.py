"""Edge cases where devmongo used to answer unlike MongoDB, each as the MongoDB manual or server
source says: document size and nesting limits,
an index's key pattern under a second name, projections ($slice, positional $), the order of new
fields, cursors seeing later writes. (Booleans vs numbers and $exists through arrays:
test_matching.py; hints: test_server_parameters.py; w > 1: test_replset.py; TTL timing:
test_server_parameters.py.)"""

import pytest
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure, WriteError

MB = 1024 * 1024


# --------------------------------------------------------------------------- 16 MB after an update


def test_an_update_past_16_mb_is_refused_and_leaves_the_document(db):
    db.c.insert_one({"_id": 1, "a": "x" * (10 * MB), "n": 0})
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"_id": 1}, {"$set": {"b": "y" * (7 * MB)}, "$inc": {"n": 1}})
    assert exc.value.code == 17419
    assert "Resulting document after update is larger than 16777216" in str(exc.value)
    doc = db.c.find_one({"_id": 1}, {"a": 0})
    assert doc == {"_id": 1, "n": 0}  # unchanged: all or nothing
    with pytest.raises(OperationFailure) as exc:
        db.c.find_one_and_update({"_id": 1}, {"$set": {"b": "y" * (7 * MB)}})
    assert exc.value.code == 17419
    # a document that stays within the limit is updated
    db.c.update_one({"_id": 1}, {"$set": {"b": "y" * (5 * MB)}})
    assert len(db.c.find_one({"_id": 1})["b"]) == 5 * MB


def test_growing_step_by_step_past_16_mb(db):
    db.c.insert_one({"_id": 1, "items": []})
    for _ in range(15):
        db.c.update_one({"_id": 1}, {"$push": {"items": "z" * MB}})
    with pytest.raises(WriteError) as exc:
        for _ in range(3):
            db.c.update_one({"_id": 1}, {"$push": {"items": "z" * MB}})
    assert exc.value.code == 17419
    assert len(db.c.find_one({"_id": 1})["items"]) in (15, 16)
    # shrinking is always allowed
    db.c.update_one({"_id": 1}, {"$pop": {"items": 1}})


# --------------------------------------------------------------------------- nesting depth


def _nested(levels):
    """A document of ``levels`` levels of nesting (the document itself is the first)."""
    doc = {"s": 1}
    for _ in range(levels - 1):
        doc = {"s": doc}
    return doc


def test_more_than_100_levels_of_nesting_are_refused(db):
    db.c.insert_one(_nested(100))
    with pytest.raises(WriteError) as exc:
        db.c.insert_one(_nested(101))
    assert exc.value.code == 15
    assert "exceeds 100 levels of nesting" in str(exc.value)
    db.c.insert_one({"_id": "arrays", "a": [[[1]]]})
    # updates: $set, $push, replacement
    db.c.insert_one({"_id": 1})
    db.c.update_one({"_id": 1}, {"$set": {"a": _nested(99)}})  # 1 + 99 levels: allowed
    for update in (
        {"$set": {"a": _nested(100)}},
        {"$set": {"x." * 60 + "y": _nested(41)}},
        {"$push": {"list": _nested(100)}},
    ):
        with pytest.raises(WriteError) as exc:
            db.c.update_one({"_id": 1}, update)
        assert exc.value.code == 15, update
        assert "exceeds maximum nesting depth of 100" in str(exc.value)
    with pytest.raises(WriteError) as exc:
        db.c.replace_one({"_id": 1}, _nested(101))
    assert exc.value.code == 15
    # empty documents do not count as a level
    db.c.update_one({"_id": 1}, {"$set": {"a": _nested(99) | {"e": {}}}})


# --------------------------------------------------------------------------- indexes


def test_the_same_index_under_a_second_name_is_refused(db):
    db.c.create_index("a")
    with pytest.raises(OperationFailure) as exc:
        db.c.create_index("a", name="other")
    assert exc.value.code == 85
    assert exc.value.details["codeName"] == "IndexOptionsConflict"
    assert "Index already exists with a different name: a_1" in str(exc.value)
    with pytest.raises(OperationFailure) as exc:
        db.c.create_index("a", name="other", unique=True)
    assert exc.value.code == 85
    assert "An equivalent index already exists with a different name and options" in str(exc.value)
    assert db.c.create_index("a") == "a_1"  # the identical index again: nothing to do
    with pytest.raises(OperationFailure) as exc:
        db.c.create_index("a", unique=True)  # same name, other options
    assert exc.value.code == 85
    with pytest.raises(OperationFailure) as exc:
        db.c.create_index("b", name="a_1")  # same name, other keys
    assert exc.value.code == 86
    # another partial filter makes another index (MongoDB allows both)
    db.c.create_index("a", name="a_live", partialFilterExpression={"live": True})
    assert set(db.c.index_information()) == {"_id_", "a_1", "a_live"}


# --------------------------------------------------------------------------- projections


@pytest.fixture
def posts(db):
    db.p.insert_one(
        {
            "_id": 1,
            "title": "t",
            "comments": [1, 2, 3, 4, 5],
            "meta": {"tags": ["a", "b", "c"], "n": 1},
            "grades": [{"g": 70, "k": "x"}, {"g": 85, "k": "y"}, {"g": 90, "k": "z"}],
            "items": [{"a": 1, "b": 2}, {"a": 3}, 7],
        }
    )
    return db.p


def test_slice_projection_keeps_the_other_fields(posts):
    assert posts.find_one({}, {"comments": {"$slice": 2}}) == {
        "_id": 1,
        "title": "t",
        "comments": [1, 2],
        "meta": {"tags": ["a", "b", "c"], "n": 1},
        "grades": [{"g": 70, "k": "x"}, {"g": 85, "k": "y"}, {"g": 90, "k": "z"}],
        "items": [{"a": 1, "b": 2}, {"a": 3}, 7],
    }
    assert posts.find_one({}, {"comments": {"$slice": -2}, "title": 1}) == {"_id": 1, "title": "t", "comments": [4, 5]}
    assert posts.find_one({}, {"comments": {"$slice": [1, 2]}, "_id": 0, "title": 1}) == {
        "title": "t",
        "comments": [2, 3],
    }
    assert posts.find_one({}, {"meta.tags": {"$slice": 1}})["meta"] == {"tags": ["a"], "n": 1}
    assert posts.find_one({}, {"comments": {"$slice": 1}, "grades": 0, "items": 0, "meta": 0}) == {
        "_id": 1,
        "title": "t",
        "comments": [1],
    }


def test_inclusion_and_exclusion_through_arrays(posts):
    assert posts.find_one({}, {"items.a": 1, "_id": 0}) == {"items": [{"a": 1}, {"a": 3}]}
    assert posts.find_one({}, {"items.b": 0, "grades": 0, "meta": 0, "comments": 0}) == {
        "_id": 1,
        "title": "t",
        "items": [{"a": 1}, {"a": 3}, 7],
    }
    assert posts.find_one({}, {"meta.n": 1}) == {"_id": 1, "meta": {"n": 1}}
    with pytest.raises(OperationFailure) as exc:
        posts.find_one({}, {"title": 1, "meta": 0})
    assert exc.value.code == 31254
    with pytest.raises(OperationFailure) as exc:
        posts.find_one({}, {"meta": 1, "meta.n": 1})
    assert exc.value.code in (31249, 31250)


def test_positional_projection(posts):
    assert posts.find_one({"grades.g": {"$gte": 80}}, {"grades.$": 1}) == {"_id": 1, "grades": [{"g": 85, "k": "y"}]}
    assert posts.find_one({"grades": {"$elemMatch": {"g": {"$gt": 85}}}}, {"grades.$": 1, "title": 1}) == {
        "_id": 1,
        "title": "t",
        "grades": [{"g": 90, "k": "z"}],
    }
    assert posts.find_one({"comments": 4}, {"comments.$": 1, "_id": 0}) == {"comments": [4]}
    doc = posts.find_one_and_update(
        {"grades.k": "x"}, {"$set": {"seen": True}}, projection={"grades.$": 1}, return_document=ReturnDocument.AFTER
    )
    assert doc == {"_id": 1, "grades": [{"g": 70, "k": "x"}]}
    with pytest.raises(OperationFailure) as exc:
        posts.find_one({"title": "t"}, {"grades.$": 1})  # no condition on the array
    assert exc.value.code == 51246
    assert posts.find_one({"grades": {"$elemMatch": {"g": 70}}}, {"grades": {"$elemMatch": {"k": "y"}}}) == {
        "_id": 1,
        "grades": [{"g": 85, "k": "y"}],
    }


# --------------------------------------------------------------------------- update order


def test_new_fields_of_one_update_in_lexicographic_order(db):
    db.c.insert_one({"_id": 1, "m": 0})
    db.c.update_one({"_id": 1}, {"$set": {"z": 1, "b": 2}, "$inc": {"a": 1}, "$currentDate": {"c": True}})
    assert list(db.c.find_one({"_id": 1})) == ["_id", "m", "a", "b", "c", "z"]
    db.c.update_one({"_id": 1}, {"$set": {"sub.y": 1, "sub.x": 2, "sub.10": 3, "sub.9": 4}})
    assert list(db.c.find_one({"_id": 1})["sub"]) == ["9", "10", "x", "y"]  # numeric: 9 < 10
    db.c.update_one({"_id": 2}, {"$set": {"k": 1, "j": 2}}, upsert=True)
    assert list(db.c.find_one({"_id": 2})) == ["_id", "j", "k"]
    # numeric names in numeric order: a.2 before a.10 (the array is padded with nulls)
    db.c.insert_one({"_id": 3, "a": []})
    db.c.update_one({"_id": 3}, {"$set": {"a.10": "ten", "a.2": "two"}})
    doc = db.c.find_one({"_id": 3})
    assert doc["a"][2] == "two" and doc["a"][10] == "ten" and len(doc["a"]) == 11


# --------------------------------------------------------------------------- cursors


def test_cursors_see_later_writes_between_batches(db):
    db.c.insert_many([{"_id": i, "v": 0} for i in range(10)])
    cursor = db.c.find({"v": 0}).batch_size(3)
    first = [next(cursor) for _ in range(3)]
    assert [d["_id"] for d in first] == [0, 1, 2]
    db.c.update_one({"_id": 5}, {"$set": {"note": "changed"}})
    db.c.delete_one({"_id": 6})
    db.c.update_one({"_id": 7}, {"$set": {"v": 1}})  # no longer a match
    rest = list(cursor)
    assert [d["_id"] for d in rest] == [3, 4, 5, 8, 9]
    assert rest[2] == {"_id": 5, "v": 0, "note": "changed"}
