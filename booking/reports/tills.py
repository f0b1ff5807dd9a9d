"""Closing a till: at the end of the day each seller counts the cash in their drawer; the closing
records what should be there (their cash taken less the cash they handed back since their last
closing: booking/reports/takings.py), what was counted, and the difference. A closing is a
write-once document in ``till_closings``; the Z report of a seller's day and of the whole day
is made of them.

Exactly once: a till's closings are numbered ``seq`` 1, 2, 3... with a unique index on (till,
seq), and each covers ``[from, until)`` where ``from`` is the previous closing's ``until``. A
closing names the number it was shown: two closings racing (two screens, a double submit) insert
the same ``seq``, one insert wins, the other is refused (nothing written). So the windows of a
till never overlap (no sale counted twice) and never leave a gap (no sale lost); a sale after
``until`` goes into the next closing.

``until`` is ``BOOKING_TILL_SETTLE_SECONDS`` before the closing's moment: a sale whose write
began before that has landed by then (each is one update, far faster); its money then is in
this closing, and anything later in the next. Nothing ever updates or deletes a closing.
"""

import csv
import io
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from xml.sax.saxutils import escape

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext
from pymongo.errors import DuplicateKeyError
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from booking.core import clock, faults, mongo
from booking.core.errors import Conflict, InvalidRequest
from booking.payments.money import format_money
from booking.reports import takings

COUNTED_MAX = 10_000_000  # minor units: 100,000.00 in one drawer is a typing error
NOTE_MAX = 500


def closings():
    return mongo.till_closings()


@dataclass(frozen=True)
class OpenTill:
    """A till since its last closing: what should be in the drawer now."""

    till: str
    start: datetime | None  # the last closing's end (None: never closed)
    end: datetime
    cash_in: int
    cash_out: int  # handed back: positive
    moves: list[takings.Movement]
    seq: int  # the next closing's number

    @property
    def expected(self) -> int:
        return self.cash_in - self.cash_out


def last_closing(till: str) -> dict | None:
    return closings().find_one({"till": till}, sort=[("seq", -1)])


def open_till(till: str, now: datetime | None = None) -> OpenTill:
    """The seller's cash since their last closing, up to a moment safely past (the module's docstring)."""
    now = now or clock.now()
    last = last_closing(till)
    start = last["until"] if last else None
    end = now - timedelta(seconds=settings.BOOKING_TILL_SETTLE_SECONDS)
    first = start or datetime(2000, 1, 1, tzinfo=end.tzinfo)
    moves = [m for m in takings.movements(first, end, seller=till) if m.method == takings.CASH] if end > first else []
    cash_in = sum(m.amount for m in moves if m.amount > 0)
    cash_out = -sum(m.amount for m in moves if m.amount < 0)
    return OpenTill(till, start, max(end, first), cash_in, cash_out, moves, (last["seq"] if last else 0) + 1)


def close(*, till: str, seller: str, counted: int, seq: int, note: str = "", now: datetime | None = None) -> dict:
    """The till closed: its expected cash, the counted amount and the difference, written once.
    ``seq``: the number of the closing the seller was shown (``OpenTill.seq``); when the till was
    closed since (another closing won the race, or a double submit), a Conflict, nothing written."""
    if not till:
        raise InvalidRequest(gettext("No till to close."))
    if isinstance(counted, bool) or not isinstance(counted, int) or not 0 <= counted <= COUNTED_MAX:
        message = gettext("Please give the counted cash as an amount from 0 to %(max)s.") % {
            "max": format_money(COUNTED_MAX)
        }
        raise InvalidRequest(message, fields={"counted": message})
    note = " ".join(str(note or "").split())
    if len(note) > NOTE_MAX:
        message = gettext("Please use at most %(max)d characters.") % {"max": NOTE_MAX}
        raise InvalidRequest(message, fields={"note": message})
    state = open_till(till, now)
    if state.seq != seq:
        raise Conflict(gettext("This till was closed meanwhile; look at it again."))
    faults.point("till.before_write")  # tests: another closing of this till between the read and the write
    closing = {
        "_id": f"{till}:{state.seq}",
        "till": till,
        "seller": seller,
        "seq": state.seq,
        "from": state.start,
        "until": state.end,
        "day": timezone.localtime(state.end).date().isoformat(),
        "cashIn": state.cash_in,
        "cashOut": state.cash_out,
        "expected": state.expected,
        "counted": counted,
        "difference": counted - state.expected,
        "note": note,
        "moves": [
            {"at": m.at, "kind": m.kind, "ref": m.ref, "amount": m.amount, "orderId": m.order_id} for m in state.moves
        ],
        "currency": settings.BOOKING_CURRENCY,
        "createdOn": clock.now(),
    }
    try:
        closings().insert_one(closing)
    except DuplicateKeyError:
        raise Conflict(gettext("This till was closed meanwhile; look at it again.")) from None
    return closing


