"""find / findAndModify projections, as MongoDB (4.4+) applies them.

* Inclusion (``{a: 1, "b.c": 1}``) or exclusion (``{a: 0}``) of fields, dotted paths through
  embedded documents and arrays of documents (``{"a.b": 1}`` on ``a: [{b: 1, c: 2}, 3]`` gives
  ``a: [{b: 1}]``); ``_id`` is kept unless excluded; the document's field order is kept. Mixing
  inclusion and exclusion (other than ``_id``) is refused (31253/31254), as are paths that
  collide (31249/31250).
* ``$slice`` (``n`` or ``[skip, limit]``) on any path; on its own it does not make a projection
  an inclusion: ``{comments: {$slice: 5}}`` returns every field, ``comments`` sliced.
* ``$elemMatch`` (top-level fields): the first matching element, in an inclusion projection.
* The positional ``$`` (``{"grades.$": 1}``): the first element matching the query's condition on
  that array, in an inclusion projection; 51246 when there is none.

Aggregation expressions in a find projection (``{x: "$a"}``, ``{x: {$add: [...]}}``) are
refused with 115 (devmongo does not support them there).
"""

from .errors import MongoError
from .matching import generic_applies
from .update import positional_match

_MISSING = object()


class _Node:
    __slots__ = ("children", "slice", "elem_match", "positional", "leaf")

    def __init__(self):
        self.children = {}
        self.slice = None
        self.elem_match = None
        self.positional = False
        self.leaf = False  # the whole field (included or excluded)


class Projection:
    """A validated projection: ``apply(doc, query)`` returns the projected copy."""

    __slots__ = ("inclusion", "root", "keep_id")

    def __init__(self, spec):
        if not isinstance(spec, dict):
            raise MongoError(2, "projection must be an object")
        self.root = _Node()
        self.keep_id = True
        mode = None  # "include" / "exclude" for fields other than _id
        positional = 0
        for key, value in spec.items():
            if not isinstance(key, str) or not key:
                raise MongoError(2, "projection field names must be non-empty strings")
            if key.endswith(".$") or ".$." in key:
                if ".$." in key or key.count("$") != 1:
                    raise MongoError(
                        31394,
                        "As of 4.4, it's illegal to specify positional "
                        "operator in the middle of a path. Positional "
                        "projection may only be used at the end, for "
                        "example: a.b.$. If the query previously used a "
                        "form like a.b.$.d, remove the parts following "
                        "the '$' and the results will be equivalent.",
                    )
                if not _truthy(value):
                    raise MongoError(31395, "positional projection cannot be used with exclusion")
                positional += 1
                mode = self._mode(mode, "include", key)
                self._node(key[:-2]).positional = True
                continue
            if key.startswith("$"):
                raise MongoError(115, f"devmongo does not support projection field {key!r}")
            if isinstance(value, dict):
                ops = set(value)
                if ops == {"$slice"}:
                    self._node(key).slice = _parse_slice(value["$slice"])
                    continue
                if ops == {"$elemMatch"}:
                    if "." in key:
                        raise MongoError(31275, "Cannot use $elemMatch projection on a nested field.")
                    if not isinstance(value["$elemMatch"], dict):
                        raise MongoError(2, "elemMatch: Invalid argument, object required.")
                    mode = self._mode(mode, "include", key)
                    self._node(key).elem_match = value["$elemMatch"]
                    continue
                raise MongoError(115, f"devmongo does not support projection expressions: {key}: {value!r}")
            if isinstance(value, str):
                raise MongoError(115, "devmongo does not support literal/field-path projections")
            if not isinstance(value, (bool, int, float)):
                raise MongoError(115, f"devmongo does not support the projection {key}: {value!r}")
            include = _truthy(value)
            if key == "_id":
                self.keep_id = include
                continue
            mode = self._mode(mode, "include" if include else "exclude", key)
            node = self._node(key)
            if node.children:
                raise MongoError(31250, f"Path collision at {key}")
            node.leaf = True
        if positional > 1:
            raise MongoError(31276, "Cannot specify more than one positional projection per query.")
        self.inclusion = mode == "include"

    @staticmethod
    def _mode(mode, wanted, key):
        if mode is None or mode == wanted:
            return wanted
        if wanted == "exclude":
            raise MongoError(31254, f"Cannot do exclusion on field {key} in inclusion projection")
        raise MongoError(31253, f"Cannot do inclusion on field {key} in exclusion projection")

    def _node(self, path):
        node = self.root
        parts = path.split(".")
        for i, part in enumerate(parts):
            if not part:
                raise MongoError(2, f"FieldPath field names may not be empty strings: {path}")
            if node.leaf and node is not self.root:
                raise MongoError(31249, f"Path collision at {path} remaining portion {'.'.join(parts[i:])}")
            node = node.children.setdefault(part, _Node())
        return node

    # ------------------------------------------------------------------ applying

    def apply(self, doc, query):
        if self.inclusion:
            out = {}
            if self.keep_id and "_id" in doc:
                out["_id"] = doc["_id"]
            for key, value in doc.items():
                if key == "_id":
                    continue
                node = self.root.children.get(key)
                if node is None:
                    continue
                projected = self._include(node, value, [key], query)
                if projected is not _MISSING:
                    out[key] = projected
            return out
        out = {}
        for key, value in doc.items():
            if key == "_id" and not self.keep_id:
                continue
            node = self.root.children.get(key)
            if node is None:
                out[key] = value
                continue
            projected = self._exclude(node, value)
            if projected is not _MISSING:
                out[key] = projected
        return out

    def _include(self, node, value, path, query):
        if node.positional:
            return _positional(value, path, query)
        if node.elem_match is not None:
            if not isinstance(value, list):
                return _MISSING
            for elem in value:
                if _elem_matches(node.elem_match, elem):
                    return [elem]
            return _MISSING
        if node.leaf:
            return value
        if node.slice is not None and not node.children:
            return _slice(value, node.slice)
        if isinstance(value, dict):
            out = {}
            for key, sub in value.items():
                child = node.children.get(key)
                if child is not None:
                    projected = self._include(child, sub, [*path, key], query)
                    if projected is not _MISSING:
                        out[key] = projected
            return out
        if isinstance(value, list):
            out = []
            for elem in value:
                if isinstance(elem, (dict, list)):
                    projected = self._include(node, elem, path, query)
                    if projected is not _MISSING:
                        out.append(projected)
            return out
        return _MISSING

    def _exclude(self, node, value):
        if node.leaf:
            return _MISSING
        if node.slice is not None and not node.children:
            return _slice(value, node.slice)
        if isinstance(value, dict):
            out = {}
            for key, sub in value.items():
                child = node.children.get(key)
                if child is None:
                    out[key] = sub
                    continue
                projected = self._exclude(child, sub)
                if projected is not _MISSING:
                    out[key] = projected
            return out
        if isinstance(value, list):
            return [self._exclude(node, elem) if isinstance(elem, (dict, list)) else elem for elem in value]
        return value


