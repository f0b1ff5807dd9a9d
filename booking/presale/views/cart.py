"""The buyer's cart: its page, and what the buyer changes there (remove a seat, give the cart up,
choose a seat's ticket type, apply or remove a promo code).

POST /cart/ticket-type   session=<id>&seat=r:c&ticket_type=<code>   pick a held seat's ticket type
POST /cart/promo         code=<text>                                 apply a promo code / voucher
POST /cart/promo/remove                                              take the code off again

Ticket type and promo code, htmx: 200 with the cart page (the form's hx-select swaps the cart
section), the message beside the field; plain post: 302 back to the cart with the message (a bad
choice or code: 400 page).
"""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy, gettext_noop
from django.views.decorators.http import require_POST, require_safe

from booking.core.errors import BookingError
from booking.core.ids import object_id
from booking.presale.context import cart_context, current_cart, error_page, form_error
from booking.sales import carts as cart_service
from booking.sales import holds, offers, promos
from booking.web import buyer, ratelimits
from booking.web.errors import status_for
from booking.web.forms import RemoveSeatForm


@require_safe
def cart_page(request):
    cart, expired = current_cart(request)
    if expired:
        buyer.forget_cart(request)
    context = cart_context(request, cart, expired)
    if request.htmx and not request.htmx.boosted:
        return render(request, "booking/session.html#cart-summary", context)
    return render(request, "booking/cart.html", context)


@require_POST
def cart_remove(request):
    form = RemoveSeatForm(request.POST)
    if not form.is_valid():
        return error_page(request, form_error(form), 400)
    try:
        sid = object_id(form.cleaned_data["session"], "performance")
        holds.release_seats(sid, buyer.owner(request) or "", buyer.cart_id(request), [form.cleaned_data["seat"]])
        messages.success(request, gettext("The seat was removed from your cart."))
    except BookingError as exc:
        if status_for(exc) in (400, 404):
            return error_page(request, exc, status_for(exc))
        messages.error(request, exc.message)
    return redirect("booking:cart")


@require_POST
def cart_cancel(request):
    cart_id = buyer.cart_id(request)
    owner = buyer.owner(request)
    if cart_id and owner:
        outcome = cart_service.give_up_cart(cart_id=cart_id, owner=owner)
        if outcome.paying_ref:  # this browser's cart is being paid for: it stays, the payment page says so
            messages.info(
                request,
                gettext("Your payment has already begun, so nothing was canceled: your seats stay reserved for it."),
            )
            return redirect("booking:order", ref=outcome.paying_ref)
        if outcome.freed:
            messages.success(request, gettext("Your held seats were released."))
    buyer.forget_cart(request)
    return redirect("booking:whats_on")


# --- ticket types and promo codes ---


class TicketTypeForm(RemoveSeatForm):
    ticket_type = forms.SlugField(max_length=20, error_messages={"required": gettext_lazy("Choose a ticket type.")})


def _cart_answer(request, *, field_errors: dict | None = None, status: int = 200):
    cart, expired = current_cart(request)
    context = {**cart_context(request, cart, expired), "field_errors": field_errors or {}}
    return render(request, "booking/cart.html", context, status=status)


@require_POST
def choose_ticket_type(request):
    form = TicketTypeForm(request.POST)
    if not form.is_valid():
        return _cart_answer(request, field_errors={"ticket_type": gettext("Choose a ticket type.")}, status=400)
    try:
        sid = object_id(form.cleaned_data["session"], "performance")
        offers.choose_ticket_type(
            buyer.owner(request) or "",
            buyer.cart_id(request),
            sid,
            form.cleaned_data["seat"],
            form.cleaned_data["ticket_type"],
        )
    except BookingError as exc:
        key = f"{form.cleaned_data['session']}:{form.cleaned_data['seat']}"
        if request.htmx:
            return _cart_answer(request, field_errors={key: exc.message})
        messages.error(request, exc.message)
        return redirect("booking:cart")
    if request.htmx:
        return _cart_answer(request)
    return redirect("booking:cart")


TOO_MANY_PROMO_TRIES = gettext_noop("Too many code attempts from your connection. Please wait a minute and try again.")


@require_POST
def apply_promo(request):
    """Apply a promo code or voucher; counted per address (BOOKING_PROMO_CODE_RATE). Unknown and
    used-up codes get the same answer after the same reads."""
    if ratelimits.rate_exceeded(request, "booking.promo", getattr(settings, "BOOKING_PROMO_CODE_RATE", "10/m")):
        return _cart_answer(request, field_errors={"code": gettext(TOO_MANY_PROMO_TRIES)}, status=429)
    try:
        promos.apply_code(buyer.owner(request) or "", buyer.cart_id(request), request.POST.get("code", "")[:100])
    except BookingError as exc:
        return _cart_answer(request, field_errors={"code": exc.message}, status=400 if not request.htmx else 200)
    messages.success(request, gettext("The code was applied."))
    return _cart_answer(request) if request.htmx else redirect("booking:cart")


@require_POST
def remove_promo(request):
    promos.remove_code(buyer.owner(request) or "", buyer.cart_id(request))
    return _cart_answer(request) if request.htmx else redirect("booking:cart")
