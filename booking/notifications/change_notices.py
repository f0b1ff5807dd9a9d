"""The e-mail a customer gets when staff change or cancel their booking (an exchange, canceled
tickets, a canceled performance), with the tickets still valid attached as a PDF (and the receipt).

Idempotent like the confirmation mail (notifications/confirmations.py): the notice is stored on the
order *in the same write as the change* (``changeNotices: [{_id, kind, ref, state: "pending",
createdOn}]``), so no change can happen without its mail being due; the worker claims a notice
(``claimedUntil``, a conditional update) before sending and marks it ``sent`` right after, so a
task queued twice sends one mail. A mail server that is away: the task retries with backoff;
reconcile queues notices still pending after a while (Redis down, a worker killed). A refusal
for good marks the notice ``failed`` (shown on the order page).
"""

import io
import logging
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from booking.core import clock, faults, mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, ChangeNotice, Order, OrderLine, SessionStatus
from booking.core.formatting import format_money_code, mail_time
from booking.core.localized import localized, sold_ticket_type, ticket_type_condition, ticket_type_name
from booking.core.text_checks import address_problem
from booking.notifications import sent_mails
from booking.notifications.calendar import has_calendar_entry, order_calendar
from booking.notifications.confirmations import (
    MailServerUnavailable,
    confirmation_context,
    is_permanent,
    order_language,
    site_host,
)
from booking.notifications.reservation_notices import reservation_context
from booking.payments import credit_notes, invoices
from booking.payments.invoice_pdf import credit_note_pdf, invoice_pdf
from booking.payments.pdf import receipt_pdf
from booking.sales import outbox
from booking.sales.order_venues import venues_of_order
from booking.sales.outbox import (
    CANCEL,
    EXCHANGE,
    EXCHANGE_PAYMENT,
    FAILED,
    INVOICE,
    PENDING,
    RESERVATION,
    RESERVATION_LAPSED,
    SENT,
    SESSION_CANCELED,
    TRANSFER,
    TRANSFER_TICKET,
)

logger = logging.getLogger("booking.change_notices")

CLAIM_SECONDS = 120
HOUSE_PROVIDERS = ("box_office", "counter")  # money staff hand back over the counter


def send_pending(order_id: ObjectId) -> list[str]:
    """Send every pending notice of the order (each at most once). Returns what became of each.
    Raises MailServerUnavailable when a later try may succeed (the task retries)."""
    order = mongo.orders().find_one({"_id": order_id})
    if order is None:
        return []
    outcomes = []
    for notice in order.get("changeNotices", []):
        if notice["state"] == PENDING:
            outcomes.append(_send_one(order, notice))
    return outcomes


def _send_one(order: Order, notice: ChangeNotice) -> str:
    now = clock.now()
    mine = {"_id": order["_id"], "ref": order["ref"]}
    claimed = mongo.orders().update_one(
        {
            **mine,
            "changeNotices": {
                "$elemMatch": {"_id": notice["_id"], "state": PENDING, "claimedUntil": {"$not": {"$gt": now}}}
            },
        },
        {
            "$set": {
                "changeNotices.$.claimedUntil": now + timedelta(seconds=CLAIM_SECONDS),
                "changeNotices.$.triedOn": now,
            }
        },
    )
    if not claimed.modified_count:
        return "busy"
    problem = address_problem(notice.get("to") or order.get("email", ""))
    if problem:
        _mark(order, notice, FAILED, problem)
        return FAILED
    order = _with_documents(order)
    try:
        sent_mails.send_and_keep(order, message(order, notice), f"change:{notice.get('kind', '')}")
    except Exception as exc:  # noqa: BLE001 - sorted below: for good, or try again later
        if isinstance(exc, UnicodeError) or is_permanent(exc):
            _mark(order, notice, FAILED, str(exc)[:200])
            return FAILED
        mongo.orders().update_one(
            {**mine, "changeNotices._id": notice["_id"]}, {"$unset": {"changeNotices.$.claimedUntil": ""}}
        )
        raise MailServerUnavailable(str(exc) or exc.__class__.__name__) from exc
    faults.point("notice.after_send")
    _mark(order, notice, SENT)
    return SENT


def _with_documents(order: Order) -> Order:
    """The order with the invoice number and credit notes its mail names, given now if a crash
    left them out (both safe to repeat)."""
    if order.get("invoice") and not order.get("invoiceNo"):
        invoices.assign(order["_id"], ref=order["ref"])
    if order.get("creditNoteDue"):
        credit_notes.issue(order["_id"])
    if (order.get("invoice") and not order.get("invoiceNo")) or order.get("creditNoteDue"):
        return mongo.orders().find_one({"_id": order["_id"], "ref": order["ref"]}) or order
    return order