def _truthy(value):
    return bool(value)


def _parse_slice(arg):
    if isinstance(arg, bool):
        raise MongoError(
            28667,
            "Invalid $slice syntax. The given syntax did not match the find() "
            "syntax because :: Location31272: $slice only supports numbers and"
            " [skip, limit] arrays",
        )
    if isinstance(arg, (int, float)):
        return (None, int(arg))
    if (
        isinstance(arg, list)
        and len(arg) == 2
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in arg)
    ):
        if arg[1] <= 0:
            raise MongoError(
                31259,
                "Invalid $slice syntax. The given syntax did not match the "
                "find() syntax because :: Location31259: $slice limit must be"
                " positive",
            )
        return (int(arg[0]), int(arg[1]))
    raise MongoError(
        28667,
        "Invalid $slice syntax. The given syntax did not match the find() "
        "syntax because :: Location31272: $slice only supports numbers and "
        "[skip, limit] arrays",
    )


def _slice(value, spec):
    if not isinstance(value, list):
        return value
    skip, limit = spec
    if skip is None:
        return value[:limit] if limit >= 0 else value[limit:]
    if skip < 0:
        skip = max(0, len(value) + skip)
    return value[skip : skip + limit]


def _elem_matches(cond, elem):
    if cond and all(k.startswith("$") for k in cond):
        return generic_applies({"v": cond}, {"v": elem})
    return isinstance(elem, dict) and generic_applies(cond, elem)


def _positional(value, path, query):
    """The positional projection of the array at ``path``: its first element matching the
    query's conditions on it (as the positional update operator finds it)."""
    error = MongoError(
        51246,
        "Executor error during find command :: caused by :: positional "
        "operator '.$' couldn't find a matching element in the array",
    )
    if not isinstance(value, list):
        raise error
    try:
        index = positional_match(query, path, value)
    except MongoError:
        raise error from None
    return [value[index]]
