"""Buying a gift voucher online (payments/voucher_purchases.py).

GET|POST /theaters/<id>/vouchers/        the form: value, name, e-mail -> the purchase's page
GET      /vouchers/bought/<token>/       pay by card (pay.js), or the voucher is paid and mailed
POST     /vouchers/bought/<token>/pay    payment_method=<id from Stripe.js> -> JSON like the order's
GET      /vouchers/bought/<token>/status the payment's state asked of Stripe (JSON, after 3-D Secure)
"""

import logging

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language, gettext
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from booking.core.domain import VoucherState
from booking.core.errors import BookingError, NotFound
from booking.core.formatting import format_money
from booking.core.ids import object_id
from booking.core.localized import localized
from booking.payments import base, voucher_purchases
from booking.presale.context import error_page, stripe_csp, stripe_timing, test_cards
from booking.sales import selectors
from booking.web.errors import status_for

logger = logging.getLogger("booking.views")


def _form_context(theater, form=None, error: str = "", fields: dict | None = None) -> dict:
    currency = settings.BOOKING_CURRENCY
    return {
        "theater": theater,
        "theater_name": localized(theater, "name"),
        "form": form or {},
        "error": error,
        "fields": fields or {},
        "low": settings.BOOKING_VOUCHER_MIN_VALUE // 100,
        "high": settings.BOOKING_VOUCHER_MAX_VALUE // 100,
        "low_text": format_money(settings.BOOKING_VOUCHER_MIN_VALUE, currency),
        "high_text": format_money(settings.BOOKING_VOUCHER_MAX_VALUE, currency),
        "currency": currency,
    }


@require_http_methods(["GET", "HEAD", "POST"])
def buy(request, theater_id):
    try:
        theater = selectors.get_theater(object_id(theater_id, "theater"))
    except NotFound:
        theater = None
    if theater is None:
        return error_page(request, gettext("No such theater."), 404)
    if request.method != "POST":
        return render(request, "booking/voucher_buy.html", _form_context(theater))
    form = request.POST
    try:
        voucher = voucher_purchases.start_purchase(
            theater_id=theater["_id"],
            value=voucher_purchases.clean_value_text(form.get("value")),
            buyer=form.get("name", ""),
            email=form.get("email", ""),
            language=get_language() or "en",
        )
    except BookingError as exc:
        fields = exc.details.get("fields") or {}
        context = _form_context(theater, form, exc.message, fields)
        return render(request, "booking/voucher_buy.html", context, status=status_for(exc))
    except base.ProviderError:
        logger.exception("voucher purchase: the payment could not be started")
        context = _form_context(theater, form, gettext("The payment service did not answer. Please try again."))
        return render(request, "booking/voucher_buy.html", context, status=502)
    target = reverse("booking:voucher_bought", args=[voucher["purchase"]["token"]])
    if request.htmx:
        response = render(request, "booking/voucher_buy.html", _form_context(theater))
        response["HX-Redirect"] = target
        return response
    return redirect(target)


def _purchase_or_404(request, token):
    try:
        return voucher_purchases.check(token=token), None
    except NotFound:
        return None, error_page(request, gettext("No such voucher purchase."), 404)


@require_safe
@stripe_timing
def bought(request, token):
    """The purchase's page, also the return page: asks Stripe, activates a paid voucher."""
    voucher, missing = _purchase_or_404(request, token)
    if voucher is None:
        return missing
    purchase = voucher["purchase"]
    pending = voucher["state"] == VoucherState.PENDING and purchase.get("status") != voucher_purchases.CANCELED
    context = {
        "voucher": voucher,
        "token": purchase["token"],
        "value": format_money(voucher["value"], voucher["currency"]),
        "paid": voucher["state"] == VoucherState.ACTIVE,
        "canceled": purchase.get("status") == voucher_purchases.CANCELED,
        "card_form": pending,
        "stripe_key": settings.STRIPE_PUBLISHABLE_KEY,
        "stripe_js": settings.STRIPE_JS_URL if pending else "",
        "test_cards": test_cards() if pending else [],
    }
    return stripe_csp(render(request, "booking/voucher_bought.html", context), context)


def _answer(voucher, payment: base.Payment) -> dict:
    status = "paid" if voucher["state"] == VoucherState.ACTIVE else payment.status
    answer = {
        "status": status,
        "message": gettext(payment.failure) if payment.failure else "",
        "redirect": reverse("booking:voucher_bought", args=[voucher["purchase"]["token"]]),
    }
    if status == base.ACTION and payment.client_secret:
        answer["client_secret"] = payment.client_secret
    if status == base.FAILED and not answer["message"]:
        answer["message"] = gettext("The payment did not go through. Please try again or use another card.")
    return answer


@require_POST
@stripe_timing
def pay(request, token):
    """The card form's submit (pay.js): JSON, never a page."""
    try:
        voucher, payment = voucher_purchases.pay(token=token, means=request.POST.get("payment_method", ""))
    except NotFound:
        return JsonResponse({"status": "error", "message": gettext("No such voucher purchase.")}, status=404)
    except BookingError as exc:
        return JsonResponse({"status": "failed", "message": exc.message}, status=400)
    except base.ProviderError:
        logger.exception("voucher payment failed at the provider")
        message = gettext("The payment service did not answer. Nothing was charged; please try again.")
        return JsonResponse({"status": "failed", "message": message}, status=502)
    return JsonResponse(_answer(voucher, payment))


@require_safe
@stripe_timing
def status(request, token):
    voucher, missing = _purchase_or_404(request, token)
    if voucher is None:
        return JsonResponse({"status": "error", "message": gettext("No such voucher purchase.")}, status=404)
    intent = voucher["purchase"].get("intent")
    payment = voucher_purchases.provider().retrieve(intent) if intent else None
    if payment is None:
        payment = base.Payment(provider="stripe", id="", status=base.OPEN, amount=0, currency="")
    return JsonResponse(_answer(voucher, payment))
