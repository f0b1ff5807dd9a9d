"""Closing a till: at the end of the day each seller counts the cash in their drawer; the closing
records what should be there (their cash taken less the cash they handed back since their last
closing: booking/reports/takings.py), what was counted, and the difference. A closing is a
write-once document in ``till_closings``; the Z report of a seller's day and of the whole day
is made of them.

Exactly once, by a marker on each sale: every cash movement (the order's ``paidWith``, a
``topUps`` entry, a ``refunds`` entry, a gift voucher sold at the counter) is stamped
``tillClosing: <closing id>`` by a conditional update (only if it has no stamp yet), and a
closing's sums are made of the movements stamped with its id. A sale racing a closing is
therefore stamped by it or left for the next one: never both, never neither, however late its
write lands. Steps, each safe to repeat:

1. the closing is inserted, ``claiming``, numbered ``seq`` (1, 2, 3... per till, unique): two
   closings racing (two screens, a double submit) insert the same ``seq``; one wins, the other is
   refused before it stamped anything;
2. each unstamped cash movement of the seller up to the closing's moment is stamped with its id;
3. its sums are written from the stamped movements, and ``claiming`` cleared.

A crash inside 2 or 3 is finished by the till's next closing (first thing) or by reconcile
(:func:`finish_all`), stamping what it had not yet. The search for unstamped movements starts
``LOOKBACK`` before the previous closing's moment (a till's first closing: ``takings.MAX_DAYS``
back): a sale's timestamp is taken before its write,
so one landing just after a closing is found by the next; the stamp, not the time, decides.
Closings made before the stamps existed cover ``[from, until)``: the next one starts at their
``until``. Nothing updates or deletes a finished closing.
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
# How far before the previous closing the search for unstamped sales starts: far longer than any
# write takes to land after its timestamp was taken (the stamp keeps a sale from counting twice).
LOOKBACK = timedelta(hours=1)
STAMP = "tillClosing"


def closings():
    return mongo.till_closings()


@dataclass(frozen=True)
class OpenTill:
    """A till since its last closing: what should be in the drawer now."""

    till: str
    start: datetime | None  # the last closing's moment (None: never closed)
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


def _search_from(last: dict | None, end: datetime) -> datetime:
    if last is None:  # a till's first closing counts its cash of the longest report range at most
        return end - timedelta(days=takings.MAX_DAYS)
    if not last.get("stamped"):  # made before the stamps: it covered up to its ``until``
        return last["until"]
    return last["until"] - LOOKBACK


def _cash(till: str, start: datetime, end: datetime) -> list[takings.Movement]:
    if end <= start:
        return []
    return [m for m in takings.movements(start, end, seller=till) if m.method == takings.CASH]


def _sums(moves: list[takings.Movement]) -> tuple[int, int]:
    return sum(m.amount for m in moves if m.amount > 0), -sum(m.amount for m in moves if m.amount < 0)


def open_till(till: str, now: datetime | None = None) -> OpenTill:
    """The seller's cash not yet counted by a closing: every unstamped cash movement until now."""
    now = now or clock.now()
    last = last_closing(till)
    moves = [m for m in _cash(till, _search_from(last, now), now + timedelta(milliseconds=1)) if not m.closing]
    cash_in, cash_out = _sums(moves)
    start = last["until"] if last else None
    return OpenTill(till, start, now, cash_in, cash_out, moves, (last["seq"] if last else 0) + 1)


def _stamp(move: takings.Movement, closing_id: str) -> bool:
    """The movement counted by this closing, unless another closing has it already."""
    if move.part == takings.VOUCHERS:  # a gift voucher sold at the counter: its own document
        done = mongo.vouchers().update_one(
            {"_id": move.order_id, STAMP: {"$exists": False}}, {"$set": {STAMP: closing_id}}
        )
        return bool(done.modified_count)
    which: dict = {"_id": move.order_id, "ref": move.ref}
    if move.part == takings.PAID_WITH:
        which |= {"paidWith.id": move.part_id, f"paidWith.{STAMP}": {"$exists": False}}
        path = f"paidWith.{STAMP}"
    else:
        key = "id" if move.part == takings.TOP_UPS else "_id"
        which[move.part] = {"$elemMatch": {key: move.part_id, STAMP: {"$exists": False}}}
        path = f"{move.part}.$.{STAMP}"
    return bool(mongo.orders().update_one(which, {"$set": {path: closing_id}}).modified_count)


def _finish(closing: dict) -> dict:
    """Steps 2 and 3 of the module's docstring: safe to repeat, from anywhere."""
    until = closing["until"]
    search = (closing["searchFrom"], until + timedelta(milliseconds=1))
    for move in _cash(closing["till"], *search):
        if not move.closing and move.at <= until:
            faults.point("till.before_stamp")  # tests: a sale or a crash between two stamps
            _stamp(move, closing["_id"])
    faults.point("till.before_sums")
    moves = [m for m in _cash(closing["till"], *search) if m.closing == closing["_id"]]
    cash_in, cash_out = _sums(moves)
    sums = {
        "cashIn": cash_in,
        "cashOut": cash_out,
        "expected": cash_in - cash_out,
        "difference": closing["counted"] - (cash_in - cash_out),
        "moves": [{"at": m.at, "kind": m.kind, "ref": m.ref, "amount": m.amount, "orderId": m.order_id} for m in moves],
    }
    closings().update_one({"_id": closing["_id"], "claiming": True}, {"$set": sums, "$unset": {"claiming": ""}})
    return closings().find_one({"_id": closing["_id"]}) or closing


def finish_all() -> int:
    """Reconcile: closings a crash left half made (a handful at most: the sparse index lists them)."""
    unfinished = list(closings().find({"claiming": True}).hint("till_claiming"))
    for closing in unfinished:
        _finish(closing)
    return len(unfinished)


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
    now = now or clock.now()
    last = last_closing(till)
    if last is not None and last.get("claiming"):
        last = _finish(last)  # a crash left it half made: its sales are its own
    if (last["seq"] if last else 0) + 1 != seq:
        raise Conflict(gettext("This till was closed meanwhile; look at it again."))
    faults.point("till.before_write")  # tests: another closing of this till between the read and the write
    closing = {
        "_id": f"{till}:{seq}",
        "till": till,
        "seller": seller,
        "seq": seq,
        "from": last["until"] if last else None,
        "until": now,
        "searchFrom": _search_from(last, now),
        "day": timezone.localtime(now).date().isoformat(),
        "counted": counted,
        "note": note,
        "currency": settings.BOOKING_CURRENCY,
        "createdOn": clock.now(),
        "stamped": True,
        "claiming": True,
    }
    try:
        closings().insert_one(closing)
    except DuplicateKeyError:
        raise Conflict(gettext("This till was closed meanwhile; look at it again.")) from None
    return _finish(closing)


def get(closing_id: str) -> dict | None:
    return closings().find_one({"_id": closing_id})


def of_day(day: date, till: str | None = None) -> list[dict]:
    """The closings made on a local day (one seller's, or every seller's), in order."""
    query: dict = {"day": day.isoformat(), **({"till": till} if till else {}), "claiming": {"$exists": False}}
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
