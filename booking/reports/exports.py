"""A report as files: CSV and XLSX (the same tables), the sales-per-day chart (SVG), and the
attendee list as CSV and PDF.

Libraries: openpyxl writes the XLSX (write-only mode: rows stream out, no cell objects kept;
one library both writes it here and reads it back in the tests); matplotlib draws the chart on
the server as SVG (no JavaScript and nothing vendored; an <img> of it is unaffected by the
admin's CSP, and it prints); ReportLab lays out the attendee PDF as it does the receipts.

Text from customers or staff (names, category and ticket type names) is never a formula: in CSV a
leading ``= + - @`` (or tab, CR) gets a ``'`` in front (OWASP's CSV injection advice); in XLSX
the cell is typed as text.
"""

import csv
import hashlib
import io
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from xml.sax.saxutils import escape

from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from booking.core.domain import Session
from booking.reports.figures import Report

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass
class Table:
    title: str  # the XLSX sheet's name (at most 31 characters) and the CSV section's heading
    header: list[str]
    rows: list[list]  # str, int, Decimal (money) or datetime (local, naive)


def amount(minor_units: int) -> Decimal:
    """Minor units as a decimal amount (1234 -> 12.34): what a spreadsheet sums."""
    return (Decimal(int(minor_units)) / 100).quantize(Decimal("0.01"))


def _local(value: datetime) -> datetime:
    return timezone.localtime(value).replace(tzinfo=None, second=0, microsecond=0)


def _money_columns(f) -> list:
    return [f.tickets, amount(f.gross), amount(f.net), amount(f.vat)]


def report_tables(report: Report) -> list[Table]:
    """The report's figures as tables: the same for the CSV and the XLSX."""
    money_header = [_("Tickets"), _("Gross"), _("Net"), _("VAT")]
    t, s = report.totals, report.seats
    summary = Table(
        _("Summary"),
        [_("Figure"), _("Value")],
        [
            [pgettext("noun: the play, concert or match", "Show"), report.title],
            [_("Theater"), report.theater],
            [_("Report"), _("Series") if report.kind == "series" else _("Session")],
            [_("Sessions"), len(report.sessions)],
            [_("Currency"), report.currency],
            [_("Sales figures as of"), _local(report.as_of or timezone.now())],
            [_("Sessions counted earlier"), report.behind],
            [_("Seats"), s["total"]],
            [_("Sold"), s["sold"]],
            [_("Held"), s["held"]],
            [_("Blocked"), s["blocked"]],
            [_("Free"), s["free"]],
            [_("Occupancy %"), s["occupancy"]],
            [_("Tickets sold"), t.tickets],
            [_("Gross"), amount(t.gross)],
            [_("Net"), amount(t.net)],
            [_("VAT"), amount(t.vat)],
            [_("Refunded tickets"), report.refunds.tickets],
            [_("Refunded"), amount(report.refunds.gross)],
            [_("Checked in"), t.checked_in],
        ],
    )
    sessions = Table(
        _("Sessions"),
        [
            _("Start"),
            _("Session"),
            _("Section"),
            _("Status"),
            _("Seats"),
            _("Sold"),
            _("Held"),
            _("Blocked"),
            _("Free"),
            *money_header,
            _("Refunded tickets"),
            _("Refunded"),
            _("Checked in"),
        ],
        [
            [
                _local(row.start),
                row.name,
                row.section,
                row.status,
                row.seats["total"],
                row.seats["sold"],
                row.seats["held"],
                row.seats["blocked"],
                row.seats["free"],
                *_money_columns(row.sales),
                row.refunded_tickets,
                amount(row.refunded_gross),
                row.sales.checked_in,
            ]
            for row in report.sessions
        ],
    )

    def breakdown(title: str, label: str, rows) -> Table:
        return Table(
            title,
            [label, *money_header, _("Checked in")],
            [[f.label, *_money_columns(f), f.checked_in] for f in rows],
        )

    refunded = {f.key: f for f in report.refunds_by_channel}
    channels = Table(
        _("By channel"),
        [_("Channel"), *money_header, _("Refunded tickets"), _("Refunded")],
        [
            [
                f.label,
                *_money_columns(f),
                refunded[f.key].tickets if f.key in refunded else 0,
                amount(refunded[f.key].gross) if f.key in refunded else amount(0),
            ]
            for f in report.by_channel
        ]
        + [
            [f.label, 0, amount(0), amount(0), amount(0), f.tickets, amount(f.gross)]
            for f in report.refunds_by_channel
            if f.key not in {c.key for c in report.by_channel}
        ],
    )
    days = Table(
        _("Per day"),
        [_("Day"), _("Tickets"), _("Gross")],
        [[d.day.isoformat(), d.tickets, amount(d.gross)] for d in report.days],
    )
    return [
        summary,
        sessions,
        breakdown(_("By category"), _("Category"), report.by_category),
        breakdown(_("By ticket type"), _("Ticket type"), report.by_type),
        breakdown(_("Singles and subscriptions"), _("Sold as"), report.by_product),
        channels,
        days,
    ]


