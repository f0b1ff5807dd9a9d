"""What the orders of some sessions say, counted: the rows every report figure is made of, per
session (booking/reports/summaries.py stores them; figures.py adds them up).

Per session, three lists of rows (``Tally``):

* ``groups``: sold tickets by category, ticket type, VAT rate and sales channel: tickets, gross,
  check-ins (and the ticket type's name);
* ``days``: sold tickets and gross per local calendar day of the sale;
* ``refunds``: refunded tickets and their gross by VAT rate and channel.

What counts:

* sold tickets and revenue: the lines still in ``lines`` of paid and partly refunded orders
  (``SEAT_OWNING_ORDER_STATES``), at what the buyer paid (``price`` less a promo code's
  ``discount``); the booking fee is per order, not per seat, and not in these figures;
* refunds: the tickets in ``refundedLines`` (any order state) and their amounts;
* check-ins: sold tickets with ``checkedIn``;
* the product: a subscription's ticket (its line has ``subscription``) or a single ticket, so the
  income of subscriptions is shown apart;
* the sales channel: ``domain.sales_channel``: complimentary when the order's ``method`` is
  (staff gave the tickets away: counted as tickets, at no revenue), else the order's ``channel``
  (``domain.SalesChannel``: box office, phone), absent = online;
* the day of a sale: when the order was paid (``paidOn``), else when it was made (``createdOn``),
  as a local calendar day (``settings.TIME_ZONE``).

Where the grouping runs (``BOOKING_REPORTS_GROUP_ON_SERVER``): in MongoDB, two ``$group``
pipelines (``count_on_server``, the default: only the grouped rows travel), or in the app over one
indexed, projected ``find`` (``count_in_app``). Both answer the same rows (a test runs both on the
same sales).
"""

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, NotRequired, TypedDict

from bson import ObjectId
from django.conf import settings
from django.utils import timezone

from booking.core import mongo
from booking.core.domain import (
    COMPLIMENTARY_METHOD,
    DEFAULT_CHANNEL,
    ORDER_CHANNEL_FIELD,
    SEAT_OWNING_ORDER_STATES,
    Order,
    SalesChannel,
)
from booking.core.domain import sales_channel as channel_of

LINE_FIELDS = (
    "sessionId",
    "cat",
    "price",
    "discount",
    "vat",
    "ticketType",
    "ticketTypeName",
    "checkedIn.at",
    "topUpPart",
    "subscription",
)
SINGLE = "single"  # a ticket bought on its own
SUBSCRIPTION = "subscription"  # a ticket of a season subscription (sales/subscriptions.py): reported apart


def _part(order: Order, line: Mapping[str, Any]) -> int:
    """What of the line's price was taken in another channel (an exchange's top-up at the counter)."""
    if order.get("method") == COMPLIMENTARY_METHOD:
        return 0
    return int((line.get("topUpPart") or {}).get("amount", 0))


class GroupRow(TypedDict):
    cat: str
    type: str
    typeName: str | None
    vat: str | None
    channel: str
    tickets: int
    gross: int
    checkedIn: int
    product: NotRequired[str]  # SINGLE or SUBSCRIPTION (absent in a summary counted before: single)


class DayRow(TypedDict):
    day: str  # a local calendar day, ISO
    tickets: int
    gross: int


class RefundRow(TypedDict):
    vat: str | None
    channel: str
    tickets: int
    gross: int


class Tally(TypedDict):
    groups: list[GroupRow]
    days: list[DayRow]
    refunds: list[RefundRow]


def empty() -> Tally:
    return {"groups": [], "days": [], "refunds": []}


# --- in the app: one indexed find ---


def _line_gross(order: Order, line: Mapping[str, Any]) -> int:
    if order.get("method") == COMPLIMENTARY_METHOD:
        return 0  # given away: no money
    return int(line["price"]) - int(line.get("discount", 0))


def local_day(when: datetime) -> str:
    return timezone.localtime(when).date().isoformat()


