"""The buyer's payment pages and the provider's webhook.

GET  /checkout/                    details and how to pay (card, or the box office when every
                                   performance offers it), the total with VAT, the countdown
POST /checkout/                    name, email, method -> the order waits for its payment. htmx:
                                   the card form in place of the details (same page); a box-office
                                   reservation, or a plain post, goes to the order's page
POST /orders/<ref>/pay             payment_method=<id from Stripe.js> -> JSON {status, message,
                                   client_secret (3-D Secure), redirect}
GET  /orders/<ref>/payment         the payment's state, asked of the provider (the return page's
                                   check; polled while "processing"); JSON with ?format=json
POST /orders/<ref>/cancel-payment  the buyer gives up: payment canceled, seats released (the browser
                                   that booked, or one that opened the order by reference and e-mail)
GET  /orders/<ref>/receipt.pdf     the receipt of a paid order (same access as the order page)
POST /payments/stripe/webhook/     Stripe's events (signature checked; no CSRF: Stripe signs them)

Card payment needs JavaScript (Stripe's card form is JavaScript by Stripe's rule); without it the
card choice is disabled with a note and the box office still works.
"""

import logging
import textwrap
from collections.abc import Iterable
from typing import cast
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.csp import CSP
from django.utils.translation import gettext, gettext_noop
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from booking import payments
from booking.core import clock
from booking.core.domain import CartState
from booking.core.errors import BookingError, CartExpired, CheckoutFailed, InvalidRequest, NotFound
from booking.core.localized import ORDER_STATE_LABELS, order_state_label
from booking.payments import base, money, receipts
from booking.payments import flow as payment_service
from booking.payments.stripe_provider import TEST_CARDS, in_test_mode, time_in_stripe_ms
from booking.presale.forms import CheckoutForm
from booking.presale.views.pages import NO_SUCH_BOOKING, TooManyLookups, too_many_lookups, visible_order
from booking.sales import pricing, selectors
from booking.web import buyer, presenters, ratelimits

logger = logging.getLogger("booking.views")

CARD_FORM_STATES = (base.OPEN, base.FAILED, base.CANCELED, base.ACTION, None)  # the buyer (re)enters a card
STATE_LABELS = ORDER_STATE_LABELS


def state_label(order: dict) -> str:
    if order.get("method") == payments.BOX_OFFICE and order["state"] == "pending_payment":
        return gettext("Reserved: pay at the box office")
    return order_state_label(order["state"])


# --- the pages that load Stripe.js ---


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def stripe_csp(response, context: dict):
    """A page that loads Stripe.js lets it in (and lets it reach Stripe's API and show 3-D Secure
    in Stripe's frames); the rest of the site's policy stays as it is (settings.SECURE_CSP)."""
    if not context.get("stripe_js"):
        return response
    origins = sorted({o for o in (_origin(settings.STRIPE_JS_URL), _origin(settings.STRIPE_API_BASE)) if o})
    frames = [*origins, "https://hooks.stripe.com"] if "stripe.com" in settings.STRIPE_JS_URL else origins
    policy = {key: list(cast(Iterable[str], value)) for key, value in settings.SECURE_CSP.items()}
    for directive, extra in (("script-src", origins), ("connect-src", origins), ("frame-src", frames)):
        policy[directive] = [*policy.get(directive, [CSP.SELF]), *extra]
    response._csp_config = policy  # what django.views.decorators.csp.csp_override sets
    return response


# --- what the pages show ---


def quote(cart: dict, sessions: list[dict]) -> dict:
    """The total of a cart as the order will charge it: tickets (less a promo code), booking fee,
    VAT per rate."""
    items = cart["items"]
    amounts = pricing.cart_totals(cart)
    theaters = payment_service.theaters_of(sessions)
    by_id = {s["_id"]: s for s in sessions}
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


def order_quote(order: dict) -> dict:
    return {
        "tickets": sum(line["price"] for line in order.get("lines", [])),
        "discount": sum(line.get("discount", 0) for line in order.get("lines", [])),
        "fee": (order.get("fee") or {}).get("amount", 0),
        "total": order["total"],
        "vat": money.order_breakdown(order),
    }