def _mark(order: Order, notice: ChangeNotice, state: str, failure: str = "") -> None:
    sets = {"changeNotices.$.state": state, "changeNotices.$.doneOn": clock.now()}
    if failure:
        sets["changeNotices.$.failure"] = failure
    mongo.orders().update_one(
        {
            "_id": order["_id"],
            "ref": order["ref"],
            "changeNotices": {"$elemMatch": {"_id": notice["_id"], "state": PENDING}},
        },
        {"$set": sets, "$unset": {"changeNotices.$.claimedUntil": ""}},
    )


def requeue_pending(now=None) -> int:
    """Reconcile: notices still pending a while after the change, with nobody sending them."""
    now = now or clock.now()
    stale = now - timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS)
    queued = 0
    for order in mongo.orders().find({"changeNotices.state": PENDING}, {"changeNotices": 1}).limit(200):
        due = [
            n
            for n in order["changeNotices"]
            if n["state"] == PENDING
            and n["createdOn"] <= stale
            and not (n.get("claimedUntil") and n["claimedUntil"] > now)
        ]
        if due:
            if not outbox.queue_change_notices(order["_id"]):
                break
            queued += 1
    return queued


# --- the message ---

SUBJECTS = {  # translated when the mail is written, in the buyer's language
    EXCHANGE: gettext_noop("Your booking %(ref)s has changed: new seats"),
    EXCHANGE_PAYMENT: gettext_noop("Your booking %(ref)s: please pay the difference for your new seats"),
    CANCEL: gettext_noop("Your booking %(ref)s: tickets canceled"),
    SESSION_CANCELED: gettext_noop("Your booking %(ref)s: the performance is canceled"),
    RESERVATION: gettext_noop("Your reservation %(ref)s: please pay at the box office"),
    RESERVATION_LAPSED: gettext_noop("Your reservation %(ref)s has lapsed"),
    INVOICE: gettext_noop("Your invoice %(label)s for booking %(ref)s"),
    TRANSFER: gettext_noop("Your booking %(ref)s: a ticket was handed on"),
    TRANSFER_TICKET: gettext_noop("A ticket for you from %(buyer)s"),
}
TEMPLATES = {
    RESERVATION: "booking/email/reservation",
    RESERVATION_LAPSED: "booking/email/reservation",
    INVOICE: "booking/email/invoice",
    TRANSFER_TICKET: "booking/email/ticket_handed_on",
}


def _describe(order: Order, notice: ChangeNotice) -> dict:
    """What changed, in the words of the mail."""
    currency = order.get("currency", settings.BOOKING_CURRENCY)
    context: dict = {"kind": notice["kind"]}
    if notice["kind"] == RESERVATION:
        return {**context, **reservation_context(order)}
    if notice["kind"] == RESERVATION_LAPSED:  # a lapsed invoice's credit note goes with it
        notes = [n for n in credit_notes.of_order(order["_id"]) if n["kind"] == credit_notes.VOID]
        labels = [credit_notes.credit_label(n) for n in notes]
        invoice_label = invoices.invoice_label(order) if order.get("invoice") else ""
        return {**context, **reservation_context(order), "credit_notes": labels, "invoice_label": invoice_label}
    if notice["kind"] == INVOICE:
        invoice = order["invoice"]
        return {
            **context,
            "invoice_label": invoices.invoice_label(order),
            "amount_due": format_money_code(order["total"], currency),
            "due": date.fromisoformat(invoice["due"]).strftime("%d.%m.%Y"),
            "bank": invoice["seller"].get("bank", ""),
        }
    if notice["kind"] in (TRANSFER, TRANSFER_TICKET):
        return {**context, **_transfer_context(order, notice)}
    if notice["kind"] in (EXCHANGE, EXCHANGE_PAYMENT):
        record = next((x for x in order.get("exchanges", []) if x["_id"] == notice["ref"]), None)
        old, new = (record["old"], record["new"]) if record else ([], [])
        context["moved"] = [
            {"old": f"{o['row']}{o['seat']}", "new": f"{n['row']}{n['seat']}"} for o, n in zip(old, new, strict=False)
        ]
        difference = record["difference"] if record else 0
        context["refunded"] = format_money_code(-difference, currency) if difference < 0 else ""
        context["paid_more"] = format_money_code(difference, currency) if difference > 0 else ""
        context["online"] = bool(record and (record.get("paidDifference") or record.get("payment")))
        pay = record.get("payment") if record else None
        context["pay_until"] = mail_time(pay["until"]) if pay else ""
    else:
        ids = set(notice.get("refunds") or [notice["ref"]])
        mine = [r for r in order.get("refunds", []) if r["_id"] in ids]
        refunded_tickets = set(mine[0]["tickets"]) if mine else set()
        lines = [line for line in order.get("refundedLines", []) if line["ticket"] in refunded_tickets]
        if not mine:  # a reservation nobody paid, called off: all its seats
            lines = order.get("lines", [])
            context["reason"] = order.get("cancelReason", "")
        context["canceled"] = [f"{line['row']}{line['seat']}" for line in lines]
        context["refunded"] = format_money_code(sum(r["amount"] for r in mine), currency) if mine else ""
        kept = sum(r.get("keptFee", 0) for r in mine)
        context["kept"] = format_money_code(kept, currency) if kept else ""
        reason = (mine[0]["reason"] if mine else "") or context.get("reason", "")
        context["reason"] = _(reason) if reason else ""  # stored in English: a known one is translated
        # handed back by staff (a sale at the counter): the buyer collects it there
        at_counter = sum(r["amount"] for r in mine if r["payment"]["provider"] in HOUSE_PROVIDERS)
        context["collect"] = format_money_code(at_counter, currency) if at_counter else ""
        notes = credit_notes.of_order(order["_id"])
        context["credit_notes"] = [
            credit_notes.credit_label(n)
            for n in (
                credit_notes.for_refunds(notes, ids) if mine else [n for n in notes if n["kind"] == credit_notes.VOID]
            )
        ]
        if notice["kind"] == SESSION_CANCELED:
            context.update(_canceled_performances(order, {line["sessionId"] for line in lines}))
    return context


