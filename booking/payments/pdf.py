"""The receipt (invoice) of a paid order as a PDF, made with ReportLab.

ReportLab, not WeasyPrint: it is pure Python (its wheels carry everything), so the web and worker
processes need no system libraries; WeasyPrint renders HTML well but needs Pango, HarfBuzz and
fontconfig from the system, which the slim images and the test machines here do not have. A
receipt is a small table, which ReportLab's platypus lays out directly.

The standard PDF fonts (Helvetica) are used: they need no font files and cover the euro sign.
"""

import io
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop, ngettext
from reportlab.lib import colors
from reportlab.lib.enums import TA_RIGHT
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.pdfbase.pdfmetrics import stringWidth
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from booking.core.domain import Order, RefundStatus
from booking.core.formatting import seat_label
from booking.core.localized import localized, order_category, sold_ticket_type, ticket_type_name
from booking.payments import donations, money, receipts

MARGIN = 18 * mm
LINE_TABLE_WIDTH = A4[0] - 2 * MARGIN
CELL_PADDING = 6  # points left and right of a table cell's text (ReportLab's default)


def when_text(value) -> str:
    return timezone.localtime(value).strftime("%d.%m.%Y %H:%M") if value else ""


def line_rows(
    order: Mapping[str, Any], lines: Sequence[Mapping[str, Any]], currency: str, cell, refunded: str = ""
) -> list[list]:
    sessions = {s["_id"]: s for s in order.get("sessions", [])}
    rows = []
    for line in lines:
        session: Mapping[str, Any] = sessions.get(line["sessionId"], {})
        category = order_category(session, line["cat"])
        if line.get("wheelchair"):  # the buyer's and the usher's reason to keep the space free
            category += " · " + gettext("wheelchair space")
        kind = ticket_type_name(sold_ticket_type(line))
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
                cell(when_text(session.get("start"))),
                cell(
                    escape(seat_label(line["row"], line["seat"]))
                    + (f" <i>({escape(gettext(refunded))})</i>" if refunded else ""),
                    raw=True,
                ),
                cell(f"{escape(category)}<br/><font size=8>{escape(kind)}</font>", raw=True),
                f"{money.rate_text(line.get('vat', settings.BOOKING_VAT_RATE))} %",
                money.format_money(line["price"], currency),
            ]
        )
    return rows


def column_widths(rows: list[list], width: float, *, size: float) -> list[float]:
    """Widths of a table's columns that fill ``width`` so no text runs into the next column, in any
    language. A paragraph may wrap but needs its longest word; a plain string (an amount, a rate)
    does not wrap and gets its whole width, measured in bold (the total's row) to be safe. When
    not everything fits on one line, the widest columns give way first (the date and the amounts
    stay on one line); if even the longest words do not fit, every column shrinks alike and
    paragraphs break their words."""
    columns = len(rows[0])
    least, most = [0.0] * columns, [0.0] * columns
    for row in rows:
        for i, value in enumerate(row):
            if isinstance(value, Paragraph):
                value.wrap(10 * width, 10 * width)  # one line per <br/>: its natural width
                low, high = value.minWidth(), max(value.getActualLineWidths0() or [0.0])
            else:
                low = high = stringWidth(str(value), "Helvetica-Bold", size)
            least[i] = max(least[i], low + 2 * CELL_PADDING)
            most[i] = max(most[i], high + 2 * CELL_PADDING)
    if sum(least) >= width:
        return [w * width / sum(least) for w in least]
    if sum(most) <= width:  # all on one line: the first column (the show) takes the rest
        return [most[0] + width - sum(most), *most[1:]]

    def capped(cap: float) -> list[float]:
        return [max(lo, min(m, cap)) for lo, m in zip(least, most, strict=True)]

    low, high = 0.0, max(most)  # the widest a column may be so that the table fits
    for _ in range(50):
        cap = (low + high) / 2
        low, high = (cap, high) if sum(capped(cap)) <= width else (low, cap)
    widths = capped(low)
    widths[0] += width - sum(widths)  # the rounding's crumbs
    return widths


def discount_label(order: Order) -> str:
    """The promo code's row: "Promo code SPRING-24" (an order from before codes were kept: no code)."""
    code = (order.get("promo") or {}).get("code")
    return gettext("Promo code %(code)s") % {"code": code} if code else gettext("Promo code")


def sale_breakdown(order: Order) -> list[money.VatLine]:
    """VAT of the sale as it was paid: every line, refunded ones too, and the fee."""
    every: Order = {**order, "lines": [*order.get("lines", []), *order.get("refundedLines", [])]}
    return money.order_breakdown(every)