def payment_context(request, order: dict) -> dict:
    """What the payment panel (``_payment.html``) and the order page need about the payment."""
    pay = order.get("payment") or {}
    now = clock.now()
    is_buyer = request is not None and buyer.owner(request) == order.get("owner")
    pending = order["state"] == "pending_payment"
    card = order.get("method") == payments.CARD and is_buyer  # paid from the browser that booked
    context = {
        "order": order,
        "is_buyer": is_buyer,
        "state_label": state_label(order),
        "pay_status": pay.get("status"),
        "pay_failure": gettext(pay["failure"]) if pay.get("failure") else "",  # stored in English
        "card_form": pending and card and pay.get("status") in CARD_FORM_STATES,
        "processing": pending and card and pay.get("status") in (base.PROCESSING, "confirming"),
        "seconds_left": presenters.seconds_left(pay["until"], now) if pending and pay.get("until") else 0,
        "until": pay.get("until"),
        "quote": order_quote(order) if order.get("lines") else None,
        "tickets": presenters.order_tickets(order),
        "refunded_tickets": presenters.order_tickets({**order, "lines": order.get("refundedLines", [])}),
        "stripe_key": settings.STRIPE_PUBLISHABLE_KEY,
        "stripe_js": settings.STRIPE_JS_URL if pending and card else "",
        "test_cards": test_cards() if pending and card else [],
        "receipt": order["state"] in ("paid", "partially_refunded", "refunded") and bool(order.get("receiptNo")),
        "receipt_label": receipts.receipt_label(order),
        "refunded": sum(r["amount"] for r in order.get("refunds", []) if r["status"] == "succeeded"),
        "refund_pending": any(r["status"] != "succeeded" for r in order.get("refunds", [])),
    }
    return context


def test_cards() -> list[tuple[str, str]]:
    """The test cards and what each does (number in groups of four), in test mode only."""
    if not in_test_mode():
        return []
    return [(" ".join(textwrap.wrap(number, 4)), gettext(label)) for number, _status, label in TEST_CARDS]


# --- checkout ---


class PaymentMethodForm(CheckoutForm):
    method = forms.ChoiceField(
        choices=[(payments.CARD, "Card"), (payments.BOX_OFFICE, "Pay at the box office")], required=False
    )


def _paying_order(request) -> dict | None:
    """The order this browser is paying for right now (its cart moved to paying), if any."""
    owner, cart_id = buyer.owner(request), buyer.cart_id(request)
    cart = selectors.get_cart(owner, cart_id) if owner else None
    if cart is None or cart["state"] != CartState.PAYING:
        return None
    return selectors.get_order_for_cart(cart["_id"])


def _details_context(request, cart: dict, form) -> dict:
    from booking.presale.views.pages import _cart_context

    sessions = payment_service.cart_sessions(cart)
    methods = payment_service.methods_for(cart, sessions)
    return {
        **_cart_context(request, cart, False),
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
    }


def _stripe_timing(view):
    """Server-Timing: stripe;dur=<ms> on the answer: the time this request waited for Stripe."""

    def wrapped(request, *args, **kwargs):
        time_in_stripe_ms(reset=True)
        response = view(request, *args, **kwargs)
        response["Server-Timing"] = f"stripe;dur={time_in_stripe_ms(reset=True):.1f}"
        return response

    wrapped.__name__, wrapped.__doc__ = view.__name__, view.__doc__
    return wrapped


@require_http_methods(["GET", "HEAD", "POST"])
@_stripe_timing
def checkout(request):
    from booking.presale.views.pages import _current_cart

    if request.method != "POST":
        cart, _expired = _current_cart(request)
        if cart is None or not cart["items"]:
            paying = _paying_order(request)
            if paying is not None:
                context = payment_context(request, paying)
                return stripe_csp(render(request, "booking/checkout_pay.html", context), context)
            return redirect("booking:cart")
        context = _details_context(request, cart, PaymentMethodForm())
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
        )
    except InvalidRequest as exc:
        for field, message in (exc.details.get("fields") or {"__all__": exc.message}).items():
            form.add_error(field if field in form.fields else None, message)
        # the cart is read only for the form shown again: a submit that works reads it once, in start()
        cart, _expired = _current_cart(request)
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
    if order["state"] != "pending_payment" or order.get("method") != payments.CARD:
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


def _just_booked(response, order: dict):
    """The thank-you line on the order's page is for this buyer right after booking (pages.py)."""
    from booking.presale.views.pages import JUST_BOOKED_COOKIE

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


# --- paying ---


def _buyer_order(request, ref: str) -> dict:
    return payment_service.visible_order(ref, buyer.owner(request))


