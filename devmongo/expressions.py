"""Aggregation expressions and the document-shaping stages, as MongoDB evaluates them.

mongomock's expression parser gives silent wrong answers for some expressions MongoDB answers
(``$sum`` of an array or of an expression: 0; array literals: not evaluated; ``$reduce``,
``$mergeObjects``: not there), so devmongo evaluates these itself: :class:`Parser` subclasses
mongomock's ``_Parser`` and is installed in its place (``install()``), so every expression
(``$project``, ``$addFields``/``$set``, ``$replaceRoot``/``$replaceWith``, ``$group`` keys,
``$expr``) goes through it. Operators listed in ``_OWN`` are devmongo's; the rest stay
mongomock's, and operators neither knows are refused with MongoDB's 168 InvalidPipelineOperator.

The stages ``$project``, ``$addFields``/``$set`` (embedded documents merge into existing ones, through
arrays), ``$unset``, ``$replaceWith`` and ``$replaceRoot`` are devmongo's too (:data:`STAGES`).
"""

import copy
import datetime
import decimal
import functools
import math
import re

from bson import ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.decimal128 import Decimal128
from mongomock import aggregate as mm_aggregate

from .errors import MongoError
from .update import is_number as _is_number
from .update import type_name

MISSING = object()  # the value of a path that does not exist (MongoDB's "missing")


def _type_name(value):
    return "missing" if value is MISSING else type_name(value)


def _valid_variable_name(name):
    """A user variable: a lowercase letter (or non-ASCII) first, then letters, digits, '_'."""
    if not name or not (name[0].islower() or not name[0].isascii()):
        return False
    return all(c.isalnum() or c == "_" for c in name)


def _nullish(value):
    return value is None or value is MISSING


def _truthy(value):
    """MongoDB's coercion to bool: false, null, missing and numeric zero are false."""
    if _nullish(value) or value is False:
        return False
    if _is_number(value):
        return (value.to_decimal() if isinstance(value, Decimal128) else value) != 0
    return True


def _path_value(value, parts):
    """An aggregation field path: through arrays, each document element's value (missing
    ones left out, nested arrays kept nested); numeric parts are field names, not indexes."""
    for i, part in enumerate(parts):
        if isinstance(value, dict):
            value = value.get(part, MISSING)
        elif isinstance(value, list):
            out = []
            for elem in value:
                if isinstance(elem, (dict, list)):
                    got = _path_value(elem, parts[i:])
                    if got is not MISSING:
                        out.append(got)
            return out
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


def _numeric_sum(values):
    """``$sum`` of values: numbers only (not booleans), int stays int, any double makes a double,
    any decimal a decimal."""
    total = 0
    has_decimal = False
    for value in values:
        if isinstance(value, Decimal128):
            has_decimal = True
            total = decimal.Decimal(total) + value.to_decimal()
        elif _is_number(value):
            total = total + (decimal.Decimal(value) if has_decimal else value)
    return Decimal128(total) if has_decimal else total


def _type_rank(value):
    """BSON's comparison order of types (missing below null, all numbers as one type)."""
    if value is MISSING:
        return 0
    if value is None:
        return 5
    if _is_number(value):
        return 10
    if isinstance(value, str):
        return 15
    if isinstance(value, dict):
        return 20
    if isinstance(value, list):
        return 25
    if isinstance(value, (bytes, Binary)):
        return 30
    if isinstance(value, ObjectId):
        return 35
    if isinstance(value, bool):
        return 40
    if isinstance(value, datetime.datetime):
        return 45
    if isinstance(value, Timestamp):
        return 47
    if isinstance(value, (Regex, re.Pattern)):
        return 50
    raise MongoError(115, f"devmongo cannot compare values of type {type(value).__name__} in an expression")


def _sign(a, b):
    return (a > b) - (a < b)


