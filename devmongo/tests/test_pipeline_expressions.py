"""Updates with an aggregation pipeline and aggregation expressions, as MongoDB answers them.
mongomock, which devmongo used to evaluate them
with, answered some silently wrong: ``$sum`` of an array or of an expression gave 0, array
literals were stored unevaluated, ``$unset``/``$replaceWith`` stages, ``$reduce`` and
``$mergeObjects`` were missing. Each expected value here is the one the MongoDB manual gives
(operator pages and "Updates with Aggregation Pipeline"); operators MongoDB does not know are
refused with its 168 InvalidPipelineOperator."""

import pytest
from pymongo.errors import OperationFailure, WriteError

DOC = {
    "_id": 1,
    "x": 2,
    "y": 3,
    "s": "text",
    "items": [{"n": 1, "p": 10}, {"n": 2, "p": 20}, {"m": 5}, 7],
    "sub": {"k": 1},
    "mixed": [1, {"k": 2}],
}


@pytest.fixture
def c(db):
    db.c.insert_one(DOC)
    return db.c


def updated(c, pipeline):
    c.update_one({"_id": 1}, pipeline)
    return c.find_one({"_id": 1})


def projected(c, expression):
    [doc] = c.aggregate([{"$project": {"_id": 0, "v": expression}}])
    return doc.get("v", "<missing>")


def error_of(call):
    with pytest.raises((OperationFailure, WriteError)) as exc:
        call()
    return exc.value.code


# ---------------------------------------------------------------------------- pipeline stages


def test_unset_stage_takes_a_field_or_a_list_and_goes_through_arrays(c):
    doc = updated(c, [{"$unset": "x"}, {"$unset": ["y", "items.n", "sub.k"]}])
    assert doc == {
        "_id": 1,
        "s": "text",
        "items": [{"p": 10}, {"p": 20}, {"m": 5}, 7],
        "sub": {},
        "mixed": [1, {"k": 2}],
    }


def test_unset_stage_refuses_an_empty_list_and_the_id(c):
    assert error_of(lambda: updated(c, [{"$unset": []}])) == 31119
    assert error_of(lambda: updated(c, [{"$unset": [1]}])) == 31002
    assert error_of(lambda: updated(c, [{"$unset": "_id"}])) == 66
    assert c.find_one({"_id": 1}) == DOC


def test_array_literals_are_evaluated_and_missing_elements_become_null(c):
    doc = updated(c, [{"$set": {"a": ["$x", {"$add": ["$y", 1]}, "$nope", "plain"]}}])
    assert doc["a"] == [2, 4, None, "plain"]


def test_set_stage_merges_embedded_documents_and_goes_through_arrays(c):
    doc = updated(c, [{"$set": {"sub": {"j": "$x"}, "mixed.q": 1}}])
    assert doc["sub"] == {"k": 1, "j": 2}
    # non-document elements are replaced by a document of the computed fields
    assert doc["mixed"] == [{"q": 1}, {"k": 2, "q": 1}]


def test_set_stage_every_expression_sees_the_input_document(c):
    doc = updated(c, [{"$set": {"x": "$y", "z": "$x"}}, {"$set": {"w": "$z"}}])
    assert (doc["x"], doc["z"], doc["w"]) == (3, 2, 2)


def test_remove_variable_and_missing_values_leave_the_field_out(c):
    doc = updated(c, [{"$set": {"x": "$$REMOVE", "gone": "$nope"}}])
    assert "x" not in doc and "gone" not in doc


def test_replace_with_and_replace_root(c):
    doc = updated(c, [{"$replaceWith": {"$mergeObjects": ["$$ROOT", {"z": 1}, "$sub"]}}])
    assert doc["z"] == 1 and doc["k"] == 1 and doc["x"] == 2
    doc = updated(c, [{"$replaceRoot": {"newRoot": {"_id": "$_id", "only": "$s"}}}])
    assert doc == {"_id": 1, "only": "text"}
    assert error_of(lambda: updated(c, [{"$replaceWith": "$only"}])) == 40228


# ---------------------------------------------------------------------------- $sum and friends


