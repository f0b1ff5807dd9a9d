"""Tickets printed at the counter: a PDF with one page per ticket, either an ordinary
page (A4, the ticket at the top: any office printer) or an 80 mm thermal-printer roll (72 mm
printable, one short page per ticket so the printer cuts between them).

The ticket says what the e-ticket says (``presenters.order_tickets``) and carries the same QR code
(``segno``, the ticket code, error correction M, as ``/tickets/<code>.svg``), drawn module by
module with ReportLab (``payments/pdf.py`` explains why ReportLab), so the door scans it alike.
"""

import io

import segno
from django.utils import timezone
from django.utils.translation import gettext as _
from reportlab.lib.pagesizes import A4
from reportlab.lib.units import mm
from reportlab.lib.utils import simpleSplit
from reportlab.pdfgen import canvas

from booking.core.domain import Order
from booking.core.formatting import format_money
from booking.web import presenters

PAGE = "page"
THERMAL = "thermal"
LAYOUTS = (PAGE, THERMAL)
THERMAL_WIDTH = 80 * mm
THERMAL_PRINTABLE = 72 * mm
THERMAL_HEIGHT = 110 * mm


def _qr(pdf: canvas.Canvas, code: str, x: float, y: float, size: float) -> None:
    """The ticket's QR code as black squares, ``size`` wide, its lower left corner at (x, y)."""
    matrix = segno.make(code, error="m").matrix
    border = 2
    count = len(matrix) + 2 * border
    module = size / count
    pdf.setFillColorRGB(0, 0, 0)
    for r, row in enumerate(matrix):
        for c, dark in enumerate(row):
            if dark:
                pdf.rect(
                    x + (c + border) * module, y + size - (r + border + 1) * module, module, module, stroke=0, fill=1
                )


def _when(ticket: dict) -> str:
    start = ticket.get("start")
    return timezone.localtime(start).strftime("%a %d %b %Y, %H:%M") if start else ""


def _lines(ticket: dict, order: Order, width: float, condition_lines: int) -> list[tuple[str, float, str]]:
    """(font, size, text) from the top: show, when, where, seat, type and price, the type's
    condition (the door asks for it: wrapped to ``width``, at most ``condition_lines``), reference."""
    price = format_money(ticket["price"], order.get("currency"))
    space = f" · {_('wheelchair space')}" if ticket.get("wheelchair") else ""  # as the ticket page says
    condition = simpleSplit(ticket.get("condition") or "", "Helvetica-Oblique", 9, width)
    if len(condition) > condition_lines:  # the rest of it: "…" (_fit) on the last line that fits
        condition[condition_lines - 1 :] = [" ".join(condition[condition_lines - 1 :]) + " …"]
    return [
        ("Helvetica-Bold", 15, ticket["show"]),
        ("Helvetica", 11, _when(ticket)),
        ("Helvetica", 11, ticket["theater"]),
        ("Helvetica-Bold", 14, _("Row %(row)s  ·  Seat %(seat)s") % {"row": ticket["row"], "seat": ticket["seat"]}),
        ("Helvetica", 10, f"{ticket['category']}{space} · {ticket['ticket_type']} · {price}"),
        *(("Helvetica-Oblique", 9, text) for text in condition),
        ("Helvetica", 10, _("Booking %(ref)s") % {"ref": order["ref"]}),
        ("Helvetica", 8, order.get("name", "")),
    ]


def _fit(pdf: canvas.Canvas, text: str, font: str, size: float, width: float) -> str:
    while text and pdf.stringWidth(text, font, size) > width:
        text = text[:-2] + "…" if len(text) > 2 else ""
    return text


def _page_ticket(pdf: canvas.Canvas, ticket: dict, order: Order) -> None:
    width, height = A4
    left, top = 20 * mm, height - 20 * mm
    box_h = 75 * mm
    pdf.setStrokeColorRGB(0.6, 0.6, 0.6)
    pdf.roundRect(left - 6 * mm, top - box_h, width - 2 * (left - 6 * mm), box_h + 6 * mm, 4 * mm)
    y = top - 6 * mm
    for font, size, text in _lines(ticket, order, 110 * mm, condition_lines=3):
        pdf.setFont(font, size)
        pdf.drawString(left, y, _fit(pdf, text, font, size, 110 * mm))
        y -= size * 1.6
    _qr(pdf, ticket["code"], width - left - 55 * mm, top - 62 * mm, 55 * mm)
    pdf.setFont("Helvetica", 7)
    pdf.drawString(left, top - box_h + 3 * mm, ticket["code"])
    pdf.setDash(2, 3)
    pdf.line(10 * mm, top - box_h - 6 * mm, width - 10 * mm, top - box_h - 6 * mm)  # cut here
    pdf.setDash()


def _thermal_ticket(pdf: canvas.Canvas, ticket: dict, order: Order) -> None:
    margin = (THERMAL_WIDTH - THERMAL_PRINTABLE) / 2
    y = THERMAL_HEIGHT - 8 * mm
    for font, size, text in _lines(ticket, order, THERMAL_PRINTABLE, condition_lines=2):
        size = min(size, 12)
        pdf.setFont(font, size)
        pdf.drawCentredString(THERMAL_WIDTH / 2, y, _fit(pdf, text, font, size, THERMAL_PRINTABLE))
        y -= size * 1.45
    qr_size = 46 * mm
    _qr(pdf, ticket["code"], (THERMAL_WIDTH - qr_size) / 2, y - qr_size - 2 * mm, qr_size)
    pdf.setFont("Helvetica", 6.5)
    pdf.drawCentredString(THERMAL_WIDTH / 2, margin, _fit(pdf, ticket["code"], "Helvetica", 6.5, THERMAL_PRINTABLE))


def tickets_pdf(order: Order, layout: str = PAGE) -> bytes:
    """Every ticket of the order, one per page, in ``layout`` (PAGE or THERMAL)."""
    if layout not in LAYOUTS:
        raise ValueError(layout)
    out = io.BytesIO()
    size = A4 if layout == PAGE else (THERMAL_WIDTH, THERMAL_HEIGHT)
    pdf = canvas.Canvas(out, pagesize=size)
    pdf.setTitle(_("Tickets %(ref)s") % {"ref": order["ref"]})
    draw = _page_ticket if layout == PAGE else _thermal_ticket
    for ticket in presenters.order_tickets(order):
        draw(pdf, ticket, order)
        pdf.showPage()
    pdf.save()
    return out.getvalue()
