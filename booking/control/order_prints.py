"""Printing an order again from its admin page: its tickets (A4 pages or an 80 mm thermal roll,
booking/web/ticket_pdf.py) and its receipt (booking/payments/pdf.py), whatever sold it (online, at the
counter, a box-office reservation once paid). Checked like the order page: the view permission.
The views live here, beside OrderAdmin (booking/control/orders.py), which lists their routes."""

from typing import TYPE_CHECKING

from django.http import Http404, HttpResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from booking.control.base import AdminMixinBase
from booking.core.domain import OrderState
from booking.payments.pdf import receipt_pdf
from booking.web import ticket_pdf

ROUTES = [
    ("<str:object_id>/tickets.pdf", "order_tickets_pdf", "tickets_pdf"),
    ("<str:object_id>/receipt.pdf", "order_receipt_pdf", "receipt_pdf"),
]
TICKETS_VALID = (OrderState.PAID, OrderState.PARTIALLY_REFUNDED)


def has_tickets(order: dict) -> bool:
    """Its tickets admit at the door: paid, with seats left."""
    return order["state"] in TICKETS_VALID and bool(order.get("lines"))


def tickets_response(order: dict, layout: str) -> HttpResponse:
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


class OrderPrintsMixin(AdminMixinBase):
    if TYPE_CHECKING:

        def _order(self, object_id) -> dict: ...  # OrderAdmin's

    """Mixed into OrderAdmin: needs ``_order`` and ``require``."""

    def print_context(self, order: dict) -> dict:
        return {"can_print_tickets": has_tickets(order), "has_receipt": bool(order.get("receiptNo"))}

    @method_decorator(require_safe)
    def order_tickets_pdf(self, request, object_id):
        self.require(request, "view")
        return tickets_response(self._order(object_id), request.GET.get("layout", ticket_pdf.PAGE))

    @method_decorator(require_safe)
    def order_receipt_pdf(self, request, object_id):
        """The receipt as numbered at payment (every paid order gets its number then)."""
        self.require(request, "view")
        order = self._order(object_id)
        if not order.get("receiptNo"):
            raise Http404(_("This order has no receipt."))
        response = HttpResponse(receipt_pdf(order), content_type="application/pdf")
        response["Content-Disposition"] = f'inline; filename="receipt-{order["ref"]}.pdf"'
        response["Cache-Control"] = "private, no-store"
        return response
