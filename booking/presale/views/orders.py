"""The buyer's orders: the confirmation page with its e-tickets (the payment's return page too),
the printable tickets, the calendar entry, a ticket's QR code, and finding a booking by reference
and e-mail."""

import io

import segno
from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods, require_safe

from booking.core import clock
from booking.core.domain import Order, OrderState
from booking.notifications import wallet_pass
from booking.notifications.calendar import has_calendar_entry, order_calendar
from booking.notifications.confirmations import site_host, ticket_link
from booking.presale.context import (
    JUST_BOOKED_COOKIE,
    NO_SUCH_BOOKING,
    TOO_MANY_LOOKUPS,
    TooManyLookups,
    error_page,
    exchange_payment_due,
    payment_context,
    refresh_order,
    stripe_csp,
    too_many_lookups,
    visible_order,
)
from booking.presale.forms import FindBookingForm
from booking.sales import buyer_changes, selectors
from booking.sales.order_venues import PerformanceVenue, getting_there, venues_of_order
from booking.web import presenters, ratelimits
from booking.web.order_history import order_history


def _order_context(order: Order, request=None) -> dict:
    # its payment (state, card form, receipt, refunds) and history (booked, paid, moved, canceled, mailed)
    venues = venues_of_order(order)
    tickets = presenters.order_tickets(order, venues=venues)
    context = {
        **payment_context(request, order),
        "order": order,
        "tickets": tickets,
        "history": order_history(order),
        "getting_there": getting_there(order, venues=venues),
        "calendar": has_calendar_entry(order),
        "changes": buyer_changes.change_options(order=order, now=clock.now()),  # what the buyer may change
        "exchange_fees": buyer_changes.exchange_fees(order),
        "cancel_reason": gettext(order["cancelReason"]) if order.get("cancelReason") else "",  # stored in English
    }
    return {**context, **exchange_payment_due(order)}  # a dearer exchange the customer pays online


def order_or_refusal(request, ref: str) -> tuple[Order | None, HttpResponse | None]:
    """The order this visitor may see, or the page saying why not (too many lookups, no such one)."""
    try:
        order = visible_order(request, ref)
    except TooManyLookups:
        return None, too_many_lookups(request)
    if order is None:
        return None, error_page(request, gettext(NO_SUCH_BOOKING), 404)
    return order, None


@require_safe
def order_page(request, ref):
    order, refused = order_or_refusal(request, ref)
    if order is None:
        return refused
    order = refresh_order(order)  # this is the payment's return page too
    just_booked = request.get_signed_cookie(JUST_BOOKED_COOKIE, default="", salt=JUST_BOOKED_COOKIE, max_age=600)
    context = {**_order_context(order, request), "just_booked": just_booked == order["ref"]}
    response = stripe_csp(render(request, "booking/order.html", context), context)
    if just_booked and order["state"] != OrderState.PENDING_PAYMENT:  # read once it is paid (or ended)
        response.delete_cookie(JUST_BOOKED_COOKIE, samesite="Lax")
    return response


@require_safe
def order_tickets(request, ref):
    order, refused = order_or_refusal(request, ref)
    if order is None:
        return refused
    return render(request, "booking/tickets.html", _order_context(order))


@require_safe
def order_calendar_file(request, ref):
    """The booking as a calendar file: its performances with place, seats and the way back here."""
    order, refused = order_or_refusal(request, ref)
    if order is None:
        return refused
    if not has_calendar_entry(order):
        return error_page(request, gettext("This booking has no seats, so there is nothing to put in a calendar."), 404)
    body = order_calendar(
        order=order,
        venues=venues_of_order(order),
        order_url=ticket_link(order),
        host=site_host(),
    )
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="booking-{order["ref"]}.ics"'
    response["Cache-Control"] = "private, no-store"
    return response


def pass_identity() -> wallet_pass.PassIdentity:
    """Who the wallet passes are from and who signs them (settings)."""
    signer = wallet_pass.load_signer(
        certificate=settings.BOOKING_WALLET_CERTIFICATE,
        key=settings.BOOKING_WALLET_KEY,
        key_password=settings.BOOKING_WALLET_KEY_PASSWORD,
        wwdr=settings.BOOKING_WALLET_WWDR_CERTIFICATE,
        dev_dir=settings.BOOKING_WALLET_DEV_DIR,
    )
    return wallet_pass.PassIdentity(
        pass_type_id=settings.BOOKING_WALLET_PASS_TYPE_ID,
        team_id=settings.BOOKING_WALLET_TEAM_ID,
        organization=settings.BOOKING_WALLET_ORGANIZATION,
        signer=signer,
    )


@require_safe
def ticket_wallet_pass(request, ref, code):
    """One ticket of the booking as an Apple Wallet pass (same access as the booking)."""
    order, refused = order_or_refusal(request, ref)
    if order is None:
        return refused
    if not wallet_pass.is_valid_ticket(order, code):
        return error_page(request, gettext("This booking has no such ticket."), 404)
    line = next(line for line in order["lines"] if line["ticket"] == code)
    venue = venues_of_order(order).get(line["sessionId"], PerformanceVenue(end=None, address=None))
    body = wallet_pass.build_pass(
        order=order, code=code, venue=venue, identity=pass_identity(), order_url=ticket_link(order)
    )
    response = HttpResponse(body, content_type=wallet_pass.CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="ticket-{code}.pkpass"'
    response["Cache-Control"] = "private, no-store"
    return response


@require_safe
def ticket_qr(request, code):
    """The QR code of a ticket code. It encodes only what the URL already says, so it needs no
    lookup; the code itself is the secret and is only shown to the order's owner."""
    svg = io.BytesIO()
    segno.make(code, error="m").save(svg, kind="svg", scale=4, border=2, xmldecl=False)
    response = HttpResponse(svg.getvalue(), content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=86400"
    return response


@require_http_methods(["GET", "HEAD", "POST"])
def find_booking(request):
    form = FindBookingForm(request.POST if request.method == "POST" else None)  # a POST without fields too
    status = 200
    if request.method == "POST":
        if ratelimits.lookup_rate_exceeded(request):
            form.is_valid()
            form.add_error(None, gettext(TOO_MANY_LOOKUPS))
            response = render(request, "booking/find_booking.html", {"form": form}, status=429)
            response["Retry-After"] = "60"
            return response
        if form.is_valid():
            order = selectors.find_order(form.cleaned_data["ref"], form.cleaned_data["email"])
            if order is not None:
                found = request.session.get("found_orders", [])
                request.session["found_orders"] = [*found[-19:], order["ref"]]
                return redirect("booking:order", ref=order["ref"])
            form.add_error(None, gettext("No booking matches that reference and e-mail address."))
        status = 400
    return render(request, "booking/find_booking.html", {"form": form}, status=status)
