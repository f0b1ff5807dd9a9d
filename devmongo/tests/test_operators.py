"""Query and update operators the app uses, with MongoDB's documented results."""

import pytest
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError, OperationFailure, WriteError


@pytest.fixture
def people(db):
    db.p.insert_many(
        [
            {
                "_id": 1,
                "name": "ann",
                "age": 30,
                "tags": ["a", "b"],
                "scores": [{"k": "x", "v": 5}],
                "grid": [[0, 1], [1, 0]],
            },
            {
                "_id": 2,
                "name": "bob",
                "age": 20,
                "tags": ["b"],
                "scores": [{"k": "x", "v": 9}],
                "grid": [[0, 0], [0, 0]],
            },
            {"_id": 3, "name": "cy", "age": 40, "tags": [], "scores": [], "grid": [[1, 1], [1, 1]], "opt": None},
            {"_id": 4, "name": "dee", "tags": ["a", "b", "c"], "scores": [{"k": "y", "v": 1}]},
        ]
    )
    return db.p


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


@pytest.mark.parametrize(
    "flt,expected",
    [
        ({"grid.0.1": 1}, [1, 3]),
        ({"grid.1.1": 0}, [1, 2]),
        ({"scores": {"$elemMatch": {"k": "x", "v": {"$gt": 6}}}}, [2]),
        ({"tags": {"$all": ["a", "b"]}}, [1, 4]),
        ({"name": {"$in": ["ann", "cy"]}}, [1, 3]),
        ({"name": {"$nin": ["ann", "cy"]}}, [2, 4]),
        ({"name": {"$ne": "ann"}}, [2, 3, 4]),
        ({"tags": {"$ne": "a"}}, [2, 3]),
        ({"age": {"$lt": 30}}, [2]),
        ({"age": {"$lte": 30}}, [1, 2]),
        ({"age": {"$gt": 30}}, [3]),
        ({"age": {"$gte": 30}}, [1, 3]),
        ({"age": {"$exists": False}}, [4]),
        ({"opt": {"$exists": True}}, [3]),
        ({"opt": None}, [1, 2, 3, 4]),
        ({"$or": [{"age": 20}, {"name": "dee"}]}, [2, 4]),
        ({"$and": [{"tags": "b"}, {"age": {"$gte": 30}}]}, [1]),
        ({"tags": {"$size": 0}}, [3]),
        ({"tags": {"$size": 3}}, [4]),
        ({"tags": "c"}, [4]),
        ({"scores.k": "y"}, [4]),
    ],
)
def test_query_operators(people, flt, expected):
    assert ids(people.find(flt)) == expected
    assert people.count_documents(flt) == len(expected)


def test_set_unset_inc_min_max(people):
    r = people.update_one(
        {"_id": 1},
        {
            "$set": {"a.b": 1, "grid.0.0": 7},
            "$unset": {"tags": ""},
            "$inc": {"age": 2, "n": 5},
            "$min": {"lo": 3},
            "$max": {"hi": 4},
        },
    )
    assert (r.matched_count, r.modified_count) == (1, 1)
    doc = people.find_one({"_id": 1})
    assert doc["a"] == {"b": 1}
    assert doc["grid"][0][0] == 7
    assert "tags" not in doc
    assert doc["age"] == 32 and doc["n"] == 5
    assert doc["lo"] == 3 and doc["hi"] == 4
    people.update_one({"_id": 1}, {"$min": {"lo": 1, "age": 100}, "$max": {"hi": 2, "n": 9}})
    doc = people.find_one({"_id": 1})
    assert (doc["lo"], doc["age"], doc["hi"], doc["n"]) == (1, 32, 4, 9)
    people.update_one({"_id": 1}, {"$min": {"grid.1.0": 0}, "$max": {"grid.1.1": 5}})
    assert people.find_one({"_id": 1})["grid"][1] == [0, 5]


def test_push_each_and_pull(people):
    people.update_one({"_id": 2}, {"$push": {"tags": {"$each": ["x", "y", "z"]}}})
    assert people.find_one({"_id": 2})["tags"] == ["b", "x", "y", "z"]
    people.update_one({"_id": 2}, {"$push": {"tags": "w"}})
    people.update_one({"_id": 2}, {"$pull": {"tags": "x"}})
    assert people.find_one({"_id": 2})["tags"] == ["b", "y", "z", "w"]
    people.update_one({"_id": 2}, {"$pull": {"tags": {"$in": ["y", "w"]}}})
    assert people.find_one({"_id": 2})["tags"] == ["b", "z"]
    people.update_one({"_id": 1}, {"$pull": {"scores": {"k": "x"}}})
    assert people.find_one({"_id": 1})["scores"] == []
    people.update_one(
        {"_id": 2}, {"$push": {"scores": {"$each": [{"k": "a", "v": 1}], "$sort": {"v": -1}, "$slice": 1}}}
    )
    assert people.find_one({"_id": 2})["scores"] == [{"k": "x", "v": 9}]
    r = people.update_one({"_id": 3}, {"$pull": {"tags": "nothing"}})
    assert (r.matched_count, r.modified_count) == (1, 0)
    people.update_one({"_id": 3}, {"$addToSet": {"tags": {"$each": ["q", "q", "r"]}}})
    assert people.find_one({"_id": 3})["tags"] == ["q", "r"]


