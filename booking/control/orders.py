"""Orders in the admin: search by reference, e-mail or name; detail with seats and tickets;
cancel (a page that says what it does, then confirmed: seats free again, money back, the customer
told); re-send the confirmation mail.

``OrderAdmin.routes`` is every URL under /admin/booking/order/ with the class and method that
answers it; each group of pages is an ``OrderScreens`` class (control/order_screens.py) in the
module of its subject."""

from collections.abc import Mapping
from typing import Any

from bson import ObjectId
from django.contrib import messages
from django.core import signing
from django.http import HttpResponse, HttpResponseBadRequest, HttpResponseRedirect, StreamingHttpResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, gettext_noop
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from booking.control import forms as f
from booking.control import order_filters
from booking.control.base import CHANGE, MongoModelAdmin, Screens, bound, errors_text, route, staff_name
from booking.control.counter import may_sell
from booking.control.order_changes import ExchangeScreens, history_context, performance_line
from booking.control.order_payments import OrderPaymentScreens, may_take_payment, payment_context
from booking.control.order_prints import OrderPrintScreens, print_context
from booking.control.order_screens import OrderScreens, order_label
from booking.core import clock
from booking.core.domain import Order, OrderState
from booking.core.errors import BookingError, InvalidRequest
from booking.core.formatting import seat_label
from booking.core.localized import order_category, order_state_label, sold_ticket_type, ticket_type_name
from booking.notifications import confirmations as notifications
from booking.payments import refunds as refund_service
from booking.payments.money import format_money
from booking.reports import order_exports
from booking.sales import cancels, customer_edits, order_search
from booking.sales import orders as order_service

ORDER_PAGE_SIZE = 50
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def order_row(order: Order) -> dict:
    """A list row: the order with its performances (title, start) and seats, its channel."""
    sessions: dict[ObjectId, Mapping[str, Any]] = {s["_id"]: s for s in order.get("sessions", [])}
    seats: dict = {}
    for line in order.get("lines", []):
        seats.setdefault(line["sessionId"], []).append(seat_label(line["row"], line["seat"]))
    performances = [
        {"name": sessions.get(sid, {}).get("name") or "", "start": sessions.get(sid, {}).get("start"), "seats": labels}
        for sid, labels in seats.items()
    ]
    return {
        **order,
        "performances": performances,
        "seatCount": len(order.get("lines", [])),
        "channel": order_filters.channel_of(order),
        "id": str(order["_id"]),
    }


def export_name(extension: str) -> str:
    return f"orders-{timezone.localtime(clock.now()):%Y-%m-%d-%H%M}.{extension}"


def page_query(params, cursor: str | None) -> str | None:
    """The list's query string with this page cursor (None: no such page)."""
    if cursor is None:
        return None
    query = params.copy()
    query["cursor"] = cursor
    return query.urlencode()


