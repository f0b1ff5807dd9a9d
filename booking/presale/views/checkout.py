"""The checkout: the buyer's details and how to pay, then the card form on the same page.

GET  /checkout/    details and how to pay (card, or the box office when every performance offers
                   it), the total with VAT, the countdown
POST /checkout/    name, email, method, voucher (a gift voucher's code, optional), donation (a suggested
                   amount, or "other" and donation_other: the amount typed) -> the order waits
                   for its payment (a voucher that pays all: the order is paid at once). htmx: the card form in
                   place of the details (same page); a box-office reservation, or a plain post,
                   goes to the order's page

Card payment needs JavaScript (Stripe's card form is JavaScript by Stripe's rule); without it the
card choice is disabled with a note and the box office still works. Paying is views/payment.py.
"""

from collections.abc import Mapping
from typing import Any

from bson import ObjectId
from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, gettext_noop
from django.views.decorators.http import require_http_methods

from booking import payments
from booking.accounts import buyers
from booking.core.domain import Cart, CartState, Order, OrderState, Session
from booking.core.errors import BookingError, CartExpired, CheckoutFailed, InvalidRequest, NotFound
from booking.core.localized import localized
from booking.payments import donations, money
from booking.payments import flow as payment_service
from booking.presale.context import (
    JUST_BOOKED_COOKIE,
    cart_context,
    current_cart,
    payment_context,
    stripe_csp,
    stripe_timing,
)
from booking.presale.forms import CheckoutForm
from booking.sales import pricing, selectors
from booking.web import buyer, ratelimits


def quote(cart: Cart, sessions: list[Session]) -> dict:
    """The total of a cart as the order will charge it: tickets (less a promo code), booking fee,
    VAT per rate."""
    items = cart["items"]
    amounts = pricing.cart_totals(cart)
    theaters = payment_service.theaters_of(sessions)
    by_id: dict[ObjectId, Mapping[str, Any]] = {s["_id"]: s for s in sessions}
    pairs = [
        (i["price"] - off, money.ticket_rate(theaters.get(by_id.get(i["sessionId"], {}).get("theaterId")), i["cat"]))
        for i, off in zip(items, amounts.line_discounts, strict=True)
    ]
    fee, fee_rate = money.booking_fee()
    if fee:
        pairs.append((fee, fee_rate))
    return {
        "tickets": amounts.subtotal,
        "discount": amounts.discount,
        "fee": fee,
        "total": amounts.total + fee,
        "vat": money.breakdown(pairs),
    }


class PaymentMethodForm(CheckoutForm):
    method = forms.ChoiceField(
        choices=[(payments.CARD, "Card"), (payments.BOX_OFFICE, "Pay at the box office")], required=False
    )
    voucher = forms.CharField(required=False, strip=True)  # the engine says what a code is
    donation = forms.CharField(required=False, strip=True)  # and what a donation may be
    donation_other = forms.CharField(required=False, strip=True)


OTHER_AMOUNT = "other"


def donation_typed(form) -> str:
    """The donation as the buyer chose it: a suggested amount, or the amount they typed."""
    chosen = str(form.data.get("donation", "") or "")
    return str(form.data.get("donation_other", "") or "") if chosen == OTHER_AMOUNT else chosen


def donation_context(sessions: list[Session], form) -> dict:
    """The theater's donation offer as the checkout shows it: its appeal in the page's language,
    its suggested amounts (as the form sends them) and whether any amount may be typed."""
    offer = payment_service.donation_offer(sessions)
    if offer is None:
        return {"donation_offer": None}
    suggested = [(donations.amount_text(cents), cents) for cents in offer["suggested"]]
    return {
        "donation_offer": {
            "appeal": localized(offer, "appeal"),
            "suggested": suggested,
            "free": bool(offer.get("free")),
            "chosen": str(form["donation"].value() or "") if form.is_bound else "",
            "other": str(form["donation_other"].value() or "") if form.is_bound else "",
        }
    }


def _paying_order(request) -> Order | None:
    """The order this browser is paying for right now (its cart moved to paying), if any."""
    owner, cart_id = buyer.owner(request), buyer.cart_id(request)
    cart = selectors.get_cart(owner, cart_id) if owner else None
    if cart is None or cart["state"] != CartState.PAYING:
        return None
    return selectors.get_order_for_cart(cart["_id"])


