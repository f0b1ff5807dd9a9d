"""Selling at the counter and on the phone: "Sell" on a session in the admin.

The live seat map is the buyer's (``seatmap_html``, ``static/booking/site.js``) with house seats
choosable, every click goes through the buyer's hold services under the staff member's own cart
(``sales.counter.staff_owner``), and the sale through ``sales.counter.sell``. The pages are
``CounterScreens``, under SessionAdmin's URLs; the permission is ``booking.sell_at_counter``.

Every seat action answers (htmx) with the whole map, the cart and the notice: staff traffic is
small, and a map rebuilt by the server is right about house seats without any script knowing them.
"""

from datetime import timedelta

from bson import ObjectId
from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST, require_safe

from booking.control import selectors as staff_selectors
from booking.control.base import ADDITION, errors_text
from booking.control.order_prints import tickets_response
from booking.control.session_screens import SessionScreens, session_label
from booking.core import clock
from booking.core.domain import Cart, Order, OrderState, SalePhase, Session, SessionStatus, sale_phase
from booking.core.errors import BookingError, InvalidRequest
from booking.core.ids import object_id
from booking.payments import invoices, money
from booking.sales import carts as cart_service
from booking.sales import counter, holds, offers, pricing, promos, selectors
from booking.web import presenters, seatmap_html, ticket_pdf
from booking.web.errors import status_for
from booking.web.forms import BestAvailableForm, RemoveSeatForm, SeatForm

PERMISSION = "booking.sell_at_counter"
MAP_REFRESH_MS = 2000

METHOD_CHOICES = [
    (counter.CASH, gettext_lazy("Cash")),
    (counter.CARD_TERMINAL, gettext_lazy("Card terminal")),
    (counter.INVOICE, gettext_lazy("Invoice / pay later")),
    (counter.COMPLIMENTARY, gettext_lazy("Complimentary")),
]
CHANNEL_CHOICES = [(counter.BOX_OFFICE, gettext_lazy("At the counter")), (counter.PHONE, gettext_lazy("On the phone"))]


