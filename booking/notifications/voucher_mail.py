"""The mail with a gift voucher bought online (payments/voucher_purchases.py): its code and its PDF,
in the buyer's language. Owed in the write that activates the voucher (``mail: pending``); the
worker claims it (a conditional update) before sending and marks it sent right after, so a task
queued twice sends one mail."""

import smtplib
from datetime import timedelta

from bson import ObjectId
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext

from booking.core import clock, mongo
from booking.core.domain import Voucher, VoucherState
from booking.notifications.confirmations import MailServerUnavailable, is_permanent
from booking.payments import money, voucher_pdf, voucher_purchases, vouchers

CLAIM_SECONDS = 120


def voucher_message(voucher: Voucher) -> EmailMultiAlternatives:
    language = str(voucher.get("language") or settings.LANGUAGE_CODE)
    language = language if language in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE
    with translation.override(language):
        context = {
            "buyer": voucher["buyer"],
            "value": money.format_money(voucher["value"], voucher["currency"]),
            "code": vouchers.display_code(voucher["code"]),
            "last_day": vouchers.last_day(voucher),
        }
        message = EmailMultiAlternatives(
            subject=gettext("Your gift voucher worth %(value)s") % {"value": context["value"]},
            body=render_to_string("booking/email/voucher_bought.txt", context),
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=[str(voucher.get("email", ""))],
        )
        file_name = gettext("gift-voucher")
        message.attach(f"{file_name}.pdf", voucher_pdf.voucher_pdf(voucher, language), "application/pdf")
    return message


def send_voucher(voucher_id: ObjectId) -> str:
    """Send the voucher's mail once; MailServerUnavailable when trying again later may help."""
    now = clock.now()
    voucher = mongo.vouchers().find_one_and_update(
        {
            "_id": voucher_id,
            "state": VoucherState.ACTIVE,
            "mail": voucher_purchases.MAIL_PENDING,
            "mailClaimedUntil": {"$not": {"$gt": now}},
        },
        {"$set": {"mailClaimedUntil": now + timedelta(seconds=CLAIM_SECONDS)}},
    )
    if voucher is None:
        return "nothing to send"
    try:
        voucher_message(voucher).send()
    except Exception as exc:
        if is_permanent(exc):
            _mark(voucher_id, voucher_purchases.MAIL_FAILED)
            return "failed"
        mongo.vouchers().update_one({"_id": voucher_id}, {"$unset": {"mailClaimedUntil": ""}})
        if isinstance(exc, OSError | smtplib.SMTPException):
            raise MailServerUnavailable(str(exc) or exc.__class__.__name__) from exc
        raise
    _mark(voucher_id, voucher_purchases.MAIL_SENT)
    return "sent"


def _mark(voucher_id: ObjectId, state: str) -> None:
    mongo.vouchers().update_one(
        {"_id": voucher_id}, {"$set": {"mail": state, "mailOn": clock.now()}, "$unset": {"mailClaimedUntil": ""}}
    )