def _canceled_performances(order: Order, session_ids: set) -> dict:
    """Which performances of the booking were canceled (title and date, as sold) and the staff's
    message to their buyers, in the mail's language: one read of the canceled sessions by _id."""
    canceled = {
        doc["_id"]: doc.get("cancelRun") or {}
        for doc in mongo.sessions().find(
            {"_id": {"$in": list(session_ids)}, "status": SessionStatus.CANCELED}, {"cancelRun": 1}
        )
    }
    shows = [s for s in order.get("sessions", []) if s.get("_id") in canceled]
    shows.sort(key=lambda s: s.get("start") or clock.now())
    performances = [
        {
            "show": localized(show, "name") or _("Performance"),
            "when": mail_time(start) if (start := show.get("start")) else "",
            "theater": localized(show, "theaterName"),
        }
        for show in shows
    ]
    messages = [localized(canceled[show["_id"]], "message") for show in shows]
    return {"performances": performances, "staff_messages": [m for m in dict.fromkeys(messages) if m]}


def _transfer_context(order: Order, notice: ChangeNotice) -> dict:
    """The ticket handed on: its seat and performance, who has it now."""
    record = next((t for t in order.get("transfers", []) if t["_id"] == notice["ref"]), None)
    line: Mapping[str, Any] = record["new"] if record else {}
    session: Mapping[str, Any] = next((s for s in order.get("sessions", []) if s["_id"] == line.get("sessionId")), {})
    return {
        "holder": record["name"] if record else "",
        "holder_email": record["email"] if record else "",
        "buyer": order.get("name", ""),
        "seat": f"{line.get('row', '')}{line.get('seat', '')}",
        "row": line.get("row", ""),
        "seat_label": line.get("seat", ""),
        "show": localized(session, "name"),
        "when": mail_time(session["start"]) if session.get("start") else "",
        "theater": localized(session, "theaterName"),
        "handed_line": line,
    }


def message(order: Order, notice: ChangeNotice) -> EmailMultiAlternatives:
    """The notice in the language the buyer checked out in (as the confirmation); a mail to a
    ticket's new holder in theirs."""
    if notice["kind"] == TRANSFER_TICKET:
        with translation.override(notice.get("language") or order_language(order)):
            return _holder_message(order, notice)
    with translation.override(order_language(order)):
        return _message(order, notice)


def _holder_message(order: Order, notice: ChangeNotice) -> EmailMultiAlternatives:
    """The new holder's ticket: only the one handed to them, nothing else of the booking."""
    context = {**_describe(order, notice), "ref": order["ref"]}
    subject = _(SUBJECTS[TRANSFER_TICKET]) % {"buyer": order.get("name", "")}
    template = TEMPLATES[TRANSFER_TICKET]
    mail = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string(f"{template}.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[notice["to"]],
    )
    mail.attach_alternative(render_to_string(f"{template}.html", context), "text/html")
    line = context["handed_line"]
    current = [x for x in order.get("lines", []) if x["ticket"] == line.get("ticket")]
    if current:  # still valid (not refunded or handed on again since)
        mail.attach(f"ticket-{order['ref']}.pdf", tickets_pdf(order, lines=current), "application/pdf")
    return mail


