"""Staff reads. The buyer's reads are in booking/sales/selectors.py; these ones see everything
(every state, every owner) and are only reached through the admin site's permission checks."""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from typing import Any

from bson import ObjectId
from django.utils import timezone

from booking.core import clock, mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, Cart, CartState, Order, OrderState, Session, SessionStatus
from booking.sales.selectors import session_counts
from booking.venues.seat_grid import restored_states

STAFF_LIST_LIMIT = 200
# Carts and orders, newest first; _id last so that equal times come in one order every time.
NEWEST_FIRST = [("createdOn", -1), ("_id", -1)]


def with_ids(docs) -> list:
    """Templates cannot read ``_id``: give each document a plain ``id`` string (a list back)."""
    docs = list(docs)
    for doc in docs:
        if doc is not None:
            doc["id"] = str(doc["_id"])
    return docs


def with_id[D: Mapping[str, Any]](doc: D | None) -> D | None:
    return with_ids([doc])[0]


SESSION_LIST_FIELDS = {
    "name": 1,
    "theaterId": 1,
    "theaterName": 1,
    "start": 1,
    "end": 1,
    "status": 1,
    "seats": 1,
    "seatsTotal": 1,
    "seatsAvailable": 1,
    "seatSummary": 1,  # instead of seats once the session was compacted (sales/retention.py)
    "performanceId": 1,  # sectioned venues: the list shows the performance once (its sections summed)
    "venueName": 1,
    "section": 1,
}


def theaters_with_session_counts() -> list[dict]:
    """Every theater with how many sessions (any state) were created from it: two queries, the
    count over the theaterId+start index of these theaters only (not a pass over every session)."""
    fields = {"name": 1, "seatCount": 1, "modifiedOn": 1}
    theaters = list(mongo.theaters().find({}, fields).sort([("name", 1), ("_id", 1)]))
    ids = [t["_id"] for t in theaters]
    pipeline = [{"$match": {"theaterId": {"$in": ids}}}, {"$group": {"_id": "$theaterId", "n": {"$sum": 1}}}]
    counts = {row["_id"]: row["n"] for row in mongo.sessions().aggregate(pipeline)} if ids else {}
    for theater in theaters:
        theater["sessionCount"] = counts.get(theater["_id"], 0)
    return with_ids(theaters)


def theater_choices() -> list[tuple[str, str]]:
    by_name = mongo.theaters().find({}, {"name": 1}).sort([("name", 1), ("_id", 1)])
    return [(str(t["_id"]), t["name"]) for t in by_name]


def sessions_of_theater(theater_id: ObjectId) -> list[dict]:
    return with_ids(
        mongo.sessions()
        .find({"theaterId": theater_id}, {"name": 1, "start": 1, "status": 1})
        .sort([("start", 1), ("_id", 1)])
        .limit(STAFF_LIST_LIMIT)
    )


class SessionsShown(StrEnum):
    """Which sessions the staff list shows."""

    ON_SALE = SessionStatus.ON_SALE.value  # upcoming, not canceled
    PAST = "past"  # started already
    CANCELED = SessionStatus.CANCELED.value
    ALL = "all"


def staff_sessions(
    *, theater_id: ObjectId | None = None, day: date | None = None, when: str = SessionsShown.ON_SALE
) -> list[dict]:
    """Sessions for the staff list with their seat counts (the grid is read to count them).

    ``when``: a ``SessionsShown``. ``day`` is a local calendar day.
    """
    now = clock.now()
    query: dict = {}
    if theater_id is not None:
        query["theaterId"] = theater_id
    if when == SessionsShown.ON_SALE:
        query.update({"status": {"$in": [SessionStatus.ON_SALE, SessionStatus.DRAFT]}, "start": {"$gt": now}})
    elif when == SessionsShown.PAST:
        query["start"] = {"$lte": now}
    elif when == SessionsShown.CANCELED:
        query["status"] = SessionStatus.CANCELED
    if day is not None:
        begin = timezone.make_aware(datetime.combine(day, time.min))
        span = {"$gte": begin, "$lt": begin + timedelta(days=1)}
        query["start"] = {**query.get("start", {}), **span}
    sort = -1 if when == SessionsShown.PAST else 1
    order = [("start", sort), ("_id", sort)]  # _id last: equal starts in one order (an index serves both ways)
    sessions = list(mongo.sessions().find(query, SESSION_LIST_FIELDS).sort(order).limit(STAFF_LIST_LIMIT))
    for session in sessions:
        session["counts"] = session_counts(session)
        session.pop("seats", None)
        session["isPast"] = session["start"] <= now
    return with_ids(one_row_per_performance(sessions))


