"""Parsing ids that arrive from outside (URLs, forms)."""

from bson import ObjectId
from bson.errors import InvalidId

from .errors import NotFound


def object_id(value, what: str = "item") -> ObjectId:
    if isinstance(value, ObjectId):
        return value
    try:
        return ObjectId(str(value))
    except (InvalidId, TypeError):
        raise NotFound(f"No such {what}.") from None
