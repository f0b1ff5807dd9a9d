"""A faster ``filter_applies`` for the filter shapes the app's hot paths send.

mongomock's matcher re-inspects the filter for every document and builds candidate lists through
string splits and recursion; most of the server's time in a conditional ``findAndModify`` went
there. :func:`matcher` returns a function that gives exactly mongomock's answer: :func:`matches`
follows mongomock's steps (the same candidate values for a dotted path, the same operator
functions, the same order and short cuts, the same handling of arrays, missing fields and
``$ne``) for filters made only of:

* field paths (dotted, with plain ASCII-digit array indexes) compared by equality, ``$eq $ne
  $gt $gte $lt $lte $in $nin $exists``, with operands that are strings, numbers (not bool),
  datetimes or ObjectIds (``$in``/``$nin``: a list of those; ``$exists``: anything);
* ``$and`` / ``$or`` / ``$nor`` of such filters, and ``$comment``.

Anything else (``None`` operands, booleans, embedded documents or arrays as operands, regexes,
``$elemMatch $all $size $type $not $regex $expr``...) raises :class:`Unsupported` when reached,
and :func:`matcher` hands that document (and the rest of a scan) to the generic path.

The generic path (:func:`generic_applies`) is mongomock's ``filter_applies`` over the filter as
:func:`translate` rewrites it, for two places where mongomock answers unlike MongoDB:

* **booleans are not numbers**: mongomock compares with Python's ``==``, where ``True == 1``;
  equality operands (a value, ``$eq $ne $in $nin $all``) that are booleans or numbers are wrapped
  so that a boolean equals only a boolean and a number only a number, as in BSON;
* **``$exists: false`` through arrays**: mongomock matches when any array element lacks the field;
  MongoDB only when none has it (``{a.b: {$exists: false}}`` is ``$nor: [{a.b: {$exists: true}}]``).

This module answers as that generic path (``tests/test_matching.py`` checks it against it).
"""

import datetime
import operator

from bson.int64 import Int64
from bson.objectid import ObjectId
from mongomock.filtering import NOTHING, bson_compare, filter_applies

_OPERAND_TYPES = frozenset({str, int, Int64, float, datetime.datetime, ObjectId})
_COMPARISONS = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}
_EXISTS_FALSE = {"$exists": False}
# Types whose BSON comparison with an operand of the same class is Python's own (see
# mongomock's bson_compare); anything else is compared by bson_compare itself.
_NUMBER_TYPES = (int, Int64, float)


class Unsupported(Exception):  # noqa: N818 - a signal, not an error
    """Raised on reaching a part of a filter this module does not decide: use mongomock."""


def _is_index(part):
    return part.isdigit() and part.isascii()


def _int_like(part):
    """True when mongomock's ``int(part)`` would accept it (" 3", "-1", "+3", "1_0", "٣")."""
    if part.isascii() and (part[0].isalpha() or part[0] == "_"):
        return False
    try:
        int(part)
    except ValueError:
        return False
    return True


_PATHS = {}
_PATHS_MAX = 4096


def _path(key):
    """The parts of a dotted path (cached); Unsupported for a path this module does not walk
    (empty parts, ``$`` parts, numbers mongomock's ``int()`` reads but ASCII digits would not)."""
    parts = _PATHS.get(key)
    if parts is None:
        parts = tuple(key.split("."))
        if any(not p or p[0] == "$" or (not _is_index(p) and _int_like(p)) for p in parts):
            parts = ()
        if len(_PATHS) >= _PATHS_MAX:
            _PATHS.clear()
        _PATHS[key] = parts
    if not parts:
        raise Unsupported(key)
    return parts


def field_path(key):
    """The parts of a path of field names only (no array indexes, no empty or ``$`` parts), whose
    candidate values :func:`candidates` gives exactly as mongomock; None for any other path."""
    if type(key) is not str or not key:
        return None
    parts = tuple(key.split("."))
    if any(not p or p[0] == "$" or _is_index(p) or _int_like(p) for p in parts):
        return None
    return parts


