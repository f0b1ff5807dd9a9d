"""The mail offering a waiting buyer seats that came back (sales/waiting_list.py): which seats, until
when, and the link that puts them in the buyer's cart. Owed in the write that makes the offer
(``mail: pending``); the worker claims it (a conditional update) before sending and marks it sent
right after, so a task queued twice sends one mail."""

import smtplib
from datetime import timedelta

from bson import ObjectId
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from booking.core import clock, mongo
from booking.core.domain import Session
from booking.core.formatting import mail_time
from booking.core.localized import localized
from booking.notifications.confirmations import MailServerUnavailable, is_permanent
from booking.sales import waiting_list

CLAIM_SECONDS = 120


def offer_link(entry: dict) -> str:
    return settings.SITE_URL + reverse("booking:waiting_list_offer", args=[entry["offer"]["token"]])


def offer_message(entry: dict, session: Session) -> EmailMultiAlternatives:
    language = entry.get("language") or settings.LANGUAGE_CODE
    with translation.override(language if language in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE):
        context = {
            "show": localized(session, "name"),
            "start": mail_time(session["start"]),
            "seats": waiting_list.seat_words(session, entry),
            "until": mail_time(entry["offer"]["until"]),
            "link": offer_link(entry),
        }
        message = EmailMultiAlternatives(
            subject=gettext("Seats for you: %(show)s") % {"show": context["show"]},
            body=render_to_string("booking/email/waiting_list_offer.txt", context),
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=[entry["email"]],
        )
        message.attach_alternative(render_to_string("booking/email/waiting_list_offer.html", context), "text/html")
    return message


def send_offer(entry_id: ObjectId) -> str:
    """Send the offer's mail once; MailServerUnavailable when trying again later may help."""
    now = clock.now()
    entry = mongo.waiting_list().find_one_and_update(
        {"_id": entry_id, "mail": waiting_list.MAIL_PENDING, "mailClaimedUntil": {"$not": {"$gt": now}}},
        {"$set": {"mailClaimedUntil": now + timedelta(seconds=CLAIM_SECONDS)}},
    )
    if entry is None:
        return "nothing to send"
    session = mongo.sessions().find_one({"_id": entry["sessionId"]}, {"seats": 0, "reservations": 0})
    if session is None:  # the performance is gone: nothing to offer
        _mark(entry_id, waiting_list.MAIL_FAILED)
        return "failed"
    try:
        offer_message(entry, session).send()
    except Exception as exc:
        if is_permanent(exc):
            _mark(entry_id, waiting_list.MAIL_FAILED)
            return "failed"
        mongo.waiting_list().update_one({"_id": entry_id}, {"$unset": {"mailClaimedUntil": ""}})
        if isinstance(exc, OSError | smtplib.SMTPException):
            raise MailServerUnavailable(str(exc) or exc.__class__.__name__) from exc
        raise
    _mark(entry_id, waiting_list.MAIL_SENT)
    return "sent"


def _mark(entry_id: ObjectId, state: str) -> None:
    mongo.waiting_list().update_one(
        {"_id": entry_id}, {"$set": {"mail": state, "mailOn": clock.now()}, "$unset": {"mailClaimedUntil": ""}}
    )


def requeue_pending(now) -> int:
    """Reconcile: offers whose mail is still pending after a while are queued again."""
    due = waiting_list.pending_mails(due_before=now - timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS))
    for entry_id in due:
        waiting_list.queue_offer_mail(entry_id)
    return len(due)