# --- CSV and XLSX ---


def csv_text(value) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    text = str(value)
    if isinstance(value, str) and text.startswith(FORMULA_STARTS):
        return "'" + text
    return text


def to_csv(tables: list[Table]) -> str:
    """Each table under its title, a blank line between them (one file, every figure)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    for n, table in enumerate(tables):
        if n:
            writer.writerow([])
        writer.writerow([csv_text(table.title)])
        writer.writerow([csv_text(h) for h in table.header])
        for row in table.rows:
            writer.writerow([csv_text(v) for v in row])
    return out.getvalue()


def to_xlsx(tables: list[Table]) -> bytes:
    """One sheet per table; money as numbers with two decimals, times as dates."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    book = Workbook(write_only=True)
    for table in tables:
        sheet = book.create_sheet(title=table.title[:31])
        header = []
        for h in table.header:
            cell = WriteOnlyCell(sheet, value=h)
            cell.font = Font(bold=True)
            header.append(cell)
        sheet.append(header)
        for row in table.rows:
            cells = []
            for value in row:
                cell = WriteOnlyCell(sheet, value=value)
                if isinstance(value, str):
                    cell.data_type = "s"  # never a formula, whatever the text starts with
                elif isinstance(value, Decimal):
                    cell.number_format = "#,##0.00"
                elif isinstance(value, datetime):
                    cell.number_format = "yyyy-mm-dd hh:mm"
                cells.append(cell)
            sheet.append(cells)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


# --- the chart ---


def chart_key(report: Report) -> str:
    """What the chart is drawn from (the same figures draw the same chart): its cache key."""
    drawn = (report.currency, [(d.day.isoformat(), d.tickets, d.gross) for d in report.days])
    return "sales-chart:" + hashlib.sha256(repr(drawn).encode()).hexdigest()