def get(closing_id: str) -> dict | None:
    return closings().find_one({"_id": closing_id})


def of_day(day: date, till: str | None = None) -> list[dict]:
    """The closings made on a local day (one seller's, or every seller's), in order."""
    query: dict = {"day": day.isoformat(), **({"till": till} if till else {})}
    return list(closings().find(query).sort([("till", 1), ("seq", 1)]))


# --- the Z report: a day's closings ---


def _when(value) -> str:
    return timezone.localtime(value).strftime("%d.%m.%Y %H:%M") if value else "–"


def z_rows(found: list[dict]) -> list[list]:
    """One row per closing, then the day's sums (money as printed, in the active language)."""
    header = [
        gettext("Seller"),
        gettext("Closing"),
        gettext("From"),
        gettext("Until"),
        gettext("Cash taken"),
        gettext("Cash paid out"),
        gettext("Expected"),
        gettext("Counted"),
        gettext("Difference"),
    ]
    rows: list[list] = [header]
    sums = dict.fromkeys(("cashIn", "cashOut", "expected", "counted", "difference"), 0)
    for c in found:
        rows.append(
            [
                c["seller"] or c["till"],
                str(c["seq"]),
                _when(c["from"]),
                _when(c["until"]),
                *[format_money(c[key]) for key in sums],
            ]
        )
        for key in sums:
            sums[key] += c[key]
    rows.append([gettext("Total"), "", "", "", *[format_money(v) for v in sums.values()]])
    return rows


def z_csv(found: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerows(z_rows(found))
    for c in found:  # each closing's movements: what the sums are made of
        writer.writerow([])
        writer.writerow([gettext("Closing"), c["seller"] or c["till"], c["seq"]])
        for m in c["moves"]:
            writer.writerow(
                [
                    timezone.localtime(m["at"]).strftime("%Y-%m-%d %H:%M:%S"),
                    m["ref"],
                    m["kind"],
                    format_money(m["amount"]),
                ]
            )
    return out.getvalue()


def z_pdf(found: list[dict], *, title: str) -> bytes:
    styles = getSampleStyleSheet()
    out = io.BytesIO()
    doc = SimpleDocTemplate(out, pagesize=A4, leftMargin=12 * mm, rightMargin=12 * mm, title=title)
    story: list = [Paragraph(escape(title), styles["Title"]), Spacer(1, 4 * mm)]
    body = styles["BodyText"].clone("z", fontSize=7.5, leading=9)
    table_rows = [[Paragraph(escape(str(cell)), body) for cell in row] for row in z_rows(found)]
    table = Table(table_rows, repeatRows=1)
    table.setStyle(
        TableStyle(
            [
                ("LINEBELOW", (0, 0), (-1, 0), 0.6, colors.black),
                ("LINEABOVE", (0, -1), (-1, -1), 0.6, colors.black),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]
        )
    )
    story.append(table)
    for c in found:
        if c.get("note"):
            story.append(Paragraph(escape(f"{c['seller']} {c['seq']}: {c['note']}"), body))
    story.append(Spacer(1, 4 * mm))
    story.append(
        Paragraph(
            escape(gettext("Closings are written once and never changed; later sales go into the next closing.")),
            body,
        )
    )
    doc.build(story)
    return out.getvalue()
