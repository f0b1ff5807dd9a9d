"""The receipt (invoice) of a paid order as a PDF, made with ReportLab.

ReportLab, not WeasyPrint: it is pure Python (its wheels carry everything), so the web and worker
processes need no system libraries; WeasyPrint renders HTML well but needs Pango, HarfBuzz and
fontconfig from the system, which the slim images and the test machines here do not have. A
receipt is a small table, which ReportLab's platypus lays out directly.

The standard PDF fonts (Helvetica) are used: they need no font files and cover the euro sign.
"""

import io
from xml.sax.saxutils import escape

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from ..formatting import seat_label
from ..localized import localized, order_category
from . import money, receipts

METHODS = {"stripe": gettext_lazy("Card (Stripe)"), "box_office": gettext_lazy("Paid at the box office")}


def _when(value) -> str:
    return timezone.localtime(value).strftime("%d.%m.%Y %H:%M") if value else ""


def _line_rows(order: dict, lines: list[dict], currency: str, cell, refunded: str = "") -> list[list]:
    sessions = {s["_id"]: s for s in order.get("sessions", [])}
    rows = []
    for line in lines:
        session = sessions.get(line["sessionId"], {})
        category = order_category(session, line["cat"])
        if line.get("wheelchair"):  # the buyer's and the usher's reason to keep the space free
            category += " · " + gettext("wheelchair space")
        rows.append(
            [
                cell(
                    escape(localized(session, "name") or gettext("Performance"))
                    + (
                        f"<br/><font size=8>{escape(venue)}</font>"
                        if (venue := localized(session, "theaterName"))
                        else ""
                    ),
                    raw=True,
                ),
                cell(_when(session.get("start"))),
                cell(
                    escape(seat_label(line["row"], line["seat"]))
                    + (f" <i>({escape(gettext(refunded))})</i>" if refunded else ""),
                    raw=True,
                ),
                cell(f"{escape(category)}<br/><font size=8>{escape(_ticket_type(line))}</font>", raw=True),
                f"{money.rate_text(line.get('vat', settings.BOOKING_VAT_RATE))} %",
                money.format_money(line["price"], currency),
            ]
        )
    return rows


def _ticket_type(line: dict) -> str:
    name = line.get("ticketTypeName") or "Full price"
    return gettext(name) if name == "Full price" else name  # the default's stored name, translated


def discount_label(order: dict) -> str:
    """The promo code's row: "Promo code SPRING-24" (an order from before codes were kept: no code)."""
    code = (order.get("promo") or {}).get("code")
    return gettext("Promo code %(code)s") % {"code": code} if code else gettext("Promo code")


def sale_breakdown(order: dict) -> list[money.VatLine]:
    """VAT of the sale as it was paid: every line, refunded ones too, and the fee."""
    every = {**order, "lines": [*order.get("lines", []), *order.get("refundedLines", [])]}
    return money.order_breakdown(every)


