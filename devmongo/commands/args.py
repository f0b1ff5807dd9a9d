"""Checks of command arguments shared by the command modules."""

from ..errors import MongoError

_IGNORED_COLLATION = ({"locale": "simple"},)


def coll_name(cmd, key):
    """The collection a command names under ``key``, checked as MongoDB does."""
    name = cmd[key]
    if not isinstance(name, str):
        raise MongoError(2, f"collection name has invalid type {type(name).__name__}")
    if not name or "$" in name or "\0" in name or name.startswith("."):
        raise MongoError(73, f"Invalid collection name: {name!r}")
    return name


def check_collation(cmd_or_stmt):
    collation = cmd_or_stmt.get("collation")
    if collation and collation not in _IGNORED_COLLATION:
        raise MongoError(115, "devmongo does not support collations")
