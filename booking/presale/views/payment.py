"""Paying an order, and the payment provider's webhook.

POST /orders/<ref>/pay             payment_method=<id from Stripe.js> -> JSON {status, message,
                                   client_secret (3-D Secure), redirect}
GET  /orders/<ref>/payment         the payment's state, asked of the provider (the return page's
                                   check; polled while "processing"); JSON with ?format=json
POST /orders/<ref>/cancel-payment  the buyer gives up: payment canceled, seats released (the browser
                                   that booked, or one that opened the order by reference and e-mail)
GET  /orders/<ref>/receipt.pdf     the receipt of a paid order (same access as the order page)
POST /payments/stripe/webhook/     Stripe's events (signature checked; no CSRF: Stripe signs them)

The checkout that starts the payment is views/checkout.py; the payment panel's context is
booking/presale/context.py's (``payment_context``).
"""

import logging

from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST, require_safe

from booking.core.domain import Order, OrderState
from booking.core.errors import BookingError, InvalidRequest, NotFound
from booking.payments import base, receipts
from booking.payments import flow as payment_service
from booking.payments.pdf import receipt_pdf as make_pdf
from booking.presale.context import (
    TooManyLookups,
    no_such_booking,
    payment_context,
    stripe_timing,
    too_many_lookups,
    visible_order,
)
from booking.sales import selectors
from booking.web import buyer

logger = logging.getLogger("booking.views")


def _buyer_order(request, ref: str) -> Order:
    return payment_service.visible_order(ref, buyer.owner(request))


@require_POST
@stripe_timing
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


def _pay_answer(status: str, order: Order, message: str = "", client_secret: str = "") -> dict:
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
        status = order["state"] if order["state"] != OrderState.PENDING_PAYMENT else order["payment"]["status"]
        status = base.PROCESSING if status == payment_service.CONFIRMING else status  # a charge under way
        failure = order["payment"].get("failure")
        return JsonResponse(_pay_answer(status, order, gettext(failure) if failure else ""))
    if order["state"] != OrderState.PENDING_PAYMENT:
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
    if order["state"] == OrderState.CANCELED:
        messages.success(request, gettext("Your booking was canceled and the seats released. Nothing was charged."))
        return redirect("booking:whats_on")
    return redirect("booking:order", ref=order["ref"])  # it had been paid meanwhile


@require_safe
def receipt_pdf(request, ref):
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
