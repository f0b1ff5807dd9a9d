"""The renewal mail: last season's subscriber's seat is reserved in the new subscription, with the
one-click link to renew and pay (sales/subscriptions.py reserves; the worker's beat task mails)."""

from django.conf import settings
from django.core.mail import EmailMessage
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from booking.core import clock
from booking.core.domain import Cart, Order
from booking.core.localized import localized
from booking.sales import subscriptions


def renewal_message(cart: Cart, order: Order) -> EmailMessage:
    language = order.get("language") or settings.LANGUAGE_CODE
    token = subscriptions.renewal_token(cart["owner"])
    link = settings.SITE_URL + reverse("booking:subscription_renew", kwargs={"token": token})
    with translation.override(language if language in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE):
        seats = sorted({(i["row"], i["seat"]) for i in cart["items"]})
        context = {
            "name": order.get("name", ""),
            "subscription": localized(cart["subscription"], "name"),
            "seats": seats,
            "until": cart["expiresAt"],
            "total": cart["total"],
            "link": link,
        }
        return EmailMessage(
            subject=gettext("Renew your subscription: your seat is reserved"),
            body=render_to_string("booking/email/subscription_renewal.txt", context),
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=[order["email"]],
        )


def send_pending() -> int:
    """Mail every reserved renewal not yet mailed; returns how many went out."""
    sent = 0
    for pending in subscriptions.renewals_to_mail(clock.now()):
        renewal_message(pending["cart"], pending["order"]).send()
        subscriptions.mark_mailed(pending["cart"]["_id"], pending["cart"]["owner"])
        sent += 1
    return sent