class _Counter:
    """The rows of one session, added up one ticket at a time."""

    def __init__(self):
        self.groups: dict[tuple, GroupRow] = {}
        self.days: dict[str, DayRow] = {}
        self.refunds: dict[tuple, RefundRow] = {}

    def _row(self, line: Mapping[str, Any], channel: str) -> GroupRow:
        """The line's group row (made on first use), its ticket type's name kept as $max would."""
        kind = line.get("ticketType") or "full"
        product = SUBSCRIPTION if line.get("subscription") else SINGLE
        key = (line["cat"], kind, line.get("vat"), channel, product)
        row = self.groups.get(key)
        if row is None:
            row = self.groups[key] = GroupRow(
                cat=key[0],
                type=kind,
                typeName=None,
                vat=key[2],
                channel=channel,
                tickets=0,
                gross=0,
                checkedIn=0,
                product=product,
            )
        name = line.get("ticketTypeName")
        if name and (row["typeName"] is None or name > row["typeName"]):
            row["typeName"] = name
        return row

    def sold(self, line: Mapping[str, Any], channel: str, gross: int, day: str | None) -> None:
        row = self._row(line, channel)
        row["tickets"] += 1
        row["gross"] += gross
        row["checkedIn"] += 1 if (line.get("checkedIn") or {}).get("at") else 0
        if day is not None:
            per_day = self.days.setdefault(day, DayRow(day=day, tickets=0, gross=0))
            per_day["tickets"] += 1
            per_day["gross"] += gross

    def taken_elsewhere(self, line: Mapping[str, Any], channel: str, gross: int, day: str | None) -> None:
        """Money for a ticket taken in another channel than its order's (a top-up at the
        counter): counted there, with no ticket."""
        row = self._row(line, channel)
        row["gross"] += gross
        if day is not None:
            per_day = self.days.setdefault(day, DayRow(day=day, tickets=0, gross=0))
            per_day["gross"] += gross

    def refunded(self, line: Mapping[str, Any], channel: str, gross: int, tickets: int = 1) -> None:
        key = (line.get("vat"), channel)
        row = self.refunds.setdefault(key, RefundRow(vat=key[0], channel=channel, tickets=0, gross=0))
        row["tickets"] += tickets
        row["gross"] += gross

    def tally(self) -> Tally:
        return {
            "groups": list(self.groups.values()),
            "days": sorted(self.days.values(), key=lambda d: d["day"]),
            "refunds": list(self.refunds.values()),
        }


def count_in_app(session_ids: list[ObjectId]) -> dict[ObjectId, Tally]:
    """The rows of each session, from one find of their orders (both branches of its ``$or``
    indexed: ``lines.sessionId`` and ``refundedLines.sessionId``), projected to what the figures
    need and grouped here."""
    counters = {sid: _Counter() for sid in session_ids}
    in_scope = {"$in": session_ids}
    query = {"$or": [{"lines.sessionId": in_scope}, {"refundedLines.sessionId": in_scope}]}
    fields = {
        "state": 1,
        "method": 1,
        ORDER_CHANNEL_FIELD: 1,
        "paidOn": 1,
        "createdOn": 1,
        **{f"{part}.{name}": 1 for part in ("lines", "refundedLines") for name in LINE_FIELDS},
    }
    owning = {s.value for s in SEAT_OWNING_ORDER_STATES}
    for order in mongo.orders().find(query, fields).batch_size(2000):
        channel = channel_of(order)
        if order["state"] in owning:
            sold_on = order.get("paidOn") or order.get("createdOn")
            day = None if sold_on is None else local_day(sold_on)
            for line in order.get("lines", []):
                counter = counters.get(line["sessionId"])
                if counter is not None:
                    part = _part(order, line)
                    counter.sold(line, channel, _line_gross(order, line) - part, day)
                    if part:
                        counter.taken_elsewhere(line, line["topUpPart"]["channel"], part, day)
        for line in order.get("refundedLines", []):
            counter = counters.get(line["sessionId"])
            if counter is not None:
                part = _part(order, line)
                counter.refunded(line, channel, _line_gross(order, line) - part)
                if part:
                    counter.refunded(line, line["topUpPart"]["channel"], part, tickets=0)
    return {sid: counter.tally() for sid, counter in counters.items()}


# --- in MongoDB: two $group pipelines ---


def _given_away() -> dict:
    return {"$eq": ["$method", COMPLIMENTARY_METHOD]}


def _gross_expr(line: str) -> dict:
    """What the buyer paid for a line: its price less its promo share; nothing when given away."""
    paid = {"$subtract": [f"${line}.price", {"$ifNull": [f"${line}.discount", 0]}]}
    return {"$cond": [_given_away(), 0, paid]}


def _part_expr(line: str) -> dict:
    """``_part`` as an expression: the line's price taken in another channel."""
    return {"$cond": [_given_away(), 0, {"$ifNull": [f"${line}.topUpPart.amount", 0]}]}