def receipt_pdf(order: dict) -> bytes:
    currency = order.get("currency", settings.BOOKING_CURRENCY)
    styles = getSampleStyleSheet()
    small = styles["BodyText"].clone("small", fontSize=8, leading=10, textColor=colors.HexColor("#555555"))
    out = io.BytesIO()
    doc = SimpleDocTemplate(
        out,
        pagesize=A4,
        leftMargin=18 * mm,
        rightMargin=18 * mm,
        topMargin=18 * mm,
        bottomMargin=18 * mm,
        title=gettext("Receipt %(label)s") % {"label": receipts.receipt_label(order)},
        author=settings.BOOKING_SELLER.split(",")[0],
    )
    story = [
        Paragraph(escape(settings.BOOKING_SELLER), small),
        Paragraph(escape(gettext("VAT ID %(id)s") % {"id": settings.BOOKING_SELLER_VAT_ID}), small),
        Spacer(1, 8 * mm),
        Paragraph(
            escape(
                gettext("Receipt %(label)s") % {"label": receipts.receipt_label(order) or gettext("(not numbered yet)")}
            ),
            styles["Title"],
        ),
    ]
    facts = [
        [gettext("Booking reference"), order["ref"]],
        [gettext("Date"), _when(order.get("paidOn") or order.get("createdOn"))],
        [gettext("Customer"), order.get("name", "")],
        [gettext("E-mail"), order.get("email", "")],
        [gettext("Payment"), str(METHODS.get((order.get("paidWith") or {}).get("provider", ""), ""))],
    ]
    story.append(Table(facts, colWidths=[45 * mm, None], hAlign="LEFT"))
    story.append(Spacer(1, 6 * mm))

    body = styles["BodyText"].clone("cell", fontSize=9, leading=11)

    def cell(text: str, raw: bool = False) -> Paragraph:
        return Paragraph(text if raw else escape(str(text)), body)

    header = [
        [
            gettext("Performance"),
            gettext("Date"),
            gettext("Seat"),
            gettext("Category, ticket"),
            gettext("VAT"),
            gettext("Price"),
        ]
    ]
    rows = _line_rows(order, order.get("lines", []), currency, cell)
    rows += _line_rows(order, order.get("refundedLines", []), currency, cell, refunded="refunded")
    # tickets moved to other seats (an exchange): their new seats are the lines above
    rows += [row[:5] + [""] for row in _line_rows(order, order.get("exchangedLines", []), currency, cell, "exchanged")]
    discount = sum(line.get("discount", 0) for line in [*order.get("lines", []), *order.get("refundedLines", [])])
    if discount:
        rows.append([cell(discount_label(order)), "", "", "", "", money.format_money(-discount, currency)])
    fee = order.get("fee") or {}
    if fee.get("amount"):
        rows.append(
            [
                gettext("Booking fee"),
                "",
                "",
                "",
                f"{money.rate_text(fee['vat'])} %",
                money.format_money(fee["amount"], currency),
            ]
        )
    paid = (order.get("paidWith") or {}).get("amount", order.get("total", 0))
    for top_up in order.get("topUps") or []:  # an exchange's difference (services/exchanges.py)
        if top_up["provider"] == "box_office":
            how = gettext("Exchange: difference paid at the box office")
        else:
            how = gettext("Exchange: difference paid by card")
        rows.append([how, "", "", "", "", money.format_money(top_up["amount"], currency)])
        paid += top_up["amount"]
    rows.append([gettext("Total paid"), "", "", "", "", money.format_money(paid, currency)])
    table = Table(header + rows, colWidths=[44 * mm, 31 * mm, 33 * mm, 24 * mm, 14 * mm, 28 * mm], repeatRows=1)
    table.setStyle(
        TableStyle(
            [
                ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold"),
                ("FONTSIZE", (0, 0), (-1, -1), 9),
                ("LINEBELOW", (0, 0), (-1, 0), 0.6, colors.black),
                ("LINEABOVE", (0, -1), (-1, -1), 0.6, colors.black),
                ("ALIGN", (4, 0), (-1, -1), "RIGHT"),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]
        )
    )
    story += [table, Spacer(1, 6 * mm)]

    vat_rows = [[gettext("VAT rate"), gettext("Net"), gettext("VAT"), gettext("Gross")]]
    for line in sale_breakdown(order):
        vat_rows.append(
            [
                f"{line.rate} %",
                money.format_money(line.net, currency),
                money.format_money(line.vat, currency),
                money.format_money(line.gross, currency),
            ]
        )
    vat_table = Table(vat_rows, colWidths=[30 * mm, 30 * mm, 30 * mm, 30 * mm], hAlign="LEFT")
    vat_table.setStyle(
        TableStyle(
            [
                ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                ("FONTSIZE", (0, 0), (-1, -1), 9),
                ("LINEBELOW", (0, 0), (-1, 0), 0.6, colors.black),
                ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
            ]
        )
    )
    story += [vat_table, Spacer(1, 4 * mm)]

    refunds = [r for r in order.get("refunds", []) if r.get("status") == "succeeded"]
    if refunds:
        story.append(Paragraph(escape(gettext("Refunds")), styles["Heading3"]))
        refund_rows = [
            [
                _when(r.get("doneOn")),
                cell(gettext(r["reason"]) if r.get("reason") else ""),
                money.format_money(-r["amount"], currency),
            ]
            for r in refunds
        ]
        back = sum(r["amount"] for r in refunds)
        refund_rows.append(["", gettext("Paid less refunds"), money.format_money(paid - back, currency)])
        refund_table = Table(refund_rows, colWidths=[34 * mm, 114 * mm, 26 * mm], hAlign="LEFT")
        refund_table.setStyle(
            TableStyle(
                [
                    ("FONTSIZE", (0, 0), (-1, -1), 9),
                    ("ALIGN", (2, 0), (2, -1), "RIGHT"),
                    ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold"),
                    ("LINEABOVE", (0, -1), (-1, -1), 0.6, colors.black),
                ]
            )
        )
        story.append(refund_table)
    story.append(Spacer(1, 6 * mm))
    story.append(
        Paragraph(
            escape(
                gettext(
                    "Prices include VAT. VAT per rate is worked out from the gross total at that rate "
                    "(net rounded half up to the cent)."
                )
            ),
            small,
        )
    )
    doc.build(story)
    return out.getvalue()