def _message(order: Order, notice: ChangeNotice) -> EmailMultiAlternatives:
    valid = order["state"] in SEAT_OWNING_ORDER_STATES and bool(order.get("lines"))
    context = {**confirmation_context(order), **_describe(order, notice), "still_valid": valid}
    subject = _(SUBJECTS[notice["kind"]]) % {"ref": order["ref"], "label": invoices.invoice_label(order)}
    template = TEMPLATES.get(notice["kind"], "booking/email/order_changed")
    mail = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string(f"{template}.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[order["email"]],
    )
    mail.attach_alternative(render_to_string(f"{template}.html", context), "text/html")
    if valid and buyers_lines(order):
        mail.attach(f"tickets-{order['ref']}.pdf", tickets_pdf(order, lines=buyers_lines(order)), "application/pdf")
    if order.get("paidWith"):
        mail.attach(f"receipt-{order['ref']}.pdf", receipt_pdf(order), "application/pdf")
    if notice["kind"] == INVOICE:
        mail.attach(f"invoice-{invoices.invoice_label(order)}.pdf", invoice_pdf(order), "application/pdf")
    if context.get("credit_notes"):
        for note in credit_notes.of_order(order["_id"]):
            if credit_notes.credit_label(note) in context["credit_notes"]:
                mail.attach(
                    f"credit-note-{credit_notes.credit_label(note)}.pdf", credit_note_pdf(note), "application/pdf"
                )
    if has_calendar_entry(order):  # the same UIDs: a calendar that took the first file updates its entries
        venues = venues_of_order(order)
        entry = order_calendar(order=order, venues=venues, order_url=context["ticket_link"], host=site_host())
        mail.attach(f"booking-{order['ref']}.ics", entry, "text/calendar")
    return mail


def buyers_lines(order: Order) -> list[OrderLine]:
    """The tickets the buyer still holds: a ticket handed to someone else is theirs alone."""
    return [line for line in order.get("lines", []) if not line.get("holder")]


def tickets_pdf(order: Order, *, lines: Sequence[Mapping[str, Any]] | None = None) -> bytes:
    """The tickets still valid (or these), one per page, each with its QR code (ReportLab draws it)."""
    from reportlab.graphics import renderPDF
    from reportlab.graphics.barcode.qr import QrCodeWidget
    from reportlab.graphics.shapes import Drawing
    from reportlab.lib.pagesizes import A6
    from reportlab.lib.units import mm
    from reportlab.lib.utils import simpleSplit
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A6)
    pdf.setTitle(f"Tickets {order['ref']}")
    width, height = A6
    sessions = {s["_id"]: s for s in order.get("sessions", [])}
    for line in order.get("lines", []) if lines is None else lines:
        session: Mapping[str, Any] = sessions.get(line["sessionId"], {})
        pdf.setFont("Helvetica-Bold", 13)
        pdf.drawString(10 * mm, height - 15 * mm, (localized(session, "name") or _("Performance"))[:40])
        pdf.setFont("Helvetica", 10)
        pdf.drawString(10 * mm, height - 22 * mm, mail_time(session["start"]) if session.get("start") else "")
        pdf.drawString(10 * mm, height - 28 * mm, localized(session, "theaterName")[:50])  # in German too
        pdf.setFont("Helvetica-Bold", 12)
        pdf.drawString(
            10 * mm, height - 37 * mm, _("Row %(row)s, seat %(seat)s") % {"row": line["row"], "seat": line["seat"]}
        )
        pdf.setFont("Helvetica", 9)
        space = f"{_('wheelchair space')} · " if line.get("wheelchair") else ""  # as the e-tickets say
        kind = sold_ticket_type(line)
        pdf.drawString(10 * mm, height - 43 * mm, f"{space}{ticket_type_name(kind)} · {order['ref']}")
        pdf.setFont("Helvetica-Oblique", 8)  # the type's condition: what the door will ask to see
        for n, text in enumerate(simpleSplit(ticket_type_condition(kind), "Helvetica-Oblique", 8, width - 20 * mm)[:2]):
            pdf.drawString(10 * mm, height - (48 + 4 * n) * mm, text)
        widget = QrCodeWidget(line["ticket"])
        x0, y0, x1, y1 = widget.getBounds()
        size = 55 * mm
        drawing = Drawing(size, size, transform=[size / (x1 - x0), 0, 0, size / (y1 - y0), 0, 0])
        drawing.add(widget)
        renderPDF.draw(drawing, pdf, (width - size) / 2, 12 * mm)
        pdf.setFont("Courier", 7)
        pdf.drawCentredString(width / 2, 8 * mm, line["ticket"])
        pdf.showPage()
    pdf.save()
    return out.getvalue()