def _own_gross_expr(line: str) -> dict:
    return {"$subtract": [_gross_expr(line), _part_expr(line)]}


def _channel_expr() -> dict:
    """``domain.sales_channel`` as an expression."""
    channel = {"$ifNull": [f"${ORDER_CHANNEL_FIELD}", DEFAULT_CHANNEL.value]}
    return {"$cond": [_given_away(), SalesChannel.COMPLIMENTARY.value, channel]}


def sales_pipeline(session_ids: list[ObjectId]) -> list[dict]:
    """Sold tickets of these sessions grouped by session, category, ticket type, VAT rate and
    channel, and by session and UTC hour of the sale (local days are made of hours in Python:
    MongoDB's ``timezone`` option is not in the dev stand-in). Led by the ``lines.sessionId``
    index."""
    in_scope = {"$in": session_ids}
    return [
        {"$match": {"lines.sessionId": in_scope, "state": {"$in": [s.value for s in SEAT_OWNING_ORDER_STATES]}}},
        {
            "$project": {
                "lines": 1,
                "method": 1,
                ORDER_CHANNEL_FIELD: 1,
                "soldOn": {"$ifNull": ["$paidOn", "$createdOn"]},
            }
        },
        {"$unwind": "$lines"},
        {"$match": {"lines.sessionId": in_scope}},
        {
            "$facet": {
                "groups": [
                    {
                        "$group": {
                            "_id": {
                                "s": "$lines.sessionId",
                                "cat": "$lines.cat",
                                "type": {"$ifNull": ["$lines.ticketType", "full"]},
                                "vat": "$lines.vat",
                                "channel": _channel_expr(),
                                "product": {"$cond": [{"$gt": ["$lines.subscription", None]}, SUBSCRIPTION, SINGLE]},
                            },
                            "typeName": {"$max": "$lines.ticketTypeName"},
                            "tickets": {"$sum": 1},
                            "gross": {"$sum": _own_gross_expr("lines")},
                            "checkedIn": {"$sum": {"$cond": [{"$gt": ["$lines.checkedIn.at", None]}, 1, 0]}},
                        }
                    }
                ],
                # the parts of prices taken in another channel (an exchange's top-up at the counter)
                "elsewhere": [
                    {"$match": {"lines.topUpPart.amount": {"$gt": 0}, "method": {"$ne": COMPLIMENTARY_METHOD}}},
                    {
                        "$group": {
                            "_id": {
                                "s": "$lines.sessionId",
                                "cat": "$lines.cat",
                                "type": {"$ifNull": ["$lines.ticketType", "full"]},
                                "vat": "$lines.vat",
                                "channel": "$lines.topUpPart.channel",
                                "product": {"$cond": [{"$gt": ["$lines.subscription", None]}, SUBSCRIPTION, SINGLE]},
                            },
                            "typeName": {"$max": "$lines.ticketTypeName"},
                            "gross": {"$sum": "$lines.topUpPart.amount"},
                        }
                    },
                ],
                "hours": [
                    {
                        "$group": {
                            "_id": {
                                "s": "$lines.sessionId",
                                "hour": {"$dateToString": {"format": "%Y-%m-%dT%H", "date": "$soldOn"}},
                            },
                            "tickets": {"$sum": 1},
                            "gross": {"$sum": _gross_expr("lines")},
                        }
                    }
                ],
            }
        },
    ]


def refunds_pipeline(session_ids: list[ObjectId]) -> list[dict]:
    """Refunded tickets of these sessions by session, VAT rate and channel (the sparse
    ``refundedLines.sessionId`` index)."""
    in_scope = {"$in": session_ids}
    return [
        {"$match": {"refundedLines.sessionId": in_scope}},
        {"$project": {"refundedLines": 1, "method": 1, ORDER_CHANNEL_FIELD: 1}},
        {"$unwind": "$refundedLines"},
        {"$match": {"refundedLines.sessionId": in_scope}},
        {
            "$facet": {
                "own": [
                    {
                        "$group": {
                            "_id": {
                                "s": "$refundedLines.sessionId",
                                "vat": "$refundedLines.vat",
                                "channel": _channel_expr(),
                            },
                            "tickets": {"$sum": 1},
                            "gross": {"$sum": _own_gross_expr("refundedLines")},
                        }
                    }
                ],
                "elsewhere": [
                    {
                        "$match": {
                            "refundedLines.topUpPart.amount": {"$gt": 0},
                            "method": {"$ne": COMPLIMENTARY_METHOD},
                        }
                    },
                    {
                        "$group": {
                            "_id": {
                                "s": "$refundedLines.sessionId",
                                "vat": "$refundedLines.vat",
                                "channel": "$refundedLines.topUpPart.channel",
                            },
                            "tickets": {"$sum": 0},
                            "gross": {"$sum": "$refundedLines.topUpPart.amount"},
                        }
                    },
                ],
            }
        },
    ]


