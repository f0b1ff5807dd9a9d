"""The command-shape audit: record every command the app sends (pymongo's command monitoring) and
judge each against the declared indexes and shard keys.

The planner rule is close to MongoDB's choice between an index scan and a collection scan (and to
what ``notablescan`` refuses): a query is served when an index's leading field has an equality or
range predicate (``$eq``, ``$in``, ``$gt``..., an anchored case-sensitive ``$regex``, a field of
an ``$elemMatch``), or when its sort is the order of an index (after the index's fields the filter
fixes by equality); ``_id`` is an index. A partial index counts only when the filter implies its
``partialFilterExpression``. An ``$or`` is served when every branch is. A ``hint`` is an explicit
choice (the allowed scans say so with a hint on ``_id_``, and are listed by name in the test).

Shard keys: a command is targeted when its filter fixes the collection's shard key by equality
(or ``$in``), or it is an insert whose documents carry it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, cast

from bson import ObjectId
from pymongo import monitoring

SKIPPED = {
    "hello",
    "isMaster",
    "ismaster",
    "endSessions",
    "ping",
    "buildInfo",
    "getMore",
    "killCursors",
    "listIndexes",
    "createIndexes",
    "dropIndexes",
    "listCollections",
    "drop",
    "dropDatabase",
    "create",
    "collMod",
    "setParameter",
    "getParameter",
}
RANGE_OPS = {"$eq", "$in", "$gt", "$gte", "$lt", "$lte", "$all", "$type"}


@dataclass
class Command:
    name: str
    collection: str
    filter: dict | None  # None: an insert
    sort: list = field(default_factory=list)
    hint: object = None
    documents: list = field(default_factory=list)  # an insert's documents
    pipeline_head: str = ""  # aggregate: the first stage's operator
    limit: int = 0

    def shape(self) -> str:
        """The command with its values blanked, to name it in a failure."""
        described = _blank(self.filter) if self.filter is not None else "<insert>"
        extra = f" sort={self.sort}" if self.sort else ""
        extra += f" hint={self.hint}" if self.hint else ""
        extra += f" pipeline={self.pipeline_head}" if self.pipeline_head else ""
        extra += f" limit={self.limit}" if self.limit else ""
        return f"{self.name} {self.collection} {described}{extra}"


def _blank(value):
    if isinstance(value, dict):
        return {k: _blank(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(v) for v in value[:1]] if value else []
    if isinstance(value, str):
        return "str"  # the domain's StrEnums are strings on the wire
    return type(value).__name__


def commands_of(event_command: dict, name: str) -> list[Command]:
    """The commands (one per statement of an update/delete batch) of one wire command."""
    target = event_command.get(name)
    collection = target if isinstance(target, str) else ""
    if name == "find":
        sort = list((event_command.get("sort") or {}).items())
        flt = event_command.get("filter") or {}
        limit = abs(event_command.get("limit") or 0) or (1 if event_command.get("singleBatch") else 0)
        return [Command(name, collection, flt, sort, event_command.get("hint"), limit=limit)]
    if name == "findAndModify":
        sort = list((event_command.get("sort") or {}).items())
        return [Command(name, collection, event_command.get("query") or {}, sort, event_command.get("hint"))]
    if name in ("update", "delete"):
        key = "updates" if name == "update" else "deletes"
        return [Command(name, collection, s.get("q") or {}, [], s.get("hint")) for s in event_command.get(key, [])]
    if name in ("count", "distinct"):
        return [Command(name, collection, event_command.get("query") or {}, [], event_command.get("hint"))]
    if name == "aggregate":
        pipeline = event_command.get("pipeline") or []
        head = next(iter(pipeline[0])) if pipeline else ""
        flt = pipeline[0]["$match"] if head == "$match" else {}
        sort = []
        if len(pipeline) > 1 and "$sort" in pipeline[1]:
            sort = list(pipeline[1]["$sort"].items())
        return [Command(name, collection, flt, sort, event_command.get("hint"), pipeline_head=head)]
    if name == "insert":
        return [Command(name, collection, None, documents=list(event_command.get("documents", [])))]
    return [Command(name, collection, {})]


class Recorder(monitoring.CommandListener):
    """Keeps every command sent while it listens (mongo.add_listener)."""

    def __init__(self):
        self.commands: list[Command] = []

    def started(self, event):
        if event.command_name in SKIPPED:
            return
        command = dict(event.command)
        if event.command_name == "insert" and "documents" not in command:
            command["documents"] = []  # sent as a document sequence: pymongo hands them over too
        self.commands.extend(commands_of(copy.deepcopy(command), event.command_name))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


# --- the planner rule ---


def predicates(flt: dict) -> tuple[dict, list[list[dict]]]:
    """The filter's ANDed field conditions (``$and`` and ``$elemMatch`` flattened into dotted
    fields) and its ``$or`` lists."""
    fields: dict[str, list] = {}
    ors: list[list[dict]] = []

    def add(path, cond):
        fields.setdefault(path, []).append(cond)

    def walk(doc, prefix=""):
        for key, cond in doc.items():
            if key == "$and":
                for part in cond:
                    walk(part, prefix)
            elif key == "$or":
                ors.append(cond)
            elif key.startswith("$"):
                continue  # $expr, $comment, $nor: nothing an index bound comes from
            else:
                path = prefix + key
                if isinstance(cond, dict) and "$elemMatch" in cond:
                    inner = cond["$elemMatch"]
                    if inner and all(k.startswith("$") for k in inner):
                        add(path, inner)  # an element's own value: {$elemMatch: {$gt: 1}}
                    else:
                        walk(inner, path + ".")
                    rest = {k: v for k, v in cond.items() if k != "$elemMatch"}
                    if rest:
                        add(path, rest)
                else:
                    add(path, cond)

    walk(flt)
    return fields, ors


def bounds_index(cond) -> bool:
    """Does this condition give an index tight bounds (equality or a range)?"""
    if isinstance(cond, re.Pattern):
        return cond.pattern.startswith("^") and not (cond.flags & re.IGNORECASE)
    if not isinstance(cond, dict):
        return True  # equality (a scalar, an id, a whole sub-document)
    ops = set(cond)
    if not any(op.startswith("$") for op in ops):
        return True  # a whole sub-document
    if "$regex" in ops:
        pattern = cond["$regex"]
        pattern = pattern.pattern if isinstance(pattern, re.Pattern) else str(pattern)
        return pattern.startswith("^") and "i" not in str(cond.get("$options", ""))
    return bool(ops & RANGE_OPS)


def equality(cond) -> bool:
    if not isinstance(cond, dict):
        return not isinstance(cond, re.Pattern)
    if "$eq" in cond:
        return True
    return "$in" in cond and len(cond["$in"]) == 1


def implies(fields: dict, partial: dict | None) -> bool:
    """Does a filter with these field conditions imply the index's partialFilterExpression?"""
    if not partial:
        return True
    for path, wanted in partial.items():
        conds = fields.get(path, [])
        if isinstance(wanted, dict) and wanted.get("$exists") is True:
            ok = any(c == {"$exists": True} or (c is not None and bounds_index(c)) for c in conds)
        elif isinstance(wanted, dict) and "$in" in wanted:
            allowed = wanted["$in"]
            ok = any(
                (not isinstance(c, dict) and c in allowed)
                or (isinstance(c, dict) and "$in" in c and all(v in allowed for v in c["$in"]))
                or (isinstance(c, dict) and "$eq" in c and c["$eq"] in allowed)
                for c in conds
            )
        else:
            ok = any(c == wanted or (isinstance(c, dict) and c.get("$eq") == wanted) for c in conds)
        if not ok:
            return False
    return True


