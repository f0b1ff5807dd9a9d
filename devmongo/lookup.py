"""Hash lookups on the leading fields of declared indexes.

Without them every query not by ``_id`` scans the collection. :class:`Lookups` files every stored
document under the values of each leading field of the collection's indexes, so that a filter
pinning such a field to a string or ObjectId (``{"owner": "s:abc", ...}``, ``$eq``, ``$in``), or an
``$or`` whose every branch does so or pins ``_id``, reads only the documents filed under those
values. The full matcher then runs over these candidates, in the store's natural order, so the
answer is the scan's.

Why that is exact: with a string or ObjectId operand, mongomock (and MongoDB) match a field by
equality of one of its candidate values (the field, or for a dotted path each array element's
field): a value of exactly type ``str``/``ObjectId`` matches only an equal one, and a missing field,
``null`` or no candidate at all never match. Any other value (an array, which matches by element
and, in mongomock, an ObjectId by its hex string; a document; a number, bool, date, ``Code``...) puts
the document in the field's "always a candidate" set. Sparse and partial index options are
irrelevant: the lookups cover every document.

A date range (``{"paidOn": {"$gte": start, "$lt": end}}``, any of ``$gt/$gte/$lt/$lte`` with naive
dates, as the server decodes them) on a leading field is looked up in a sorted list of the dates
the documents hold there: a range matches only dates (BSON compares within a type), so a document
with no date there never matches, one with exactly one date matches by that date, and one with
several dates (an array may satisfy each bound by another element) or any other value is always a
candidate.

Filters are only planned when well formed (known operators, ``$and/$or/$nor`` as non-empty lists
of documents), so that skipping documents cannot skip an error the scan would raise.
"""

import datetime
import math
import re
from bisect import bisect_left, bisect_right, insort
from typing import NamedTuple

from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.regex import Regex
from mongomock.filtering import NOTHING

from .matching import candidates, field_path

_PLAIN = (str, ObjectId)  # exact types (not subclasses such as bson.Code)
ALWAYS = object()  # a document's filing for a field: a candidate for every value
# _id values looked up in the store's dict, as Engine._match does for a top-level _id (not bool)
_ID_TYPES = (str, int, Int64, ObjectId, float, datetime.datetime)

_RANGE_OPERATORS = frozenset({"$gt", "$gte", "$lt", "$lte"})
_ANY_OPERAND = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$exists", "$size"})
_LIST_OPERAND = frozenset({"$in", "$nin", "$all"})
_REGEX_TYPES = (re.Pattern, Regex)


def lookup_fields(indexes):
    """``{field: parts}`` for the leading field of each index (``_id`` has its own lookup; paths
    with array indexes are left to the scan)."""
    out = {}
    for spec in indexes.values():
        field = spec["key"][0][0]
        parts = field_path(field)
        if parts is not None and field != "_id":
            out[field] = parts
    return out


def _key(value):
    """A plain value as a bucket key: an ObjectId by its bytes (hashed and compared in C, unlike
    ObjectId itself; bytes never equal a str), a str as itself."""
    return value if type(value) is str else value.binary


def _keys_of(values):
    """Filing of a field's candidate values (see :func:`filing`)."""
    out = []
    for v in values:
        t = type(v)
        if t is str:
            out.append(v)
        elif t is ObjectId:
            out.append(v.binary)
        elif v is not NOTHING and v is not None:
            return ALWAYS
    return tuple(dict.fromkeys(out)) if len(out) > 1 else tuple(out)


def _subfield_keys(array, name):
    """:func:`_keys_of` the ``candidates`` of ``name`` in an array's elements (a session's
    ``reservations._id``, refiled on every hold), in one loop: each dict element's field; a
    missing one (NOTHING in ``candidates``) is never filed."""
    out = []
    for elem in array:
        if isinstance(elem, dict) and name in elem:
            v = elem[name]
            t = type(v)
            if t is ObjectId:
                out.append(v.binary)
            elif t is str:
                out.append(v)
            elif v is not None:
                return ALWAYS
    return tuple(dict.fromkeys(out)) if len(out) > 1 else tuple(out)