class CounterSaleForm(forms.Form):
    """Shapes the fields; ``sales.counter.clean_sale`` holds the rules (one set of them)."""

    channel = forms.ChoiceField(choices=CHANNEL_CHOICES, initial=counter.BOX_OFFICE, widget=forms.RadioSelect)
    name = forms.CharField(max_length=200, required=False, label=gettext_lazy("Customer name"))
    email = forms.CharField(max_length=300, required=False, label=gettext_lazy("E-mail (optional)"))
    phone = forms.CharField(max_length=40, required=False, label=gettext_lazy("Phone (optional)"))
    method = forms.ChoiceField(choices=METHOD_CHOICES, initial=counter.CASH, widget=forms.RadioSelect)
    due = forms.DateField(
        required=False,
        label=gettext_lazy("Invoice due on"),
        widget=forms.DateInput(attrs={"type": "date"}),
        error_messages={"invalid": gettext_lazy("Give the due date as a date.")},
    )
    reason = forms.CharField(max_length=300, required=False, label=gettext_lazy("Reason (complimentary)"))
    company = forms.CharField(max_length=300, required=False, label=gettext_lazy("Company (invoice)"))
    billing_address = forms.CharField(
        max_length=1000,
        required=False,
        label=gettext_lazy("Billing address (invoice)"),
        help_text=gettext_lazy("With an address the customer gets a numbered invoice by e-mail."),
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    buyer_vat_id = forms.CharField(max_length=40, required=False, label=gettext_lazy("Customer's VAT ID (invoice)"))
    voucher = forms.CharField(required=False, label=gettext_lazy("Gift voucher code (optional)"))
    donation = forms.CharField(
        max_length=20,
        required=False,
        label=gettext_lazy("Donation (optional)"),
        help_text=gettext_lazy("in euros, cash or card terminal; no VAT"),
    )


class CounterTicketTypeForm(RemoveSeatForm):
    ticket_type = forms.SlugField(max_length=20, error_messages={"required": gettext_lazy("Choose a ticket type.")})


def may_sell(user) -> bool:
    """Sells at the counter: which also needs to see the sessions (to pick one) and the orders (a
    customer's booking), and to record an invoice or a reservation paid at the counter."""
    return user.is_active and user.has_perm(PERMISSION)


class CounterScreens(SessionScreens):
    """ "Sell": the counter's map, cart and sale, and the order sold with its tickets. Not the
    admin's permissions but the seller's own (``may_sell``)."""

    # --- who is selling ---

    def _require_seller(self, request) -> str:
        if not may_sell(request.user):
            raise PermissionDenied
        return counter.staff_owner(request.user.pk)

    def _sale_session(self, object_id) -> Session:
        """The session as the buyer's map reads it (after the show, every seat taken)."""
        return self.document(selectors.get_session, object_id, _("No such session."))

    # --- the page and its parts ---

    def _map_context(self, session: Session, cart: Cart | None) -> dict:
        shared = seatmap_html.seat_map_html(session, house=True)
        return {
            "session": session,
            "session_id": str(session["_id"]),
            "version": session["version"],
            "map_html": shared.for_viewer(selectors.cart_seat_keys(cart, session["_id"])),
            "map_width": shared.width,
            "category_css": seatmap_html.category_css(session),
            "refresh_ms": MAP_REFRESH_MS,
            "on_sale": session.get("status") == SessionStatus.ON_SALE
            and holds.counter_sale_ends(session) > clock.now(),
        }

    def _cart_context(self, cart: Cart | None, session: Session) -> dict:
        if not cart or not cart.get("items"):
            return {"cart": None, "groups": [], "idle_minutes": settings.BOOKING_STAFF_HOLD_IDLE_SECONDS // 60}
        known = selectors.session_summaries({i["sessionId"] for i in cart["items"]} - {session["_id"]})
        known[session["_id"]] = session
        amounts = pricing.cart_totals(cart)
        return {
            "cart": cart,
            "groups": presenters.cart_groups(cart, known),
            "subtotal": amounts.subtotal,
            "discount": amounts.discount,
            "total": amounts.total,
            "seat_count": len(cart["items"]),
            "expires_at": cart["expiresAt"],
            "idle_minutes": settings.BOOKING_STAFF_HOLD_IDLE_SECONDS // 60,
        }

    def _page(self, request, session, cart, *, form=None, notice="", level="ok", status=200):
        context = {
            "title": _("Sell: %(name)s") % {"name": session["name"]},
            **self._map_context(session, cart),
            **self._cart_context(cart, session),
            "legend": seatmap_html.legend(session),
            "online_note": online_note(session),
            "seat_counts": range(1, settings.BOOKING_MAX_SEATS_PER_CART + 1),
            "form": form or CounterSaleForm(),
            "notice": notice,
            "notice_level": level,
        }
        return self.render(request, "admin/booking/session/sell.html", context, status=status)

    def sell_page(self, request, object_id):
        owner = self._require_seller(request)
        session = self._sale_session(object_id)  # an unknown id is a 404 whatever the method
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        cart = counter.current_cart(owner)
        if cart is not None:
            cart = counter.touch(owner, cart["_id"]) or cart  # opening the page is working
        return self._page(request, session, cart)

    def sell_map(self, request, object_id):
        """The live map partial (polled): ETag = version; the poll is not staff activity."""
        owner = self._require_seller(request)
        sid = self.document_id(object_id)
        version = selectors.session_version(sid)
        if version is None:
            raise Http404(_("No such session."))
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        if f'"{version}"' in request.META.get("HTTP_IF_NONE_MATCH", ""):
            response = HttpResponse(status=304)
        else:
            session = self._sale_session(object_id)
            cart = counter.current_cart(owner)
            response = TemplateResponse(
                request, "admin/booking/session/sell.html#sell-map", self._map_context(session, cart)
            )
            version = session["version"]
        response["ETag"] = f'"{version}"'
        response["Cache-Control"] = "private, no-cache"
        return response

    def _answer(self, request, session_id, cart_id=None, *, notice="", level="ok", status=200):
        """After an action: the map, the cart and the notice (htmx), or back to the page."""
        owner = counter.staff_owner(request.user.pk)
        if not request.htmx:
            if status >= 400:
                return self._page(
                    request,
                    self._sale_session(session_id),
                    counter.current_cart(owner),
                    notice=notice,
                    level="error",
                    status=status,
                )
            if notice:  # without JavaScript: shown on the page it goes back to
                (messages.error if level == "error" else messages.success)(request, notice)
            return HttpResponseRedirect(self.url("sell", session_id))
        session = self._sale_session(session_id)
        cart = counter.current_cart(owner)
        context = {
            **self._map_context(session, cart),
            **self._cart_context(cart, session),
            "notice": notice,
            "notice_level": level,
            "oob": True,
        }
        response = TemplateResponse(request, "admin/booking/session/sell.html#sell-action", context, status=status)
        response["ETag"] = f'"{session["version"]}"'
        return response

    def _seat_action(self, request, object_id, service, *args, notice=""):
        owner = self._require_seller(request)
        sid = self.document_id(object_id)
        cart = counter.current_cart(owner)
        level, status = "ok", 200
        try:
            # house seats choosable, the box office's own hours (no online sale window, no waiting
            # room), and no per-address limit on the box office's till
            service(sid, owner, cart["_id"] if cart else None, *args, context=holds.BOX_OFFICE)
        except BookingError as exc:
            notice, level = exc.message, "error"
            status = 400 if status_for(exc) == 400 else (404 if status_for(exc) == 404 else 200)
            if status == 404:
                raise Http404(exc.message) from None
        return self._answer(request, object_id, notice=notice, level=level, status=status)

    @method_decorator(require_POST)
    def sell_toggle(self, request, object_id):
        form = SeatForm(request.POST)
        if not form.is_valid():
            self._require_seller(request)
            return self._answer(request, object_id, notice=errors_text(form), level="error", status=400)
        return self._seat_action(request, object_id, holds.toggle_seat, form.cleaned_data["seat"])

    @method_decorator(require_POST)
    def sell_best(self, request, object_id):
        form = BestAvailableForm(request.POST)
        if not form.is_valid():
            self._require_seller(request)
            return self._answer(request, object_id, notice=errors_text(form), level="error", status=400)
        count = form.cleaned_data["count"]
        notice = _("%(count)d best seats are held for the customer.") % {"count": count}
        return self._seat_action(request, object_id, holds.hold_best_available, count, notice=notice)

    @method_decorator(require_POST)
    def sell_release(self, request, object_id):
        owner = self._require_seller(request)
        self._sale_session(object_id)  # an unknown session is a 404, as for every action here
        cart = counter.current_cart(owner)
        freed = cart_service.cancel_cart(cart["_id"], owner) if cart else 0
        notice = _("Released %(count)d seats.") % {"count": freed} if freed else _("Nothing was held.")
        return self._answer(request, object_id, notice=notice)

    @method_decorator(require_POST)
    def sell_ticket_type(self, request, object_id):
        owner = self._require_seller(request)
        form = CounterTicketTypeForm(request.POST)
        if not form.is_valid():
            return self._answer(request, object_id, notice=errors_text(form), level="error", status=400)
        cart = counter.current_cart(owner)
        try:
            sid = object_id_of(form.cleaned_data["session"])
            offers.choose_ticket_type(
                owner, cart["_id"] if cart else None, sid, form.cleaned_data["seat"], form.cleaned_data["ticket_type"]
            )
        except BookingError as exc:
            status = 400 if status_for(exc) in (400, 404) else 200
            return self._answer(request, object_id, notice=exc.message, level="error", status=status)
        counter.touch(owner, cart["_id"] if cart else None)
        return self._answer(request, object_id)

    @method_decorator(require_POST)
    def sell_promo(self, request, object_id):
        owner = self._require_seller(request)
        cart = counter.current_cart(owner)
        cart_id = cart["_id"] if cart else None
        try:
            if request.POST.get("remove"):
                promos.remove_code(owner, cart_id)
                notice = _("The code was taken off.")
            else:
                promos.apply_code(owner, cart_id, request.POST.get("code", "")[:100])
                notice = _("The code was applied.")
        except BookingError as exc:
            status = 400 if status_for(exc) in (400, 404) else 200
            return self._answer(request, object_id, notice=exc.message, level="error", status=status)
        counter.touch(owner, cart_id)
        return self._answer(request, object_id, notice=notice)

    @method_decorator(require_POST)
    def sell_checkout(self, request, object_id):
        owner = self._require_seller(request)
        session = self._sale_session(object_id)
        form = CounterSaleForm(request.POST)
        cart = counter.current_cart(owner)
        if form.is_valid():
            data = form.cleaned_data
            sale = counter.CounterSale(
                name=data["name"],
                method=data["method"],
                channel=data["channel"],
                email=data["email"],
                phone=data["phone"],
                due=data["due"],
                reason=data["reason"],
                voucher=data["voucher"],
                donation=data["donation"],
                by=request.user.get_username(),
                by_id=request.user.pk,
                billing=invoices.Billing(data["company"], data["billing_address"], data["buyer_vat_id"])
                if data["method"] == counter.INVOICE
                else None,
            )
            try:
                order = counter.sell(owner, cart["_id"] if cart else None, sale)
            except InvalidRequest as exc:
                for field, message in exc.details.get("fields", {}).items():
                    form.add_error(field if field in form.fields else None, message)
                if not exc.details.get("fields"):
                    form.add_error(None, exc.message)
            except BookingError as exc:
                form.add_error(None, exc.message)
                return self._page(request, session, counter.current_cart(owner), form=form, status=409)
            else:
                self.log(
                    request,
                    ADDITION,
                    session["_id"],
                    session_label(session),
                    f"Sold {len(order['lines'])} seats, order {order['ref']} ({order['method']}, {order['channel']}).",
                )
                return HttpResponseRedirect(self.url("sold", order["ref"]))
        return self._page(request, session, cart, form=form, status=400)

    # --- after the sale: the order and its tickets to print ---

    def _sold_order(self, request, ref: str) -> Order:
        self._require_seller(request)
        order = selectors.get_order_by_ref(str(ref).upper()[:20])
        if order is None or not order.get("channel"):
            raise Http404(_("No such counter sale."))
        return staff_selectors.with_id(order) or order

    @method_decorator(require_safe)
    def sold_page(self, request, ref):
        order = self._sold_order(request, ref)
        session_id = order["lines"][0]["sessionId"] if order.get("lines") else None
        return self.render(
            request,
            "admin/booking/session/sold.html",
            {
                "title": _("Booking %(ref)s") % {"ref": order["ref"]},
                "order": order,
                "tickets": presenters.order_tickets(order),
                "method_label": dict(METHOD_CHOICES).get(order["method"], order["method"]),
                "session_id": str(session_id) if session_id else "",
                # the last moment it may be paid (the hold ends at the next instant: midnight, or the start)
                "due": order["payment"]["until"] - timedelta(seconds=1)
                if order["state"] == OrderState.PENDING_PAYMENT
                else None,
                "now": timezone.now(),
                "to_take": money.amount_due(order),  # what the customer pays beside a gift voucher
            },
        )

    @method_decorator(require_safe)
    def sold_tickets_pdf(self, request, ref):
        order = self._sold_order(request, ref)
        return tickets_response(order, request.GET.get("layout", ticket_pdf.PAGE))


def online_note(session: Session) -> str:
    """Where the online sale is, when the box office sells regardless (its own hours, no queue)."""
    now = clock.now()
    if session.get("status") != SessionStatus.ON_SALE or holds.counter_sale_ends(session) <= now:
        return ""
    phase = sale_phase(session, now)
    if phase in (SalePhase.NOT_YET, SalePhase.PRESALE):
        return _("Not on sale online yet; the box office sells now.")
    if phase in (SalePhase.CLOSED, SalePhase.STARTED):
        return _("Online sales have closed; the box office sells until the performance starts.")
    if session.get("waitingRoom"):
        return _("Online buyers queue in a waiting room; the box office sells without it.")
    return ""


def object_id_of(raw: str) -> ObjectId:
    return object_id(raw, "performance")