def one_row_per_performance(sessions: list[dict]) -> list[dict]:
    """A sectioned venue's section documents as one row (where its first section is): the venue's
    name, the sections' counts summed, ``sectionCount``; the row links to the performance page."""
    rows: list[dict] = []
    performances: dict = {}
    for session in sessions:
        pid = session.get("performanceId")
        if pid is None:
            rows.append(session)
            continue
        row = performances.get(pid)
        if row is None:
            row = performances[pid] = {
                **session,
                "theaterName": session.get("venueName", session["theaterName"]),
                "counts": dict(session["counts"]),
                "sectionCount": 0,
                "performance": str(pid),
            }
            rows.append(row)
        else:
            for key in ("sold", "held", "blocked", "free", "total"):
                row["counts"][key] += session["counts"][key]
        row["sectionCount"] += 1
        total = row["counts"]["total"]
        row["counts"]["occupancy"] = round(100 * row["counts"]["sold"] / total) if total else 0
    return rows


def get_session(session_id: ObjectId) -> Session | None:
    """The whole session. A compacted one (sales/retention.py) gets its grid back from its paid
    orders: their seats sold, the others free (house seats are only counted in its seatSummary)."""
    session = mongo.sessions().find_one({"_id": session_id})
    if session is not None and "seats" not in session and "layout" in session:
        paid = mongo.orders().find(
            {"state": OrderState.PAID, "lines.sessionId": session_id}, {"lines.sessionId": 1, "lines.key": 1}
        )
        sold = {line["key"] for order in paid for line in order["lines"] if line["sessionId"] == session_id}
        session["seats"] = restored_states(session["layout"], sold)
    return with_id(session)


def get_theater(theater_id: ObjectId) -> dict | None:
    return with_id(mongo.theaters().find_one({"_id": theater_id}))


def seat_owners(session: Session) -> dict[str, dict]:
    """Who has each held or sold seat: {"r:c": {"cart": id} or {"order": ref, "orderId": id}}.

    Holds come from the session's own reservations; sales from the paid orders of the session
    (indexed on lines.sessionId).
    """
    owners: dict[str, dict] = {}
    for reservation in session.get("reservations", []):
        for key in reservation["seats"]:
            owners[key] = {"cart": reservation["_id"]}
    paid = mongo.orders().find(
        {"state": {"$in": list(SEAT_OWNING_ORDER_STATES)}, "lines.sessionId": session["_id"]},  # their lines
        {"ref": 1, "name": 1, "lines.sessionId": 1, "lines.key": 1},
    )
    for order in paid:
        for line in order["lines"]:
            if line["sessionId"] == session["_id"]:
                owners[line["key"]] = {"order": order["ref"], "orderId": order["_id"], "name": order.get("name", "")}
    return owners


def paid_order_count(session_id: ObjectId) -> int:
    return mongo.orders().count_documents({"state": OrderState.PAID, "lines.sessionId": session_id})


CART_STATES = tuple(CartState)


def carts_by_state(state: str | None) -> list[dict]:
    """Newest first; ``state`` None means every state."""
    query = {"state": state} if state else {}
    fields = {"owner": 1, "state": 1, "items.sessionId": 1, "total": 1, "createdOn": 1, "expiresAt": 1}
    return with_ids(mongo.carts().find(query, fields).sort(NEWEST_FIRST).limit(STAFF_LIST_LIMIT))


# Counts on the staff pages stop here ("10000+"): a count walks the index, and ended carts of a busy
# month are many.
STAFF_COUNT_LIMIT = 10_000


def cart_state_counts() -> dict[str, int]:
    """Carts per state, one count per state on the state+expiresAt index, each at most
    STAFF_COUNT_LIMIT (a count at the limit means "at least")."""
    carts = mongo.carts()
    return {state: carts.count_documents({"state": state}, limit=STAFF_COUNT_LIMIT) for state in CART_STATES}


def count_label(n: int, capped: int | None = None) -> str:
    """A count for a page, "10000+" when it stopped at STAFF_COUNT_LIMIT. A sum of counts passes
    its largest part as ``capped``: the sum is a lower bound when that part is."""
    return f"{n}+" if (n if capped is None else capped) >= STAFF_COUNT_LIMIT else str(n)


def get_cart(cart_id: ObjectId) -> Cart | None:
    return with_id(mongo.carts().find_one({"_id": cart_id}))


