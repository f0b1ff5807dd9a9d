"""Parsing ids that arrive from outside (URLs, forms)."""

from bson import ObjectId
from bson.errors import InvalidId
from django.utils.translation import gettext, gettext_noop

from booking.core.errors import NotFound

# The things an id names, so "No such ..." reads right in every language (gettext_noop: the
# sentence is looked up whole when the id is refused).
NO_SUCH = {
    "performance": gettext_noop("No such performance."),
    "waiting room": gettext_noop("No such waiting room."),
    "conflict": gettext_noop("No such conflict."),
    "item": gettext_noop("No such item."),
}


def object_id(value, what: str = "item") -> ObjectId:
    if isinstance(value, ObjectId):
        return value
    try:
        return ObjectId(str(value))
    except (InvalidId, TypeError):
        raise NotFound(gettext(NO_SUCH[what]) if what in NO_SUCH else f"No such {what}.") from None
