"""A gift voucher as a printable PDF (ReportLab, like the receipt in payments/pdf.py): the value,
the code in groups of four, the last day it is accepted and how to redeem it, in the language
asked for (English or German); and the receipt of a voucher sold at the counter (no VAT: a
multi-purpose voucher is a means of payment, taxed when it pays for tickets)."""

import io
from xml.sax.saxutils import escape

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext
from reportlab.lib import colors
from reportlab.lib.enums import TA_CENTER
from reportlab.lib.pagesizes import A5, landscape
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from booking.core.domain import Voucher
from booking.payments import money, vouchers

LANGUAGES = ("en", "de")


def voucher_pdf(voucher: Voucher, language: str) -> bytes:
    """One A5 page (landscape). ``language``: one of LANGUAGES."""
    with translation.override(language if language in LANGUAGES else "en"):
        return _build(voucher)


def _build(voucher: Voucher) -> bytes:
    styles = getSampleStyleSheet()
    centered = styles["BodyText"].clone("centered", alignment=TA_CENTER, fontSize=10, leading=13)
    title = styles["Title"].clone("voucher_title", fontSize=24, leading=28)
    value_style = styles["Title"].clone("voucher_value", fontSize=34, leading=40, textColor=colors.HexColor("#7c2d12"))
    code_style = centered.clone("voucher_code", fontName="Courier-Bold", fontSize=20, leading=26)
    small = centered.clone("voucher_small", fontSize=8, leading=10, textColor=colors.HexColor("#555555"))
    out = io.BytesIO()
    margin = 12 * mm
    doc = SimpleDocTemplate(
        out,
        pagesize=landscape(A5),
        leftMargin=margin,
        rightMargin=margin,
        topMargin=margin,
        bottomMargin=margin,
        title=gettext("Gift voucher"),
        author=settings.BOOKING_SELLER.split(",")[0],
    )
    currency = voucher.get("currency", settings.BOOKING_CURRENCY)
    code_box = Table([[Paragraph(escape(vouchers.display_code(voucher["code"])), code_style)]], colWidths=[120 * mm])
    code_box.setStyle(TableStyle([("BOX", (0, 0), (-1, -1), 1.2, colors.black), ("TOPPADDING", (0, 0), (-1, -1), 6)]))
    story = [
        Paragraph(escape(settings.BOOKING_SELLER.split(",")[0]), small),
        Spacer(1, 4 * mm),
        Paragraph(escape(gettext("Gift voucher")), title),
        Paragraph(escape(money.format_money(voucher["value"], currency)), value_style),
        Spacer(1, 3 * mm),
        Paragraph(escape(gettext("Voucher code")), centered),
        code_box,
        Spacer(1, 4 * mm),
        Paragraph(escape(gettext("Valid until %(date)s.") % {"date": vouchers.last_day(voucher)}), centered),
        Paragraph(
            escape(
                gettext(
                    "Type the code at checkout when you book online, or show it at the box office. "
                    "It pays part or all of a booking; what is left stays on the voucher."
                )
            ),
            centered,
        ),
        Spacer(1, 4 * mm),
        Paragraph(escape(settings.BOOKING_SELLER), small),
    ]
    doc.build(story)
    return out.getvalue()


def sale_receipt_pdf(voucher: Voucher, language: str) -> bytes:
    """The counter sale's receipt: one A5 page, its number, what was paid and how. ``voucher``
    has its ``receiptNo`` (voucher_sales.number_receipt)."""
    with translation.override(language if language in LANGUAGES else "en"):
        styles = getSampleStyleSheet()
        body = styles["BodyText"].clone("receipt_body", fontSize=10, leading=13)
        head = body.clone("receipt_head", fontName="Helvetica-Bold")
        small = body.clone("receipt_small", fontSize=8, leading=10, textColor=colors.HexColor("#555555"))
        out = io.BytesIO()
        margin = 12 * mm
        doc = SimpleDocTemplate(
            out,
            pagesize=A5,
            leftMargin=margin,
            rightMargin=margin,
            topMargin=margin,
            bottomMargin=margin,
            title=gettext("Receipt"),
            author=settings.BOOKING_SELLER.split(",")[0],
        )
        currency = voucher.get("currency", settings.BOOKING_CURRENCY)
        means = {"cash": gettext("Cash"), "card_terminal": gettext("Card terminal")}.get(voucher.get("method", ""), "")
        sold_on = timezone.localtime(voucher["issuedOn"]).strftime("%Y-%m-%d %H:%M")
        what = gettext("Gift voucher …%(end)s") % {"end": voucher["code"][-4:]}
        value = money.format_money(voucher["value"], currency)
        rows = [
            [Paragraph(escape(what), body), value],
            [Paragraph(escape(gettext("Total paid")), head), value],
            [Paragraph(escape(gettext("Paid by")), body), means],
        ]
        table = Table(rows, colWidths=[90 * mm, 30 * mm])
        table.setStyle(
            TableStyle(
                [
                    ("ALIGN", (1, 0), (1, -1), "RIGHT"),
                    ("LINEABOVE", (0, 1), (-1, 1), 0.6, colors.black),
                    ("FONTNAME", (1, 1), (1, 1), "Helvetica-Bold"),
                ]
            )
        )
        story = [
            Paragraph(escape(settings.BOOKING_SELLER), small),
            Spacer(1, 4 * mm),
            Paragraph(escape(gettext("Receipt %(number)s") % {"number": vouchers.sale_label(voucher)}), head),
            Paragraph(escape(sold_on), body),
            Spacer(1, 4 * mm),
            table,
            Spacer(1, 4 * mm),
            Paragraph(
                escape(gettext("No VAT: a gift voucher is a means of payment; VAT is due when it pays for tickets.")),
                small,
            ),
        ]
        doc.build(story)
        return out.getvalue()
