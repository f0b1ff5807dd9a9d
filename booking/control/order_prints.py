"""Printing an order again from its admin page: its tickets (A4 pages or an 80 mm thermal roll,
booking/web/ticket_pdf.py) and its receipt (booking/payments/pdf.py), whatever sold it (online, at the
counter, a box-office reservation once paid). Checked like the order page: the view permission.
``OrderPrintScreens``, under OrderAdmin's URLs (booking/control/orders.py)."""

from django.http import Http404, HttpResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from booking.control.order_screens import OrderScreens
from booking.core.domain import Order, OrderState
from booking.payments import credit_notes, invoices
from booking.payments.invoice_pdf import credit_note_pdf, invoice_pdf
from booking.payments.pdf import receipt_pdf
from booking.web import ticket_pdf

TICKETS_VALID = (OrderState.PAID, OrderState.PARTIALLY_REFUNDED)


def has_tickets(order: Order) -> bool:
    """Its tickets admit at the door: paid, with seats left."""
    return order["state"] in TICKETS_VALID and bool(order.get("lines"))


def tickets_response(order: Order, layout: str) -> HttpResponse:
    """The order's tickets as a PDF in ``layout`` (ticket_pdf.LAYOUTS); a 400 for another layout,
    a 409 while it has no valid tickets."""
    if layout not in ticket_pdf.LAYOUTS:
        return HttpResponse(_("Unknown layout: use page or thermal."), status=400, content_type="text/plain")
    if not has_tickets(order):
        return HttpResponse(_("Tickets are printed once the order is paid."), status=409, content_type="text/plain")
    response = HttpResponse(ticket_pdf.tickets_pdf(order, layout), content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="tickets-{order["ref"]}-{layout}.pdf"'
    response["Cache-Control"] = "private, no-store"
    return response


def print_context(order: Order) -> dict:
    """The order page's part: what of the order may be printed."""
    notes = credit_notes.of_order(order["_id"]) if order.get("creditNotes") else []
    return {
        "can_print_tickets": has_tickets(order),
        "has_receipt": bool(order.get("receiptNo")),
        "invoice_label": invoices.invoice_label(order),
        "credit_notes": [
            {"number": n["creditNo"], "label": credit_notes.credit_label(n), "amount": n["amount"]}
            for n in notes
            if n.get("creditNo")
        ],
    }


class OrderPrintScreens(OrderScreens):
    """``<id>/tickets.pdf``, ``receipt.pdf``, ``invoice.pdf``, ``credit-notes/<number>.pdf``."""

    @method_decorator(require_safe)
    def order_tickets_pdf(self, request, object_id):
        return tickets_response(self.order(request, object_id), request.GET.get("layout", ticket_pdf.PAGE))

    @method_decorator(require_safe)
    def order_receipt_pdf(self, request, object_id):
        """The receipt as numbered at payment (every paid order gets its number then)."""
        order = self.order(request, object_id)
        if not order.get("receiptNo"):
            raise Http404(_("This order has no receipt."))
        response = HttpResponse(receipt_pdf(order), content_type="application/pdf")
        response["Content-Disposition"] = f'inline; filename="receipt-{order["ref"]}.pdf"'
        response["Cache-Control"] = "private, no-store"
        return response

    @method_decorator(require_safe)
    def order_invoice_pdf(self, request, object_id):
        """The invoice as issued at the sale (with its payment, once paid)."""
        order = self.order(request, object_id)
        if not order.get("invoiceNo"):
            raise Http404(_("This order has no invoice."))
        return _pdf(invoice_pdf(order), f"invoice-{invoices.invoice_label(order)}.pdf")

    @method_decorator(require_safe)
    def order_credit_note_pdf(self, request, object_id, number):
        """One of the order's credit notes, by its number."""
        order = self.order(request, object_id)
        note = next((n for n in credit_notes.of_order(order["_id"]) if n.get("creditNo") == number), None)
        if note is None:
            raise Http404(_("This order has no such credit note."))
        return _pdf(credit_note_pdf(note), f"credit-note-{credit_notes.credit_label(note)}.pdf")


def _pdf(body: bytes, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="{filename}"'
    response["Cache-Control"] = "private, no-store"
    return response