def filing(parts, doc):
    """The keys ``doc`` is filed under for a field: a tuple of distinct plain values' keys, or
    ALWAYS."""
    if len(parts) == 1:
        v = doc.get(parts[0])
        t = type(v)
        if t is str:
            return (v,)
        if t is ObjectId:
            return (v.binary,)
        return () if v is None else ALWAYS  # missing: None too, never filed
    top = doc.get(parts[0])
    if len(parts) == 2 and type(top) is list:
        return _subfield_keys(top, parts[1])
    return _keys_of(candidates(parts, 0, doc))


def _is_date(value):
    return type(value) is datetime.datetime and value.tzinfo is None


def date_filing(parts, doc, filed):
    """The one date a document holds in a field, None when it holds none (no date range matches
    it), or ALWAYS. ``filed``: the field's :func:`filing`; only ALWAYS there can hold a date."""
    if filed is not ALWAYS:
        return None
    if len(parts) == 1:
        v = doc.get(parts[0])
        return v if _is_date(v) else ALWAYS
    found = None
    for v in candidates(parts, 0, doc):
        if v is NOTHING or v is None:
            continue
        if not _is_date(v) or (found is not None and v != found):
            return ALWAYS
        found = v
    return ALWAYS if found is None else found


def _date_range(cond):
    """(lowest, highest) dates a range condition admits (None: unbounded), or None when ``cond`` is
    not a range of naive dates."""
    if type(cond) is not dict or not cond or not _RANGE_OPERATORS.issuperset(cond):
        return None
    if not all(_is_date(v) for v in cond.values()):
        return None
    lows = [v for op, v in cond.items() if op in ("$gt", "$gte")]
    highs = [v for op, v in cond.items() if op in ("$lt", "$lte")]
    return (max(lows) if lows else None, min(highs) if highs else None)


# --------------------------------------------------------------------------- filter validation


def _valid_condition(cond):
    """A field's condition mongomock evaluates without raising, whatever the document."""
    if type(cond) is not dict or not cond or not all(type(k) is str and k[:1] == "$" for k in cond):
        return True  # equality with a value or an embedded document
    for op, operand in cond.items():
        if op in _ANY_OPERAND:
            continue
        if op in _LIST_OPERAND and type(operand) is list:
            if any(isinstance(v, _REGEX_TYPES) or type(v) is dict for v in operand):
                return False
            continue
        if (
            op == "$not"
            and type(operand) is dict
            and operand
            and all(type(k) is str and k[:1] == "$" for k in operand)
            and _valid_condition(operand)
        ):
            continue
        return False  # $regex, $elemMatch, $type, unknown operators...: the scan decides
    return True


def valid_filter(flt):
    """True when ``flt`` is well formed throughout (see the module docstring)."""
    if type(flt) is not dict:
        return False
    for key, cond in flt.items():
        if type(key) is not str or not key:
            return False
        if key[0] == "$":
            if key == "$comment":
                continue
            if key not in ("$and", "$or", "$nor") or type(cond) is not list or not cond:
                return False
            if not all(valid_filter(sub) for sub in cond):
                return False
        elif not _valid_condition(cond):
            return False
    return True


def _equality_values(cond, types):
    """The operands of ``v``, ``{$eq: v}`` or ``{$in: [v, ...]}`` when all are of ``types``."""
    if type(cond) in types:
        return (cond,)
    if type(cond) is dict and len(cond) == 1:
        ((op, operand),) = cond.items()
        if op == "$eq" and type(operand) in types:
            return (operand,)
        if op == "$in" and type(operand) is list and all(type(v) in types for v in operand):
            return tuple(operand)
    return None


# --------------------------------------------------------------------------- the lookups