def candidates(parts, i, node):
    """mongomock's ``iter_key_candidates`` for ``parts[i:]``: the values a path can refer to
    (NOTHING for a missing field; nothing at all for a dead end such as an index out of range)."""
    n = len(parts)
    while True:
        if isinstance(node, dict):
            if i == n - 1:
                return [node.get(parts[i], NOTHING)]
            node = node.get(parts[i], {})
            i += 1
        elif isinstance(node, list):
            part = parts[i]
            if _is_index(part):
                k = int(part)
                if k >= len(node):
                    return []
                if i == n - 1:
                    return [node[k]]
                node = node[k]
                i += 1
                continue
            out = []
            last = i == n - 1
            for sub in node:
                if isinstance(sub, dict):
                    if part in sub:
                        if last:
                            out.append(sub[part])
                        else:
                            out.extend(candidates(parts, i + 1, sub[part]))
                    else:
                        out.append(NOTHING)
            return out
        else:
            return []


def _equals(value, operand):
    """mongomock's match of a candidate against a plain (non-operator) operand (never a bool
    here), a boolean candidate equal to no number."""
    if isinstance(value, (list, tuple)):
        if operand in value:
            if type(operand) in _NUMBER_TYPES:  # True in [1] is Python's answer, not BSON's
                return any((v is operand or v == operand) and type(v) is not bool for v in value)
            return True
        return type(operand) is ObjectId and str(operand) in value
    return value == operand and type(value) is not bool


def _compare(op, value, operand):
    """mongomock's ``$gt``-style test of one candidate (type bracketing, arrays: any element)."""
    if value is NOTHING:
        return False
    if isinstance(value, (list, tuple)):
        return any(_compare_one(op, v, operand) for v in value)
    return _compare_one(op, value, operand)


def _compare_one(op, value, operand):
    tv, to = type(value), type(operand)
    if tv is to or (tv in _NUMBER_TYPES and to in _NUMBER_TYPES):
        return op(value, operand)
    return bson_compare(op, value, operand, can_compare_types=False)


# An $in operand's values as a set, once per list: a theater's orders are asked for with a $in of
# its hundreds of sessions, and a walk meets thousands of documents per query.
_IN_SETS: dict = {}
_IN_SETS_MAX = 256


def _in_operand(operand):
    """The operand's frozenset (Unsupported unless it is a list of handled operand types)."""
    hit = _IN_SETS.get(id(operand))
    if hit is not None and hit[0] is operand:
        return hit[1]
    if type(operand) is not list:
        raise Unsupported(operand)
    for v in operand:
        if type(v) not in _OPERAND_TYPES:
            raise Unsupported(operand)
    if len(_IN_SETS) >= _IN_SETS_MAX:
        _IN_SETS.clear()
    values = frozenset(operand)  # equal values hash alike for these types (1, 1.0 and Int64(1) too)
    _IN_SETS[id(operand)] = (operand, values)
    return values


def _in_one(value, values, operand):
    try:
        return value in values
    except TypeError:  # an unhashable stored value (a document): equal to no operand
        return value in operand


def _in(value, operand):
    # operand: a list of strings, numbers, dates, ObjectIds (no bools): a bool is in none
    values = _in_operand(operand)
    if not isinstance(value, (list, tuple)):
        return type(value) is not bool and _in_one(value, values, operand)
    return any(type(v) is not bool and _in_one(v, values, operand) for v in value)


def _op_eq(value, operand):
    if isinstance(value, (list, tuple)):
        return any(v == operand and type(v) is not bool for v in value)
    return value == operand and type(value) is not bool


def _op_ne(value, operand):
    if isinstance(value, (list, tuple)):
        return all(not v == operand or type(v) is bool for v in value)  # noqa: SIM201
    return not value == operand or type(value) is bool  # noqa: SIM201


def _comparison(op):
    return lambda value, operand: _compare(op, value, operand)


# mongomock's operator functions (_Filterer._operator_map) for the operators handled here.
_OPS = {
    "$eq": _op_eq,
    "$ne": _op_ne,
    "$exists": lambda value, operand: bool(operand) == (value is not NOTHING),
    "$in": _in,
    "$nin": lambda value, operand: not _in(value, operand),
    **{name: _comparison(op) for name, op in _COMPARISONS.items()},
}


