"""The e-mail that tells a buyer their money went back without a booking: their payment arrived
after their hold had ended and the seats were taken, or it arrived for a booking that was no
longer waiting for it. Sent at most once per order (a claim first, ``noticeMail: "sent"``
right after), re-queued by reconcile while it stays pending.
"""

import logging
from datetime import timedelta

from bson import ObjectId
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext

from booking.core import clock, mongo
from booking.core.domain import MailState, Order
from booking.notifications import sent_mails
from booking.notifications.confirmations import MailServerUnavailable, is_permanent, order_language, ticket_link
from booking.payments.money import format_money
from booking.sales import outbox

logger = logging.getLogger("booking.notices")

PENDING = MailState.PENDING
SENT = MailState.SENT
FAILED = MailState.FAILED
CLAIM_SECONDS = 120


def notice_message(order: Order) -> EmailMultiAlternatives:
    """The refund notice in the buyer's language."""
    with translation.override(order_language(order)):
        return _notice_message(order)


def _notice_message(order: Order) -> EmailMultiAlternatives:
    refunded = sum(r["amount"] for r in order.get("refunds", []))
    context = {
        "name": order.get("name", ""),
        "ref": order["ref"],
        # a stored failure is English text: shown translated when it is one of the known messages
        "reason": gettext(order["failure"])
        if order.get("failure")
        else gettext("Your payment arrived for a booking that was no longer waiting for it, so we refunded it."),
        "amount": format_money(refunded, order.get("currency", settings.BOOKING_CURRENCY)),
        "link": ticket_link(order),
    }
    message = EmailMultiAlternatives(
        subject=gettext("Your booking %(ref)s: payment refunded") % {"ref": order["ref"]},
        body=render_to_string("booking/email/payment_refunded.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[order["email"]],
    )
    message.attach_alternative(render_to_string("booking/email/payment_refunded.html", context), "text/html")
    return message


def send_notice(order_id: ObjectId) -> str:
    order = mongo.orders().find_one({"_id": order_id})
    if order is None:
        return "no such order"
    if order.get("noticeMail") != PENDING:
        return order.get("noticeMail") or "none"
    now = clock.now()
    claimed = mongo.orders().update_one(
        {"_id": order_id, "noticeMail": PENDING, "noticeClaimedUntil": {"$not": {"$gt": now}}},
        {"$set": {"noticeClaimedUntil": now + timedelta(seconds=CLAIM_SECONDS)}},
    )
    if not claimed.modified_count:
        return "busy"
    try:
        sent_mails.send_and_keep(order, notice_message(order), "payment_notice")
    except Exception as exc:
        if is_permanent(exc):
            mongo.orders().update_one({"_id": order_id}, {"$set": {"noticeMail": FAILED}})
            return "failed"
        mongo.orders().update_one({"_id": order_id}, {"$unset": {"noticeClaimedUntil": ""}})
        if isinstance(exc, OSError | MailServerUnavailable) or exc.__class__.__module__ == "smtplib":
            raise MailServerUnavailable(str(exc) or exc.__class__.__name__) from exc
        raise
    mongo.orders().update_one({"_id": order_id, "noticeMail": PENDING}, {"$set": {"noticeMail": SENT}})
    return "sent"


def requeue_pending(now=None) -> int:
    """Reconcile: notices still pending after a while with nobody sending them."""
    now = now or clock.now()
    stale = now - timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS)
    queued = 0
    query = {"noticeMail": PENDING, "noticeClaimedUntil": {"$not": {"$gt": stale}}, "createdOn": {"$lte": stale}}
    for order in mongo.orders().find(query, {"_id": 1}).limit(200):
        if not outbox.queue_payment_notice(order["_id"]):
            break
        queued += 1
    return queued