def receipt_pdf(order: Order) -> bytes:
    currency = order.get("currency", settings.BOOKING_CURRENCY)
    styles = getSampleStyleSheet()
    small = styles["BodyText"].clone("small", fontSize=8, leading=10, textColor=colors.HexColor("#555555"))
    out = io.BytesIO()
    doc = SimpleDocTemplate(
        out,
        pagesize=A4,
        leftMargin=MARGIN,
        rightMargin=MARGIN,
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
        [gettext("Date"), when_text(order.get("paidOn") or order.get("createdOn"))],
        [gettext("Customer"), order.get("name", "")],
        [gettext("E-mail"), order.get("email", "")],
        [gettext("Payment"), receipts.payment_label(order)],
    ]
    if order.get("subscription"):
        sessions = len(order.get("sessions", []))
        facts.append(
            [
                gettext("Subscription"),
                ngettext("%(name)s: %(count)d performance", "%(name)s: %(count)d performances", sessions)
                % {"name": localized(order["subscription"], "name"), "count": sessions},
            ]
        )
    story.append(Table(facts, colWidths=[45 * mm, None], hAlign="LEFT"))
    story.append(Spacer(1, 6 * mm))

    body = styles["BodyText"].clone("cell", fontSize=9, leading=11)

    def cell(text: str, raw: bool = False) -> Paragraph:
        return Paragraph(text if raw else escape(str(text)), body)

    head = body.clone("head", fontName="Helvetica-Bold")
    head_right = head.clone("head_right", alignment=TA_RIGHT)  # above the right-aligned amounts
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
    rows = line_rows(order, order.get("lines", []), currency, cell)
    rows += line_rows(order, order.get("refundedLines", []), currency, cell, refunded=gettext_noop("refunded"))
    # tickets moved to other seats (an exchange): their new seats are the lines above
    exchanged = line_rows(order, order.get("exchangedLines", []), currency, cell, gettext_noop("exchanged"))
    rows += [row[:5] + [""] for row in exchanged]
    ticket_rows = len(header) + len(rows)
    # the sums below: their words span the columns left of the amount (and of the fee's VAT rate)
    discount = sum(line.get("discount", 0) for line in [*order.get("lines", []), *order.get("refundedLines", [])])
    if discount:
        rows.append([cell(discount_label(order)), "", "", "", "", money.format_money(-discount, currency)])
    fee = order.get("fee")
    if fee and fee["amount"]:
        rows.append(
            [
                cell(gettext("Booking fee")),
                "",
                "",
                "",
                f"{money.rate_text(fee['vat'])} %",
                money.format_money(fee["amount"], currency),
            ]
        )
    donated = donations.amount_of(order)
    if donated:  # a gift to the theater, not a sale: no VAT, and not in the VAT table below
        rows.append([cell(gettext("Donation (no VAT)")), "", "", "", "", money.format_money(donated, currency)])
    paid_with = order.get("paidWith")
    paid = paid_with["amount"] if paid_with else order.get("total", 0)
    for top_up in order.get("topUps") or []:  # an exchange's difference (sales/exchanges.py)
        if top_up["provider"] == "box_office":
            how = gettext("Exchange: difference paid at the box office")
        else:
            how = gettext("Exchange: difference paid by card")
        rows.append([cell(how), "", "", "", "", money.format_money(top_up["amount"], currency)])
        paid += top_up["amount"]
    voucher = order.get("voucher")
    if voucher and (not paid_with or voucher["id"] != paid_with["id"]):  # beside the card or the counter
        how = gettext("Paid by gift voucher …%(end)s") % {"end": voucher["codeEnd"]}
        rows.append([cell(how), "", "", "", "", money.format_money(voucher["amount"], currency)])
        paid += voucher["amount"]
    rows.append([Paragraph(escape(gettext("Total paid")), head), "", "", "", "", money.format_money(paid, currency)])
    table_rows = header + rows
    spans = [("SPAN", (0, r), (3 if table_rows[r][4] else 4, r)) for r in range(ticket_rows, len(table_rows))]
    widths = column_widths(table_rows[:ticket_rows], LINE_TABLE_WIDTH, size=9)
    table = Table(table_rows, colWidths=widths, repeatRows=1)
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
                *spans,
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

    refunds = [r for r in order.get("refunds", []) if r["status"] == RefundStatus.SUCCEEDED]
    if refunds:
        story.append(Paragraph(escape(gettext("Refunds")), styles["Heading3"]))
        refund_rows = [
            [
                when_text(r.get("doneOn")),
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
