"""The report figures, added up from per-session summaries of the orders (docs/architecture.md,
"Reports and exports").

Each session's rows (``tally.Tally``: sold tickets by category, ticket type, VAT rate and
channel; per day; refunds) are what its orders say, counted by booking/reports/tally.py and stored
per session by booking/reports/summaries.py (a materialized view, recounted when a write marks
the session's orders). A report adds up the rows of its sessions: a series of 50 sessions reads 50
small documents, not 25,000 orders. The seat counts (sold, held, blocked, free) are read live from
the sessions' grids.

Amounts are integer minor units, prices include VAT. Net and VAT of a group (a category, a
ticket type, a channel, a session) follow the receipts' rule (``payments.money``): per VAT rate,
the gross is summed and net = gross * 100 / (100 + rate) rounded half up; so the nets of the rows
may differ from the total's by a cent of rounding. What counts: tally.py.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from bson import ObjectId
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from booking.core import mongo
from booking.core.domain import (
    COMPLIMENTARY_METHOD,
    DEFAULT_CHANNEL,
    ORDER_CHANNEL_FIELD,
    SEAT_OWNING_ORDER_STATES,
    SalesChannel,
    Session,
    sales_channel,
)
from booking.core.errors import NotFound
from booking.core.localized import ticket_type_name
from booking.payments import money
from booking.reports import summaries, tally
from booking.sales.selectors import session_counts

SERIES_LIMIT = 400  # sessions in one series report (a season of one show in one hall is fewer)
CHART_MAX_DAYS = 400  # days without sales are filled in up to this span

CHANNEL_LABELS = {
    SalesChannel.ONLINE: _("Online"),
    SalesChannel.BOX_OFFICE: _("Box office"),
    SalesChannel.PHONE: _("Phone"),
    SalesChannel.COMPLIMENTARY: _("Complimentary"),
}

SESSION_FIELDS = {
    "name": 1,
    "start": 1,
    "end": 1,
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
    behind: bool = False  # its sales figures are as of its last count (Report.as_of), changed since


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
    by_product: list[Figures]  # single tickets and subscriptions' tickets, apart
    refunds: Figures  # tickets and gross refunded (net/VAT at the tickets' rates)
    refunds_by_channel: list[Figures]
    days: list[Day]
    truncated: bool = False  # a series longer than SERIES_LIMIT
    as_of: datetime | None = None  # the oldest count the sales figures rest on
    behind: int = 0  # sessions shown as of an older count (changed since; the worker recounts them)


# --- scope: which sessions ---


def _session(session_id: ObjectId) -> Session:
    session = mongo.sessions().find_one({"_id": session_id}, SESSION_FIELDS)
    if session is None:
        raise NotFound(gettext("No such session."))
    return session


def series_sessions(session_id: ObjectId) -> tuple[list[Session], bool]:
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


# --- building a report ---


def _rate(value) -> str:
    return money.rate_text(value if value not in (None, "") else settings.BOOKING_VAT_RATE)


def _product(code: str | None) -> Figures:
    if code == tally.SUBSCRIPTION:
        return Figures(tally.SUBSCRIPTION, str(_("Subscriptions")))
    return Figures(tally.SINGLE, str(_("Single tickets")))


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


def _days(rows: list[tally.DayRow]) -> list[Day]:
    """Sales per local day, the days between without sales filled in (up to CHART_MAX_DAYS)."""
    by_day: dict[date, Day] = {}
    for row in rows:
        day = date.fromisoformat(row["day"])
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


def read_tallies(sessions: list[Session], kind: str) -> summaries.Read:
    """The sessions' rows from their summaries (``source`` "summaries", what the pages use), or
    counted from the orders now (``BOOKING_REPORTS_SOURCE`` "orders": the figures the summaries
    must equal; tests and a check)."""
    if settings.BOOKING_REPORTS_SOURCE == "orders":
        return summaries.Read(tallies=tally.count([s["_id"] for s in sessions]), as_of=timezone.now())
    # one session's report is always counted up to now; a series recounts a few changed sessions
    limit = (
        max(1, settings.BOOKING_REPORTS_RECOUNT_ON_READ)
        if kind == "session"
        else settings.BOOKING_REPORTS_RECOUNT_ON_READ
    )
    return summaries.read(sessions, recount_limit=limit)


def build(kind: str, session_id: ObjectId) -> Report:
    """The report of one session (``kind`` "session") or of its series ("series")."""
    if kind == "series":
        sessions, truncated = series_sessions(session_id)
    else:
        sessions, truncated = [_session(session_id)], False
    categories: dict[str, str] = {}
    for s in sessions:
        for category in (s.get("layout") or {}).get("categories", []):
            categories.setdefault(category["code"], category["name"])

    per_session = {s["_id"]: Figures(str(s["_id"]), s.get("name", "")) for s in sessions}
    totals = Figures("total", str(_("Total")))
    by_category: dict[str, Figures] = {}
    by_type: dict[str, Figures] = {}
    by_channel: dict[str, Figures] = {}
    by_product: dict[str, Figures] = {}
    refunds = Figures("refunds", str(_("Refunded")))
    refunds_by_channel: dict[str, Figures] = {}
    refunded_per_session: dict[ObjectId, Figures] = defaultdict(lambda: Figures("", ""))
    day_rows: list[tally.DayRow] = []
    type_names: dict[str, str] = {}
    read = read_tallies(sessions, kind)
    for sid, rows in read.tallies.items():
        for row in rows["groups"]:
            rate, tickets, gross, checked = _rate(row["vat"]), row["tickets"], row["gross"], row["checkedIn"]
            cat, kind_code = row["cat"], row["type"] or "full"
            channel = row["channel"] or DEFAULT_CHANNEL.value
            targets = [
                totals,
                per_session[sid],
                by_category.setdefault(cat, Figures(cat, categories.get(cat, cat))),
                by_type.setdefault(kind_code, Figures(kind_code, kind_code)),
                by_channel.setdefault(channel, Figures(channel, channel_label(channel))),
                by_product.setdefault(row.get("product") or tally.SINGLE, _product(row.get("product"))),
            ]
            for target in targets:
                target.add(tickets, gross, rate, checked)
            if row["typeName"]:  # the name it was sold under (the greatest, if it was renamed)
                type_names[kind_code] = max(row["typeName"], type_names.get(kind_code, ""))
        for refund in rows["refunds"]:
            channel = refund["channel"] or DEFAULT_CHANNEL.value
            for target in (
                refunds,
                refunds_by_channel.setdefault(channel, Figures(channel, channel_label(channel))),
                refunded_per_session[sid],
            ):
                target.add(refund["tickets"], refund["gross"], _rate(refund["vat"]))
        day_rows += rows["days"]
    for code, name in type_names.items():
        by_type[code].label = ticket_type_name({"code": code, "name": name})  # "Full price" in the reader's language

    seat_keys = ("sold", "held", "blocked", "free", "total")
    seats = dict.fromkeys(seat_keys, 0)
    behind = set(read.behind)
    rows_out = []
    for s in sessions:
        counts = session_counts(s)
        for k in seat_keys:
            seats[k] += counts[k]
        refunded = refunded_per_session.get(s["_id"]) or Figures("", "")
        rows_out.append(
            SessionFigures(
                id=str(s["_id"]),
                name=s.get("name", ""),
                start=s["start"],
                theater=s.get("theaterName", ""),
                section=s["section"]["name"] if s.get("section") else "",
                status=s.get("status", ""),
                seats=counts,
                sales=per_session[s["_id"]].settle(),
                refunded_tickets=refunded.tickets,
                refunded_gross=refunded.gross,
                behind=s["_id"] in behind,
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
        sessions=rows_out,
        seats=seats,
        totals=totals.settle(),
        by_category=_sorted(by_category, order=list(categories)),
        by_type=_sorted(by_type),
        by_channel=_sorted(by_channel, order=channel_order),
        by_product=_sorted(by_product, order=[tally.SINGLE, tally.SUBSCRIPTION]),
        refunds=refunds.settle(),
        refunds_by_channel=_sorted(refunds_by_channel, order=channel_order),
        days=_days(day_rows),
        truncated=truncated,
        as_of=read.as_of,
        behind=len(read.behind),
    )


# --- the attendee list ---


def _seat_order(key: str) -> tuple[int, int]:
    row, col = key.split(":")
    return int(row), int(col)


def attendees(session_id: ObjectId) -> tuple[Session, list[dict]]:
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
                    "comp": order.get("method") == COMPLIMENTARY_METHOD,  # given away: the list says so
                    "checkedInAt": checked.get("at"),
                    "door": checked.get("door", ""),
                }
            )
    people.sort(key=lambda p: _seat_order(p["key"]))
    return session, people