def _details_context(request, cart: Cart, form) -> dict:
    sessions = payment_service.cart_sessions(cart)
    methods = payment_service.methods_for(cart, sessions)
    return {
        **cart_context(request, cart, False),
        "form": form,
        "quote": quote(cart, sessions),
        "card_available": methods[payments.CARD],
        "box_office_until": methods[payments.BOX_OFFICE],
        # Without JavaScript the card choice is off, so the box office is the default when offered
        # (pay.js prefers the card once it has switched it on).
        "method": form["method"].value()
        if form.is_bound
        else ("box_office" if methods[payments.BOX_OFFICE] else "card"),
        "stripe_js": settings.STRIPE_JS_URL if methods[payments.CARD] else "",
        **donation_context(sessions, form),
    }


@require_http_methods(["GET", "HEAD", "POST"])
@stripe_timing
def checkout(request):
    if request.method != "POST":
        cart, _expired = current_cart(request)
        if cart is None or not cart["items"]:
            paying = _paying_order(request)
            if paying is not None:
                context = payment_context(request, paying)
                return stripe_csp(render(request, "booking/checkout_pay.html", context), context)
            return redirect("booking:cart")
        signed_in = buyers.buyer_email(request.user)  # a signed-in buyer books with their address
        context = _details_context(request, cart, PaymentMethodForm(initial={"email": signed_in or ""}))
        return stripe_csp(render(request, "booking/checkout.html", context), context)
    form = PaymentMethodForm(request.POST)
    form.is_valid()  # shapes only; the engine's checkout holds the rules
    owner = buyer.owner(request)
    method = form.cleaned_data.get("method") or payments.CARD
    refused = None
    if owner is not None and method == payments.BOX_OFFICE:  # it mails the address given, at once
        refused = ratelimits.reservation_mail_refused(request, form.cleaned_data.get("email", ""))
    try:
        if owner is None:
            raise NotFound(gettext("You have no seats on hold."))
        if refused is not None:
            message = gettext(TOO_MANY_RESERVATION_MAILS[refused[0]])
            raise InvalidRequest(message, fields={"method": message})
        order = payment_service.start(
            owner,
            buyer.cart_id(request),
            form.cleaned_data.get("name", ""),
            form.cleaned_data.get("email", ""),
            method,
            voucher_code=form.data.get("voucher", ""),
            donation=donation_typed(form),
        )
    except InvalidRequest as exc:
        for field, message in (exc.details.get("fields") or {"__all__": exc.message}).items():
            form.add_error(field if field in form.fields else None, message)
        # the cart is read only for the form shown again: a submit that works reads it once, in start()
        cart, _expired = current_cart(request)
        if cart is None:
            return redirect("booking:cart")
        status = 200 if request.htmx else 429 if refused else 400  # htmx swaps only 2xx answers: the form
        context = _details_context(request, cart, form)  # with its errors
        response = render(request, "booking/checkout.html", context, status=status)
        if refused is not None:
            response["Retry-After"] = str(refused[1])
        return stripe_csp(response, context)
    except BookingError as exc:
        messages.error(request, exc.message)
        if isinstance(exc, CartExpired | CheckoutFailed):
            buyer.forget_cart(request)
        return _go(request, reverse("booking:cart"))
    if order["state"] != OrderState.PENDING_PAYMENT or order.get("method") != payments.CARD:
        buyer.forget_cart(request)
        response = _go(request, reverse("booking:order", args=[order["ref"]]))
    elif request.htmx:  # the page that asked has Stripe.js (and its policy) already
        response = render(request, "booking/_payment.html", payment_context(request, order))
    else:
        response = redirect("booking:order", ref=order["ref"])
    return _just_booked(response, order)


TOO_MANY_RESERVATION_MAILS = {
    ratelimits.BY_ADDRESS: gettext_noop(
        "Too many reservations were mailed from your connection recently. Please pay by card, or try again later."
    ),
    ratelimits.BY_EMAIL: gettext_noop(
        "Too many reservations were mailed to this address recently. Please pay by card, or try again later."
    ),
}


def _just_booked(response, order: Order):
    """The thank-you line on the order's page is for this buyer right after booking (views/orders.py)."""
    response.set_signed_cookie(
        JUST_BOOKED_COOKIE, order["ref"], salt=JUST_BOOKED_COOKIE, max_age=1800, httponly=True, samesite="Lax"
    )
    return response


def _go(request, url: str):
    """A redirect that htmx follows as a whole-page visit."""
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)