def compare(a, b):
    """-1, 0 or 1: MongoDB's comparison of two values (aggregation expressions, simple
    collation): by type first, numbers by value whatever their type, documents field by field."""
    rank_a, rank_b = _type_rank(a), _type_rank(b)
    if rank_a != rank_b:
        return _sign(rank_a, rank_b)
    if rank_a == 10:
        x = a.to_decimal() if isinstance(a, Decimal128) else a
        y = b.to_decimal() if isinstance(b, Decimal128) else b
        x_nan, y_nan = _is_nan(x), _is_nan(y)
        if x_nan or y_nan:  # NaN equals NaN and is below every other number
            return _sign(not x_nan, not y_nan)
        return _sign(x, y)
    if rank_a == 20:
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=False):
            order = _sign(_type_rank(va), _type_rank(vb)) or _sign(ka, kb) or compare(va, vb)
            if order:
                return order
        return _sign(len(a), len(b))
    if rank_a == 25:
        for va, vb in zip(a, b, strict=False):
            order = compare(va, vb)
            if order:
                return order
        return _sign(len(a), len(b))
    if rank_a in (0, 5):
        return 0
    if rank_a == 30:
        return _sign(len(a), len(b)) or _sign(bytes(a), bytes(b))
    if rank_a == 50:
        return _sign((a.pattern, str(a.flags)), (b.pattern, str(b.flags)))
    return _sign(a, b)


def _is_nan(number):
    return isinstance(number, float) and math.isnan(number) or isinstance(number, decimal.Decimal) and number.is_nan()


