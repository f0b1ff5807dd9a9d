"""Orders in the admin: search by reference, e-mail or name; detail with seats and tickets;
cancel (seats become free again); re-send the confirmation mail."""

from django.contrib import messages
from django.http import Http404, HttpResponseBadRequest, HttpResponseRedirect
from django.utils.decorators import method_decorator
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods, require_POST

from .. import admin_forms as f
from ..errors import BookingError
from ..localized import order_state_label
from ..services import notifications
from ..services import orders as order_service
from . import order_filters, selectors
from .base import CHANGE, MongoModelAdmin, bound
from .order_changes import ROUTES as CHANGE_ROUTES
from .order_changes import OrderChangesMixin
from .order_payments import ROUTES as PAYMENT_ROUTES
from .order_payments import OrderPaymentsMixin
from .order_prints import ROUTES as PRINT_ROUTES
from .order_prints import OrderPrintsMixin


def staff_name(user) -> str:
    """Who canceled, as kept on the order: the login name and the staff member's e-mail."""
    name = user.get_username()
    return f"{name} <{user.email}>" if user.email else name


class OrderAdmin(OrderChangesMixin, OrderPaymentsMixin, OrderPrintsMixin, MongoModelAdmin):
    routes = [
        ("", "order_list", "changelist"),
        ("<str:object_id>/change/", "order_detail", "change"),
        ("<str:object_id>/resend-mail/", "order_resend_mail", "resend_mail"),
        *PAYMENT_ROUTES,  # refund tickets, retry a refund, paid at the box office
        *CHANGE_ROUTES,  # move tickets to other seats (exchange)
        *PRINT_ROUTES,  # its tickets and receipt as PDFs
    ]

    def has_add_permission(self, request):
        return False  # orders come from checkout only

    def has_delete_permission(self, request, obj=None):
        return False  # an order is canceled, never deleted: it is the receipt

    def order_list(self, request):
        """Search and filter (staff/order_filters.py); a booking reference typed alone opens its order."""
        self.require(request, "view")
        form = order_filters.OrderFilterForm(request.GET or None)
        valid = form.is_valid() if form.is_bound else True
        data = form.cleaned_data if form.is_bound and valid else {}
        if data.get("q") and not form.filtering():
            found = order_filters.order_by_ref(data["q"])
            if found is not None:
                return HttpResponseRedirect(self.url("change", found["_id"]))
        orders = order_filters.filter_orders(data) if valid else []
        for order in orders:
            order["seatCount"] = len(order.get("lines", []))
            order["channel"] = order_filters.channel_of(order)
        searched = bool(data.get("q")) or (form.is_bound and valid and form.filtering())
        return self.render(
            request,
            "admin/booking/order/list.html",
            {
                "title": gettext("Orders"),
                "form": form,
                "orders": orders,
                "searched": searched,
                "limit": selectors.STAFF_LIST_LIMIT,
            },
            status=200 if valid else 400,
        )

    def _order(self, object_id) -> dict:
        order = selectors.get_order(self.document_id(object_id))
        if order is None:
            raise Http404("No such order.")
        return order

    @method_decorator(require_POST)
    def order_resend_mail(self, request, object_id):
        """Re-send the confirmation mail (queued for the worker), if it is still in the round the
        page showed; a pending mail is left to the worker."""
        self.require(request, "change")
        order = self._order(object_id)
        form = f.ResendMailForm(request.POST)
        if not form.is_valid():
            return HttpResponseBadRequest("The form was incomplete; reload the order page.")
        done = notifications.resend(order, form.cleaned_data["round"], send_now=False)
        if done.reopened:
            note = f"Confirmation mail re-sent to {order['email']}."
            self.log(request, CHANGE, order["_id"], f"Order {order['ref']}", note)
        getattr(messages, done.level)(request, done.message)
        return HttpResponseRedirect(self.url("change", order["_id"]))

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def order_detail(self, request, object_id):
        """The order; POST cancels it (needs the change permission)."""
        self.require(request, "view")
        order = self._order(object_id)
        form = f.CancelOrderForm(bound(request))
        status = 200
        if request.method == "POST":
            self.require(request, "change")
            status = 400
            if form.is_valid():
                try:
                    canceled = order_service.cancel_order(
                        order["_id"], by=staff_name(request.user), reason=form.cleaned_data["reason"]
                    )
                except BookingError as exc:
                    status = 409
                    form.add_error(None, exc.message)
                else:
                    seats = len(canceled["lines"] or canceled.get("refundedLines", []))
                    refunded = canceled["state"] == "refunded"  # paid through a provider: money back
                    what = "Canceled and refunded" if refunded else "Canceled"
                    self.log(
                        request,
                        CHANGE,
                        order["_id"],
                        f"Order {order['ref']}",
                        f"{what} ({seats} seats free again): {form.cleaned_data['reason']}",
                    )
                    if refunded:
                        text = gettext("Order %(ref)s was canceled and refunded; its %(seats)s seats are free again.")
                    else:
                        text = gettext("Order %(ref)s was canceled; its %(seats)s seats are free again.")
                    messages.success(request, text % {"ref": order["ref"], "seats": seats})
                    return HttpResponseRedirect(self.url("change", order["_id"]))
        sessions = {s["_id"]: s for s in order.get("sessions", [])}
        lines = [
            {
                **line,
                "session": sessions.get(line["sessionId"], {}),
                "sessionId": str(line["sessionId"]),
                "category": sessions.get(line["sessionId"], {}).get("categories", {}).get(line["cat"], line["cat"]),
            }
            for line in order["lines"]
        ]
        return self.render(
            request,
            "admin/booking/order/detail.html",
            {
                "title": gettext("Order %(ref)s") % {"ref": order["ref"]},
                "order": order,
                "state_label": order_state_label(order["state"]),  # "Partly refunded", not partially_refunded
                "lines": lines,
                "form": form,
                "cart_id": str(order["cartId"]),
                **self.payment_context(request, order),
                **self.print_context(order),  # tickets and receipt to print (staff/order_prints.py)
                **self.history_context(order),  # what happened to it; exchange (staff/order_changes.py)
            },
            status=status,
        )
