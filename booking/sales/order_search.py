"""Finding orders for the staff: the order list's filters, a page at a time, and every match for an
export.

Orders come newest first on (``createdOn``, ``_id``): ``_id`` breaks ties of equal times, so a
page boundary between two orders placed in the same millisecond neither repeats nor skips one. A
page is read after the last row of the page before (a range on those two fields, never a skip), so
the thousandth page costs what the first one does.

Each filter is served by an index (booking/core/mongo.py ``ensure_indexes``): the list alone and
the days through ``newest``; a state, channel or payment method through ``state_newest``,
``channel_newest``, ``method_newest``; a performance through ``session_newest``; the text through
``ref_unique`` (a reference's start), ``email`` and ``name_prefix``. The server picks among them; the
other filters are checked on what the index found.

A theater is resolved to its sessions' ids (``lines.sessionId $in``, or ``refundedLines`` for a
refunded order, whose tickets all moved there): orders keep no theater id, and
a theater has hundreds of sessions at most, so no field to add at write time and no backfill.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bson import ObjectId
from bson.errors import InvalidId
from django.core import signing

from booking.core import mongo
from booking.core.domain import (
    COMPLIMENTARY_METHOD,
    DEFAULT_CHANNEL,
    ORDER_CHANNEL_FIELD,
    Order,
    OrderState,
    SalesChannel,
)
from booking.core.names import name_key

NEWEST_FIRST = [("createdOn", -1), ("_id", -1)]
OLDEST_FIRST = [("createdOn", 1), ("_id", 1)]
MAX_PAGE = 200
# A booking reference is 8 letters and digits (sales/checkout.new_booking_ref); from this many
# typed characters on, its start finds it (an anchored prefix on the unique ref index).
REF_PREFIX_MIN = 4
REF_MAX = 12
TEXT_MAX = 120
_CURSOR_SALT = "booking.sales.order_search.cursor"
_ALNUM = re.compile(r"[A-Za-z0-9]+")

# What a list row and an export read of an order (not its tickets' codes, nor its payment record).
LIST_FIELDS = {
    "ref": 1,
    "name": 1,
    "email": 1,
    "state": 1,
    "total": 1,
    "currency": 1,
    "createdOn": 1,
    "lines.sessionId": 1,
    "lines.row": 1,
    "lines.seat": 1,
    "lines.price": 1,
    "sessions": 1,
    "method": 1,
    ORDER_CHANNEL_FIELD: 1,
}


class InvalidCursor(ValueError):
    """A page cursor this server did not give out (forged, cut short, or from another key)."""


@dataclass(frozen=True)
class OrderFilters:
    """Every field optional; the filters given all apply (and), a tuple's values any (or)."""

    text: str = ""  # a booking reference (exactly, or its start), a customer's name (a word's start) or e-mail
    session_ids: tuple[ObjectId, ...] = ()
    theater_id: ObjectId | None = None
    placed_from: datetime | None = None  # aware; inclusive
    placed_until: datetime | None = None  # aware; exclusive
    states: tuple[OrderState, ...] = ()
    channels: tuple[SalesChannel, ...] = ()
    payment_methods: tuple[str, ...] = ()  # payments.CARD, payments.BOX_OFFICE, payments.counter's methods


@dataclass
class OrderPage:
    orders: list[Order]
    next_cursor: str | None  # the page after this one (older orders), None: this is the last
    previous_cursor: str | None = field(default=None)  # the page before (newer orders), None: the first


def text_clauses(text: str) -> list[dict] | None:
    """The text search's alternatives (``$or`` branches); None: no text; []: it can match nothing."""
    text = " ".join((text or "").split())[:TEXT_MAX]
    if not text:
        return None
    clauses: list[dict] = []
    prefix = name_key(text)
    if prefix:
        clauses.append({"nameKeys": {"$regex": "^" + re.escape(prefix)}})
    if "@" in text:
        clauses.append({"email": text.lower()})
    compact = text.replace(" ", "").replace("-", "")
    if _ALNUM.fullmatch(compact) and len(compact) <= REF_MAX:
        ref = compact.upper()
        if len(ref) >= REF_PREFIX_MIN:
            clauses.append({"ref": {"$regex": "^" + re.escape(ref)}})
        else:
            clauses.append({"ref": ref})
    return clauses


def _channel_clause(channel: SalesChannel) -> dict:
    """An order counts under one channel (domain.sales_channel): complimentary when given away,
    else its ``channel``, else online."""
    if channel == SalesChannel.COMPLIMENTARY:
        return {"$or": [{"method": COMPLIMENTARY_METHOD}, {ORDER_CHANNEL_FIELD: channel.value}]}
    where = {"$in": [None, channel.value]} if channel == DEFAULT_CHANNEL else channel.value
    return {ORDER_CHANNEL_FIELD: where, "method": {"$ne": COMPLIMENTARY_METHOD}}


def _session_ids(filters: OrderFilters) -> list[ObjectId] | None:
    """The sessions the orders must have a seat in; None: any."""
    wanted = list(dict.fromkeys(filters.session_ids)) if filters.session_ids else None
    if filters.theater_id is None:
        return wanted
    of_theater = [s["_id"] for s in mongo.sessions().find({"theaterId": filters.theater_id}, {"_id": 1})]
    if wanted is None:
        return of_theater
    allowed = set(of_theater)
    return [sid for sid in wanted if sid in allowed]