def test_positional_dollar(people):
    r = people.update_one({"_id": 4, "scores.k": "y"}, {"$set": {"scores.$.v": 42}})
    assert r.modified_count == 1
    assert people.find_one({"_id": 4})["scores"] == [{"k": "y", "v": 42}]
    r = people.update_one({"_id": 1, "tags": "b"}, {"$set": {"tags.$": "B"}})
    assert people.find_one({"_id": 1})["tags"] == ["a", "B"]
    r = people.update_one({"scores": {"$elemMatch": {"k": "x", "v": 9}}}, {"$inc": {"scores.$.v": 1}})
    assert people.find_one({"_id": 2})["scores"] == [{"k": "x", "v": 10}]


def test_all_positional(people):
    people.update_one({"_id": 3}, {"$inc": {"grid.$[].0": 10}})
    assert people.find_one({"_id": 3})["grid"] == [[11, 1], [11, 1]]


def test_upsert_and_set_on_insert(db):
    r = db.c.update_one({"_id": "k", "kind": "a"}, {"$setOnInsert": {"created": 1}, "$inc": {"n": 1}}, upsert=True)
    assert r.matched_count == 0 and r.modified_count == 0 and r.upserted_id == "k"
    assert db.c.find_one({"_id": "k"}) == {"_id": "k", "kind": "a", "created": 1, "n": 1}
    r = db.c.update_one({"_id": "k"}, {"$setOnInsert": {"created": 2}, "$inc": {"n": 1}}, upsert=True)
    assert (r.matched_count, r.modified_count, r.upserted_id) == (1, 1, None)
    assert db.c.find_one({"_id": "k"}) == {"_id": "k", "kind": "a", "created": 1, "n": 2}
    r = db.c.update_one({"x": 5}, {"$set": {"y": 1}}, upsert=True)
    assert r.upserted_id is not None
    assert db.c.find_one({"_id": r.upserted_id}) == {"_id": r.upserted_id, "x": 5, "y": 1}
    r = db.c.replace_one({"_id": "r"}, {"v": 1}, upsert=True)
    assert r.upserted_id == "r" and db.c.find_one({"_id": "r"}) == {"_id": "r", "v": 1}


def test_upsert_with_duplicate_id_gives_11000(db):
    db.c.insert_one({"_id": 1, "state": "a"})
    with pytest.raises(DuplicateKeyError) as exc:
        db.c.update_one({"_id": 1, "state": "b"}, {"$set": {"x": 1}}, upsert=True)
    assert exc.value.code == 11000
    with pytest.raises(DuplicateKeyError):
        db.c.find_one_and_update({"_id": 1, "state": "b"}, {"$set": {"x": 1}}, upsert=True)
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "state": "a"}


def test_find_one_and_update_variants(db):
    db.c.insert_many([{"_id": i, "q": i % 2, "n": i} for i in range(6)])
    before = db.c.find_one_and_update({"q": 1}, {"$inc": {"n": 100}}, sort=[("n", -1)])
    assert before == {"_id": 5, "q": 1, "n": 5}
    after = db.c.find_one_and_update(
        {"q": 1},
        {"$inc": {"n": 100}},
        sort=[("n", 1)],
        projection={"n": 1, "_id": 0},
        return_document=ReturnDocument.AFTER,
    )
    assert after == {"n": 101}
    assert db.c.find_one_and_update({"q": 7}, {"$set": {"n": 0}}) is None
    up = db.c.find_one_and_update({"_id": 99}, {"$set": {"n": 0}}, upsert=True, return_document=ReturnDocument.AFTER)
    assert up == {"_id": 99, "n": 0}
    up2 = db.c.find_one_and_update({"_id": 98}, {"$set": {"n": 0}}, upsert=True)
    assert up2 is None and db.c.find_one({"_id": 98}) == {"_id": 98, "n": 0}
    gone = db.c.find_one_and_delete({"q": 0}, sort=[("n", -1)])
    assert gone["_id"] == 4
    assert db.c.find_one({"_id": 4}) is None
    rep = db.c.find_one_and_replace({"_id": 2}, {"z": 1}, return_document=ReturnDocument.AFTER)
    assert rep == {"_id": 2, "z": 1}