class DateRange(NamedTuple):
    """A plan's date range lookup: the lowest and highest date admitted (None: unbounded)."""

    low: datetime.datetime | None
    high: datetime.datetime | None


class Lookups:
    """One collection's lookups. Each stored document gets a sequence number in the store's
    (insertion) order; for each leading field, a bucket per value holds the sequence numbers of
    the documents filed under it, and a set those always to consider. Sorting candidates' numbers
    gives the natural order, and ints hash in C (ObjectId keys do not). Built for one
    ``store._documents`` dict and one set of indexes; the engine keeps it current on every write
    and drops it when unsure."""

    def __init__(self, store):
        self.docs = store._documents
        self.fields = lookup_fields(store.indexes)
        self.paths = list(self.fields.values())
        self.n_indexes = len(store.indexes)
        self.tops = frozenset(parts[0] for parts in self.paths)
        self.buckets = {f: {} for f in self.fields}
        self.always = {f: set() for f in self.fields}
        self._buckets = list(self.buckets.values())  # aligned with self.paths
        self._always = list(self.always.values())
        # for date ranges: per field, the (date, sequence) pairs sorted, and the always-candidates
        self.dated = {f: [] for f in self.fields}
        self.undated = {f: set() for f in self.fields}
        self._dated = list(self.dated.values())
        self._undated = list(self.undated.values())
        self.entries = {}  # document key -> (sequence, [filing per field], [date filing per field])
        self.keys = {}  # sequence -> document key
        self.next_seq = 0
        self._building = True  # dates appended, then sorted once (an insort each is quadratic)
        for key, doc in self.docs.items():
            self.add(key, doc)
        self._building = False
        for dated in self._dated:
            dated.sort()

    def current_for(self, store):
        """Whether these lookups still describe ``store`` (same dict, documents and indexes)."""
        return (
            self.docs is store._documents
            and len(self.entries) == len(self.docs)
            and self.n_indexes == len(store.indexes)
        )

    # ---------------------------------------------------------------- maintenance

    def _file(self, i, seq, values):
        """File document ``seq`` under ``values`` (bucket keys, or ALWAYS) for field ``i``."""
        if values is ALWAYS:
            self._always[i].add(seq)
            return
        bucket = self._buckets[i]
        for v in values:
            seqs = bucket.get(v)
            if seqs is None:
                bucket[v] = {seq}
            else:
                seqs.add(seq)

    def _unfile(self, i, seq, values):
        if values is ALWAYS:
            self._always[i].discard(seq)
            return
        bucket = self._buckets[i]
        for v in values:
            seqs = bucket.get(v)
            if seqs is not None:
                seqs.discard(seq)
                if not seqs:
                    del bucket[v]

    def _file_date(self, i, seq, date):
        if date is ALWAYS:
            self._undated[i].add(seq)
        elif date is not None:
            if self._building:
                self._dated[i].append((date, seq))
            else:
                insort(self._dated[i], (date, seq))

    def _unfile_date(self, i, seq, date):
        if date is ALWAYS:
            self._undated[i].discard(seq)
        elif date is not None:
            dated = self._dated[i]
            at = bisect_left(dated, (date, seq))
            if at < len(dated) and dated[at] == (date, seq):
                del dated[at]

    def add(self, key, doc):
        """A document appended to the store."""
        seq = self.next_seq
        self.next_seq += 1
        filings = [filing(parts, doc) for parts in self.paths]
        dates = [date_filing(parts, doc, filed) for parts, filed in zip(self.paths, filings, strict=True)]
        for i, values in enumerate(filings):
            self._file(i, seq, values)
            self._file_date(i, seq, dates[i])
        self.entries[key] = (seq, filings, dates)
        self.keys[seq] = key

    def remove(self, key):
        """A document removed from the store."""
        entry = self.entries.pop(key, None)
        if entry is not None:
            seq, filings, dates = entry
            del self.keys[seq]
            for i, values in enumerate(filings):
                self._unfile(i, seq, values)
                self._unfile_date(i, seq, dates[i])

    def refile(self, key, doc, touched=None):
        """A document changed in place; ``touched``: the top-level fields the change may have
        written (None: any)."""
        if touched is not None and self.tops.isdisjoint(touched):
            return
        entry = self.entries.get(key)
        if entry is None:
            self.add(key, doc)
            return
        seq, filings, dates = entry
        for i, parts in enumerate(self.paths):
            if touched is not None and parts[0] not in touched:
                continue
            values = filing(parts, doc)
            old = filings[i]
            date = date_filing(parts, doc, values)
            if date is not dates[i] and date != dates[i]:
                self._unfile_date(i, seq, dates[i])
                self._file_date(i, seq, date)
                dates[i] = date
            if values == old:
                continue
            filings[i] = values
            if values is ALWAYS or old is ALWAYS:
                self._unfile(i, seq, old)
                self._file(i, seq, values)
            else:  # e.g. one reservation pushed: file only what changed
                old, values = set(old), set(values)
                self._unfile(i, seq, old - values)
                self._file(i, seq, values - old)

    # ---------------------------------------------------------------- planning

    def plan(self, flt):
        """``(size, [(field, values), ...])``: lookups whose documents include every document
        matching ``flt`` (``size`` bounds their number), or None when the scan must decide."""
        if not valid_filter(flt):
            return None
        return self._plan(flt)

    def _size(self, field, values):
        bucket = self.buckets[field]
        return len(self.always[field]) + sum(len(bucket.get(v, ())) for v in values)

    def _date_span(self, field, bounds):
        """(start, end) in the field's sorted dates of those within ``bounds`` (ends included)."""
        dated = self.dated[field]
        low, high = bounds
        start = 0 if low is None else bisect_left(dated, (low,))
        end = len(dated) if high is None else bisect_right(dated, (high, math.inf))
        return start, max(start, end)

    def _plan(self, flt):
        best = None
        for key, cond in flt.items():
            option = None
            if key == "$or":
                branches = [self._plan(sub) for sub in cond]
                if None not in branches:
                    option = (sum(b[0] for b in branches), [x for b in branches for x in b[1]])
            elif key == "$and":
                for sub in cond:
                    branch = self._plan(sub)
                    if branch is not None and (option is None or branch[0] < option[0]):
                        option = branch
            elif key == "_id":
                values = _equality_values(cond, _ID_TYPES)
                if values is not None:
                    option = (len(values), [(key, values)])
            elif key in self.fields:
                values = _equality_values(cond, _PLAIN)
                bounds = _date_range(cond) if values is None else None
                if values is not None:
                    values = tuple(_key(v) for v in values)
                    option = (self._size(key, values), [(key, values)])
                elif bounds is not None:
                    start, end = self._date_span(key, bounds)
                    option = (end - start + len(self.undated[key]), [(key, DateRange(*bounds))])
            if option is not None and (best is None or option[0] < best[0]):
                best = option
        return best

    def candidates(self, lookups):
        """The stored documents of a plan's lookups, in the store's natural order; None if the
        lookups have lost step with the store (a document removed behind their back)."""
        seqs = set()
        for field, values in lookups:
            if field == "_id":
                entries = self.entries
                seqs.update(entries[v][0] for v in values if v in entries)
                continue
            if type(values) is DateRange:
                start, end = self._date_span(field, values)
                seqs.update(self.undated[field])
                seqs.update(seq for _date, seq in self.dated[field][start:end])
                continue
            bucket = self.buckets[field]
            seqs.update(self.always[field])
            for v in values:
                found = bucket.get(v)
                if found:
                    seqs.update(found)
        keys = self.keys
        docs = self.docs
        out = []
        for seq in sorted(seqs):
            doc = docs.get(keys[seq])
            if doc is None:
                return None  # out of step with the store
            out.append(doc)
        return out