def test_sum_of_one_expression_that_is_an_array_adds_its_numbers(c):
    doc = updated(
        c,
        [
            {
                "$set": {
                    "of_path": {"$sum": "$items.n"},
                    "of_list": {"$sum": ["$x", "$y", "$s", "$nope"]},
                    "of_map": {"$sum": {"$map": {"input": "$items.p", "in": {"$multiply": ["$$this", 2]}}}},
                    # in the list form an array is a non-numeric value, not traversed
                    "array_in_list": {"$sum": ["$items.n", 1]},
                    "nothing": {"$sum": "$nope"},
                    "booleans": {"$sum": [True, 1]},
                }
            }
        ],
    )
    assert doc["of_path"] == 3
    assert doc["of_list"] == 5
    assert doc["of_map"] == 60
    assert doc["array_in_list"] == 1
    assert doc["nothing"] == 0
    assert doc["booleans"] == 1


def test_avg_min_max_expressions(c):
    assert projected(c, {"$avg": "$items.n"}) == 1.5
    assert projected(c, {"$avg": "$nope"}) is None
    assert projected(c, {"$max": "$items.p"}) == 20
    assert projected(c, {"$min": ["$x", "$y", None]}) == 2


def test_reduce(c):
    total = {"$reduce": {"input": "$items.n", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}}
    doc = updated(c, [{"$set": {"total": total}}])
    assert doc["total"] == 3
    joined = {"$reduce": {"input": ["a", "b"], "initialValue": "", "in": {"$concat": ["$$value", "$$this"]}}}
    assert projected(c, joined) == "ab"
    assert projected(c, {"$reduce": {"input": "$nope", "initialValue": 0, "in": 1}}) is None
    assert error_of(lambda: projected(c, {"$reduce": {"input": "$s", "initialValue": 0, "in": 1}})) == 40080
    assert error_of(lambda: projected(c, {"$reduce": {"input": [], "in": 1}})) == 40078


# ---------------------------------------------------------------------------- other operators


def test_filter_map_cond_ifnull(c):
    assert projected(c, {"$filter": {"input": "$items", "cond": {"$gte": ["$$this.n", 2]}}}) == [{"n": 2, "p": 20}]
    assert projected(c, {"$filter": {"input": "$items", "as": "i", "cond": "$$i.n", "limit": 1}}) == [{"n": 1, "p": 10}]
    assert projected(c, {"$map": {"input": "$items", "as": "i", "in": "$$i.n"}}) == [1, 2, None, None]
    assert projected(c, {"$cond": [{"$eq": ["$x", 2]}, "two", "other"]}) == "two"
    assert projected(c, {"$cond": {"if": "$nope", "then": 1, "else": 0}}) == 0
    assert projected(c, {"$cond": {"if": [], "then": 1, "else": 0}}) == 1  # an empty array is true
    assert projected(c, {"$ifNull": ["$nope", None, "$x"]}) == 2
    assert error_of(lambda: projected(c, {"$map": {"input": "$s", "in": 1}})) == 16883
    assert error_of(lambda: projected(c, {"$filter": {"input": "$s", "cond": True}})) == 28651


def test_arrays_size_elem_at_concat(c):
    assert projected(c, {"$size": "$items"}) == 4
    assert projected(c, {"$arrayElemAt": ["$items", -1]}) == 7
    assert projected(c, {"$arrayElemAt": ["$items", 9]}) == "<missing>"
    assert projected(c, {"$concatArrays": [[1], "$items.n", ["$x"]]}) == [1, 1, 2, 2]
    assert projected(c, {"$concatArrays": [[1], "$nope"]}) is None
    assert error_of(lambda: projected(c, {"$size": "$nope"})) == 17124
    assert error_of(lambda: projected(c, {"$arrayElemAt": ["$items", 1.5]})) == 28691


def test_merge_objects_and_let(c):
    assert projected(c, {"$mergeObjects": ["$sub", {"k": 5, "j": "$x"}, None]}) == {"k": 5, "j": 2}
    assert error_of(lambda: projected(c, {"$mergeObjects": ["$sub", "$s"]})) == 40400
    let = {"$let": {"vars": {"a": "$x", "b": {"$add": ["$y", 1]}}, "in": {"$multiply": ["$$a", "$$b"]}}}
    assert projected(c, let) == 8
    assert error_of(lambda: projected(c, "$$undefinedVar")) == 17276