class Parser(mm_aggregate._Parser):
    """mongomock's expression parser with devmongo's evaluation of the operators in ``_OWN``,
    array literals and missing values. ``parse`` keeps mongomock's protocol (a missing value
    raises ``KeyError``) for mongomock's handlers; devmongo's code uses ``value``."""

    def parse(self, expression):
        result = self.value(expression)
        if result is MISSING:
            raise KeyError(str(expression))
        return result

    def _with(self, **variables):
        return Parser(self._doc_dict, dict(self._user_vars, **variables), self._ignore_missing_keys)

    def value(self, expression):
        """The expression's value, ``MISSING`` for a missing one."""
        if isinstance(expression, str):
            if expression.startswith("$$"):
                return self._variable(expression[2:])
            if expression.startswith("$"):
                if expression == "$":
                    raise MongoError(16872, "'$' by itself is not a valid FieldPath")
                return _path_value(self._doc_dict, expression[1:].split("."))
            return expression
        if isinstance(expression, list):  # an array literal: each element evaluated, missing as null
            return [None if v is MISSING else v for v in (self.value(e) for e in expression)]
        if isinstance(expression, dict):
            if not expression:
                return {}
            first = next(iter(expression))
            if first.startswith("$"):
                if len(expression) > 1:
                    raise MongoError(
                        15983,
                        "an expression specification must contain exactly one field, the name of the "
                        f"expression. Found {len(expression)} fields in {expression}, while parsing object",
                    )
                own = _OWN.get(first)
                if own is not None:
                    return own(self, expression[first])
                if first in _NOT_IMPLEMENTED:
                    raise MongoError(115, f"devmongo does not support the expression operator '{first}'")
                if first not in _MONGOMOCK:
                    raise MongoError(168, f"Unrecognized expression '{first}'")
                try:
                    return super().parse(expression)
                except KeyError:
                    return MISSING
            out = {}
            for key, sub in expression.items():
                if key.startswith("$"):
                    raise MongoError(16410, f"FieldPath field names may not start with '$'. Given: {key}")
                got = self.value(sub)
                if got is not MISSING:
                    out[key] = got
            return out
        return expression

    def _variable(self, ref):
        name, _, rest = ref.partition(".")
        if name in ("ROOT", "CURRENT"):
            base = self._user_vars.get(name, self._doc_dict)
        elif name == "REMOVE":
            return MISSING
        elif name == "NOW":
            now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
            base = now.replace(microsecond=now.microsecond // 1000 * 1000)
        elif name in self._user_vars:
            base = self._user_vars[name]
        else:
            raise MongoError(17276, f"Use of undefined variable: {name}")
        return _path_value(base, rest.split(".")) if rest else base

    # --- devmongo's operators -------------------------------------------------------------

    def _args(self, operand):
        """An operator's argument expressions: a list, or one expression."""
        return operand if isinstance(operand, list) else [operand]

    def _fixed_args(self, name, operand, n):
        args = self._args(operand)
        if len(args) != n:
            raise MongoError(16020, f"Expression {name} takes exactly {n} arguments. {len(args)} were passed in.")
        return args

    def _accumulate(self, name, operand):
        """``$sum $avg $min $max`` as expressions: one operand that is an array is traversed; a
        list of operands is taken as the values (an array among them is not a number)."""
        if isinstance(operand, list):
            values = [self.value(e) for e in operand]
        else:
            one = self.value(operand)
            values = one if isinstance(one, list) else [one]
        if name == "$sum":
            return _numeric_sum(values)
        if name == "$avg":
            numbers = [v for v in values if _is_number(v)]
            if not numbers:
                return None
            total = _numeric_sum(numbers)
            if isinstance(total, Decimal128):
                return Decimal128(total.to_decimal() / len(numbers))
            return total / len(numbers)
        present = [v for v in values if not _nullish(v)]
        if not present:
            return None
        return (max if name == "$max" else min)(present, key=functools.cmp_to_key(compare))

    def _reduce(self, operand):
        if not isinstance(operand, dict):
            raise MongoError(40075, f"$reduce requires an object as an argument, found: {_type_name(operand)}")
        for key in operand:
            if key not in ("input", "initialValue", "in"):
                raise MongoError(40076, f"$reduce found an unknown argument: {key}")
        for key in ("input", "initialValue", "in"):
            if key not in operand:
                code = {"input": 40077, "initialValue": 40078, "in": 40079}[key]
                raise MongoError(code, f"$reduce requires '{key}' to be specified")
        array = self.value(operand["input"])
        if _nullish(array):
            return None
        if not isinstance(array, list):
            raise MongoError(40080, f"$reduce requires that 'input' be an array, found: {_type_name(array)}")
        acc = self.value(operand["initialValue"])
        for elem in array:
            acc = self._with(value=None if acc is MISSING else acc, this=elem).value(operand["in"])
        return acc

    def _filter(self, operand):
        if not isinstance(operand, dict):
            raise MongoError(28646, "$filter only supports an object as its argument")
        for key in operand:
            if key not in ("input", "as", "cond", "limit"):
                raise MongoError(28647, f"Unrecognized parameter to $filter: {key}")
        for key, code in (("input", 28648), ("cond", 28650)):
            if key not in operand:
                raise MongoError(code, f"Missing '{key}' parameter to $filter")
        array = self.value(operand["input"])
        if _nullish(array):
            return None
        if not isinstance(array, list):
            raise MongoError(28651, f"input to $filter must be an array not {_type_name(array)}")
        limit = None
        if "limit" in operand:
            limit = self.value(operand["limit"])
            if _nullish(limit):
                limit = None
            elif not _is_number(limit) or limit != int(limit) or limit < 1:
                raise MongoError(327391, f"$filter: limit must be a positive integer: {limit}")
        name = operand.get("as", "this")
        out = []
        for elem in array:
            if _truthy(self._with(**{name: elem}).value(operand["cond"])):
                out.append(elem)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def _map(self, operand):
        if not isinstance(operand, dict):
            raise MongoError(16878, "$map only supports an object as its argument")
        for key in operand:
            if key not in ("input", "as", "in"):
                raise MongoError(16879, f"Unrecognized parameter to $map: {key}")
        for key, code in (("input", 16880), ("in", 16882)):
            if key not in operand:
                raise MongoError(code, f"Missing '{key}' parameter to $map")
        array = self.value(operand["input"])
        if _nullish(array):
            return None
        if not isinstance(array, list):
            raise MongoError(16883, f"input to $map must be an array not {_type_name(array)}")
        name = operand.get("as", "this")
        results = (self._with(**{name: elem}).value(operand["in"]) for elem in array)
        return [None if v is MISSING else v for v in results]

    def _cond(self, operand):
        if isinstance(operand, dict):
            for key in operand:
                if key not in ("if", "then", "else"):
                    raise MongoError(17083, f"Unrecognized parameter to $cond: {key}")
            for key, code in (("if", 17080), ("then", 17081), ("else", 17082)):
                if key not in operand:
                    raise MongoError(code, f"Missing '{key}' parameter to $cond")
            cond, then, other = operand["if"], operand["then"], operand["else"]
        else:
            cond, then, other = self._fixed_args("$cond", operand, 3)
        return self.value(then if _truthy(self.value(cond)) else other)

    def _if_null(self, operand):
        args = self._args(operand)
        if len(args) < 2:
            raise MongoError(1257300, f"$ifNull needs at least two arguments, had: {len(args)}")
        for expr in args[:-1]:
            got = self.value(expr)
            if not _nullish(got):
                return got
        return self.value(args[-1])

    def _concat_arrays(self, operand):
        out = []
        for expr in self._args(operand):
            got = self.value(expr)
            if _nullish(got):
                return None
            if not isinstance(got, list):
                raise MongoError(28664, f"$concatArrays only supports arrays, not {_type_name(got)}")
            out.extend(got)
        return out

    def _size(self, operand):
        [expr] = self._fixed_args("$size", operand, 1)
        got = self.value(expr)
        if not isinstance(got, list):
            raise MongoError(17124, f"The argument to $size must be an array, but was of type: {_type_name(got)}")
        return len(got)

    def _array_elem_at(self, operand):
        array, index = (self.value(e) for e in self._fixed_args("$arrayElemAt", operand, 2))
        if _nullish(array) or _nullish(index):
            return None
        if not isinstance(array, list):
            raise MongoError(28689, f"$arrayElemAt's first argument must be an array, but is {_type_name(array)}")
        if not _is_number(index):
            raise MongoError(
                28690, f"$arrayElemAt's second argument must be a numeric value, but is {_type_name(index)}"
            )
        as_number = index.to_decimal() if isinstance(index, Decimal128) else index
        if as_number != int(as_number) or not -(2**31) <= as_number < 2**31:
            raise MongoError(
                28691, f"$arrayElemAt's second argument must be representable as a 32-bit integer: {index}"
            )
        i = int(as_number)
        return array[i] if -len(array) <= i < len(array) else MISSING

    def _first_last(self, name, operand):
        [expr] = self._fixed_args(name, operand, 1)
        array = self.value(expr)
        if _nullish(array):
            return None
        if not isinstance(array, list):
            raise MongoError(28689, f"{name}'s argument must be an array, but is {_type_name(array)}")
        if not array:
            return MISSING
        return array[0] if name == "$first" else array[-1]

    def _merge_objects(self, operand):
        out = {}
        for expr in self._args(operand):
            got = self.value(expr)
            if _nullish(got):
                continue
            if not isinstance(got, dict):
                raise MongoError(
                    40400, f"$mergeObjects requires object inputs, but input {got!r} is of type {_type_name(got)}"
                )
            out.update(got)
        return out

    def _let(self, operand):
        if not isinstance(operand, dict):
            raise MongoError(16874, "$let only supports an object as its argument")
        for key in operand:
            if key not in ("vars", "in"):
                raise MongoError(16875, f"Unrecognized parameter to $let: {key}")
        for key, code in (("vars", 16876), ("in", 16877)):
            if key not in operand:
                raise MongoError(code, f"Missing '{key}' parameter to $let")
        if not isinstance(operand["vars"], dict):
            raise MongoError(10065, "invalid parameter: expected an object (vars)")
        variables = {}
        for name, expr in operand["vars"].items():
            if not _valid_variable_name(name):
                raise MongoError(16867, f"'{name}' starts with an invalid character for a user variable name")
            got = self.value(expr)  # evaluated in the outer scope, all before 'in'
            variables[name] = None if got is MISSING else got
        return self._with(**variables).value(operand["in"])

    def _comparison(self, name, operand):
        a, b = (self.value(e) for e in self._fixed_args(name, operand, 2))
        order = compare(a, b)
        if name == "$cmp":
            return order
        return {"$eq": order == 0, "$ne": order != 0, "$gt": order > 0, "$gte": order >= 0, "$lt": order < 0}.get(
            name, order <= 0
        )

    def _in(self, operand):
        value, array = (self.value(e) for e in self._fixed_args("$in", operand, 2))
        if not isinstance(array, list):
            raise MongoError(40081, f"$in requires an array as a second argument, found: {_type_name(array)}")
        return any(compare(value, elem) == 0 for elem in array)

    def _and(self, operand):
        return all(_truthy(self.value(e)) for e in self._args(operand))

    def _or(self, operand):
        return any(_truthy(self.value(e)) for e in self._args(operand))

    def _not(self, operand):
        [expr] = self._fixed_args("$not", operand, 1)
        return not _truthy(self.value(expr))

    def _literal(self, operand):
        return operand


_OWN = {
    "$sum": lambda p, o: p._accumulate("$sum", o),
    "$avg": lambda p, o: p._accumulate("$avg", o),
    "$min": lambda p, o: p._accumulate("$min", o),
    "$max": lambda p, o: p._accumulate("$max", o),
    "$reduce": Parser._reduce,
    "$filter": Parser._filter,
    "$map": Parser._map,
    "$cond": Parser._cond,
    "$ifNull": Parser._if_null,
    "$concatArrays": Parser._concat_arrays,
    "$size": Parser._size,
    "$arrayElemAt": Parser._array_elem_at,
    "$mergeObjects": Parser._merge_objects,
    "$first": lambda p, o: p._first_last("$first", o),
    "$last": lambda p, o: p._first_last("$last", o),
    "$let": Parser._let,
    "$literal": Parser._literal,
    "$eq": lambda p, o: p._comparison("$eq", o),
    "$ne": lambda p, o: p._comparison("$ne", o),
    "$gt": lambda p, o: p._comparison("$gt", o),
    "$gte": lambda p, o: p._comparison("$gte", o),
    "$lt": lambda p, o: p._comparison("$lt", o),
    "$lte": lambda p, o: p._comparison("$lte", o),
    "$cmp": lambda p, o: p._comparison("$cmp", o),
    "$in": Parser._in,
    "$and": Parser._and,
    "$or": Parser._or,
    "$not": Parser._not,
}

# The operators left to mongomock (it raises NotImplementedError, answered 115, for the ones it
# only names); any other "$name" is not an operator MongoDB knows either.
_MONGOMOCK = (
    set(mm_aggregate.arithmetic_operators)
    | set(mm_aggregate.project_operators)
    | set(mm_aggregate.projection_operators)
    | set(mm_aggregate.comparison_operators)
    | set(mm_aggregate.date_operators)
    | set(mm_aggregate.array_operators)
    | set(mm_aggregate.conditional_operators)
    | set(mm_aggregate.control_flow_operators)
    | set(mm_aggregate.set_operators)
    | set(mm_aggregate.string_operators)
    | set(mm_aggregate.type_convertion_operators)
    | set(mm_aggregate.type_operators)
    | set(mm_aggregate.boolean_operators)
    | set(mm_aggregate.text_search_operators)
) - set(_OWN)


# MongoDB's expression operators that neither devmongo nor mongomock evaluates: refused with 115
# (devmongo's "not supported"), not with 168 as if MongoDB did not know them.
_NOT_IMPLEMENTED = {
    "$type",
    "$round",
    "$toBool",
    "$toDouble",
    "$toObjectId",
    "$toDate",
    "$dateAdd",
    "$dateSubtract",
    "$dateDiff",
    "$dateTrunc",
    "$dateToParts",
    "$getField",
    "$setField",
    "$unsetField",
    "$sortArray",
    "$maxN",
    "$minN",
    "$firstN",
    "$lastN",
    "$median",
    "$percentile",
    "$replaceOne",
    "$replaceAll",
    "$ltrim",
    "$rtrim",
    "$regexFind",
    "$regexFindAll",
    "$binarySize",
    "$bsonSize",
    "$rand",
    "$function",
    "$accumulator",
    "$tsSecond",
    "$tsIncrement",
    "$sin",
    "$cos",
    "$tan",
    "$asin",
    "$acos",
    "$atan",
    "$atan2",
    "$asinh",
    "$acosh",
    "$atanh",
    "$sinh",
    "$cosh",
    "$tanh",
    "$degreesToRadians",
    "$radiansToDegrees",
    "$stdDevPop",
    "$stdDevSamp",
    "$toUUID",
    "$isoWeek",
} - _MONGOMOCK


def evaluate(expression, doc, variables=None):
    """The value of an aggregation expression on ``doc`` (``MISSING`` when missing)."""
    return Parser(doc, variables or {}, True).value(expression)


# --- stages ---------------------------------------------------------------------------------


def _add_fields_spec(spec, stage):
    """``{"a.b": x, c: {d: y}}`` as a tree {a: {b: x}, c: {d: y}}: embedded documents without
    operators are fields to set inside the existing document, as dotted names are."""
    tree = {}
    for key, value in spec.items():
        if not key or key.startswith("$"):
            raise MongoError(16410, f"FieldPath field names may not start with '$'. Given: {key}")
        parts = key.split(".")
        node = tree
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise MongoError(31249, f"Invalid {stage} :: caused by :: Path collision at {key}")
            node = child
        if isinstance(value, dict) and value and not next(iter(value)).startswith("$"):
            sub = _add_fields_spec(value, stage)
            existing = node.get(parts[-1])
            if existing is not None and not isinstance(existing, dict):
                raise MongoError(31249, f"Invalid {stage} :: caused by :: Path collision at {key}")
            node.setdefault(parts[-1], {}).update(sub)
        else:
            if parts[-1] in node:
                raise MongoError(31249, f"Invalid {stage} :: caused by :: Path collision at {key}")
            node[parts[-1]] = _Computed(value)
    return tree


class _Computed:
    __slots__ = ("expression",)

    def __init__(self, expression):
        self.expression = expression


def _apply_tree(target, tree, parser):
    """Set the computed fields of ``tree`` in ``target`` (a document, changed in place)."""
    for name, node in tree.items():
        if isinstance(node, _Computed):
            got = parser.value(node.expression)
            if got is MISSING:
                target.pop(name, None)  # $$REMOVE or a missing value: the field is not there
            else:
                target[name] = got
        else:
            target[name] = _apply_to_value(target.get(name, MISSING), node, parser)


def _apply_to_value(value, tree, parser):
    if isinstance(value, dict):
        new = dict(value)  # a copy: the input document is what every expression sees
        _apply_tree(new, tree, parser)
        return new
    if isinstance(value, list):  # through arrays: each element
        return [_apply_to_value(elem, tree, parser) for elem in value]
    new = {}  # a scalar or nothing: replaced by a document of the computed fields
    _apply_tree(new, tree, parser)
    return new


def _add_fields(docs, _database, spec, stage="$addFields"):
    if not isinstance(spec, dict):
        raise MongoError(40272, f"{stage} specification stage must be an object, got {_type_name(spec)}")
    if not spec:
        raise MongoError(
            51016 if stage == "$set" else 40177,
            f"Invalid {stage} :: caused by :: specification must have at least one field",
        )
    tree = _add_fields_spec(spec, stage)
    out = []
    for doc in docs:
        new = dict(doc)
        _apply_tree(new, tree, Parser(doc, {}, True))  # every expression sees the input document
        out.append(new)
    return out


def _unset_path(value, parts):
    if isinstance(value, dict):
        if len(parts) == 1:
            value.pop(parts[0], None)
        elif parts[0] in value:
            _unset_path(value[parts[0]], parts[1:])
    elif isinstance(value, list):  # an exclusion applies to each document in an array
        for elem in value:
            _unset_path(elem, parts)


def _unset(docs, _database, spec):
    fields = [spec] if isinstance(spec, str) else spec
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise MongoError(31002, "$unset specification must be a string or an array containing only string values")
    if not fields:
        raise MongoError(31119, "$unset specification must be a string or an array with at least one field")
    for field in fields:
        if not field or field.startswith("$") or "" in field.split("."):
            raise MongoError(
                40352 if not field else 16410, f"Invalid $unset :: caused by :: FieldPath is not valid: '{field}'"
            )
    out = []
    for doc in docs:
        new = copy.deepcopy(doc)
        for field in fields:
            _unset_path(new, field.split("."))
        out.append(new)
    return out


def _replace(docs, expression, what):
    out = []
    for doc in docs:
        got = evaluate(expression, doc)
        if not isinstance(got, dict):
            shown = "missing" if got is MISSING else repr(got)
            raise MongoError(
                40228,
                f"'{what}' must evaluate to an object, but resulting value was: {shown}. "
                f"Type of resulting value: '{_type_name(got)}'.",
            )
        out.append(got)
    return out


def _replace_root(docs, _database, spec):
    if not isinstance(spec, dict):
        raise MongoError(40229, f"expected an object as specification for $replaceRoot stage, got {_type_name(spec)}")
    for key in spec:
        if key != "newRoot":
            raise MongoError(40415, f"BSON field '$replaceRoot.{key}' is an unknown field.")
    if "newRoot" not in spec:
        raise MongoError(40414, "BSON field '$replaceRoot.newRoot' is missing but a required field")
    return _replace(docs, spec["newRoot"], "newRoot")


def _replace_with(docs, _database, spec):
    return _replace(docs, spec, "replacement document")


# $project: inclusion or exclusion of (dotted, nested) fields, through arrays, and computed fields.
_INCLUDE, _EXCLUDE = "include", "exclude"


def _project_spec(spec, prefix=""):
    """The projection as a tree of _INCLUDE / _EXCLUDE / _Computed leaves."""
    tree = {}
    for key, value in spec.items():
        if not key or key.startswith("$"):
            raise MongoError(16410, f"FieldPath field names may not start with '$'. Given: {key}")
        parts = key.split(".")
        node = tree
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise MongoError(31250, f"Invalid $project :: caused by :: Path collision at {prefix}{key}")
            node = child
        if isinstance(value, dict) and value and not next(iter(value)).startswith("$"):
            leaf = _project_spec(value, f"{prefix}{key}.")
        elif isinstance(value, dict) and not value:
            raise MongoError(
                51270,
                "Invalid $project :: caused by :: An empty sub-projection is not a valid value. "
                f"Found empty object at path {prefix}{key}",
            )
        elif isinstance(value, bool) or _is_number(value):
            leaf = _INCLUDE if _truthy(value) else _EXCLUDE
        else:
            leaf = _Computed(value)
        if parts[-1] in node:
            existing = node[parts[-1]]
            if not (isinstance(existing, dict) and isinstance(leaf, dict)):
                raise MongoError(31250, f"Invalid $project :: caused by :: Path collision at {prefix}{key}")
            existing.update(leaf)
        else:
            node[parts[-1]] = leaf
    return tree


def _leaves(tree, path=""):
    for name, node in tree.items():
        if isinstance(node, dict):
            yield from _leaves(node, f"{path}{name}.")
        else:
            yield f"{path}{name}", node


def _has_computed(tree):
    return any(isinstance(leaf, _Computed) for _path, leaf in _leaves(tree))


def _include(value, tree):
    """Pass 1 of an inclusion projection: the included fields of a document, through arrays
    (elements that are not documents are dropped)."""
    if isinstance(value, list):
        return [_include(elem, tree) for elem in value if isinstance(elem, (dict, list))]
    out = {}
    for name, field in value.items():
        node = tree.get(name)
        if node is _INCLUDE:
            out[name] = field
        elif isinstance(node, dict) and isinstance(field, (dict, list)):
            out[name] = _include(field, node)
    return out


def _compute(value, tree, parser):
    """Pass 2: the computed fields, set in what pass 1 kept (a value that is not a document or
    an array becomes a document of the computed fields)."""
    if isinstance(value, list):
        return [_compute(elem, tree, parser) for elem in value]
    out = value if isinstance(value, dict) else {}
    for name, node in tree.items():
        if isinstance(node, _Computed):
            got = parser.value(node.expression)
            if got is MISSING:
                out.pop(name, None)
            else:
                out[name] = got
        elif isinstance(node, dict) and _has_computed(node):
            out[name] = _compute(out.get(name, MISSING), node, parser)
    return out


def _exclude(value, tree):
    if isinstance(value, list):
        for elem in value:
            _exclude(elem, tree)
    elif isinstance(value, dict):
        for name, node in tree.items():
            if node is _EXCLUDE:
                value.pop(name, None)
            elif isinstance(node, dict) and name in value:
                _exclude(value[name], node)


def _project(docs, _database, spec):
    if not isinstance(spec, dict):
        raise MongoError(15969, "$project specification must be an object")
    if not spec:
        raise MongoError(
            51272, "Invalid $project :: caused by :: projection specification must have at least one field"
        )
    tree = _project_spec(spec)
    leaves = [(path, leaf) for path, leaf in _leaves(tree) if path != "_id"]
    if not leaves or leaves[0][1] is _EXCLUDE:  # an exclusion projection
        for path, leaf in leaves:
            if leaf is not _EXCLUDE:
                raise MongoError(
                    31254,
                    f"Invalid $project :: caused by :: Cannot do inclusion on field {path} in exclusion projection",
                )
        if isinstance(tree.get("_id"), _Computed):
            raise MongoError(
                31254, "Invalid $project :: caused by :: Cannot do inclusion on field _id in exclusion projection"
            )
        tree = {k: v for k, v in tree.items() if v is not _INCLUDE}
        out = []
        for doc in docs:
            new = copy.deepcopy(doc)
            _exclude(new, tree)
            out.append(new)
        return out
    for path, leaf in leaves:
        if leaf is _EXCLUDE:
            raise MongoError(
                31253, f"Invalid $project :: caused by :: Cannot do exclusion on field {path} in inclusion projection"
            )
    if "_id" not in tree:
        tree = {"_id": _INCLUDE, **tree}
    elif tree["_id"] is _EXCLUDE:
        tree = {k: v for k, v in tree.items() if k != "_id"}
    out = []
    for doc in docs:
        new = _include(doc, tree)
        out.append(_compute(copy.deepcopy(new), tree, Parser(doc, {}, True)))
    return out


def _hashable(value):
    """A group key as something a dict can hold, equal exactly when mongomock's ``==`` would say so
    (embedded documents compare by their fields, not their order). None when it has no such form."""
    if isinstance(value, dict):
        items = [(k, _hashable(v)) for k, v in value.items()]
        return None if any(v is None and value[k] is not None for k, v in items) else ("d", frozenset(items))
    if isinstance(value, list):
        items = [_hashable(v) for v in value]
        return (
            None if any(h is None and v is not None for h, v in zip(items, value, strict=True)) else ("l", tuple(items))
        )
    try:
        hash(value)
    except TypeError:
        return None
    return ("v", value)


def _group(docs, database, spec):
    """``$group`` as mongomock answers it, in one pass: each document's key is computed once and
    looked up in a dict, where mongomock sorts every document by its key with Python-level BSON
    comparisons first (a report's grouping took about 1 ms per document). Output in key order, as
    mongomock's."""
    key_expr = spec["_id"]
    if not key_expr:
        return mm_aggregate._handle_group_stage(docs, database, spec)
    groups = {}
    for doc in docs:
        try:
            key = mm_aggregate._parse_expression(key_expr, doc, ignore_missing_keys=True)
        except KeyError:
            key = None
        hashed = _hashable(key)
        if hashed is None:  # a key Python cannot hash: mongomock's way
            return mm_aggregate._handle_group_stage(docs, database, spec)
        groups.setdefault(hashed, (key, []))[1].append(doc)
    ordered = sorted(groups.values(), key=lambda group: mm_aggregate.filtering.BsonComparable(group[0]))
    out = []
    for key, members in ordered:
        row = mm_aggregate._accumulate_group(spec, members)
        row["_id"] = key
        out.append(row)
    return out


def _with_value_at(doc, parts, value):
    """A copy of ``doc`` with ``value`` at the path: the documents along the path are copied, the
    rest is shared with ``doc``, as no stage changes a nested document in place."""
    new = dict(doc)
    if len(parts) == 1:
        new[parts[0]] = value
    else:
        new[parts[0]] = _with_value_at(doc[parts[0]], parts[1:], value)
    return new


def _unwind(docs, database, spec):
    """``$unwind`` without a deep copy of the whole document per array element (mongomock's way,
    most of a report's time): only the documents along the unwound path are copied."""
    options = spec if isinstance(spec, dict) else {"path": spec}
    path = options.get("path")
    simple = set(options) == {"path"} and isinstance(path, str) and path.startswith("$") and "$" not in path[1:]
    if not simple:  # includeArrayIndex, preserveNullAndEmptyArrays, bad input: mongomock's way
        return mm_aggregate._handle_unwind_stage(docs, database, spec)
    parts = path[1:].split(".")
    out = []
    for doc in docs:
        value = doc
        for part in parts:
            value = value.get(part, MISSING) if isinstance(value, dict) else MISSING
        if value is MISSING or value is None or value == []:
            continue
        for item in value if isinstance(value, list) else [value]:
            out.append(_with_value_at(doc, parts, item))
    return out


STAGES = {
    "$group": _group,
    "$unwind": _unwind,
    "$project": _project,
    "$addFields": _add_fields,
    "$set": lambda docs, database, spec: _add_fields(docs, database, spec, "$set"),
    "$unset": _unset,
    "$replaceRoot": _replace_root,
    "$replaceWith": _replace_with,
}


def process_pipeline(docs, database, pipeline):
    """Run ``pipeline`` over ``docs``: devmongo's stages (:data:`STAGES`), mongomock's others."""
    for stage in pipeline:
        for name, spec in stage.items():
            own = STAGES.get(name)
            if own is not None:
                docs = own(docs, database, spec)
            else:
                docs = list(mm_aggregate.process_pipeline(docs, database, [{name: spec}], None))
    return docs


def _accumulator(name):
    """``$group``'s ``$sum $avg $min $max`` over the group's values, as the expression forms."""

    def accumulate(values):
        return Parser({}, {}, True)._accumulate(name, {"$literal": list(values)})

    return accumulate


_ACCUMULATORS = {name: _accumulator(name) for name in ("$sum", "$avg", "$min", "$max")}


def install():
    """Make mongomock evaluate every expression with :class:`Parser` and run devmongo's stages,
    also inside its own stages' sub-pipelines (``$facet``, ``$lookup`` with a pipeline)."""
    mm_aggregate._Parser = Parser
    mm_aggregate._PIPELINE_HANDLERS.update(STAGES)
    mm_aggregate._GROUPING_OPERATOR_MAP.update(_ACCUMULATORS)