class OrderListScreens(Screens):
    """The list of orders, searched and filtered, and its downloads."""

    def order_list(self, request):
        """Search and filter (control/order_filters.py, sales/order_search.py), a page at a time by
        cursor; a booking reference typed alone opens its order."""
        self.require(request, "view")
        params = request.GET.copy()
        cursor = params.pop("cursor", [""])[-1]
        form = order_filters.OrderFilterForm(params)  # bound: no filter is a valid form too
        valid = form.is_valid()
        data = form.cleaned_data if valid else {}
        if data.get("q") and not form.filtering() and not cursor:
            found = order_filters.order_by_ref(data["q"])
            if found is not None:
                return HttpResponseRedirect(self.url("change", found["_id"]))
        page = order_search.OrderPage(orders=[], next_cursor=None)
        status = 200 if valid else 400
        if valid:
            filters = form.filters()
            try:
                page = order_search.search_orders(filters=filters, cursor=cursor or None, limit=ORDER_PAGE_SIZE)
            except order_search.InvalidCursor:
                form.add_error(None, gettext("That page link is not valid; here is the first page."))
                page = order_search.search_orders(filters=filters, limit=ORDER_PAGE_SIZE)
                status = 400
        rows = [order_row(order) for order in page.orders]
        searched = bool(data.get("q")) or (valid and form.filtering())
        return self.render(
            request,
            "admin/booking/order/list.html",
            {
                "title": gettext("Orders"),
                "form": form,
                "orders": rows,
                "searched": searched,
                "next_query": page_query(params, page.next_cursor),
                "previous_query": page_query(params, page.previous_cursor),
                "export_query": params.urlencode(),
            },
            status=status,
        )

    def _export_filters(self, request) -> order_search.OrderFilters | None:
        """The list's filters from the query string (None: they are not valid)."""
        self.require(request, "view")
        params = request.GET.copy()
        params.pop("cursor", None)  # the export is every page
        form = order_filters.OrderFilterForm(params)
        return form.filters() if form.is_valid() else None

    @method_decorator(require_safe)
    def order_export_csv(self, request):
        """Exactly what the list's filters find, every page, as CSV (streamed as it is read)."""
        filters = self._export_filters(request)
        if filters is None:
            return HttpResponseBadRequest(gettext("The filters are not valid; correct them on the order list."))
        content_type = "text/csv; charset=utf-8"
        if request.method == "HEAD":  # the headers alone: no walk over every order for a body never sent
            response: HttpResponse | StreamingHttpResponse = HttpResponse(content_type=content_type)
        else:
            response = StreamingHttpResponse(order_exports.csv_chunks(filters), content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{export_name("csv")}"'
        return response

    @method_decorator(require_safe)
    def order_export_xlsx(self, request):
        """The same as XLSX."""
        filters = self._export_filters(request)
        if filters is None:
            return HttpResponseBadRequest(gettext("The filters are not valid; correct them on the order list."))
        response = HttpResponse(order_exports.xlsx_bytes(filters), content_type=XLSX)
        response["Content-Disposition"] = f'attachment; filename="{export_name("xlsx")}"'
        return response


class OrderPageScreens(OrderScreens):
    """One order: its page, canceled, its customer corrected, its mail sent again."""

    @method_decorator(require_POST)
    def order_resend_mail(self, request, object_id):
        """Re-send the confirmation mail (queued for the worker), if it is still in the round the
        page showed; a pending mail is left to the worker."""
        order = self.order(request, object_id, "change")
        form = f.ResendMailForm(request.POST)
        if not form.is_valid():
            return HttpResponseBadRequest(gettext("The form was incomplete; reload the order page."))
        done = notifications.resend(order, form.cleaned_data["round"], send_now=False)
        if done.reopened:
            note = f"Confirmation mail re-sent to {order['email']}."
            self.log(request, CHANGE, order["_id"], order_label(order), note)
        getattr(messages, done.level)(request, done.message)
        return HttpResponseRedirect(self.url("change", order["_id"]))

    @method_decorator(require_POST)
    def order_customer(self, request, object_id):
        """Correct the customer's name and e-mail (as the page showed them: a change since is
        refused); logged; the confirmation mail sent again to the new address if asked."""
        order = self.order(request, object_id, "change")
        back = self.url("change", order["_id"])
        form = f.CustomerForm(request.POST)
        if not form.is_valid():
            return self.refused_page(request, errors_text(form), back)
        data = form.cleaned_data
        try:
            changed, did = customer_edits.change_customer(
                order["_id"],
                name=data["name"],
                email=data["email"],
                seen_name=data["seen_name"],
                seen_email=data["seen_email"],
                by=staff_name(request.user),
            )
        except InvalidRequest as exc:
            return self.refused_page(request, exc.message, back)
        except BookingError as exc:
            return self.refused_page(request, exc.message, back, status=409)
        if not did:
            messages.info(request, gettext("Nothing changed."))
            return HttpResponseRedirect(back)
        before, after = f"{data['seen_name']} <{data['seen_email']}>", f"{changed['name']} <{changed['email']}>"
        note = f"Customer corrected: {before} -> {after}"
        self.log(request, CHANGE, order["_id"], order_label(order), note)
        messages.success(request, gettext("The customer's name and e-mail are saved."))
        if data["resend"] and changed.get("email"):
            done = notifications.resend(changed, changed.get("mailRound") or 0, send_now=False)
            getattr(messages, done.level)(request, done.message)
        return HttpResponseRedirect(back)

    @method_decorator(require_safe)
    def order_detail(self, request, object_id):
        """The order; canceling it is its own page (``order_cancel``), confirmed there."""
        order = self.order(request, object_id)
        sessions = {s["_id"]: s for s in order.get("sessions", [])}
        lines = [
            {
                **line,
                "session": sessions.get(line["sessionId"], {}),
                "sessionId": str(line["sessionId"]),
                "category": order_category(sessions.get(line["sessionId"], {}), line["cat"]),
                "ticket_type": ticket_type_name(sold_ticket_type(line)),  # in the staff member's language
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
                "can_cancel": order["state"] in order_service.CANCELABLE,
                "cart_id": str(order["cartId"]),
                **payment_context(order, takes_payment=may_take_payment(self.admin, request)),
                **print_context(order),  # tickets and receipt to print (control/order_prints.py)
                **history_context(order),  # what happened to it; exchange (control/order_changes.py)
                "sent_mails": list(reversed(order.get("sentMails", []))),  # newest first, with their text
            },
        )

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def order_cancel(self, request, object_id):
        """GET: what canceling would do (the seats freed, the money back and where to, the mail);
        its form carries a token of what was shown. POST with that token does it, if the order
        is still as shown; without it nothing changes."""
        order = self.order(request, object_id, "change")
        form = f.CancelOrderForm(bound(request))
        status = 200
        if request.method == "POST":
            status = 400
            seen = confirmed_fingerprint(form.data.get("confirmation", ""), order)
            if form.is_valid() and seen is None:
                form.add_error(None, gettext(NOT_CONFIRMED))
            elif form.is_valid() and seen is not None:
                try:
                    canceled = cancels.cancel_order(
                        order["_id"], by=staff_name(request.user), reason=form.cleaned_data["reason"], confirmed=seen
                    )
                except BookingError as exc:
                    status = 409
                    form.add_error(None, exc.message)
                    order = self.order_named(object_id)  # what canceling would do now
                else:
                    return self._canceled(request, order, canceled, form.cleaned_data["reason"])
        error = ""
        try:
            outcome = refund_service.cancel_outcome(order)
        except BookingError as exc:
            outcome, status = None, 409
            error = "" if exc.message in form.non_field_errors() else exc.message
        return self.render(
            request,
            "admin/booking/order/cancel.html",
            {
                "title": gettext("Cancel order %(ref)s") % {"ref": order["ref"]},
                "order": order,
                "form": form,
                "error": error,
                **(cancel_view(order, outcome) if outcome else {}),
            },
            status=status,
        )

    def _canceled(self, request, order: Order, canceled: Order, reason: str):
        seats = len(canceled["lines"] or canceled.get("refundedLines", []))
        refunded = canceled["state"] == OrderState.REFUNDED  # paid through a provider: money back
        what = "Canceled and refunded" if refunded else "Canceled"
        if refunded:
            text = gettext("Order %(ref)s was canceled and refunded; its %(seats)s seats are free again.")
        else:
            text = gettext("Order %(ref)s was canceled; its %(seats)s seats are free again.")
        return self.order_saved(
            request,
            order,
            note=f"{what} ({seats} seats free again): {reason}",
            shown=text % {"ref": order["ref"], "seats": seats},
            to=self.url("change", order["_id"]),
        )


class OrderAdmin(MongoModelAdmin):
    """/admin/booking/order/: each URL, the class and method that answer it, and its name (the
    URL names are ``admin:booking_order_<name>``)."""

    routes = [
        route("", OrderListScreens.order_list, "changelist"),
        route("export.csv", OrderListScreens.order_export_csv, "export_csv"),
        route("export.xlsx", OrderListScreens.order_export_xlsx, "export_xlsx"),
        route("<str:object_id>/change/", OrderPageScreens.order_detail, "change"),
        route("<str:object_id>/cancel/", OrderPageScreens.order_cancel, "cancel"),
        route("<str:object_id>/resend-mail/", OrderPageScreens.order_resend_mail, "resend_mail"),
        route("<str:object_id>/customer/", OrderPageScreens.order_customer, "customer"),
        route("<str:object_id>/refund/", OrderPaymentScreens.order_refund, "refund"),
        route("<str:object_id>/retry-refund/", OrderPaymentScreens.order_retry_refund, "retry_refund"),
        route("<str:object_id>/mark-paid/", OrderPaymentScreens.order_mark_paid, "mark_paid"),
        route("<str:object_id>/exchange/", ExchangeScreens.order_exchange, "exchange"),
        route("<str:object_id>/exchange/call-off/", ExchangeScreens.order_exchange_call_off, "exchange_call_off"),
        route("<str:object_id>/tickets.pdf", OrderPrintScreens.order_tickets_pdf, "tickets_pdf"),
        route("<str:object_id>/receipt.pdf", OrderPrintScreens.order_receipt_pdf, "receipt_pdf"),
        route("<str:object_id>/invoice.pdf", OrderPrintScreens.order_invoice_pdf, "invoice_pdf"),
        route(
            "<str:object_id>/credit-notes/<int:number>.pdf", OrderPrintScreens.order_credit_note_pdf, "credit_note_pdf"
        ),
    ]

    def has_view_permission(self, request, obj=None):
        # the box office looks up a customer's booking and prints a counter sale's order
        return super().has_view_permission(request, obj) or may_sell(request.user)

    def has_add_permission(self, request):
        return False  # orders come from checkout only

    def has_delete_permission(self, request, obj=None):
        return False  # an order is canceled, never deleted: it is the receipt


CANCEL_SALT = "booking.control.cancel-order"
NOT_CONFIRMED = gettext_noop("Open the cancellation page of this order and confirm there; nothing was changed.")


def confirmation_token(order: Order, fingerprint: str) -> str:
    """The cancellation page's token: this order, as it was shown (signed with SECRET_KEY)."""
    return signing.dumps({"order": str(order["_id"]), "seen": fingerprint}, salt=CANCEL_SALT)


def confirmed_fingerprint(token: str, order: Order) -> str | None:
    """The fingerprint a genuine token of this order's cancellation page carries, else None."""
    try:
        data = signing.loads(token, salt=CANCEL_SALT)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or data.get("order") != str(order["_id"]) or not isinstance(data.get("seen"), str):
        return None
    return data["seen"]


def refund_sentence(part: dict, currency: str) -> str:
    amount = format_money(part["amount"], currency)
    if part["amount"] <= 0:
        return gettext("Nothing is refunded: the tickets were free.")
    if part["online"]:
        return gettext("%(amount)s goes back to the card it was paid with (%(provider)s).") % {
            "amount": amount,
            "provider": part["provider"],
        }
    if part["means"] == "cash":
        return gettext("%(amount)s is paid back in cash at the counter: hand it to the customer.") % {"amount": amount}
    if part["means"] == "card_terminal":
        return gettext("%(amount)s is paid back on the card terminal at the counter.") % {"amount": amount}
    return gettext("%(amount)s is paid back at the counter.") % {"amount": amount}


def cancel_view(order: Order, outcome: refund_service.CancelOutcome) -> dict:
    """The confirmation page's facts, as sentences and rows."""
    sessions = {s["_id"]: s for s in order.get("sessions", [])}
    currency = order.get("currency", "")
    return {
        "seats": [
            {
                "performance": performance_line(sessions.get(line["sessionId"], {})),
                "seat": seat_label(line["row"], line["seat"]),
                "price": format_money(line["price"] - line.get("discount", 0), currency),
            }
            for line in outcome.seats
        ],
        "refunds": [refund_sentence(part, currency) for part in outcome.refunds],
        "refund_total": format_money(sum(part["amount"] for part in outcome.refunds), currency),
        "refunded": sum(part["amount"] for part in outcome.refunds) > 0,
        "ends_reservation": outcome.ends_reservation,
        "mail_to": outcome.mail_to,
        "confirmation": confirmation_token(order, outcome.fingerprint),
    }