@require_POST
@_stripe_timing
def pay(request, ref):
    """The card form's submit (pay.js): JSON, never a page."""
    try:
        outcome = payment_service.pay_with_card(ref, buyer.owner(request), request.POST.get("payment_method", ""))
    except NotFound:
        return JsonResponse({"status": "error", "message": gettext("No such booking.")}, status=404)
    except InvalidRequest as exc:
        return JsonResponse({"status": "failed", "message": exc.message}, status=400)
    except base.ProviderError:
        logger.exception("payment of %s failed at the provider", ref)
        return JsonResponse(
            {
                "status": "failed",
                "message": gettext("The payment service did not answer. Nothing was charged; please try again."),
            },
            status=502,
        )
    message = gettext(outcome.message) if outcome.message else ""  # the provider's reason, stored in English
    return JsonResponse(_pay_answer(outcome.status, outcome.order, message, outcome.client_secret))


def _pay_answer(status: str, order: dict, message: str = "", client_secret: str = "") -> dict:
    answer = {
        "status": status,
        "message": message,
        "state": order["state"],
        "redirect": reverse("booking:order", args=[order["ref"]]),
    }
    if status == base.ACTION and client_secret:
        answer["client_secret"] = client_secret
    if status == base.FAILED and not message:
        answer["message"] = gettext("The payment did not go through. Please try again or use another card.")
    return answer


@require_safe
def payment_status(request, ref):
    """Where the payment stands, asked of the provider (the return page's check); htmx polls it
    while the payment is processing, pay.js asks it after 3-D Secure (``?format=json``)."""
    try:
        order = _buyer_order(request, ref)
        order = payment_service.check(order["_id"], quiet=True)
    except NotFound:
        return HttpResponse(status=404)
    if request.GET.get("format") == "json":
        status = order["state"] if order["state"] != "pending_payment" else order["payment"]["status"]
        status = base.PROCESSING if status == payment_service.CONFIRMING else status  # a charge under way
        failure = order["payment"].get("failure")
        return JsonResponse(_pay_answer(status, order, gettext(failure) if failure else ""))
    if order["state"] != "pending_payment":
        response = HttpResponse(status=204)
        response["HX-Redirect"] = reverse("booking:order", args=[order["ref"]])
        return response
    return render(request, "booking/_payment.html", payment_context(request, order))


@require_POST
def cancel_payment(request, ref):
    """The buyer's browser, or one that opened the order by reference and e-mail (the mail's link,
    Find my booking): the order page's own proof, so its "Cancel" works wherever it is shown."""
    try:
        order = visible_order(request, ref)
    except TooManyLookups:
        return too_many_lookups(request)
    if order is None:
        return no_such_booking(request)
    try:
        order = payment_service.cancel_unpaid(order["_id"], owner=order.get("owner"))
    except NotFound:
        return no_such_booking(request)
    except BookingError as exc:
        messages.error(request, exc.message)
        return redirect("booking:order", ref=ref)
    if order.get("owner") and buyer.owner(request) == order["owner"]:
        buyer.forget_cart(request)  # (another browser's own cart stays)
    if order["state"] == "canceled":
        messages.success(request, gettext("Your booking was canceled and the seats released. Nothing was charged."))
        return redirect("booking:whats_on")
    return redirect("booking:order", ref=order["ref"])  # it had been paid meanwhile


def no_such_booking(request):
    return render(request, "404.html", {"message": gettext(NO_SUCH_BOOKING)}, status=404)


def refresh_order(order: dict) -> dict:
    """The order page is the return page: a payment still being decided is asked about."""
    pay = order.get("payment") or {}
    waiting = order["state"] in ("pending_payment", "expired") and pay.get("status") in payment_service.AT_THE_BANK
    if waiting and order.get("method") == payments.CARD:
        return payment_service.check(order["_id"], quiet=True)
    if order.get("settling"):
        return payment_service.finish_paid(order["_id"]) or order
    return order


@require_safe
def receipt_pdf(request, ref):
    from booking.payments.pdf import receipt_pdf as make_pdf

    try:
        order = visible_order(request, ref)
    except TooManyLookups:
        return too_many_lookups(request)
    if order is None or not order.get("paidWith"):
        return no_such_booking(request)
    if not order.get("receiptNo"):
        receipts.assign(order["_id"])
        order = selectors.get_order(order["_id"])
        if order is None:  # gone meanwhile
            return no_such_booking(request)
    response = HttpResponse(make_pdf(order), content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="receipt-{order["ref"]}.pdf"'
    response["Cache-Control"] = "private, no-store"
    return response


@csrf_exempt  # Stripe signs its webhooks; there is no browser and no session here
@require_POST
def stripe_webhook(request):
    status, text = payment_service.handle_webhook("stripe", request.body, request.headers)
    return HttpResponse(text, status=status, content_type="text/plain; charset=utf-8")
