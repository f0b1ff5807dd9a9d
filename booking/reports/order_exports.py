"""The staff order list as a file: exactly the orders its filters find (sales/order_search.py
``iter_orders``, streamed: no page limit), one row per order, as CSV or XLSX.

The CSV is written as it is read (a generator of text chunks for a streaming response); the XLSX
in openpyxl's write-only mode (rows go out, no cell objects kept). Customer text is never a
formula (exports.csv_text; a text cell in XLSX).
"""

import csv
import io
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font

from booking.core.domain import Order, sales_channel
from booking.core.formatting import seat_label
from booking.core.localized import order_state_label
from booking.payments import BOX_OFFICE, CARD
from booking.payments.counter import CARD_TERMINAL, CASH, COMPLIMENTARY, INVOICE
from booking.reports.exports import amount, csv_text
from booking.reports.figures import channel_label
from booking.sales.order_search import OrderFilters, iter_orders

# How an order was paid (its ``method``), as staff read it.
PAYMENT_METHOD_LABELS = {
    CARD: gettext_lazy("Card (online)"),
    BOX_OFFICE: gettext_lazy("Pay at the box office"),
    CASH: gettext_lazy("Cash"),
    CARD_TERMINAL: gettext_lazy("Card terminal"),
    INVOICE: gettext_lazy("Invoice / pay later"),
    COMPLIMENTARY: gettext_lazy("Complimentary"),
}
CSV_BATCH = 500  # rows per chunk of the streamed CSV


def payment_method_label(code: str | None) -> str:
    return str(PAYMENT_METHOD_LABELS.get(code or "", code or ""))


def header() -> list[str]:
    return [
        _("Reference"),
        _("Booked"),
        _("Name"),
        _("E-mail"),
        _("State"),
        _("Channel"),
        _("Payment method"),
        _("Performance"),
        _("Seats"),
        _("Tickets"),
        _("Total"),
        _("Currency"),
    ]


def _local(moment: datetime | None) -> datetime | None:
    return timezone.localtime(moment).replace(tzinfo=None) if moment else None


def order_row(order: Order) -> list:
    """One order: its performances (title and start) and seats, each joined with "; "."""
    sessions = {s["_id"]: s for s in order.get("sessions", [])}
    seats: dict = {}
    for line in order.get("lines", []):
        seats.setdefault(line["sessionId"], []).append(seat_label(line["row"], line["seat"]))
    shows = []
    for sid in seats:
        session: Mapping[str, Any] = sessions.get(sid, {})
        start = _local(session.get("start"))
        when = start.strftime("%Y-%m-%d %H:%M") if start else ""
        shows.append(" ".join(part for part in (session.get("name") or "", when) if part))
    return [
        order["ref"],
        _local(order["createdOn"]),
        order.get("name") or "",
        order.get("email") or "",
        order_state_label(order["state"]),
        channel_label(sales_channel(order)),
        payment_method_label(order.get("method")),
        "; ".join(shows),
        "; ".join(label for labels in seats.values() for label in labels),
        len(order.get("lines", [])),
        amount(order.get("total", 0)),
        order.get("currency", ""),
    ]


def rows(filters: OrderFilters) -> Iterator[list]:
    for order in iter_orders(filters=filters):
        yield order_row(order)


def csv_chunks(filters: OrderFilters) -> Iterator[str]:
    """The CSV (header first), a chunk of rows at a time."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([csv_text(h) for h in header()])
    for n, row in enumerate(rows(filters), start=1):
        writer.writerow([csv_text("" if v is None else v) for v in row])
        if n % CSV_BATCH == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


def xlsx_bytes(filters: OrderFilters) -> bytes:
    book = Workbook(write_only=True)
    sheet = book.create_sheet(title=_("Orders")[:31])
    sheet.append([_bold(sheet, h) for h in header()])
    for row in rows(filters):
        sheet.append([_cell(sheet, v) for v in row])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _bold(sheet, text: str) -> WriteOnlyCell:
    cell = WriteOnlyCell(sheet, value=text)
    cell.font = Font(bold=True)
    return cell


def _cell(sheet, value) -> WriteOnlyCell:
    cell = WriteOnlyCell(sheet, value=value)
    if isinstance(value, str):
        cell.data_type = "s"  # never a formula, whatever the text starts with
    elif isinstance(value, datetime):
        cell.number_format = "yyyy-mm-dd hh:mm"
    elif not isinstance(value, int):
        cell.number_format = "#,##0.00"
    return cell
