"""The write side of the reports' summaries (booking/reports/summaries.py): a mark on an order for
each session whose figures its change touches, written in the same update as the change.

    orders().update_one(filter, {"$set": {...}, "$push": {**marks.push(session_ids)}})
    order = {..., **marks.stored(session_ids)}  # a new order

A mark is ``{s: <session id>, t: <token>}`` in the order's ``reportStale`` list; the token is new
for every write, so a refresh pulls exactly the marks it has counted past and a later write's
mark stays. No imports from the rest of booking: every write path can use it.
"""

from collections.abc import Iterable, Mapping
from typing import Any, Final, TypedDict

from bson import ObjectId

STALE: Final = "reportStale"  # the orders' field of marks (the sparse index reportStale.s: booking/core/mongo.py)


def _entries(session_ids: Iterable[ObjectId]) -> list[dict]:
    token = ObjectId()
    return [{"s": sid, "t": token} for sid in dict.fromkeys(session_ids)]


def push(session_ids: Iterable[ObjectId]) -> dict:
    """The ``$push`` entry that marks an order's change for these sessions' reports."""
    return {STALE: {"$each": _entries(session_ids)}}


class Stored(TypedDict):
    """The field a new order is stored with (an ``Order``'s ``reportStale``)."""

    reportStale: list[dict]


def stored(session_ids: Iterable[ObjectId]) -> Stored:
    """The field a new order is stored with: marked for each of its sessions."""
    return {STALE: _entries(session_ids)}


def sessions_of(order: Mapping[str, Any]) -> list[ObjectId]:  # an Order, or one being made
    """Every session an order counts in: its tickets' and its refunded tickets'."""
    lines = [*order.get("lines", []), *order.get("refundedLines", [])]
    return list(dict.fromkeys(line["sessionId"] for line in lines))