def _check_operators(cond):
    """Unsupported unless every operator and operand of ``{$op: operand, ...}`` is handled."""
    if not cond:
        raise Unsupported(cond)
    for op, operand in cond.items():
        if op not in _OPS:
            raise Unsupported(op)
        if op == "$in" or op == "$nin":
            _in_operand(operand)
        elif op != "$exists" and type(operand) not in _OPERAND_TYPES:
            raise Unsupported(op)


def _all_ops_apply(cond, value):
    for op, operand in cond.items():  # noqa: SIM110 - a loop: no generator on the hot path
        if not _OPS[op](value, operand):
            return False
    return True


def _field_matches(key, cond, doc):
    """One ``{path: condition}`` entry, step by step as mongomock's ``_Filterer.apply``."""
    parts = _path(key)
    if type(cond) is not dict:
        if type(cond) not in _OPERAND_TYPES:
            raise Unsupported(cond)
        if len(parts) == 1:
            return _equals(doc.get(key, NOTHING), cond)
        for value in candidates(parts, 0, doc):  # noqa: SIM110 - as above
            if _equals(value, cond):
                return True
        return False
    _check_operators(cond)
    values = [doc.get(key, NOTHING)] if len(parts) == 1 else candidates(parts, 0, doc)
    if not values and cond == _EXISTS_FALSE:  # mongomock: no candidate at all matches this
        return True
    # Negative operators hold for every candidate; $exists: false is one (none may exist).
    n_negative = ("$ne" in cond) + ("$nin" in cond) + ("$exists" in cond and not cond["$exists"])
    negative = n_negative > 0
    positive = len(cond) > n_negative
    is_match = False
    has_candidates = False
    for value in values:
        has_candidates |= value is not NOTHING
        is_match = _all_ops_apply(cond, value)
        if negative and not is_match:
            return False
        if is_match and not negative:
            break
    return is_match or not (has_candidates or positive)


def _logical_subfilters(cond):
    if type(cond) is not list or not cond:
        raise Unsupported(cond)
    for sub in cond:
        if type(sub) is not dict:
            raise Unsupported(sub)
    return cond


def matches(flt, doc):
    """``filter_applies(flt, doc)`` for a dict ``doc``, evaluated in the same order with the same
    short cuts; raises Unsupported on reaching a part it does not handle."""
    for key, cond in flt.items():
        if key[:1] == "$":
            if key == "$comment":
                continue
            if key == "$and":
                if not all(matches(sub, doc) for sub in _logical_subfilters(cond)):
                    return False
            elif key == "$or":
                if not any(matches(sub, doc) for sub in _logical_subfilters(cond)):
                    return False
            elif key == "$nor":
                if any(matches(sub, doc) for sub in _logical_subfilters(cond)):
                    return False
            else:
                raise Unsupported(key)
        elif not key or not _field_matches(key, cond, doc):
            if not key:
                raise Unsupported(key)
            return False
    return True


# --------------------------------------------------------------------------- the generic path

_NUMBERS = (int, float)  # Int64 is an int


class _BoolOperand:
    """An equality operand that is a boolean: equal to that boolean only (not to 1 or 0)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        if type(other) is _BoolOperand:
            return other.value is self.value
        return type(other) is bool and other is self.value

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(("bool", self.value))

    def __repr__(self):
        return repr(self.value)

    def __deepcopy__(self, memo):
        return self


class _NumberOperand:
    """An equality operand that is a number: equal to numbers only (not to True/False)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        if type(other) is _NumberOperand:
            return other.value == self.value
        return isinstance(other, _NUMBERS) and type(other) is not bool and other == self.value

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return repr(self.value)

    def __deepcopy__(self, memo):
        return self


def _operand(value):
    """An equality operand as BSON compares it (booleans and numbers kept apart)."""
    t = type(value)
    if t is bool:
        return _BoolOperand(value)
    if t in _NUMBER_TYPES:
        # NaN stays as it is (it equals no bool anyway; Python's `in` finds the same object)
        return _NumberOperand(value) if value == value else value
    if t is list:
        return [_operand(v) for v in value]
    if t is dict:
        return {k: _operand(v) for k, v in value.items()}
    return value