def test_comparisons_are_by_bson_type_order(c):
    assert projected(c, {"$eq": [1, True]}) is False  # a boolean is not a number
    assert projected(c, {"$eq": [2, 2.0]}) is True
    assert projected(c, {"$eq": ["$nope", None]}) is False  # missing sorts below null
    assert projected(c, {"$lt": ["$nope", None]}) is True
    assert projected(c, {"$gt": ["a", 5]}) is True  # strings above numbers
    assert projected(c, {"$in": [2, "$items.n"]}) is True


def test_expressions_in_add_fields_and_group(c):
    [doc] = c.aggregate([{"$addFields": {"total": {"$sum": "$items.p"}, "pair": ["$x", "$y"]}}])
    assert (doc["total"], doc["pair"]) == (30, [2, 3])
    [group] = c.aggregate([{"$group": {"_id": None, "t": {"$sum": {"$sum": "$items.n"}}}}])
    assert group["t"] == 3


@pytest.mark.parametrize("stage", ["$project", "$addFields"])
def test_unknown_operators_are_refused_not_evaluated(c, stage):
    with pytest.raises(OperationFailure) as exc:
        list(c.aggregate([{stage: {"v": {"$noSuchOperator": 1}}}]))
    assert exc.value.code == 168
    assert exc.value.details["codeName"] == "InvalidPipelineOperator"
    with pytest.raises(WriteError) as exc:
        c.update_one({"_id": 1}, [{"$set": {"v": {"$sum": [{"$noSuchOperator": 1}]}}}])
    assert exc.value.code == 168
    assert c.find_one({"_id": 1}) == DOC


# ---------------------------------------------------------------------------- $project


def test_project_nested_inclusion_goes_through_arrays(c):
    [doc] = c.aggregate([{"$project": {"sub": {"k": 1}, "items.n": 1}}])
    assert doc == {"_id": 1, "items": [{"n": 1}, {"n": 2}, {}], "sub": {"k": 1}}


def test_project_exclusion_and_computed_fields(c):
    [doc] = c.aggregate([{"$project": {"_id": 0, "items": {"p": 0}, "sub.k": 0, "mixed": 0, "s": 0}}])
    assert doc == {"x": 2, "y": 3, "items": [{"n": 1}, {"n": 2}, {"m": 5}, 7], "sub": {}}
    [doc] = c.aggregate([{"$project": {"x": 1, "sub.new": "$y", "pair": ["$x", "$y"], "n": {"$size": "$items"}}}])
    assert doc == {"_id": 1, "x": 2, "sub": {"new": 3}, "pair": [2, 3], "n": 4}


def test_project_refuses_mixing_inclusion_and_exclusion(c):
    assert error_of(lambda: list(c.aggregate([{"$project": {"x": 1, "y": 0}}]))) == 31253
    assert error_of(lambda: list(c.aggregate([{"$project": {"y": 0, "x": 1}}]))) == 31254


def test_project_in_a_pipeline_update(c):
    doc = updated(c, [{"$project": {"x": 1, "total": {"$sum": "$items.n"}}}])
    assert doc == {"_id": 1, "x": 2, "total": 3}


def test_first_and_last_of_an_array(c):
    assert projected(c, {"$first": "$items.n"}) == 1
    assert projected(c, {"$last": ["$items"]}) == 7
    assert projected(c, {"$first": "$nope"}) is None
    assert projected(c, {"$first": {"$literal": []}}) == "<missing>"


def test_operators_mongodb_has_but_devmongo_lacks_are_refused_as_not_supported(c):
    assert error_of(lambda: projected(c, {"$type": "$x"})) == 115


def test_set_into_an_embedded_document_leaves_the_input_for_other_expressions(c):
    doc = updated(c, [{"$set": {"sub.j": 5, "copy": "$sub"}}])
    assert doc["sub"] == {"k": 1, "j": 5}
    assert doc["copy"] == {"k": 1}
    [facets] = c.aggregate([{"$facet": {"a": [{"$set": {"sub.z": 1}}], "b": [{"$project": {"sub": 1}}]}}])
    assert facets["b"][0]["sub"] == {"k": 1, "j": 5}