def hour_day(hour_key: str) -> str:
    """ "2026-11-24T23" (a UTC hour) -> the local calendar day it falls on."""
    return local_day(datetime.strptime(hour_key, "%Y-%m-%dT%H").replace(tzinfo=UTC))


def count_on_server(session_ids: list[ObjectId]) -> dict[ObjectId, Tally]:
    """The same rows from the two aggregation pipelines (grouped by the database); the parts of
    prices taken in another channel are added to that channel's rows, as ``count_in_app`` does."""
    empty_result: dict = {"groups": [], "elsewhere": [], "hours": []}
    result: dict = next(mongo.orders().aggregate(sales_pipeline(session_ids)), empty_result)
    tallies = {sid: empty() for sid in session_ids}
    groups: dict[tuple, GroupRow] = {}
    for row in [*result["groups"], *result.get("elsewhere", [])]:
        key = row["_id"]
        channel = key.get("channel") or DEFAULT_CHANNEL.value
        kind = key.get("type") or "full"
        product = key.get("product") or SINGLE
        found = groups.get((key["s"], key.get("cat", ""), kind, key.get("vat"), channel, product))
        if found is None:
            found = groups[(key["s"], key.get("cat", ""), kind, key.get("vat"), channel, product)] = GroupRow(
                cat=key.get("cat", ""),
                type=kind,
                typeName=None,
                vat=key.get("vat"),
                channel=channel,
                tickets=0,
                gross=0,
                checkedIn=0,
                product=product,
            )
            tallies[key["s"]]["groups"].append(found)
        name = row.get("typeName")
        if name and (found["typeName"] is None or name > found["typeName"]):
            found["typeName"] = name
        found["tickets"] += row.get("tickets", 0)
        found["gross"] += row["gross"]
        found["checkedIn"] += row.get("checkedIn", 0)
    days: dict[ObjectId, dict[str, DayRow]] = {sid: {} for sid in session_ids}
    for row in result["hours"]:
        if not row["_id"].get("hour"):
            continue
        day = hour_day(row["_id"]["hour"])
        entry = days[row["_id"]["s"]].setdefault(day, DayRow(day=day, tickets=0, gross=0))
        entry["tickets"] += row["tickets"]
        entry["gross"] += row["gross"]
    for sid, by_day in days.items():
        tallies[sid]["days"] = sorted(by_day.values(), key=lambda d: d["day"])
    refunded: dict[tuple, RefundRow] = {}
    for parts in mongo.orders().aggregate(refunds_pipeline(session_ids)):
        for row in [*parts["own"], *parts["elsewhere"]]:
            key = row["_id"]
            channel = key.get("channel") or DEFAULT_CHANNEL.value
            back = refunded.get((key["s"], key.get("vat"), channel))
            if back is None:
                back = refunded[(key["s"], key.get("vat"), channel)] = RefundRow(
                    vat=key.get("vat"), channel=channel, tickets=0, gross=0
                )
                tallies[key["s"]]["refunds"].append(back)
            back["tickets"] += row["tickets"]
            back["gross"] += row["gross"]
    return tallies


def count(session_ids: list[ObjectId]) -> dict[ObjectId, Tally]:
    """The rows of each of these sessions, counted from their orders now."""
    if not session_ids:
        return {}
    if settings.BOOKING_REPORTS_GROUP_ON_SERVER:
        return count_on_server(session_ids)
    return count_in_app(session_ids)


def same(a: Tally, b: Tally) -> bool:
    """Whether two tallies hold the same rows (in any order)."""

    def rows(tally: Tally, part: str) -> list[tuple]:
        return sorted(tuple(sorted((k, str(v)) for k, v in row.items())) for row in tally[part])  # type: ignore[literal-required]

    return all(rows(a, part) == rows(b, part) for part in ("groups", "days", "refunds"))
