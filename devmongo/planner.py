"""Which index could serve a query: ``hint`` validation and MongoDB's ``notablescan``.

devmongo does not plan queries (``reads.py`` scans, or reads index-lookup candidates), but it
decides, as MongoDB's planner would, whether a query *has* an indexed plan:

* a predicate MongoDB can turn into index bounds on the leading field of an index (``_id``
  included): equality (a value, ``$eq``, ``$in``), ranges (``$gt $gte $lt $lte``), and the other
  operators with bounds (``$ne $nin $not $regex $exists $type $all $elemMatch``); ``$elemMatch``
  on an array of documents counts for its fields (``reservations._id``). Not ``$size $mod $expr
  $where $text``, nor ``$nor``. A hashed index takes equalities only; a sparse index no predicate
  that matches a missing field (``null``, ``$exists: false``, ``$ne``, ``$nin``, ``$not``); a
  partial index only a query that repeats its filter expression's conditions;
* a conjunction with such a member; an ``$or`` whose every branch has one;
* a sort the key pattern of an index provides (a prefix of it, in its directions or all
  reversed; not a sparse or partial index);
* a ``hint`` naming an index.

With ``notablescan`` (``setParameter``, ``--notablescan``) a query with none of these is refused
with MongoDB's error 291 NoQueryExecutionPlans. As MongoDB, a query with an empty filter, one on a
``system.*`` collection or an internal database (admin, config, local), and one on a collection
that does not exist are let through; ``devmongoNotablescanStrict`` (``--notablescan-strict``) also
refuses an empty filter that no index sort or hint serves (a ``$group`` over a whole collection,
``find({})``), except for ``count`` (answered from the collection's size).
"""

from .errors import MongoError

_INTERNAL_DBS = ("admin", "config", "local")
_BOUNDED = frozenset(
    {
        "$eq",
        "$gt",
        "$gte",
        "$lt",
        "$lte",
        "$in",
        "$nin",
        "$ne",
        "$regex",
        "$exists",
        "$type",
        "$all",
        "$elemMatch",
        "$not",
    }
)
_MATCHES_MISSING = frozenset({"$ne", "$nin", "$not"})


def _index_entries(store):
    """[(key pattern [(field, direction)], spec)] of the collection's indexes, ``_id`` first."""
    out = [([("_id", 1)], {})]
    out.extend((spec["key"], spec) for spec in store.indexes.values())
    return out


# --------------------------------------------------------------------------- hint


def hinted_index(store, hint):
    """The index a ``hint`` names (``(key, spec)``), ``"$natural"`` for a collection-scan hint,
    None without a hint. A hint naming no index: MongoDB's 2 BadValue."""
    if hint is None or hint == "" or hint == {}:
        return None
    if isinstance(hint, dict) and len(hint) == 1 and "$natural" in hint:
        return "$natural"
    if store is None:
        return None  # no collection: an empty answer, as MongoDB's EOF plan
    named = [("_id_", [("_id", 1)], {})]
    named.extend((name, spec["key"], spec) for name, spec in store.indexes.items())
    for name, key, spec in named:
        if hint == name or (isinstance(hint, dict) and _same_pattern(hint, key)):
            return key, spec
    raise MongoError(
        2,
        "error processing query: planner returned error :: caused by :: hint "
        "provided does not correspond to an existing index",
    )


def _same_pattern(hint, key):
    """A hint's key pattern names an index with exactly that pattern (directions included)."""
    return [(f, d) for f, d in hint.items()] == [(f, d) for f, d in key]


# --------------------------------------------------------------------------- notablescan


def check_table_scan(engine, db, coll, store, flt, sort=None, hint=None, command="find", distinct_key=None):
    """Validate ``hint``; with notablescan on, raise 291 when the query has no indexed plan."""
    hinted = hinted_index(store, hint) if hint is not None else None
    if not engine.notablescan or store is None:
        return
    if db in _INTERNAL_DBS or coll.startswith("system."):
        return
    if hinted == "$natural":
        raise MongoError(291, "hint $natural is not allowed, because 'notablescan' is enabled")
    if hinted is not None:
        return
    if not flt:
        if not engine.notablescan_strict or command == "count":
            return  # MongoDB lets a query with an empty filter through
        if _sort_served(store, sort):
            return
        if distinct_key is not None and _sort_served(store, {distinct_key: 1}):
            return  # a DISTINCT_SCAN of that index
    elif has_indexed_plan(store, flt) or _sort_served(store, sort):
        return
    raise MongoError(
        291,
        f"error processing query: ns={db}.{coll} Tree: {_short(flt)} Sort: "
        f"{_short(sort or {})} planner returned error :: caused by :: No "
        f"indexed plans available, and running with 'notablescan'",
    )


