"""The report figures, read from the orders by aggregation (docs/architecture.md, "Reports").

Why aggregation and not counters kept with the writes: the figures then are, by construction, what
the orders say (a paid ticket, a refund, a check-in, a counter sale, an exchange: whatever wrote
the order), no write path (checkout, payments, refunds, check-in, the counter, exchanges) has to
remember a second write, and no crash between the two can leave a counter wrong. The price is
that a report reads the orders of the sessions it covers; the ``lines.sessionId`` index bounds
that to those orders (about 500 per session at 1,000 sessions and 500,000 orders), never the
whole collection. bench/reports.py measures it.

Where the grouping runs (``BOOKING_REPORTS_GROUP_ON_SERVER``): in MongoDB, two ``$group``
pipelines (``read_on_server``: only the grouped rows travel), or in the app over one indexed,
projected ``find`` (``read_in_app``, the default). Both answer the same rows (a test runs both on
the same sales). The app is the default because the dev stand-in runs ``$unwind``/``$group``
through mongomock at about 1 ms per ticket (2 s for one session of 500 orders), while its
``find`` takes 30 ms; on a real MongoDB the server grouping is the better choice for long series.

Amounts are integer minor units, prices include VAT. Net and VAT of a group (a category, a
ticket type, a channel, a session) follow the receipts' rule (``payments.money``): per VAT rate,
the gross is summed and net = gross * 100 / (100 + rate) rounded half up; so the nets of the rows
may differ from the total's by a cent of rounding.

What counts:

* sold tickets and revenue: the lines still in ``lines`` of paid and partly refunded orders
  (``SEAT_OWNING_ORDER_STATES``), at what the buyer paid (``price`` less a promo code's
  ``discount``); the booking fee is per order, not per seat, and not in these figures;
* refunds: the tickets in ``refundedLines`` (any order state) and their amounts;
* check-ins: sold tickets with ``checkedIn``;
* the sales channel: ``domain.sales_channel``: complimentary when the order's ``method`` is
  (staff gave the tickets away: counted as tickets, at no revenue), else the order's ``channel``
  (``domain.SalesChannel``: box office, phone), absent = online;
* the day of a sale: when the order was paid (``paidOn``), else when it was made (``createdOn``),
  as a local calendar day.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from bson import ObjectId
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .. import mongo
from ..domain import (
    COMPLIMENTARY_METHOD,
    DEFAULT_CHANNEL,
    ORDER_CHANNEL_FIELD,
    SEAT_OWNING_ORDER_STATES,
    SalesChannel,
    sales_channel,
)
from ..errors import NotFound
from ..payments import money
from ..staff.selectors import session_counts

SERIES_LIMIT = 400  # sessions in one series report (a season of one show in one hall is fewer)
CHART_MAX_DAYS = 400  # days without sales are filled in up to this span

CHANNEL_LABELS = {
    SalesChannel.ONLINE: _("Online"),
    SalesChannel.BOX_OFFICE: _("Box office"),
    SalesChannel.PHONE: _("Phone"),
    SalesChannel.COMPLIMENTARY: _("Complimentary"),
}

LINE_FIELDS = ("sessionId", "cat", "price", "discount", "vat", "ticketType", "ticketTypeName", "checkedIn.at")
SESSION_FIELDS = {
    "name": 1,
    "start": 1,
    "theaterId": 1,
    "theaterName": 1,
    "status": 1,
    "currency": 1,
    "seats": 1,
    "seatSummary": 1,
    "layout.categories": 1,
    "section": 1,
    "performanceId": 1,
}


# --- what a report holds ---


@dataclass
class Figures:
    """One row of a breakdown: tickets, money (gross, net, VAT) and check-ins."""

    key: str
    label: str
    tickets: int = 0
    gross: int = 0
    net: int = 0
    vat: int = 0
    checked_in: int = 0
    by_rate: dict = field(default_factory=dict, repr=False)  # VAT rate -> gross (to compute net/VAT)

    def add(self, tickets: int, gross: int, rate: str, checked_in: int = 0) -> None:
        self.tickets += tickets
        self.gross += gross
        self.checked_in += checked_in
        self.by_rate[rate] = self.by_rate.get(rate, 0) + gross

    def settle(self) -> "Figures":
        """Net and VAT from the gross per rate (the receipts' rule)."""
        lines = money.breakdown((gross, rate) for rate, gross in self.by_rate.items())
        self.net = sum(line.net for line in lines)
        self.vat = sum(line.vat for line in lines)
        return self


@dataclass
class SessionFigures:
    id: str
    name: str
    start: datetime
    theater: str
    section: str
    status: str
    seats: dict  # sold, held, blocked, free, total, occupancy (the session's grid)
    sales: Figures
    refunded_tickets: int = 0
    refunded_gross: int = 0


@dataclass
class Day:
    day: date
    tickets: int = 0
    gross: int = 0


@dataclass
class Report:
    kind: str  # "session" or "series"
    scope_id: str  # the session the report was asked for
    title: str
    theater: str
    currency: str
    sessions: list[SessionFigures]
    seats: dict
    totals: Figures
    by_category: list[Figures]
    by_type: list[Figures]
    by_channel: list[Figures]
    refunds: Figures  # tickets and gross refunded (net/VAT at the tickets' rates)
    refunds_by_channel: list[Figures]
    days: list[Day]
    truncated: bool = False  # a series longer than SERIES_LIMIT


# --- scope: which sessions ---


def _session(session_id: ObjectId) -> dict:
    session = mongo.sessions().find_one({"_id": session_id}, SESSION_FIELDS)
    if session is None:
        raise NotFound("No such session.")
    return session


def series_sessions(session_id: ObjectId) -> tuple[list[dict], bool]:
    """The sessions of the same show (same name) in the same theater as this one, past and
    upcoming, by start (the theaterId+start+_id index; the name is checked on those). A sectioned
    performance's sections are among them. (sessions, truncated)."""
    first = _session(session_id)
    found = list(
        mongo.sessions()
        .find({"theaterId": first["theaterId"], "name": first["name"]}, SESSION_FIELDS)
        .sort([("start", 1), ("_id", 1)])
        .limit(SERIES_LIMIT + 1)
    )
    return found[:SERIES_LIMIT], len(found) > SERIES_LIMIT


# --- the aggregations ---


def _given_away() -> dict:
    return {"$eq": ["$method", COMPLIMENTARY_METHOD]}


def _gross_expr(line: str) -> dict:
    """What the buyer paid for a line: its price less its promo share; nothing when given away."""
    paid = {"$subtract": [f"${line}.price", {"$ifNull": [f"${line}.discount", 0]}]}
    return {"$cond": [_given_away(), 0, paid]}


def _channel_expr() -> dict:
    """``domain.sales_channel`` as an expression."""
    channel = {"$ifNull": [f"${ORDER_CHANNEL_FIELD}", DEFAULT_CHANNEL.value]}
    return {"$cond": [_given_away(), SalesChannel.COMPLIMENTARY.value, channel]}


def sales_pipeline(session_ids: list[ObjectId]) -> list[dict]:
    """Sold tickets of these sessions grouped by session, category, ticket type, VAT rate and
    channel, and by the UTC hour of the sale (local days are made of hours in Python: MongoDB's
    ``timezone`` option is not in the dev stand-in). Led by the ``lines.sessionId`` index."""
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
                            },
                            "typeName": {"$max": "$lines.ticketTypeName"},
                            "tickets": {"$sum": 1},
                            "gross": {"$sum": _gross_expr("lines")},
                            "checkedIn": {"$sum": {"$cond": [{"$gt": ["$lines.checkedIn.at", None]}, 1, 0]}},
                        }
                    }
                ],
                "hours": [
                    {
                        "$group": {
                            "_id": {"$dateToString": {"format": "%Y-%m-%dT%H", "date": "$soldOn"}},
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
            "$group": {
                "_id": {"s": "$refundedLines.sessionId", "vat": "$refundedLines.vat", "channel": _channel_expr()},
                "tickets": {"$sum": 1},
                "gross": {"$sum": _gross_expr("refundedLines")},
            }
        },
    ]


def _line_gross(order: dict, line: dict) -> int:
    if order.get("method") == COMPLIMENTARY_METHOD:
        return 0  # given away: no money
    return int(line["price"]) - int(line.get("discount", 0))


def _hour_key(when: datetime | None) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H") if when is not None else ""


def read_in_app(session_ids: list[ObjectId]) -> tuple[list[dict], list[dict], list[dict]]:
    """The rows the two pipelines answer (sales groups, sales per UTC hour, refund groups), from
    one find of these sessions' orders (both branches of its ``$or`` indexed: ``lines.sessionId``
    and ``refundedLines.sessionId``), projected to what the figures need and grouped here."""
    wanted = set(session_ids)
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
    groups: dict[tuple, dict] = {}
    hours: dict[str, dict] = {}
    refunded: dict[tuple, dict] = {}
    for order in mongo.orders().find(query, fields).batch_size(2000):
        channel = sales_channel(order)
        if order["state"] in owning:
            hour = _hour_key(order.get("paidOn") or order.get("createdOn"))
            for line in order.get("lines", []):
                if line["sessionId"] not in wanted:
                    continue
                kind = line.get("ticketType") or "full"
                key = (line["sessionId"], line["cat"], kind, line.get("vat"), channel)
                row = groups.setdefault(
                    key,
                    {
                        "_id": {"s": key[0], "cat": key[1], "type": kind, "vat": key[3], "channel": channel},
                        "typeName": None,
                        "tickets": 0,
                        "gross": 0,
                        "checkedIn": 0,
                    },
                )
                row["typeName"] = max(filter(None, (row["typeName"], line.get("ticketTypeName"))), default=None)
                row["tickets"] += 1
                row["gross"] += _line_gross(order, line)
                row["checkedIn"] += 1 if (line.get("checkedIn") or {}).get("at") else 0
                per_hour = hours.setdefault(hour, {"_id": hour, "tickets": 0, "gross": 0})
                per_hour["tickets"] += 1
                per_hour["gross"] += _line_gross(order, line)
        for line in order.get("refundedLines", []):
            if line["sessionId"] not in wanted:
                continue
            back = (line["sessionId"], line.get("vat"), channel)
            row = refunded.setdefault(
                back, {"_id": {"s": back[0], "vat": back[1], "channel": channel}, "tickets": 0, "gross": 0}
            )
            row["tickets"] += 1
            row["gross"] += _line_gross(order, line)
    return list(groups.values()), list(hours.values()), list(refunded.values())


def read_on_server(session_ids: list[ObjectId]) -> tuple[list[dict], list[dict], list[dict]]:
    """The same rows from the two aggregation pipelines (grouped by the database)."""
    result: dict = next(mongo.orders().aggregate(sales_pipeline(session_ids)), {"groups": [], "hours": []})
    return result["groups"], result["hours"], list(mongo.orders().aggregate(refunds_pipeline(session_ids)))


def read_rows(session_ids: list[ObjectId]) -> tuple[list[dict], list[dict], list[dict]]:
    if settings.BOOKING_REPORTS_GROUP_ON_SERVER:
        return read_on_server(session_ids)
    return read_in_app(session_ids)


# --- building a report ---


def _rate(value) -> str:
    return money.rate_text(value if value not in (None, "") else settings.BOOKING_VAT_RATE)


def channel_label(code) -> str:
    try:
        return str(CHANNEL_LABELS[SalesChannel(code)])
    except ValueError:
        return str(code)


def _sorted(rows: dict, order=None) -> list[Figures]:
    figures = [row.settle() for row in rows.values()]
    if order is not None:
        rank = {key: i for i, key in enumerate(order)}
        return sorted(figures, key=lambda f: (rank.get(f.key, len(rank)), f.label))
    return sorted(figures, key=lambda f: (-f.tickets, f.label))


def local_day(hour_key: str) -> date:
    """ "2026-11-24T23" (UTC) -> the local calendar day it falls on."""
    utc = datetime.strptime(hour_key, "%Y-%m-%dT%H").replace(tzinfo=UTC)
    return timezone.localtime(utc).date()


def _days(hours: list[dict]) -> list[Day]:
    by_day: dict[date, Day] = {}
    for row in hours:
        if not row["_id"]:
            continue
        day = local_day(row["_id"])
        entry = by_day.setdefault(day, Day(day))
        entry.tickets += row["tickets"]
        entry.gross += row["gross"]
    if not by_day:
        return []
    first, last = min(by_day), max(by_day)
    if (last - first).days <= CHART_MAX_DAYS:
        for n in range((last - first).days + 1):
            day = first + timedelta(days=n)
            by_day.setdefault(day, Day(day))
    return [by_day[d] for d in sorted(by_day)]


def build(kind: str, session_id: ObjectId) -> Report:
    """The report of one session (``kind`` "session") or of its series ("series")."""
    if kind == "series":
        sessions, truncated = series_sessions(session_id)
    else:
        sessions, truncated = [_session(session_id)], False
    ids = [s["_id"] for s in sessions]
    categories: dict[str, str] = {}
    for s in sessions:
        for category in (s.get("layout") or {}).get("categories", []):
            categories.setdefault(category["code"], category["name"])

    per_session = {s["_id"]: Figures(str(s["_id"]), s.get("name", "")) for s in sessions}
    totals = Figures("total", str(_("Total")))
    by_category: dict[str, Figures] = {}
    by_type: dict[str, Figures] = {}
    by_channel: dict[str, Figures] = {}
    groups, hours, refund_rows = read_rows(ids)
    for row in groups:
        key = row["_id"]
        rate, tickets, gross, checked = _rate(key.get("vat")), row["tickets"], row["gross"], row["checkedIn"]
        cat, kind_code = key.get("cat", ""), key.get("type") or "full"
        channel = key.get("channel") or DEFAULT_CHANNEL.value
        targets = [
            totals,
            per_session.setdefault(key["s"], Figures(str(key["s"]), "")),
            by_category.setdefault(cat, Figures(cat, categories.get(cat, cat))),
            by_type.setdefault(kind_code, Figures(kind_code, row.get("typeName") or kind_code)),
            by_channel.setdefault(channel, Figures(channel, channel_label(channel))),
        ]
        for target in targets:
            target.add(tickets, gross, rate, checked)

    refunds = Figures("refunds", str(_("Refunded")))
    refunds_by_channel: dict[str, Figures] = {}
    refunded_per_session: dict[ObjectId, Figures] = defaultdict(lambda: Figures("", ""))
    for row in refund_rows:
        key = row["_id"]
        rate = _rate(key.get("vat"))
        channel = key.get("channel") or DEFAULT_CHANNEL.value
        for target in (
            refunds,
            refunds_by_channel.setdefault(channel, Figures(channel, channel_label(channel))),
            refunded_per_session[key["s"]],
        ):
            target.add(row["tickets"], row["gross"], rate)

    seat_keys = ("sold", "held", "blocked", "free", "total")
    seats = dict.fromkeys(seat_keys, 0)
    rows = []
    for s in sessions:
        counts = session_counts(s)
        for k in seat_keys:
            seats[k] += counts[k]
        refunded = refunded_per_session.get(s["_id"]) or Figures("", "")
        rows.append(
            SessionFigures(
                id=str(s["_id"]),
                name=s.get("name", ""),
                start=s["start"],
                theater=s.get("theaterName", ""),
                section=(s.get("section") or {}).get("name", ""),
                status=s.get("status", ""),
                seats=counts,
                sales=per_session[s["_id"]].settle(),
                refunded_tickets=refunded.tickets,
                refunded_gross=refunded.gross,
            )
        )
    seats["occupancy"] = round(100 * seats["sold"] / seats["total"]) if seats["total"] else 0
    first = sessions[0]
    channel_order = [c.value for c in SalesChannel]
    return Report(
        kind=kind,
        scope_id=str(session_id),
        title=first.get("name", ""),
        theater=first.get("theaterName", ""),
        currency=first.get("currency") or settings.BOOKING_CURRENCY,
        sessions=rows,
        seats=seats,
        totals=totals.settle(),
        by_category=_sorted(by_category, order=list(categories)),
        by_type=_sorted(by_type),
        by_channel=_sorted(by_channel, order=channel_order),
        refunds=refunds.settle(),
        refunds_by_channel=_sorted(refunds_by_channel, order=channel_order),
        days=_days(hours),
        truncated=truncated,
    )


# --- the attendee list ---


def _seat_order(key: str) -> tuple[int, int]:
    row, col = key.split(":")
    return int(row), int(col)


def attendees(session_id: ObjectId) -> tuple[dict, list[dict]]:
    """The session and who sits where: one entry per sold ticket (seat, name, category, ticket
    type, booking reference, check-in), in seat order (rows from the stage back)."""
    session = _session(session_id)
    categories = {c["code"]: c["name"] for c in (session.get("layout") or {}).get("categories", [])}
    query = {"lines.sessionId": session_id, "state": {"$in": [s.value for s in SEAT_OWNING_ORDER_STATES]}}
    fields = {"ref": 1, "name": 1, "lines": 1, "method": 1, ORDER_CHANNEL_FIELD: 1}
    people = []
    for order in mongo.orders().find(query, fields).batch_size(1000):
        for line in order["lines"]:
            if line["sessionId"] != session_id:
                continue
            checked = line.get("checkedIn") or {}
            people.append(
                {
                    "key": line["key"],
                    "row": line["row"],
                    "seat": line["seat"],
                    "category": categories.get(line["cat"], line["cat"]),
                    "type": line.get("ticketTypeName") or line.get("ticketType") or "",
                    "name": order.get("name", ""),
                    "ref": order["ref"],
                    "channel": sales_channel(order),
                    "checkedInAt": checked.get("at"),
                    "door": checked.get("door", ""),
                }
            )
    people.sort(key=lambda p: _seat_order(p["key"]))
    return session, people