def session_names(session_ids) -> dict[ObjectId, dict]:
    ids = list(set(session_ids))
    if not ids:
        return {}
    found = mongo.sessions().find({"_id": {"$in": ids}}, {"name": 1, "start": 1, "theaterName": 1})
    return {s["_id"]: s for s in with_ids(list(found))}


# The performances the order list's filter offers, newest start first.
PERFORMANCE_PICK_LIMIT = 300


def performances_to_pick() -> list[dict]:
    """The sessions staff pick a performance from (by title and date) to filter orders: the latest
    starts first (the start index); an older one is still reached from its own page."""
    fields = {"name": 1, "start": 1, "theaterName": 1, "venueName": 1, "section": 1}
    return list(mongo.sessions().find({}, fields).sort([("start", -1), ("_id", -1)]).limit(PERFORMANCE_PICK_LIMIT))


def get_order(order_id: ObjectId) -> Order | None:
    return with_id(mongo.orders().find_one({"_id": order_id}))


def order_for_cart(cart_id: ObjectId) -> Order | None:
    return with_id(mongo.orders().find_one({"cartId": cart_id}, {"ref": 1, "state": 1}))


# An exchange's target performances: how many the list shows besides the order's own (a stadium's
# sections each count as one); the rest are counted and found by searching.
EXCHANGE_TARGET_LIMIT = 50
TARGET_FIELDS = {"name": 1, "nameDe": 1, "start": 1, "theaterName": 1, "theaterNameDe": 1, "status": 1}
TARGET_TEXT_FIELDS = ("name", "nameDe", "theaterName", "theaterNameDe")
WORD_START = r"(?:^|[\s\-–(/·,.:])"  # spelled out: MongoDB's \b knows only ASCII letters ("Über")


@dataclass(frozen=True)
class ExchangeTargets:
    """The performances an order's tickets can move to, as the exchange page lists them."""

    own: list[dict]  # the order's own performances, in the order of its lines: always listed, first
    kept: list[dict]  # the one chosen before, when the search no longer finds it
    found: list[dict]  # others on sale that match the search, soonest first, at most the limit
    more: int  # matches beyond the limit (a lower bound when it reached STAFF_COUNT_LIMIT)

    @property
    def sessions(self) -> list[dict]:
        return [*self.own, *self.kept, *self.found]


def target_search(text: str = "", day: date | None = None) -> dict:
    """The filter of upcoming performances on sale whose title or hall has a word starting with
    each word of ``text`` (any case) and, given ``day``, that start on that local calendar day."""
    query: dict = {"status": SessionStatus.ON_SALE, "start": {"$gt": clock.now()}}
    if day is not None:
        begin = timezone.make_aware(datetime.combine(day, time.min))
        query["start"] = {**query["start"], "$gte": begin, "$lt": begin + timedelta(days=1)}
    words = (text or "").split()
    if words:
        query["$and"] = [
            {
                "$or": [
                    {field: {"$regex": WORD_START + re.escape(word), "$options": "i"}} for field in TARGET_TEXT_FIELDS
                ]
            }
            for word in words
        ]
    return query


def exchange_targets(
    order: Order,
    *,
    text: str = "",
    day: date | None = None,
    keep: ObjectId | None = None,
    limit: int = EXCHANGE_TARGET_LIMIT,
) -> ExchangeTargets:
    """The order's own performances first (whatever their state: the default target), then
    ``keep`` (chosen before) if it is on sale, then the next ``limit`` on sale matching the search
    and how many more match."""
    own_ids = list(dict.fromkeys(line["sessionId"] for line in order.get("lines", [])))
    by_id = {s["_id"]: s for s in mongo.sessions().find({"_id": {"$in": own_ids}}, TARGET_FIELDS)}
    own = [by_id[i] for i in own_ids if i in by_id]
    query = target_search(text, day)
    others = {**query, "_id": {"$nin": own_ids}}
    found = list(mongo.sessions().find(others, TARGET_FIELDS).sort([("start", 1), ("_id", 1)]).limit(limit))
    more = 0
    if len(found) == limit:
        more = mongo.sessions().count_documents(others, limit=STAFF_COUNT_LIMIT) - limit
    kept: list[dict] = []
    if keep is not None and keep not in own_ids and all(s["_id"] != keep for s in found):
        on_sale = {"_id": keep, "status": SessionStatus.ON_SALE, "start": {"$gt": clock.now()}}
        kept = list(mongo.sessions().find(on_sale, TARGET_FIELDS))
    return ExchangeTargets(own=with_ids(own), kept=with_ids(kept), found=with_ids(found), more=more)