def order_query(filters: OrderFilters) -> dict | None:
    """The MongoDB filter of the filters (None: they can match nothing)."""
    conditions: list[dict] = []
    clauses = text_clauses(filters.text)
    if clauses is not None:
        if not clauses:
            return None
        conditions.append(clauses[0] if len(clauses) == 1 else {"$or": clauses})
    sessions = _session_ids(filters)
    if sessions is not None:
        if not sessions:
            return None
        where = sessions[0] if len(sessions) == 1 else {"$in": sessions}
        # a refunded order's tickets have all moved to refundedLines (payments/refunds.py)
        conditions.append({"$or": [{"lines.sessionId": where}, {"refundedLines.sessionId": where}]})
    if filters.states:
        states = [OrderState(s).value for s in dict.fromkeys(filters.states)]
        conditions.append({"state": states[0] if len(states) == 1 else {"$in": states}})
    if filters.channels:
        chosen = [_channel_clause(SalesChannel(c)) for c in dict.fromkeys(filters.channels)]
        conditions.append(chosen[0] if len(chosen) == 1 else {"$or": chosen})
    if filters.payment_methods:
        methods = [str(m) for m in dict.fromkeys(filters.payment_methods)]
        conditions.append({"method": methods[0] if len(methods) == 1 else {"$in": methods}})
    span: dict = {}
    if filters.placed_from is not None:
        span["$gte"] = _aware(filters.placed_from)
    if filters.placed_until is not None:
        span["$lt"] = _aware(filters.placed_until)
    if span:
        if "$gte" in span and "$lt" in span and span["$gte"] >= span["$lt"]:
            return None
        conditions.append({"createdOn": span})
    return _all_of(conditions)


def _all_of(conditions: list[dict]) -> dict:
    if not conditions:
        return {}
    if len(conditions) == 1:
        return conditions[0]
    return {"$and": conditions}


def _aware(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("placed_from and placed_until must be aware datetimes")
    return moment


# --- cursors ---


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def _to_ms(moment: datetime) -> int:
    """MongoDB keeps milliseconds: the stored time exactly, in integers (no float rounding)."""
    if moment.tzinfo is None:  # the client is tz_aware; a naive value would be UTC as stored
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MS


def make_cursor(order: Order, *, older: bool) -> str:
    """The cursor of the page after (``older``) or before this order."""
    return signing.dumps([_to_ms(order["createdOn"]), str(order["_id"]), 1 if older else 0], salt=_CURSOR_SALT)


def read_cursor(cursor: str) -> tuple[datetime, ObjectId, bool]:
    """(placed time, order id, older?) of a cursor; InvalidCursor when it is not one of ours."""
    if not isinstance(cursor, str) or len(cursor) > 200:
        raise InvalidCursor("That page link is not valid.")
    try:
        ms, oid, older = signing.loads(cursor, salt=_CURSOR_SALT)
        return _EPOCH + int(ms) * _MS, ObjectId(oid), bool(older)
    except (signing.BadSignature, ValueError, TypeError, InvalidId, OverflowError, OSError) as exc:
        raise InvalidCursor("That page link is not valid.") from exc


def _beyond(placed: datetime, oid: ObjectId, *, older: bool) -> dict:
    op = "$lt" if older else "$gt"
    return {"$or": [{"createdOn": {op: placed}}, {"createdOn": placed, "_id": {op: oid}}]}


# --- the reads ---


def search_orders(*, filters: OrderFilters, cursor: str | None = None, limit: int = 50) -> OrderPage:
    """One page of the matching orders, newest first. ``cursor``: a ``next_cursor`` or
    ``previous_cursor`` of an earlier page (InvalidCursor if it is not one)."""
    limit = max(1, min(int(limit), MAX_PAGE))
    position = read_cursor(cursor) if cursor else None
    query = order_query(filters)
    if query is None:
        return OrderPage(orders=[], next_cursor=None)
    older = True
    if position is not None:
        placed, oid, older = position
        query = _all_of([*([query] if query else []), _beyond(placed, oid, older=older)])
    sort = NEWEST_FIRST if older else OLDEST_FIRST
    found = list(mongo.orders().find(query, LIST_FIELDS).sort(sort).limit(limit + 1))
    more = len(found) > limit
    found = found[:limit]
    if not older:
        found.reverse()
    if not found:
        return OrderPage(orders=[], next_cursor=None)
    # Coming back from an older page, there are newer ones only if this read found more; going
    # forward from a cursor, the page it came from is newer.
    has_older = more if older else True
    has_newer = (position is not None) if older else more
    return OrderPage(
        orders=found,
        next_cursor=make_cursor(found[-1], older=True) if has_older else None,
        previous_cursor=make_cursor(found[0], older=False) if has_newer else None,
    )


def iter_orders(*, filters: OrderFilters, batch_size: int = 1000) -> Iterator[Order]:
    """Every matching order, newest first, streamed from one cursor (exports: no page limit)."""
    query = order_query(filters)
    if query is None:
        return
    yield from mongo.orders().find(query, LIST_FIELDS, batch_size=batch_size).sort(NEWEST_FIRST)
