"""MongoDB update-document semantics, applied in place to one stored document.

mongomock's own update code has gaps that would give silently wrong results for this project
(no arrayFilters, ``$pull``/``$max``/``$unset`` through array indexes are no-ops, positional
``$`` only with ``$elemMatch``), so devmongo applies update operators itself. Matching (queries,
``$pull`` conditions, array filters) and ordering still use mongomock's ``filter_applies`` and
BSON comparison.

Every mutation is recorded in an :class:`UndoLog`; a failing update is rolled back, so an
update is all-or-nothing per document, as in MongoDB.
"""

import datetime
import operator
import re
import time
from decimal import Decimal

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.timestamp import Timestamp
from mongomock.filtering import BsonComparable, bson_compare, resolve_sort_key

from .errors import MongoError
from .matching import generic_applies, matcher

MISSING = object()

_IDENT_RE = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def clone(value):
    """Copy a BSON value: containers are copied, leaves are immutable and shared."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def strict_equal(a, b):
    """BSON-like equality: same types, same key order (used for 'was it modified')."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if len(a) != len(b) or list(a) != list(b):
            return False
        return all(strict_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def type_name(value):
    """The BSON type's name as MongoDB's error messages spell it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int" if -(2**31) <= value < 2**31 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, Decimal128):
        return "decimal"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, datetime.datetime):
        return "date"
    return type(value).__name__


def is_number(value):
    return isinstance(value, (int, float, Decimal128)) and not isinstance(value, bool)


def _short(value):
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."


class UndoLog:
    """Records mutations so that a failed update can be rolled back exactly."""

    __slots__ = ("entries", "concrete")

    def __init__(self):
        self.entries = []
        self.concrete = None  # an operator update's (op, parts, value) with array indexes resolved

    def set(self, container, key, value):
        old = container.get(key, MISSING) if isinstance(container, dict) else container[key]
        self.entries.append((container, key, old))
        container[key] = value

    def delete(self, container, key):
        self.entries.append((container, key, container[key]))
        del container[key]

    def save_whole(self, container):
        """Snapshot a list or dict (shallow) before changing its length or content."""
        if isinstance(container, list):
            self.entries.append((container, None, container[:]))
        else:
            self.entries.append((container, None, dict(container)))

    def undo(self):
        for container, key, old in reversed(self.entries):
            if key is None:
                if isinstance(container, list):
                    container[:] = old
                else:
                    container.clear()
                    container.update(old)
            elif old is MISSING:
                container.pop(key, None)
            else:
                container[key] = old
        self.entries = []

    def changed(self):
        for container, key, old in self.entries:
            if key is None:
                if not strict_equal(container, old):
                    return True
                continue
            if isinstance(container, dict):
                cur = container.get(key, MISSING)
            else:
                cur = container[key] if key < len(container) else MISSING
            if cur is MISSING or old is MISSING:
                if cur is not old:
                    return True
            elif cur is not old and not strict_equal(cur, old):
                return True
        return False


# --------------------------------------------------------------------------- parsing


class PreparedUpdate:
    """An update statement validated once, applied to each matching document."""

    __slots__ = ("kind", "ops", "replacement", "pipeline", "array_filters", "positional")

    def __init__(self, kind):
        self.kind = kind  # "ops", "replace" or "pipeline"
        self.ops = []  # (op, path, parts, value)
        self.replacement = None
        self.pipeline = None
        self.array_filters = {}
        self.positional = False


def _filter_identifiers(fdoc, found):
    for key, value in fdoc.items():
        if key in ("$and", "$or", "$nor"):
            if not isinstance(value, list):
                raise MongoError(2, f"{key} must be an array")
            for sub in value:
                if isinstance(sub, dict):
                    _filter_identifiers(sub, found)
        elif key.startswith("$"):
            raise MongoError(2, f"Error parsing array filter :: caused by :: unknown top level operator: {key}")
        else:
            found.add(key.split(".", 1)[0])


def prepare_update(update, array_filters=None):
    """Validate an update (operators, replacement document or pipeline) once, as MongoDB does
    before touching any document; the result is applied to each matching document."""
    if isinstance(update, list):
        return _prepare_pipeline(update, array_filters)
    if not isinstance(update, dict):
        raise MongoError(14, "Update argument must be either an object or an array")
    if not update or not next(iter(update)).startswith("$"):
        return _prepare_replacement(update)
    upd = PreparedUpdate("ops")
    if array_filters:
        upd.array_filters = _parse_array_filters(array_filters)
    used = set()  # array filter identifiers the paths use
    for op, fields in update.items():
        check = _CHECK.get(op)
        if check is None:
            raise MongoError(
                9,
                f"Unknown modifier: {op}. Expected a valid update modifier or "
                "pipeline-style update specified as an array",
            )
        if not isinstance(fields, dict):
            raise MongoError(
                9,
                f"Modifiers operate on fields but we found type "
                f"{type_name(fields)} instead. For example: {{$mod: {{<field>: "
                f"...}}}} not {{{op}: {_short(fields)}}}",
            )
        for path, value in fields.items():
            if "$" in path:
                parts = _parse_path(path, upd, used)
            else:
                parts = path.split(".")
                if "" in parts:
                    _parse_path(path, upd, used)  # raises MongoDB's error
            if check is not _check_any:
                check(op, path, value, upd)
            upd.ops.append((op, path, parts, value))
    for ident in upd.array_filters:
        if ident not in used:
            raise MongoError(9, f"The array filter for identifier '{ident}' was not used in the update")
    if len(upd.ops) > 1 and not upd.positional:
        _sort_ops(upd.ops)
    return upd


def _sort_ops(ops):
    firsts = [entry[2][0] for entry in ops]
    if len(set(firsts)) == len(firsts) and not any(f.isdigit() for f in firsts):
        if firsts != sorted(firsts):  # distinct top-level names: their order is enough
            ops.sort(key=lambda entry: entry[2][0])
    else:
        ops.sort(key=lambda entry: field_order(entry[2]))


def field_order(parts):
    """Sort key of MongoDB 5.0+'s order of processing update paths: field names as strings,
    numeric names (array indexes) as numbers ("a.2" before "a.10"; numbers before letters)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def _prepare_pipeline(pipeline, array_filters):
    upd = PreparedUpdate("pipeline")
    upd.pipeline = pipeline
    if array_filters:
        raise MongoError(72, "arrayFilters may not be specified for pipeline-style updates")
    return upd


def _prepare_replacement(update):
    for key in update:
        if key.startswith("$"):
            raise MongoError(
                52,
                f"The dollar ($) prefixed field '{key}' in '{key}' is not "
                "allowed in the context of an update's replacement document."
                " Consider using an aggregation pipeline with $replaceWith.",
            )
    upd = PreparedUpdate("replace")
    upd.replacement = update
    return upd


def _parse_array_filters(array_filters):
    """``{identifier: filter}`` of a command's ``arrayFilters``, each validated."""
    if not isinstance(array_filters, list):
        raise MongoError(14, "arrayFilters must be an array")
    out = {}
    for fdoc in array_filters:
        if not isinstance(fdoc, dict):
            raise MongoError(14, "Each array filter must be an object")
        idents = set()
        _filter_identifiers(fdoc, idents)
        if len(idents) != 1:
            raise MongoError(
                9,
                "Error parsing array filter :: caused by :: Expected a single "
                f"top-level field name, found {sorted(idents)}",
            )
        ident = idents.pop()
        if not _IDENT_RE.match(ident):
            raise MongoError(
                2,
                "Error parsing array filter :: caused by :: The top-level "
                "field name must be an alphanumeric string beginning with a "
                f"lowercase letter, found '{ident}'",
            )
        if ident in out:
            raise MongoError(9, f"Found multiple array filters with the same top-level field name {ident}")
        # Validate the filter once (unknown operators etc.), as mongomock would.
        matcher(fdoc)({})
        out[ident] = fdoc
    return out


def _parse_path(path, upd, used):
    """An update path's parts, checked; notes positional parts in ``upd`` and the array filter
    identifiers used in ``used``."""
    parts = path.split(".")
    if "" in parts:
        raise MongoError(56, f"The update path '{path}' contains an empty field name, which is not allowed.")
    for part in parts:
        if part.startswith("$"):
            upd.positional = True
            if part.startswith("$[") and part.endswith("]") and part != "$[]":
                ident = part[2:-1]
                if ident not in upd.array_filters:
                    raise MongoError(2, f"No array filter found for identifier '{ident}' in path '{path}'")
                used.add(ident)
            elif part not in ("$", "$[]"):
                raise MongoError(2, f"The dollar ($) prefixed field '{part}' in '{path}' is not valid for storage.")
    return parts


# Per-operator checks of an operand, run once per path when the update is prepared:
# check(op, path, value, upd) raises MongoDB's error for an operand it would refuse.


def _check_any(op, path, value, upd):
    pass


def _check_rename(op, path, value, upd):
    if not isinstance(value, str):
        raise MongoError(2, f"The 'to' field for $rename must be a string: {path}: {_short(value)}")
    if upd.positional or "$" in value:
        raise MongoError(2, "The source and target field for $rename must not contain positional operators")
    if value == path:
        raise MongoError(2, f"The source and target field for $rename must differ: {path}: {value!r}")


def _check_number(op, path, value, upd):
    if not is_number(value):
        verb = "increment" if op == "$inc" else "multiply"
        raise MongoError(14, f"Cannot {verb} with non-numeric argument: {{{path}: {_short(value)}}}")


def _check_pop(op, path, value, upd):
    if value not in (1, -1, 1.0, -1.0):
        raise MongoError(9, f"$pop expects 1 or -1, found: {_short(value)}")


def _check_pull_all(op, path, value, upd):
    if not isinstance(value, list):
        raise MongoError(2, f"$pullAll requires an array argument but was given a {type_name(value)}")


_CHECK = {
    "$set": _check_any,
    "$setOnInsert": _check_any,
    "$unset": _check_any,
    "$inc": _check_number,
    "$mul": _check_number,
    "$min": _check_any,
    "$max": _check_any,
    "$push": _check_any,  # $each/$position/$slice/$sort are checked when applied
    "$addToSet": _check_any,
    "$pull": _check_any,
    "$pullAll": _check_pull_all,
    "$pop": _check_pop,
    "$currentDate": _check_any,  # checked when applied
    "$bit": _check_any,  # checked when applied
    "$rename": _check_rename,
}


# --------------------------------------------------------------------------- positional paths


class _Context:
    __slots__ = (
        "query",
        "array_filters",
        "is_insert",
        "_positional_cache",
        "doc_id",
        "_filter_matchers",
        "_filter_results",
    )

    def __init__(self, query, array_filters, is_insert, doc_id):
        self.query = query or {}
        self.array_filters = array_filters
        self.is_insert = is_insert
        self._positional_cache = {}
        self.doc_id = doc_id
        self._filter_matchers = {}
        self._filter_results = {}  # (ident, id(element)) -> bool

    def filter_matches(self, ident, element):
        """Whether an array element passes the ``$[ident]`` filter. Remembered per element: all
        paths are expanded before anything changes, and several paths often share one filter."""
        key = (ident, id(element))
        result = self._filter_results.get(key)
        if result is None:
            applies = self._filter_matchers.get(ident)
            if applies is None:
                applies = self._filter_matchers[ident] = _array_filter_matcher(ident, self.array_filters[ident])
            result = self._filter_results[key] = bool(applies(element))
        return result

    def positional_index(self, prefix, arr):
        key = ".".join(prefix)
        if key in self._positional_cache:
            return self._positional_cache[key]
        err = MongoError(2, "The positional operator did not find the match needed from the query.")
        if self.is_insert or not isinstance(arr, list):
            raise err
        conds = []
        self._collect(self.query, key, conds)
        if not conds:
            raise err
        for i, elem in enumerate(arr):
            if all(_element_matches(elem, rel, cond) for rel, cond in conds):
                self._positional_cache[key] = i
                return i
        raise err

    def _collect(self, query, key, conds):
        for k, v in query.items():
            if k == "$and" and isinstance(v, list):
                for sub in v:
                    if isinstance(sub, dict):
                        self._collect(sub, key, conds)
            elif k == key:
                conds.append((None, v))
            elif k.startswith(key + "."):
                conds.append((k[len(key) + 1 :], v))


def positional_match(query, parts, arr):
    """Index of the first element of the array at ``parts`` matching the query's conditions on
    that array (the positional ``$``); MongoError when none does."""
    return _Context(query, {}, False, None).positional_index(list(parts), arr)


def _array_filter_matcher(ident, fdoc):
    """A function of an array element: whether it passes the ``$[ident]`` filter ``fdoc``, i.e.
    ``filter_applies(fdoc, {ident: element})``. When every key is a path below the identifier
    (``{"r._id": x}``), a document element is matched against the filter without the identifier
    (``{"_id": x}``): a path's candidate values are the same, and the shape is a faster one."""
    whole = matcher(fdoc)
    prefix = ident + "."
    if not all(k.startswith(prefix) and len(k) > len(prefix) for k in fdoc):
        return lambda element: whole({ident: element})
    inner = matcher({k[len(prefix) :]: v for k, v in fdoc.items()})
    return lambda element: inner(element) if isinstance(element, dict) else whole({ident: element})


def _element_matches(elem, rel, cond):
    if rel is None:
        if isinstance(cond, dict) and len(cond) == 1 and "$elemMatch" in cond and isinstance(elem, dict):
            sub = cond["$elemMatch"]
            if not sub or not next(iter(sub)).startswith("$"):
                return generic_applies(sub, elem)
        return generic_applies({"v": cond}, {"v": elem})
    if isinstance(elem, dict):
        return generic_applies({rel: cond}, elem)
    return False


def _expand(node, parts, i, prefix, out, ctx, path):
    n = len(parts)
    while i < n:
        part = parts[i]
        if part == "$":
            idx = ctx.positional_index(prefix, node)
            prefix.append(str(idx))
            node = node[idx]
            i += 1
            continue
        if part.startswith("$["):
            if not isinstance(node, list):
                raise MongoError(
                    2, f"The path '{'.'.join(prefix)}' must exist in the document in order to apply array updates."
                )
            ident = part[2:-1]
            for j, elem in enumerate(node):
                if ident and not ctx.filter_matches(ident, elem):
                    continue
                _expand(elem, parts, i + 1, prefix + [str(j)], out, ctx, path)
            return
        prefix.append(part)
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            node = None
        i += 1
    out.append(prefix)


# --------------------------------------------------------------------------- navigation


def _cannot_create(parts, i, node):
    parent = parts[i - 1] if i > 0 else ""
    return MongoError(28, f"Cannot create field '{parts[i]}' in element {{{parent}: {_short(node)}}}")


def _walk(doc, parts, create, log):
    """Return (container, key) for the last path component, or (None, None) when absent."""
    node = doc
    last_i = len(parts) - 1
    for i in range(last_i):
        part = parts[i]
        if isinstance(node, dict):
            nxt = node.get(part, MISSING)
            if nxt is MISSING:
                if not create:
                    return None, None
                nxt = {}
                log.set(node, part, nxt)
        elif isinstance(node, list):
            if not part.isdigit():
                if not create:
                    return None, None
                raise _cannot_create(parts, i, node)
            idx = int(part)
            if idx < len(node):
                nxt = node[idx]
            else:
                if not create:
                    return None, None
                nxt = {}
                _assign(node, idx, nxt, log)
        else:
            if not create:
                return None, None
            raise _cannot_create(parts, i, node)
        node = nxt
    last = parts[last_i]
    if isinstance(node, dict):
        return node, last
    if isinstance(node, list):
        if last.isdigit():
            return node, int(last)
        if not create:
            return None, None
        raise _cannot_create(parts, last_i, node)
    if not create:
        return None, None
    raise _cannot_create(parts, last_i, node)


def _get(container, key):
    if isinstance(container, dict):
        return container.get(key, MISSING)
    return container[key] if key < len(container) else MISSING


def _assign(container, key, value, log):
    if isinstance(container, dict) or key < len(container):
        log.set(container, key, value)
    else:
        log.save_whole(container)
        container.extend([None] * (key - len(container) + 1))
        container[key] = value


# --------------------------------------------------------------------------- operators


def _arith(cur, value, op):
    if isinstance(cur, Decimal128) or isinstance(value, Decimal128):
        a = cur.to_decimal() if isinstance(cur, Decimal128) else Decimal(cur)
        b = value.to_decimal() if isinstance(value, Decimal128) else Decimal(value)
        return Decimal128(a + b if op == "$inc" else a * b)
    result = cur + value if op == "$inc" else cur * value
    if isinstance(result, float):
        return result
    if isinstance(cur, Int64) or isinstance(value, Int64):
        if not -(2**63) <= result < 2**63:
            raise MongoError(
                2,
                f"Failed to apply {op} operations to current value "
                f"({cur!r}) for document {{_id: {_short(None)}}}: overflow",
            )
        return Int64(result)
    if not -(2**63) <= result < 2**63:
        raise MongoError(2, f"Failed to apply {op} operations: integer overflow")
    return result


def _op_set(doc, parts, value, log, ctx):
    container, key = _walk(doc, parts, True, log)
    cur = _get(container, key)
    if cur is not MISSING and strict_equal(cur, value):
        return
    _assign(container, key, clone(value), log)


def _op_unset(doc, parts, value, log, ctx):
    container, key = _walk(doc, parts, False, log)
    if container is None:
        return
    if isinstance(container, dict):
        if key in container:
            log.delete(container, key)
    elif key < len(container) and container[key] is not None:
        log.set(container, key, None)


def _op_arith(op):
    def apply(doc, parts, value, log, ctx):
        container, key = _walk(doc, parts, True, log)
        cur = _get(container, key)
        if cur is MISSING:
            if op == "$inc":
                new = value
            elif isinstance(value, float):
                new = 0.0
            elif isinstance(value, Decimal128):
                new = Decimal128("0")
            else:
                new = type(value)(0)
        elif not is_number(cur):
            raise MongoError(
                14,
                f"Cannot apply {op} to a value of non-numeric type. "
                f"{{_id: {_short(ctx.doc_id)}}} has the field '{parts[-1]}' of "
                f"non-numeric type {type_name(cur)}",
            )
        else:
            new = _arith(cur, value, op)
        _assign(container, key, new, log)

    return apply


def _op_minmax(op):
    cmp = operator.lt if op == "$min" else operator.gt

    def apply(doc, parts, value, log, ctx):
        container, key = _walk(doc, parts, True, log)
        cur = _get(container, key)
        if cur is MISSING or bson_compare(cmp, value, cur):
            _assign(container, key, clone(value), log)

    return apply


def _array_at(doc, parts, log, ctx, op, create=True):
    container, key = _walk(doc, parts, create, log)
    if container is None:
        return None
    cur = _get(container, key)
    if cur is MISSING:
        if not create:
            return None
        cur = []
        _assign(container, key, cur, log)
        return cur
    if not isinstance(cur, list):
        raise MongoError(
            2,
            f"The field '{parts[-1]}' must be an array but is of type "
            f"{type_name(cur)} in document {{_id: {_short(ctx.doc_id)}}}",
        )
    log.save_whole(cur)
    return cur


def _sorted_values(values, spec):
    if isinstance(spec, dict):
        result = list(values)
        for key, direction in reversed(list(spec.items())):
            result.sort(
                key=lambda d, k=key: resolve_sort_key(k, d if isinstance(d, dict) else {}), reverse=direction < 0
            )
        return result
    if spec in (1, -1):
        return sorted(values, key=BsonComparable, reverse=spec < 0)
    raise MongoError(
        2, "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields"
    )


def _op_push(doc, parts, value, log, ctx):
    arr = _array_at(doc, parts, log, ctx, "$push")
    if isinstance(value, dict) and "$each" in value:
        for k in value:
            if k not in ("$each", "$position", "$slice", "$sort"):
                raise MongoError(2, f"Unrecognized clause in $push: {k}")
        each = value["$each"]
        if not isinstance(each, list):
            raise MongoError(
                2, f"The argument to $each in $push must be an array but it was of type: {type_name(each)}"
            )
        items = [clone(v) for v in each]
        position = value.get("$position")
        if position is None:
            arr.extend(items)
        else:
            if not isinstance(position, int) or isinstance(position, bool):
                raise MongoError(2, "The value for $position must be an integer value")
            if position < 0:
                position = max(0, len(arr) + position)
            arr[position:position] = items
        if "$sort" in value:
            arr[:] = _sorted_values(arr, value["$sort"])
        if "$slice" in value:
            n = value["$slice"]
            if not isinstance(n, int) or isinstance(n, bool):
                raise MongoError(2, "The value for $slice must be an integer value")
            arr[:] = arr[:n] if n >= 0 else arr[n:]
    else:
        arr.append(clone(value))


def _op_add_to_set(doc, parts, value, log, ctx):
    arr = _array_at(doc, parts, log, ctx, "$addToSet")
    if isinstance(value, dict) and "$each" in value:
        each = value["$each"]
        if not isinstance(each, list):
            raise MongoError(
                2, f"The argument to $each in $addToSet must be an array but it was of type {type_name(each)}"
            )
    else:
        each = [value]
    for item in each:
        if not any(strict_equal(item, x) or (is_number(item) and is_number(x) and item == x) for x in arr):
            arr.append(clone(item))


def _pull_matcher(value):
    if isinstance(value, dict):
        if value and all(k.startswith("$") for k in value):
            applies = matcher({"v": value})
            return lambda e: applies({"v": e})
        applies = matcher(value)
        return lambda e: isinstance(e, dict) and applies(e)
    return lambda e: e == value and (type(e) is type(value) or (is_number(e) and is_number(value)))


def _remove_from_array(doc, parts, log, operator, removes):
    """$pull and $pullAll: drop the elements `removes` picks from the array at the path (a
    missing path is no change)."""
    container, key = _walk(doc, parts, False, log)
    if container is None:
        return
    cur = _get(container, key)
    if cur is MISSING:
        return
    if not isinstance(cur, list):
        raise MongoError(2, f"Cannot apply {operator} to a non-array value")
    kept = [e for e in cur if not removes(e)]
    if len(kept) != len(cur):
        log.save_whole(cur)
        cur[:] = kept


def _op_pull(doc, parts, value, log, ctx):
    _remove_from_array(doc, parts, log, "$pull", _pull_matcher(value))


def _op_pull_all(doc, parts, value, log, ctx):
    _remove_from_array(doc, parts, log, "$pullAll", lambda e: e in value)


def _op_pop(doc, parts, value, log, ctx):
    container, key = _walk(doc, parts, False, log)
    if container is None:
        return
    cur = _get(container, key)
    if cur is MISSING:
        return
    if not isinstance(cur, list):
        raise MongoError(14, f"Path '{'.'.join(parts)}' contains an element of non-array type '{type_name(cur)}'")
    if cur:
        log.save_whole(cur)
        if value > 0:
            cur.pop()
        else:
            cur.pop(0)


def _op_current_date(doc, parts, value, log, ctx):
    if isinstance(value, dict):
        kind = value.get("$type")
        if kind not in ("date", "timestamp") or len(value) != 1:
            raise MongoError(
                2,
                "The '$type' string field is required to be 'date' or "
                "'timestamp': {$currentDate: {field : {$type: 'date'}}}",
            )
    elif isinstance(value, bool):
        kind = "date"
    else:
        raise MongoError(
            2,
            f"{parts[-1]} is not valid type for $currentDate. Please use a "
            "boolean ('true') or a $type expression ({$type: 'timestamp/date'}).",
        )
    if kind == "date":
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        new = now.replace(microsecond=now.microsecond // 1000 * 1000)
    else:
        new = Timestamp(int(time.time()), 1)
    container, key = _walk(doc, parts, True, log)
    _assign(container, key, new, log)


def _op_bit(doc, parts, value, log, ctx):
    if not isinstance(value, dict) or not value:
        raise MongoError(14, "The $bit modifier is not compatible with a non-object argument")
    container, key = _walk(doc, parts, True, log)
    cur = _get(container, key)
    if cur is MISSING:
        cur = 0
    if not isinstance(cur, int) or isinstance(cur, bool):
        raise MongoError(14, "Cannot apply $bit to a value of non-integral type.")
    result = cur
    for kind, operand in value.items():
        if not isinstance(operand, int) or isinstance(operand, bool):
            raise MongoError(14, "The $bit modifier field must be an Integer(32/64 bit)")
        if kind == "and":
            result &= operand
        elif kind == "or":
            result |= operand
        elif kind == "xor":
            result ^= operand
        else:
            raise MongoError(2, f"The $bit modifier only supports 'and', 'or', and 'xor', not '{kind}'")
    if isinstance(cur, Int64) or any(isinstance(v, Int64) for v in value.values()):
        result = Int64(result)
    _assign(container, key, result, log)


def _op_rename(doc, parts, value, log, ctx):
    container, key = _walk(doc, parts, False, log)
    if container is None or isinstance(container, list):
        return
    cur = container.get(key, MISSING)
    if cur is MISSING:
        return
    log.delete(container, key)
    dst_parts = value.split(".")
    dst_container, dst_key = _walk(doc, dst_parts, True, log)
    if isinstance(dst_container, list):
        raise MongoError(2, f"The destination field for $rename may not be dotted into an array: {value}")
    _assign(dst_container, dst_key, cur, log)


_APPLY = {
    "$set": _op_set,
    "$setOnInsert": _op_set,
    "$unset": _op_unset,
    "$inc": _op_arith("$inc"),
    "$mul": _op_arith("$mul"),
    "$min": _op_minmax("$min"),
    "$max": _op_minmax("$max"),
    "$push": _op_push,
    "$addToSet": _op_add_to_set,
    "$pull": _op_pull,
    "$pullAll": _op_pull_all,
    "$pop": _op_pop,
    "$currentDate": _op_current_date,
    "$bit": _op_bit,
    "$rename": _op_rename,
}

SUPPORTED_OPS = frozenset(_APPLY)
assert set(_CHECK) == SUPPORTED_OPS


# --------------------------------------------------------------------------- entry point


def apply_update(doc, upd, query, is_insert=False, pipeline_runner=None):
    """Apply a prepared update to ``doc`` in place.

    Returns the :class:`UndoLog`; ``log.changed()`` says whether the document was modified and
    ``log.undo()`` reverts it (e.g. when a unique index rejects the result). On error the
    document is left unchanged and the error is raised.
    """
    log = UndoLog()
    try:
        old_id = doc.get("_id", MISSING)
        if upd.kind == "replace":
            new = clone(upd.replacement)
            new_id = new.pop("_id", MISSING)
            if new_id is not MISSING and old_id is not MISSING and not _same_id(new_id, old_id):
                raise MongoError(
                    66,
                    "After applying the update, the (immutable) field '_id' was "
                    f"found to have been altered to _id: {_short(new_id)}",
                )
            if old_id is MISSING and new_id is not MISSING:
                old_id = new_id
            log.save_whole(doc)
            doc.clear()
            if old_id is not MISSING:
                doc["_id"] = old_id
            doc.update(new)
            return log
        if upd.kind == "pipeline":
            new = pipeline_runner(doc, upd.pipeline)
            if old_id is not MISSING and not _same_id(new.get("_id", MISSING), old_id):
                raise MongoError(66, "Performing an update on the path '_id' would modify the immutable field '_id'")
            log.save_whole(doc)
            doc.clear()
            doc.update(new)
            return log

        ctx = _Context(query, upd.array_filters, is_insert, None if old_id is MISSING else old_id)
        concrete = []
        for op, path, parts, value in upd.ops:
            if op == "$setOnInsert" and not is_insert:
                continue
            if upd.positional and any(p.startswith("$") for p in parts):
                out = []
                _expand(doc, parts, 0, [], out, ctx, path)
                for cparts in out:
                    concrete.append((op, cparts, value))
            else:
                concrete.append((op, parts, value))
        if len(concrete) > 1 or (concrete and concrete[0][0] == "$rename"):
            _check_conflicts(concrete)
            if upd.positional:  # in MongoDB's order (new fields are created in it)
                concrete.sort(key=lambda entry: field_order(entry[1]))
        log.concrete = concrete
        touches_id = False
        for op, parts, value in concrete:
            if parts[0] == "_id" or (op == "$rename" and value.split(".")[0] == "_id"):
                touches_id = True
            _APPLY[op](doc, parts, value, log, ctx)
        if touches_id and not is_insert:
            new_id = doc.get("_id", MISSING)
            if not _same_id(new_id, old_id):
                raise MongoError(66, "Performing an update on the path '_id' would modify the immutable field '_id'")
        return log
    except BaseException:
        log.undo()
        raise


def _same_id(a, b):
    if a is MISSING or b is MISSING:
        return a is b
    return strict_equal(a, b) or (is_number(a) and is_number(b) and a == b)


def _check_conflicts(concrete):
    paths = []
    for op, parts, value in concrete:
        paths.append(tuple(parts))
        if op == "$rename":
            paths.append(tuple(value.split(".")))
    paths.sort()
    for a, b in zip(paths, paths[1:], strict=False):
        if b[: len(a)] == a:
            raise MongoError(40, f"Updating the path '{'.'.join(b)}' would create a conflict at '{'.'.join(a)}'")


def upsert_seed(query):
    """The document an upsert starts from: the equality conditions of the query."""
    seed = {}
    _collect_equalities(query or {}, seed)
    doc = {}
    if "_id" in seed:
        doc["_id"] = seed.pop("_id")
    for path, value in seed.items():
        parts = path.split(".")
        node = doc
        ok = True
        for part in parts[:-1]:
            nxt = node.get(part)
            if nxt is None:
                nxt = node[part] = {}
            elif not isinstance(nxt, dict):
                ok = False
                break
            node = nxt
        if ok:
            node[parts[-1]] = clone(value)
    return doc


def _collect_equalities(query, seed):
    for key, value in query.items():
        if key == "$and" and isinstance(value, list):
            for sub in value:
                if isinstance(sub, dict):
                    _collect_equalities(sub, seed)
            continue
        if key.startswith("$"):
            continue
        if isinstance(value, dict) and value and next(iter(value)).startswith("$"):
            if "$eq" in value:
                seed[key] = value["$eq"]
            elif "$in" in value and isinstance(value["$in"], list) and len(value["$in"]) == 1:
                seed[key] = value["$in"][0]
            continue
        if isinstance(value, (re.Pattern,)):
            continue
        seed[key] = value
