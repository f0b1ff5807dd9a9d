"""Invoices and credit notes as PDF, in the receipt's style (payments/pdf.py: ReportLab, the
standard fonts, the same line table and VAT table).

Both print what the document kept when it was made: the seller's data, the buyer's billing data,
every line's VAT rate; a credit note names the invoice or receipt it corrects. Amounts of a
credit note are printed negative (money going back).
"""

import io
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any
from xml.sax.saxutils import escape

from django.conf import settings
from django.utils.translation import gettext
from reportlab.lib import colors
from reportlab.lib.enums import TA_RIGHT
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from booking.core.domain import Order
from booking.payments import credit_notes, invoices, money
from booking.payments.pdf import LINE_TABLE_WIDTH, MARGIN, column_widths, line_rows, sale_breakdown, when_text


def _styles():
    styles = getSampleStyleSheet()
    small = styles["BodyText"].clone("small", fontSize=8, leading=10, textColor=colors.HexColor("#555555"))
    body = styles["BodyText"].clone("cell", fontSize=9, leading=11)
    return styles, small, body


def _seller_lines(seller: dict) -> list[str]:
    lines = [seller.get("name", ""), *str(seller.get("address", "")).splitlines()]
    if seller.get("vatId"):
        lines.append(gettext("VAT ID %(id)s") % {"id": seller["vatId"]})
    if seller.get("taxNumber"):
        lines.append(gettext("Tax number %(number)s") % {"number": seller["taxNumber"]})
    return [line for line in lines if line]


def _buyer_lines(name: str, buyer: Mapping[str, Any]) -> list[str]:
    lines = [buyer.get("company", ""), name, *str(buyer.get("address", "")).splitlines()]
    if buyer.get("vatId"):
        lines.append(gettext("VAT ID %(id)s") % {"id": buyer["vatId"]})
    return [line for line in lines if line]


def _lines_table(
    order_like: Mapping[str, Any],
    lines: Sequence[Mapping[str, Any]],
    currency: str,
    body,
    sign: int,
    extra_rows: list[list],
):
    def cell(text: str, raw: bool = False) -> Paragraph:
        return Paragraph(text if raw else escape(str(text)), body)

    head = body.clone("head", fontName="Helvetica-Bold")
    head_right = head.clone("head_right", alignment=TA_RIGHT)
    header = [
        [
            Paragraph(escape(gettext("Performance")), head),
            Paragraph(escape(gettext("Date")), head),
            Paragraph(escape(gettext("Seat")), head),
            Paragraph(escape(gettext("Category, ticket")), head),
            Paragraph(escape(gettext("VAT")), head_right),
            Paragraph(escape(gettext("Price")), head_right),
        ]
    ]
    rows = line_rows(order_like, lines, currency, cell)
    if sign < 0:
        for row, line in zip(rows, lines, strict=True):
            row[5] = money.format_money(-money.line_amount(line), currency)
    else:
        for row, line in zip(rows, lines, strict=True):
            row[5] = money.format_money(money.line_amount(line), currency)
    ticket_rows = len(header) + len(rows)
    rows += [
        [cell(label) if isinstance(label, str) else label, "", "", "", rate, amount]
        for label, rate, amount in extra_rows
    ]
    table_rows = header + rows
    spans = [("SPAN", (0, r), (3 if table_rows[r][4] else 4, r)) for r in range(ticket_rows, len(table_rows))]
    table = Table(table_rows, colWidths=column_widths(table_rows[:ticket_rows], LINE_TABLE_WIDTH, size=9), repeatRows=1)
    table.setStyle(
        TableStyle(
            [
                ("FONTSIZE", (0, 0), (-1, -1), 9),
                ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold"),
                ("LINEBELOW", (0, 0), (-1, 0), 0.6, colors.black),
                ("LINEABOVE", (0, -1), (-1, -1), 0.6, colors.black),
                ("ALIGN", (4, 0), (-1, -1), "RIGHT"),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                *spans,
            ]
        )
    )
    return table


def _vat_table(vat_lines: list[dict], currency: str, sign: int):
    rows = [[gettext("VAT rate"), gettext("Net"), gettext("VAT"), gettext("Gross")]]
    for line in vat_lines:
        rows.append(
            [
                f"{line['rate']} %",
                money.format_money(sign * line["net"], currency),
                money.format_money(sign * line["vat"], currency),
                money.format_money(sign * line["gross"], currency),
            ]
        )
    table = Table(rows, colWidths=[30 * mm] * 4, hAlign="LEFT")
    table.setStyle(
        TableStyle(
            [
                ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                ("FONTSIZE", (0, 0), (-1, -1), 9),
                ("LINEBELOW", (0, 0), (-1, 0), 0.6, colors.black),
                ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
            ]
        )
    )
    return table


def _build(*, title: str, author: str, story: list) -> bytes:
    out = io.BytesIO()
    doc = SimpleDocTemplate(
        out,
        pagesize=A4,
        leftMargin=MARGIN,
        rightMargin=MARGIN,
        topMargin=18 * mm,
        bottomMargin=18 * mm,
        title=title,
        author=author,
    )
    doc.build(story)
    return out.getvalue()