def index_for(flt: dict, sort: list, indexes: dict) -> str | None:
    """The name of an index that serves this filter (and sort), or None: a collection scan. An
    index that serves only the sort of a filter it cannot bound comes back as "sort:<name>": an
    index scan, but one that may read every document (the planner's last resort)."""
    fields, ors = predicates(flt)
    candidates = {"_id_": {"key": [("_id", 1)]}, **indexes}
    for name, spec in candidates.items():
        if not implies(fields, spec.get("partialFilterExpression")):
            continue
        lead = spec["key"][0][0]
        if any(bounds_index(c) for c in fields.get(lead, [])):
            return name
    for branches in ors:
        served = []
        for branch in branches:
            merged = {**{k: v[0] for k, v in fields.items() if len(v) == 1}, **branch}
            served.append(index_for(merged, [], indexes))
        if all(served) and not any(s.startswith("sort:") for s in served):
            return "$or(" + ", ".join(sorted(set(cast(list[str], served)))) + ")"  # all(served): no None
    if sort:
        for name, spec in candidates.items():
            if implies(fields, spec.get("partialFilterExpression")) and _sort_served(spec["key"], sort, fields):
                return name if not fields and not ors else f"sort:{name}"
    return None


def _sort_served(key: list, sort: list, fields: dict) -> bool:
    rest = list(key)
    while rest and rest[0][0] not in {f for f, _ in sort} and any(equality(c) for c in fields.get(rest[0][0], [])):
        rest.pop(0)  # fixed by equality: the order continues with the next field
    if len(rest) < len(sort):
        return False
    same = all(k == f and d == s for (k, d), (f, s) in zip(rest, sort, strict=False))
    reverse = all(k == f and d == -s for (k, d), (f, s) in zip(rest, sort, strict=False))
    return same or reverse