def test_group_accumulators_take_numbers_only_and_compare_by_bson_order(db):
    db.g.insert_many([{"v": 1}, {"v": True}, {"v": 2.5}, {"v": "x"}, {"v": None}, {}])
    [group] = db.g.aggregate(
        [
            {
                "$group": {
                    "_id": None,
                    "s": {"$sum": "$v"},
                    "a": {"$avg": "$v"},
                    "lo": {"$min": "$v"},
                    "hi": {"$max": "$v"},
                }
            }
        ]
    )
    assert (group["s"], group["a"]) == (3.5, 1.75)  # a boolean is not a number
    assert (group["lo"], group["hi"]) == (1, True)  # null and missing left out; booleans above strings


# --- $unwind and $group, devmongo's own one-pass stages ---


@pytest.fixture
def sales(db):
    db.sales.insert_many(
        [
            {"_id": 1, "lines": [{"cat": "a", "p": 10}, {"cat": "b", "p": 20}], "meta": {"by": "x"}},
            {"_id": 2, "lines": [{"cat": "a", "p": 5}], "meta": {"by": "y"}},
            {"_id": 3, "lines": {"cat": "c", "p": 1}},  # not an array: one document, as MongoDB
            {"_id": 4, "lines": []},  # empty, null and missing: no document
            {"_id": 5, "lines": None},
            {"_id": 6},
        ]
    )
    return db.sales


def test_unwind_gives_one_document_per_element_and_skips_empty_null_and_missing(sales):
    out = list(sales.aggregate([{"$unwind": "$lines"}, {"$sort": {"_id": 1, "lines.p": 1}}]))
    assert [(d["_id"], d["lines"]) for d in out] == [
        (1, {"cat": "a", "p": 10}),
        (1, {"cat": "b", "p": 20}),
        (2, {"cat": "a", "p": 5}),
        (3, {"cat": "c", "p": 1}),
    ]
    assert out[0]["meta"] == {"by": "x"} and out[1]["meta"] == {"by": "x"}


def test_unwind_of_a_nested_path_keeps_the_document_around_it(db):
    db.n.insert_one({"_id": 1, "o": {"tags": ["p", "q"], "k": 1}})
    out = list(db.n.aggregate([{"$unwind": "$o.tags"}]))
    assert [d["o"] for d in out] == [{"tags": "p", "k": 1}, {"tags": "q", "k": 1}]


def test_unwind_options_keep_mongodbs_answers(sales):
    out = list(
        sales.aggregate([{"$unwind": {"path": "$lines", "preserveNullAndEmptyArrays": True, "includeArrayIndex": "i"}}])
    )
    assert sorted((d["_id"], d.get("i")) for d in out) == [
        (1, 0),
        (1, 1),
        (2, 0),
        (3, None),
        (4, None),
        (5, None),
        (6, None),
    ]


def test_group_by_a_document_key_sums_each_group_once(sales):
    out = list(
        sales.aggregate(
            [
                {"$unwind": "$lines"},
                {
                    "$group": {
                        "_id": {"cat": "$lines.cat"},
                        "n": {"$sum": 1},
                        "p": {"$sum": "$lines.p"},
                        "top": {"$max": "$lines.p"},
                    }
                },
            ]
        )
    )
    assert sorted((d["_id"]["cat"], d["n"], d["p"], d["top"]) for d in out) == [
        ("a", 2, 15, 10),
        ("b", 1, 20, 20),
        ("c", 1, 1, 1),
    ]


def test_group_puts_null_and_missing_keys_together_and_numbers_by_value(db):
    db.g.insert_many(
        [
            {"k": None, "v": 1},
            {"v": 2},
            {"k": 1, "v": 3},
            {"k": 1.0, "v": 4},
            {"k": [1, 2], "v": 5},
            {"k": [1, 2], "v": 6},
        ]
    )
    out = {str(d["_id"]): d["v"] for d in db.g.aggregate([{"$group": {"_id": "$k", "v": {"$push": "$v"}}}])}
    assert out == {"None": [1, 2], "1": [3, 4], "[1, 2]": [5, 6]}
