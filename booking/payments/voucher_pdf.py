"""A gift voucher as a printable PDF (ReportLab, like the receipt in payments/pdf.py): the value,
the code in groups of four, the last day it is accepted and how to redeem it, in the language
asked for (English or German)."""

import io
from xml.sax.saxutils import escape

from django.conf import settings
from django.utils import translation
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