def _translate_condition(cond):
    if type(cond) is not dict or not cond or not all(isinstance(k, str) and k.startswith("$") for k in cond):
        return _operand(cond), False
    out = {}
    exists_false = False
    for op, arg in cond.items():
        if op in ("$eq", "$ne"):
            out[op] = _operand(arg)
        elif op in ("$in", "$nin", "$all") and type(arg) is list:
            out[op] = [x if type(x) is dict and "$elemMatch" in x else _operand(x) for x in arg]
        elif op == "$elemMatch" and type(arg) is dict:
            if arg and all(isinstance(k, str) and k.startswith("$") for k in arg):
                out[op] = _translate_condition(arg)[0]
            else:
                out[op] = translate(arg)
        elif op == "$not" and type(arg) is dict:
            out[op] = _translate_condition(arg)[0]
        elif op == "$exists" and not arg:
            exists_false = True
        else:
            out[op] = arg
    return out, exists_false


def translate(flt):
    """The filter with MongoDB's equality of booleans and numbers and ``$exists: false``, for
    mongomock's ``filter_applies``. Conditions keep their order (and so which error, if any, a
    document meets first)."""
    if type(flt) is not dict:
        return flt
    clauses = []  # (key, condition), or (None, a whole sub-filter)
    split = False
    for key, cond in flt.items():
        if key in ("$and", "$or", "$nor") and type(cond) is list:
            clauses.append((key, [translate(sub) for sub in cond]))
        elif isinstance(key, str) and key.startswith("$"):
            clauses.append((key, cond))
        else:
            new, exists_false = _translate_condition(cond)
            if exists_false:
                split = True
                if new:
                    clauses.append((key, new))
                clauses.append((None, {"$nor": [{key: {"$exists": True}}]}))
            else:
                clauses.append((key, new))
    if not split:
        return dict(clauses)
    return {"$and": [sub if key is None else {key: sub} for key, sub in clauses]}


_TRANSLATED = {}
_TRANSLATED_MAX = 1024


def generic_applies(flt, doc):
    """devmongo's generic path: ``filter_applies`` of the translated filter."""
    hit = _TRANSLATED.get(id(flt))
    if hit is None or hit[0] is not flt:
        if len(_TRANSLATED) >= _TRANSLATED_MAX:
            _TRANSLATED.clear()
        hit = _TRANSLATED[id(flt)] = (flt, translate(flt))
    return filter_applies(hit[1], doc)


def _plain_equalities(flt):
    """``((field, operand), ...)`` for a filter of top-level fields each equal to a plain operand
    (``{"_id": oid}``, as in ``$pull: {reservations: {_id: oid}}``), else None."""
    if type(flt) is not dict or not flt:
        return None
    out = []
    for key, operand in flt.items():
        if type(operand) not in _OPERAND_TYPES or key[:1] == "$" or not key:
            return None
        try:
            if len(_path(key)) != 1:
                return None
        except Unsupported:
            return None
        out.append((key, operand))
    return tuple(out)


def matcher(flt):
    """A function of a document equal to ``filter_applies(flt, doc)``: this module's evaluation,
    falling back to mongomock for a document where it meets something it does not handle (and
    for every later document of the same filter, e.g. in a scan)."""
    equalities = _plain_equalities(flt)
    if equalities is not None:

        def applies_equalities(doc):
            if type(doc) is not dict:
                return generic_applies(flt, doc)
            for key, operand in equalities:  # noqa: SIM110 - no generator on the hot path
                if not _equals(doc.get(key, NOTHING), operand):
                    return False
            return True

        return applies_equalities

    generic = None  # the translated filter once the generic path is taken

    def applies(doc):
        nonlocal generic
        if generic is None:
            if type(doc) is dict and type(flt) is dict:
                try:
                    return matches(flt, doc)
                except Unsupported:
                    pass
            generic = translate(flt)
        return filter_applies(generic, doc)

    return applies