def _head(styles, small, seller: dict, buyer: list[str], title: str, facts: list[list[str]]) -> list:
    story: list = [Paragraph(escape(" · ".join(_seller_lines(seller))), small), Spacer(1, 6 * mm)]
    story += [Paragraph(escape(line), styles["BodyText"]) for line in buyer]
    story += [Spacer(1, 8 * mm), Paragraph(escape(title), styles["Title"])]
    story.append(Table(facts, colWidths=[45 * mm, None], hAlign="LEFT"))
    story.append(Spacer(1, 6 * mm))
    return story


def invoice_pdf(order: Order) -> bytes:
    """The invoice of an order sold on invoice (payments/invoices.py)."""
    invoice = order["invoice"]
    currency = order.get("currency", settings.BOOKING_CURRENCY)
    styles, small, body = _styles()
    label = invoices.invoice_label(order) or gettext("(not numbered yet)")
    title = gettext("Invoice %(label)s") % {"label": label}
    due = date.fromisoformat(invoice["due"]).strftime("%d.%m.%Y")
    facts = [
        [gettext("Invoice date"), when_text(order.get("invoiceOn") or order.get("createdOn"))[:10]],
        [gettext("Delivery date"), gettext("the performance dates below")],
        [gettext("Booking reference"), order["ref"]],
        [gettext("Due on"), due],
    ]
    paid = order.get("paidWith")
    if paid:
        facts.append([gettext("Paid on"), when_text(paid.get("on"))[:10]])
    story = _head(styles, small, invoice["seller"], _buyer_lines(order.get("name", ""), invoice["buyer"]), title, facts)
    lines = [*order.get("lines", []), *order.get("refundedLines", [])]
    extra: list[list] = []
    discount = sum(line.get("discount", 0) for line in lines)
    fee = order.get("fee")
    if fee and fee["amount"]:
        extra.append(
            [gettext("Booking fee"), f"{money.rate_text(fee['vat'])} %", money.format_money(fee["amount"], currency)]
        )
    total = sum(money.line_amount(line) for line in lines) + (fee["amount"] if fee else 0)
    head = body.clone("total", fontName="Helvetica-Bold")
    extra.append([Paragraph(escape(gettext("Total due")), head), "", money.format_money(total, currency)])
    story.append(_lines_table(order, lines, currency, body, 1, extra))
    story += [
        Spacer(1, 6 * mm),
        _vat_table([v.as_doc() for v in sale_breakdown(order)], currency, 1),
        Spacer(1, 6 * mm),
    ]
    if discount:
        story.append(Paragraph(escape(gettext("Prices after the promo code's discount.")), small))
    pay_text = gettext("Please pay %(amount)s by %(due)s, quoting %(label)s.") % {
        "amount": money.format_money(total, currency),
        "due": due,
        "label": label,
    }
    story.append(Paragraph(escape(pay_text), styles["BodyText"]))
    if invoice["seller"].get("bank"):
        story.append(Paragraph(escape(invoice["seller"]["bank"]), styles["BodyText"]))
    story.append(Spacer(1, 4 * mm))
    story.append(Paragraph(escape(gettext("Prices include VAT.")), small))
    return _build(title=title, author=invoice["seller"].get("name", ""), story=story)


def credit_note_pdf(note: dict) -> bytes:
    """A credit note (payments/credit_notes.py): what it corrects, the lines credited, the VAT."""
    currency = note.get("currency", settings.BOOKING_CURRENCY)
    styles, small, body = _styles()
    label = credit_notes.credit_label(note) or gettext("(not numbered yet)")
    title = gettext("Credit note %(label)s") % {"label": label}
    refers = note["refersTo"]
    if refers["kind"] == credit_notes.INVOICE:
        corrects = gettext("Invoice %(label)s") % {"label": refers["label"]}
    else:
        corrects = gettext("Receipt %(label)s") % {"label": refers["label"]}
    facts = [
        [gettext("Date"), when_text(note.get("creditOn") or note["createdOn"])[:10]],
        [gettext("Corrects"), corrects],
        [gettext("Booking reference"), note["ref"]],
    ]
    if note.get("reason"):
        facts.append([gettext("Reason"), gettext(note["reason"])])
    buyer = note.get("buyer") or {}
    story = _head(styles, small, note["seller"], _buyer_lines(buyer.get("name", ""), buyer), title, facts)
    rest = note["amount"] - sum(money.line_amount(line) for line in note["lines"])
    extra: list[list] = []
    if rest > 0:
        extra.append([gettext("Booking fee"), "", money.format_money(-rest, currency)])
    head = body.clone("total", fontName="Helvetica-Bold")
    extra.append(
        [Paragraph(escape(gettext("Total credited")), head), "", money.format_money(-note["amount"], currency)]
    )
    story.append(_lines_table({"sessions": note.get("sessions", [])}, note["lines"], currency, body, -1, extra))
    story += [Spacer(1, 6 * mm), _vat_table(note.get("vat", []), currency, -1), Spacer(1, 6 * mm)]
    story.append(Paragraph(escape(gettext("Prices include VAT.")), small))
    return _build(title=title, author=note["seller"].get("name", ""), story=story)