def sales_chart_svg(report: Report) -> bytes:
    """Tickets sold per day (bars) and gross revenue so far (line), as SVG. matplotlib's
    object-oriented API (a Figure of its own, no pyplot): no global state, safe in threads."""
    import matplotlib
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    # no layout engine: "constrained" measures every text several times (2-3x the drawing's CPU);
    # the saved bounding box is fitted to the labels once instead
    fig = Figure(figsize=(9, 3.2), dpi=100)
    ax = fig.add_subplot()
    days = [date2num(d.day) for d in report.days]
    if days:
        ax.bar(days, [d.tickets for d in report.days], width=0.8, color="#417690", label=_("Tickets per day"))
        running, cumulative = 0, []
        for d in report.days:
            running += d.gross
            cumulative.append(running / 100)
        other = ax.twinx()
        other.plot(days, cumulative, color="#c2410c", linewidth=2, label=_("Revenue so far"))
        other.set_ylabel(f"{_('Revenue so far')} ({report.currency})")
        other.set_ylim(bottom=0)
        other.spines["top"].set_visible(False)  # the twin's frame would close the box again
        locator = AutoDateLocator(maxticks=8)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
        handles = ax.get_legend_handles_labels()[0] + other.get_legend_handles_labels()[0]
        ax.legend(handles=handles, loc="upper left", frameon=False)
    else:
        ax.text(0.5, 0.5, _("No sales yet"), ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
    ax.set_ylabel(_("Tickets"))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    for spine in ("top",):
        ax.spines[spine].set_visible(False)
    out = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as text: smaller, faster, selectable
        fig.savefig(out, format="svg", metadata={"Date": None}, bbox_inches="tight", pad_inches=0.1)
    return out.getvalue()


# --- the attendee list ---


def attendee_header() -> list[str]:
    return [_("Row"), _("Seat"), _("Name"), _("Category"), _("Ticket type"), _("Reference"), _("Checked in"), _("Door")]


def _checked(person: dict) -> str:
    at = person.get("checkedInAt")
    return timezone.localtime(at).strftime("%Y-%m-%d %H:%M") if at else ""


def _ticket_type(person: dict) -> str:
    """The ticket type, and that it was given away (complimentary) where it was."""
    if not person.get("comp"):
        return person["type"]
    return " · ".join(part for part in (person["type"], _("Complimentary")) if part)


def attendee_rows(people: list[dict]) -> list[list]:
    return [
        [p["row"], p["seat"], p["name"], p["category"], _ticket_type(p), p["ref"], _checked(p), p["door"]]
        for p in people
    ]


def attendees_csv(people: list[dict]) -> str:
    return to_csv([Table(_("Attendees"), attendee_header(), attendee_rows(people))]).split("\r\n", 1)[1]


def _fit(value, width: int) -> str:
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def attendees_pdf(session: Session, people: list[dict]) -> bytes:
    """A printable list for the door: A4, the header row repeated on every page."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import mm
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, TableStyle
    from reportlab.platypus import Table as PdfTable

    styles = getSampleStyleSheet()
    body = styles["BodyText"].clone("cell", fontSize=8.5, leading=10)
    start = timezone.localtime(session["start"]).strftime("%d.%m.%Y %H:%M")
    title = f"{session.get('name', '')} – {start}"
    out = io.BytesIO()
    doc = SimpleDocTemplate(
        out,
        pagesize=A4,
        leftMargin=12 * mm,
        rightMargin=12 * mm,
        topMargin=14 * mm,
        bottomMargin=14 * mm,
        title=_("Attendees: %(title)s") % {"title": title},
    )
    checked = sum(1 for p in people if p.get("checkedInAt"))
    story = [
        Paragraph(escape(title), styles["Title"]),
        Paragraph(
            escape(
                _("%(theater)s · %(count)d tickets · %(checked)d checked in")
                % {"theater": session.get("theaterName", ""), "count": len(people), "checked": checked}
            ),
            styles["BodyText"],
        ),
        Spacer(1, 4 * mm),
    ]

    # plain strings, not a Paragraph per cell: a full house (1,000 rows) lays out in a fraction of
    # the time; a long name is cut to its column
    rows = [[_fit(v, 34 if n == 2 else 16) for n, v in enumerate(row)] for row in attendee_rows(people)]
    bold = body.clone("head", fontName="Helvetica-Bold")
    header = [Paragraph(escape(h), bold) for h in attendee_header()]
    widths = [12 * mm, 12 * mm, 48 * mm, 24 * mm, 24 * mm, 22 * mm, 28 * mm, 16 * mm]
    table = PdfTable([header, *rows], colWidths=widths, repeatRows=1)
    table.setStyle(
        TableStyle(
            [
                ("FONTSIZE", (0, 1), (-1, -1), 8.5),
                ("LINEBELOW", (0, 0), (-1, 0), 0.6, colors.black),
                ("ROWBACKGROUNDS", (0, 1), (-1, -1), [colors.white, colors.HexColor("#f1f5f9")]),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]
        )
    )
    story.append(table if people else Paragraph(escape(_("No tickets sold.")), styles["BodyText"]))
    doc.build(story)
    return out.getvalue()