def hinted_index(hint, indexes: dict) -> str | None:
    if isinstance(hint, str):
        return hint if hint == "_id_" or hint in indexes else None
    if isinstance(hint, dict):
        wanted = list(hint.items())
        if wanted == [("_id", 1)]:
            return "_id_"
        return next((n for n, s in indexes.items() if list(s["key"]) == wanted), None)
    return None


def judge(command: Command, indexes: dict) -> tuple[str, str | None]:
    """("index", name) | ("sort", name): only the sort is the index's | ("hint", name) |
    ("scan", None) | ("insert", None)."""
    if command.filter is None:
        return "insert", None
    if command.hint is not None:
        return "hint", hinted_index(command.hint, indexes)
    if command.name == "aggregate" and command.pipeline_head not in ("$match", ""):
        return "scan", None  # a pipeline that starts with $group reads the whole collection
    name = index_for(command.filter, command.sort, indexes)
    if name is None:
        return "scan", None
    if name.startswith("sort:"):
        return "sort", name[5:]
    return "index", name


def declared_indexes(db) -> dict[str, dict]:
    """{collection: {index name: {key, partialFilterExpression?}}} as the server lists them."""
    found: dict[str, dict] = {}
    for collection in db.list_collection_names():
        found[collection] = {}
        for spec in db[collection].list_indexes():
            if spec["name"] == "_id_":
                continue
            entry: dict[str, Any] = {"key": list(spec["key"].items())}
            if "partialFilterExpression" in spec:
                entry["partialFilterExpression"] = dict(spec["partialFilterExpression"])
            found[collection][spec["name"]] = entry
    return found


# --- shard keys ---


def targets(command: Command, shard_key: dict) -> bool:
    """Does this command carry its collection's shard key (so mongos sends it to one shard, to the
    shards of the listed keys, or, on a ranged key, to the shards owning the chunks of the range)?"""
    ((key_field, kind),) = shard_key.items()  # every shard key here is one field
    if command.filter is None:
        return bool(command.documents) and all(key_field in d for d in command.documents)
    fields, ors = predicates(command.filter)
    if any(_fixes(c) or (kind == 1 and _bounds(c)) for c in fields.get(key_field, [])):
        return True
    return any(
        all(targets(Command(command.name, command.collection, b), shard_key) for b in branches) for branches in ors
    )


def _bounds(cond) -> bool:
    return isinstance(cond, dict) and bool({"$gt", "$gte", "$lt", "$lte"} & set(cond))


def _fixes(cond) -> bool:
    if isinstance(cond, dict):
        return "$eq" in cond or ("$in" in cond and bool(cond["$in"]))
    return isinstance(cond, str | ObjectId | int)
