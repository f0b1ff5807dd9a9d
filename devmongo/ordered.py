"""Index-ordered reads: a sorted ``find`` with a ``limit`` walks a declared index in its order and
stops at the limit, as MongoDB's IXSCAN + FETCH + LIMIT plan does, instead of matching every
document and sorting them all.

An :class:`OrderedIndex` is the documents of a collection sorted by one index's key (built when a
query first needs it, dropped at the collection's next write: ``Engine.mark`` counts writes).
It is used for a query whose sort is the whole key pattern after some leading fields the filter
pins to one value each (``{state: "refunded"}`` sorted by ``createdOn, _id`` walks only the
``state_newest`` entries of "refunded", newest first), in the index's direction or all reversed.
A range the filter puts on the first sorted field (also through an ``$or`` whose every branch
bounds it, as a page cursor does) narrows the walk. Every document walked is matched against the
whole filter, so the answer is the generic path's: the key ends the sort's ties (only patterns
whose sort is total are used: the key ends with ``_id``).

Only indexes over top-level fields holding null, missing, numbers, strings, ObjectIds or dates
(one comparison order, the same as BSON's across these types) are walked; a collection holding
anything else there (an array, a document, a bool) falls back to the generic path.
"""

import datetime
import math
import re
from bisect import bisect_left

from bson.int64 import Int64
from bson.objectid import ObjectId

from .lookup import valid_filter

# BSON's comparison order of the types handled: null (and missing) < numbers < string < ObjectId < date
_RANK = {type(None): 1, int: 2, Int64: 2, float: 2, str: 3, ObjectId: 7, datetime.datetime: 9}
_HIGH = (99,)  # above every key component's rank
_MISSING = object()
# When the index lookups (lookup.py) bound the candidates to at most this many, matching them and
# sorting is cheaper than a walk that may read far more documents than it returns.
SMALL_CANDIDATES = 5000


class Unordered(Exception):
    """A value the walk does not order (an array, a document, NaN...)."""


def component(value):
    """A value's place in the key: (type rank, value); an ObjectId by its bytes (the same order,
    compared in C)."""
    rank = _RANK.get(type(value))
    if rank is None or (rank == 2 and isinstance(value, float) and math.isnan(value)):
        raise Unordered
    return (rank, value.binary if rank == 7 else value)


class OrderedIndex:
    def __init__(self, store, key, version):
        self.fields = [f for f, _d in key]
        self.version = version
        self.docs_id = id(store._documents)
        # keys flat: (rank, value, rank, value, ...), compared element by element in C
        fields = self.fields
        docs = list(store._documents.values())
        keys = []
        for doc in docs:
            key: tuple = ()
            for f in fields:
                key += component(doc.get(f))
            keys.append(key)
        order = list(range(len(docs)))
        try:
            order.sort(key=keys.__getitem__)
        except TypeError as exc:  # naive and aware dates side by side
            raise Unordered from exc
        self.keys = [keys[i] for i in order]
        self.docs = [docs[i] for i in order]

    def span(self, prefix, lower, upper):
        """(start, end) of the entries with this prefix and the next field within [lower, upper]
        (components, None: unbounded)."""
        start = bisect_left(self.keys, prefix + lower if lower is not None else prefix)
        end = bisect_left(self.keys, prefix + upper + _HIGH if upper is not None else prefix + _HIGH)
        return start, max(start, end)


def _uniform(key):
    directions = {d for _f, d in key}
    return len(directions) == 1 and next(iter(directions)) in (1, -1)


def _top_level(key):
    return all(isinstance(f, str) and f and "." not in f and not f.startswith("$") for f, _d in key)


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


def _pinned(flt, field):
    """The one value the filter's conjunction pins ``field`` to, or _MISSING."""
    for f, cond in _conjuncts(flt):
        if f != field:
            continue
        if isinstance(cond, dict):
            if len(cond) == 1 and "$eq" in cond:
                cond = cond["$eq"]
            elif cond and all(isinstance(k, str) and k.startswith("$") for k in cond):
                continue
            else:
                return _MISSING  # an embedded document: not a scalar key
        try:
            component(cond)
        except Unordered:
            return _MISSING
        return cond
    return _MISSING


def _range_of(cond):
    """(lower, upper) components a condition on a field bounds its values to (inclusive: a
    superset), None for an unbounded side; None when it bounds nothing."""
    if isinstance(cond, dict) and cond and all(isinstance(k, str) and k.startswith("$") for k in cond):
        lower = upper = None
        for op, value in cond.items():
            try:
                c = component(value)
            except Unordered:
                continue
            if op in ("$gt", "$gte"):
                lower = c if lower is None else max(lower, c)
            elif op in ("$lt", "$lte"):
                upper = c if upper is None else min(upper, c)
            elif op == "$eq":
                lower = upper = c
        if lower is None and upper is None:
            return None
        return lower, upper
    try:
        c = component(cond)
    except Unordered:
        return None
    return c, c


