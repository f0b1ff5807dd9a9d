"""The customer pays a dearer exchange's difference on their order page (sales/exchanges.py):
the card form (static/booking/pay.js, as at checkout) posts here. JSON answers, never a page.
What the order page shows of it is booking/presale/context.py's ``exchange_payment_due``."""

import logging

from django.http import JsonResponse
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods

from booking.core.errors import InvalidRequest
from booking.payments import base
from booking.presale.context import NO_SUCH_BOOKING, TOO_MANY_LOOKUPS, TooManyLookups, visible_order
from booking.sales import exchanges

logger = logging.getLogger("booking.exchange_views")


@require_http_methods(["GET", "HEAD", "POST"])
def exchange_pay(request, ref):
    """POST: charge the card for the difference; GET (pay.js after 3-D Secure): where it stands."""
    try:
        order = visible_order(request, ref)
    except TooManyLookups:
        return JsonResponse({"status": "error", "message": gettext(TOO_MANY_LOOKUPS)}, status=429)
    if order is None:
        return JsonResponse({"status": "error", "message": gettext(NO_SUCH_BOOKING)}, status=404)
    redirect = reverse("booking:order", args=[order["ref"]])
    if request.method != "POST":
        order = exchanges.finish(order["_id"])  # asks the provider while it waits
        waiting = exchanges.awaiting_payment(order)
        return JsonResponse({"status": "action" if waiting else "paid", "redirect": redirect})
    try:
        status, order, message = exchanges.pay_difference(order["_id"], request.POST.get("payment_method", ""))
    except InvalidRequest as exc:
        return JsonResponse({"status": "failed", "message": exc.message}, status=400)
    except base.ProviderError:
        logger.exception("the exchange payment of %s failed at the provider", ref)
        message = gettext("The payment service did not answer. Nothing was charged; please try again.")
        return JsonResponse({"status": "failed", "message": message}, status=502)
    if status == base.PROCESSING:  # another tab's Pay is charging a card, or the bank is deciding
        message = gettext("Your payment of the difference is already under way. Your booking's page shows the result.")
        return JsonResponse({"status": status, "redirect": redirect, "message": message}, status=409)
    if status == base.ACTION:
        return JsonResponse({"status": status, "redirect": redirect, "message": "", "client_secret": message})
    # a decline's reason is stored in English (payments/stripe_provider.py) and worded here
    return JsonResponse({"status": status, "redirect": redirect, "message": gettext(message) if message else ""})