def _short(value):
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


def has_indexed_plan(store, flt):
    by_field = {}
    for key, spec in _index_entries(store):
        by_field.setdefault(key[0][0], []).append((key, spec))
    return _indexed(flt, flt, by_field)


def _indexed(flt, whole, by_field):
    if not isinstance(flt, dict):
        return False
    for field, cond in flt.items():
        if field == "$and":
            if isinstance(cond, list) and any(_indexed(sub, whole, by_field) for sub in cond):
                return True
        elif field == "$or":
            if isinstance(cond, list) and cond and all(_indexed(sub, sub, by_field) for sub in cond):
                return True
        elif field.startswith("$"):
            continue
        else:
            for path, sub in _predicates(field, cond):
                for key, spec in by_field.get(path, ()):
                    if _usable(key, spec, sub, whole):
                        return True
    return False


def _predicates(field, cond):
    """(path, condition) pairs a condition puts on index paths: itself, and for ``$elemMatch``
    of documents, its fields below ``field``."""
    yield field, cond
    if isinstance(cond, dict) and isinstance(cond.get("$elemMatch"), dict):
        for sub_field, sub_cond in cond["$elemMatch"].items():
            if not sub_field.startswith("$"):
                yield from _predicates(f"{field}.{sub_field}", sub_cond)


def _is_operator_doc(cond):
    return isinstance(cond, dict) and cond and next(iter(cond)).startswith("$")


def _usable(key, spec, cond, whole):
    direction = key[0][1]
    if _is_operator_doc(cond):
        ops = set(cond)
        if not ops & _BOUNDED:
            return False
        if direction == "hashed" and not ops <= {"$eq", "$in"}:
            return False
        if spec.get("sparse") and (
            ops & _MATCHES_MISSING
            or cond.get("$exists") is False
            or ("$eq" in cond and cond["$eq"] is None)
            or None in (cond.get("$in") or ())
        ):
            return False
    elif cond is None and spec.get("sparse"):
        return False
    pfe = spec.get("partialFilterExpression")
    return pfe is None or _implies(whole, pfe)


def _conjuncts(flt):
    out = []
    for field, cond in flt.items():
        if field == "$and" and isinstance(cond, list):
            for sub in cond:
                if isinstance(sub, dict):
                    out.extend(_conjuncts(sub))
        else:
            out.append((field, cond))
    return out


def _implies(flt, pfe):
    """Whether every document ``flt`` matches is in the partial index (conservatively: the
    query repeats each condition of the filter expression, or has a non-null equality where the
    expression asks ``$exists: true``)."""
    have = _conjuncts(flt)
    for field, cond in _conjuncts(pfe):
        if (field, cond) in have:
            continue
        if cond == {"$exists": True} and any(f == field and c is not None and not _is_operator_doc(c) for f, c in have):
            continue
        return False
    return True


def _sort_served(store, sort):
    if not sort or not isinstance(sort, dict):
        return False
    wanted = list(sort.items())
    if any(f == "$natural" or not isinstance(d, (int, float)) for f, d in wanted):
        return False
    for key, spec in _index_entries(store):
        if spec.get("sparse") or spec.get("partialFilterExpression") is not None:
            continue
        if len(wanted) > len(key):
            continue
        prefix = key[: len(wanted)]
        if any(f != kf or not isinstance(kd, (int, float)) for (f, _d), (kf, kd) in zip(wanted, prefix, strict=True)):
            continue
        same = all((d > 0) == (kd > 0) for (_f, d), (_kf, kd) in zip(wanted, prefix, strict=True))
        reverse = all((d > 0) != (kd > 0) for (_f, d), (_kf, kd) in zip(wanted, prefix, strict=True))
        if same or reverse:
            return True
    return False
