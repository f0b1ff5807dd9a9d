"""Values as the server sees them: BSON encoding, ``_id`` keys of the store, values at a dotted
path, index keys (unique indexes) and sort keys."""

import itertools
import operator

import bson
from bson.raw_bson import RawBSONDocument
from mongomock import helpers as mm_helpers
from mongomock.filtering import BsonComparable, bson_compare

from .matching import generic_applies


def encode(doc):
    return RawBSONDocument(bson.encode(doc))


def id_key(value):
    """The store's dict key for an ``_id`` (embedded documents are made hashable)."""
    if isinstance(value, dict):
        return mm_helpers.hashdict(value)
    return value


def leaf_values(node, parts, i=0):
    """Values at a dotted path, following arrays like a MongoDB multikey index."""
    if i == len(parts):
        return [node]
    part = parts[i]
    if isinstance(node, dict):
        if part in node:
            return leaf_values(node[part], parts, i + 1)
        return []
    if isinstance(node, list):
        out = []
        if part.isdigit() and int(part) < len(node):
            out.extend(leaf_values(node[int(part)], parts, i + 1))
        for elem in node:
            if isinstance(elem, dict):
                out.extend(leaf_values(elem, parts, i))
        return out
    return []


def canon(value):
    """A hashable canonical form of a value (numbers of any type equal, bools apart)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)
    if isinstance(value, dict):
        return ("d", tuple((k, canon(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("l", tuple(canon(v) for v in value))
    if value is None:
        return ("z",)
    try:
        hash(value)
        return (type(value).__name__, value)
    except TypeError:
        return (type(value).__name__, repr(value))


_EMPTY_ARRAY = ("emptyarray",)


def index_keys(spec, doc):
    """The set of (canonical) keys ``doc`` contributes to an index, empty if not indexed."""
    pfe = spec.get("partialFilterExpression")
    if pfe is not None and not generic_applies(pfe, doc):
        return set()
    per_field = []
    present = False
    for field, _direction in spec["key"]:
        values = leaf_values(doc, field.split("."))
        if not values:
            per_field.append([("z",)])
            continue
        present = True
        keys = []
        for v in values:
            if isinstance(v, list):
                if not v:
                    keys.append(_EMPTY_ARRAY)
                else:
                    keys.extend(canon(x) for x in v)
            else:
                keys.append(canon(v))
        per_field.append(keys)
    if spec.get("sparse") and not present:
        return set()
    if len(per_field) == 1:
        return set(per_field[0])
    return set(itertools.product(*per_field))


def key_value(spec, doc):
    """``{field: value}`` of an index's fields in ``doc`` (for duplicate-key errors)."""
    out = {}
    for field, _d in spec["key"]:
        values = leaf_values(doc, field.split("."))
        out[field] = values[0] if len(values) == 1 else (values or None)
    return out


def fmt_key_value(kv):
    return "{ " + ", ".join(f"{k}: {v!r}" for k, v in kv.items()) + " }"


def sort_key(doc, parts, descending):
    """MongoDB sort key: arrays sort by their smallest (ascending) or largest element."""
    values = []
    empty = False
    for v in leaf_values(doc, parts):
        if isinstance(v, list):
            if v:
                values.extend(v)
            else:
                empty = True
        else:
            values.append(v)
    if not values:
        return (0,) if empty else (1, BsonComparable(None))
    best = values[0]
    cmp = operator.gt if descending else operator.lt
    for v in values[1:]:
        if bson_compare(cmp, v, best):
            best = v
    return (1, BsonComparable(best))
