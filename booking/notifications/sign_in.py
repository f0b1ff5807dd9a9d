"""The sign-in mail: a link that signs the buyer in to see their bookings (accounts/buyers.py).
The same mail goes to every address asked for, bookings or not."""

import smtplib

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from booking.accounts.buyers import buyer_user, sign_in_query
from booking.notifications.confirmations import MailServerUnavailable, is_permanent


def sign_in_message(*, email: str, language: str) -> EmailMultiAlternatives:
    user = buyer_user(email=email)
    link = settings.SITE_URL + reverse("booking:account_enter") + sign_in_query(user=user)
    with translation.override(language if language in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE):
        context = {"link": link, "minutes": settings.SESAME_MAX_AGE // 60}
        message = EmailMultiAlternatives(
            subject=gettext("Your sign-in link"),
            body=render_to_string("booking/email/sign_in.txt", context),
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=[email],
        )
        message.attach_alternative(render_to_string("booking/email/sign_in.html", context), "text/html")
    return message


def send_sign_in_link(*, email: str, language: str) -> str:
    """Send it; MailServerUnavailable when trying again later may help, "failed" when it cannot."""
    try:
        sign_in_message(email=email, language=language).send()
    except Exception as exc:
        if is_permanent(exc):
            return "failed"
        if isinstance(exc, OSError | smtplib.SMTPException):
            raise MailServerUnavailable(str(exc) or exc.__class__.__name__) from exc
        raise
    return "sent"
