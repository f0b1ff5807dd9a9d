"""The buyer's offer endpoints, beside the cart's in pages.py:

POST /cart/ticket-type   session=<id>&seat=r:c&ticket_type=<code>   pick a held seat's ticket type
POST /cart/promo         code=<text>                                 apply a promo code / voucher
POST /cart/promo/remove                                              take the code off again

htmx: 200 with the cart page (the form's hx-select swaps the cart section), the message beside
the field; plain post: 302 back to the cart with the message (a bad choice or code: 400 page).
"""

from django import forms
from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy, gettext_noop
from django.views.decorators.http import require_POST

from booking.core.errors import BookingError
from booking.core.ids import object_id
from booking.presale.forms import RemoveSeatForm
from booking.sales import offers
from booking.web import buyer


class TicketTypeForm(RemoveSeatForm):
    ticket_type = forms.SlugField(max_length=20, error_messages={"required": gettext_lazy("Choose a ticket type.")})


def _cart_answer(request, *, field_errors: dict | None = None, status: int = 200):
    from booking.presale.views.pages import (  # the cart page's own context (views imports urls' modules)
        _cart_context,
        _current_cart,
    )

    cart, expired = _current_cart(request)
    context = {**_cart_context(request, cart, expired), "field_errors": field_errors or {}}
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
    from django.conf import settings

    from booking.sales import promos
    from booking.web import ratelimits

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
    from booking.sales import promos

    promos.remove_code(buyer.owner(request) or "", buyer.cart_id(request))
    return _cart_answer(request) if request.htmx else redirect("booking:cart")