def test_find_and_modify_array_filters(db):
    db.c.insert_one({"_id": 1, "r": [{"id": "a", "s": []}, {"id": "b", "s": []}]})
    doc = db.c.find_one_and_update(
        {"_id": 1}, {"$push": {"r.$[x].s": 7}}, array_filters=[{"x.id": "b"}], return_document=ReturnDocument.AFTER
    )
    assert doc["r"] == [{"id": "a", "s": []}, {"id": "b", "s": [7]}]


def test_array_filters_several_matches_and_conditions(db):
    db.c.insert_one({"_id": 1, "g": [1, 5, 9, 12], "r": [{"v": 1}, {"v": 2}, {"v": 3}]})
    r = db.c.update_one(
        {"_id": 1},
        {"$set": {"g.$[big]": 0}, "$inc": {"r.$[e].v": 10}},
        array_filters=[{"big": {"$gte": 9}}, {"e.v": {"$in": [1, 3]}}],
    )
    assert r.modified_count == 1
    doc = db.c.find_one({"_id": 1})
    assert doc["g"] == [1, 5, 0, 0]
    assert doc["r"] == [{"v": 11}, {"v": 2}, {"v": 13}]
    r = db.c.update_one({"_id": 1}, {"$set": {"r.$[e].v": 0}}, array_filters=[{"e.v": 99}])
    assert (r.matched_count, r.modified_count) == (1, 0)
    db.c.insert_one({"_id": 2, "res": [{"_id": "c1", "seats": ["1:1", "1:2"]}, {"_id": "c2", "seats": ["2:2"]}]})
    db.c.update_one({"_id": 2}, {"$pull": {"res.$[r].seats": {"$in": ["1:2"]}}}, array_filters=[{"r._id": "c1"}])
    assert db.c.find_one({"_id": 2})["res"][0]["seats"] == ["1:1"]


def test_array_filter_errors(db):
    db.c.insert_one({"_id": 1, "r": [{"v": 1}]})
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"_id": 1}, {"$set": {"r.$[x].v": 1}})
    assert exc.value.code == 2
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"_id": 1}, {"$set": {"r.0.v": 1}}, array_filters=[{"x.v": 1}])
    assert exc.value.code == 9


def test_update_errors_leave_document_unchanged(db):
    db.c.insert_one({"_id": 1, "s": "text", "n": 1, "arr": [1]})
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"_id": 1}, {"$inc": {"n": 1, "s": 1}})
    assert exc.value.code == 14
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"_id": 1}, {"$push": {"s": 1}, "$set": {"n": 5}})
    assert exc.value.code == 2
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"_id": 1}, {"$set": {"n": 1}, "$inc": {"n": 1}})
    assert exc.value.code == 40
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"_id": 1}, {"$set": {"_id": 2}})
    assert exc.value.code == 66
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"_id": 1}, {"$bogus": {"n": 1}})
    assert exc.value.code == 9
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "s": "text", "n": 1, "arr": [1]}


def test_unsupported_query_operator_is_an_error(db):
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure):
        list(db.c.find({"$where": "this._id == 1"}))
    with pytest.raises(OperationFailure):
        list(db.c.find({"a": {"$bogus": 1}}))
    with pytest.raises(OperationFailure):
        db.c.update_one({"a": {"$near": [0, 0]}}, {"$set": {"x": 1}})
    # the connection is still usable afterwards
    assert db.c.find_one({"_id": 1}) == {"_id": 1}


def test_sort_by_array_uses_min_or_max_element(db):
    db.c.insert_many([{"_id": 1, "a": [5, 1]}, {"_id": 2, "a": [3]}, {"_id": 3, "a": 2}, {"_id": 4}])
    assert [d["_id"] for d in db.c.find().sort("a", 1)] == [4, 1, 3, 2]
    assert [d["_id"] for d in db.c.find().sort("a", -1)] == [1, 2, 3, 4]


def test_id_in_query(db):
    db.c.insert_many([{"_id": i, "g": i % 2} for i in range(10)])
    assert [d["_id"] for d in db.c.find({"_id": {"$in": [7, 3, 4, 99]}})] == [3, 4, 7]
    assert [d["_id"] for d in db.c.find({"_id": {"$in": [7, 3, 4]}, "g": 1})] == [3, 7]
    assert db.c.delete_many({"_id": {"$in": [1, 2]}}).deleted_count == 2