def _bounds(flt, field):
    """The [lower, upper] the whole filter puts on ``field`` (None sides unbounded)."""
    lower = upper = None
    for f, cond in _conjuncts(flt):
        found = None
        if f == field:
            found = _range_of(cond)
        elif f == "$or" and isinstance(cond, list) and cond:
            found = _hull([_bounds(branch, field) if isinstance(branch, dict) else (None, None) for branch in cond])
        if found is None:
            continue
        lo, hi = found
        if lo is not None:
            lower = lo if lower is None else max(lower, lo)
        if hi is not None:
            upper = hi if upper is None else min(upper, hi)
    return lower, upper


def _hull(ranges):
    lows = [r[0] for r in ranges]
    highs = [r[1] for r in ranges]
    lower = None if any(v is None for v in lows) else min(lows)
    upper = None if any(v is None for v in highs) else max(highs)
    return lower, upper


def walkable(flt) -> bool:
    """A well-formed filter (lookup.valid_filter), where a ``$regex`` with a pattern that compiles
    is well formed too: the walk may stop before a document that would make the matcher raise,
    so it takes only filters that raise for none."""
    if type(flt) is not dict:
        return False
    plain = {}
    for key, cond in flt.items():
        if key in ("$and", "$or", "$nor"):
            if type(cond) is not list or not cond or not all(walkable(sub) for sub in cond):
                return False
        elif type(cond) is dict and "$regex" in cond:
            pattern, options = cond["$regex"], cond.get("$options", "")
            if set(cond) - {"$regex", "$options"} or type(pattern) is not str or type(options) is not str:
                return False
            if set(options) - set("imsx"):
                return False
            try:
                re.compile(pattern)
            except re.error:
                return False
        else:
            plain[key] = cond
    return valid_filter(plain) if plain else True


def plan(store, flt, sort):
    """(index key, pinned prefix values) of the best index to walk for this filter and sort (the
    most leading fields pinned), or None. A uniform key serves a uniform sort either way."""
    if not isinstance(sort, dict) or not sort:
        return None
    wanted = list(sort.items())
    if any(not isinstance(d, int) or isinstance(d, bool) or d not in (1, -1) for _f, d in wanted):
        return None
    best = None
    for spec in store.indexes.values():
        key = list(spec["key"])
        if spec.get("sparse") or spec.get("partialFilterExpression") is not None:
            continue
        if not _uniform(key) or not _top_level(key) or key[-1][0] != "_id" or len(key) < len(wanted):
            continue
        lead = len(key) - len(wanted)
        tail = key[lead:]
        if [f for f, _d in tail] != [f for f, _d in wanted]:
            continue
        if len({d for _f, d in wanted}) != 1:
            continue
        prefix = [_pinned(flt, f) for f, _d in key[:lead]]
        if any(v is _MISSING for v in prefix):
            continue
        if best is None or lead > len(best[1]):
            best = (tuple(key), prefix)
    return best


def ordered(engine, store, key, version):
    cache = store.__dict__.setdefault("_devmongo_ordered", {})
    found = cache.get(key)
    if found is not None and found.version == version and found.docs_id == id(store._documents):
        return found
    cache.pop(key, None)
    try:
        found = OrderedIndex(store, key, version)
    except Unordered:
        return None
    cache[key] = found
    return found


def walk(engine, store, flt, sort, count, applies, candidate_count, version):
    """The first ``count`` documents matching ``flt`` in ``sort`` order, walking an index; None
    when no index serves (the caller matches and sorts)."""
    chosen = plan(store, flt, sort)
    if chosen is None:
        return None
    key, prefix = chosen
    if not prefix and candidate_count is not None and candidate_count <= SMALL_CANDIDATES:
        return None  # a few candidates from the lookups: matching and sorting them is cheaper
    index = ordered(engine, store, key, version)
    if index is None:
        return None
    pinned: tuple = ()
    for value in prefix:
        pinned += component(value)
    first_sorted = key[len(prefix)][0]
    lower, upper = _bounds(flt, first_sorted)
    start, end = index.span(pinned, lower, upper)
    docs = index.docs
    # the entries are in ascending key order whatever the index's direction: an ascending sort
    # walks them forward, a descending one backward
    ascending = next(iter(sort.values())) > 0
    order = range(start, end) if ascending else range(end - 1, start - 1, -1)
    out = []
    for i in order:
        doc = docs[i]
        if applies(doc):
            out.append(doc)
            if len(out) >= count:
                break
    return out
