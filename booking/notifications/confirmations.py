"""Telling the buyer: the confirmation e-mail after checkout.

The order is stored with its mail pending (``domain.MailState``) before anything is queued.
Queuing the e-mail needs Redis; if Redis is down the checkout still succeeds and reconcile queues the mail again later.
The worker's task calls ``send_confirmation``, which sends at most one mail per order even when
the task is queued twice (checkout and reconcile) or runs on two workers at once: a short claim on
the order is taken first, and ``mail`` becomes sent right after the mail server accepted it.
(A worker killed between those two steps can still lead to a second mail; never to none.)

A mail whose task used up its retries becomes failed with a time for the next round
(``mailRetryAt``, doubling after each failed round); reconcile makes it pending again then and
queues it. After ``BOOKING_MAIL_MAX_FAILURES`` failed rounds, or when the mail server refused the
address for good, it stays failed until an operator re-sends it (``reopen``). Every way back to
pending is one conditional update from the state that was seen, so two reconciles or two
operators racing reopen it once, and the claim still lets one worker send it.
"""

import logging
import smtplib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from bson import ObjectId
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext

from booking.core import clock, faults, mongo
from booking.core.domain import GiveUpOutcome, MailState, Order, OrderState, ReopenOutcome, SendOutcome
from booking.core.formatting import format_money_code, mail_time
from booking.core.localized import (
    localized,
    order_category,
    order_state_label,
    sold_ticket_type,
    ticket_type_condition,
    ticket_type_name,
)
from booking.core.text_checks import address_problem
from booking.notifications import sent_mails
from booking.notifications.calendar import has_calendar_entry, order_calendar
from booking.payments.pdf import receipt_pdf
from booking.sales import outbox, selectors
from booking.sales.order_venues import getting_there, venues_of_order

logger = logging.getLogger("booking.notifications")

CLAIM_SECONDS = 120  # longer than one SMTP conversation (its timeout is 10 s)


class MailServerUnavailable(Exception):
    """Sending failed in a way that may pass (server down, timeout, 4xx): try again later."""


def is_permanent(exc: Exception) -> bool:
    """The server refused for good (5xx, every recipient refused): retrying cannot help."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return True
    code = getattr(exc, "smtp_code", None)
    return isinstance(code, int) and 500 <= code < 600


def send_confirmation(order_id: ObjectId) -> SendOutcome:
    """Send the order's confirmation mail unless it was sent already. Returns what happened (sent,
    already sent, busy: another worker is sending it now, failed, no such order).
    Raises MailServerUnavailable when a later attempt may succeed (the task retries)."""
    order = selectors.get_order(order_id)
    if order is None:
        return SendOutcome.NO_SUCH_ORDER
    if order.get("mail") != MailState.PENDING:
        if order.get("mail") == MailState.SENT:
            return SendOutcome.ALREADY_SENT
        return SendOutcome.FAILED if order.get("mail") == MailState.FAILED else SendOutcome.UNKNOWN
    problem = address_problem(order.get("email", ""))
    if problem:
        give_up(order_id, f"cannot be sent: {problem}", permanent=True)
        return SendOutcome.FAILED
    if not _claim(order_id):
        return SendOutcome.BUSY
    try:
        sent_mails.send_and_keep(order, confirmation_message(order), "confirmation")
    except UnicodeError as exc:  # the same order fails the same way on every retry
        give_up(order_id, f"cannot be sent: {exc}", permanent=True)
        return SendOutcome.FAILED
    except (OSError, smtplib.SMTPException) as exc:
        if is_permanent(exc):
            give_up(order_id, f"refused for good: {exc}", permanent=True)
            return SendOutcome.FAILED
        _release_claim(order_id)
        raise MailServerUnavailable(str(exc) or exc.__class__.__name__) from exc
    except BaseException:
        _release_claim(order_id)  # e.g. the soft time limit: let the retry have the order at once
        raise
    _finish_sent(order_id)
    return SendOutcome.SENT


def retry_delay(failures: int) -> timedelta:
    """How long a failed mail waits before reconcile tries it again: doubles with each failed round."""
    return timedelta(seconds=settings.BOOKING_MAIL_RETRY_FAILED_SECONDS * 2 ** max(failures - 1, 0))


def give_up(order_id: ObjectId, reason: str, *, permanent: bool = False, now=None) -> GiveUpOutcome:
    """This round of attempts failed: mark the mail failed and count it. Unless the refusal was
    permanent or the cap is reached, reconcile tries again at ``mailRetryAt``. Returns retry
    later, given up, or nothing (falsy) when the mail was no longer pending (someone else
    finished it)."""
    now = now or clock.now()
    order = mongo.orders().find_one({"_id": order_id, "mail": MailState.PENDING}, {"ref": 1, "mailFailures": 1})
    if order is None:
        return GiveUpOutcome.NOTHING
    failures = order.get("mailFailures", 0) + 1
    update = {
        "$set": {"mail": MailState.FAILED, "mailDoneOn": now, "mailFailure": reason[:200], "mailFailures": failures},
        "$unset": {"mailClaimedUntil": ""},
    }
    retry = not permanent and failures < settings.BOOKING_MAIL_MAX_FAILURES
    if retry:
        update["$set"]["mailRetryAt"] = now + retry_delay(failures)
    # Conditional on the count read: whoever counts this failure first is the only one.
    done = mongo.orders().update_one(
        {"_id": order_id, "mail": MailState.PENDING, "mailFailures": order.get("mailFailures")}, update
    )
    if not done.modified_count:
        return GiveUpOutcome.NOTHING
    if retry:
        logger.warning(
            "confirmation mail for order %s failed (%d of %d rounds): %s; next round at %s",
            order["ref"],
            failures,
            settings.BOOKING_MAIL_MAX_FAILURES,
            reason,
            update["$set"]["mailRetryAt"].isoformat(timespec="seconds"),
        )
        return GiveUpOutcome.RETRY_LATER
    logger.error("confirmation mail for order %s given up after %d failed rounds: %s", order["ref"], failures, reason)
    return GiveUpOutcome.GIVEN_UP


def reopen_failed(order_id: ObjectId, retry_at, now=None) -> bool:
    """Reconcile: a failed mail whose next round is due (``retry_at``, as read) becomes pending
    again, once, however many reconciles race for it. The caller queues the task."""
    filter_ = {"_id": order_id, "state": OrderState.PAID, "mail": MailState.FAILED, "mailRetryAt": retry_at}
    return _reopen(filter_, now or clock.now(), fresh_budget=False)


def reopen(order_id: ObjectId, seen_round: int | None) -> ReopenOutcome:
    """Operator: send the mail again on purpose (it failed, or the buyer lost it). A sent or failed
    mail becomes pending with a fresh budget of rounds, but only if it is still in the round the
    operator saw (``mailRound``): two operators, or a double click, re-send it once. Returns
    reopened, pending (it is pending already: sending it now is safe, the claim decides),
    changed (it was re-sent or changed meanwhile), not paid or no such order. The caller
    sends or queues it (``resend`` does both and says what happened)."""
    faults.point("mail.before_reopen")
    seen = seen_round or 0
    filter_ = {
        "_id": order_id,
        "state": OrderState.PAID,
        "mail": {"$in": [MailState.SENT, MailState.FAILED]},
        "mailRound": seen if seen else {"$in": [0, None]},
    }
    if _reopen(filter_, clock.now(), fresh_budget=True):
        return ReopenOutcome.REOPENED
    order = mongo.orders().find_one({"_id": order_id}, {"state": 1, "mail": 1, "mailRound": 1})
    if order is None:
        return ReopenOutcome.NO_SUCH_ORDER
    if order.get("state") != OrderState.PAID:
        return ReopenOutcome.NOT_PAID
    if order.get("mail") == MailState.PENDING and (order.get("mailRound") or 0) == seen:
        return ReopenOutcome.PENDING
    return ReopenOutcome.CHANGED


def _reopen(filter_: dict, now, *, fresh_budget: bool) -> bool:
    update = {
        "$set": {"mail": MailState.PENDING, "mailTriedOn": now, "mailQueued": 0},
        "$inc": {"mailRound": 1},
        "$unset": {"mailClaimedUntil": "", "mailRetryAt": "", "mailDoneOn": ""},
    }
    if fresh_budget:
        update["$set"]["mailFailures"] = 0
    return bool(mongo.orders().update_one(filter_, update).modified_count)


def queue_reopened(order_id: ObjectId) -> bool:
    """Queue a mail just made pending; if the broker is down, leave it to reconcile's re-queuing
    (it takes pending mails nobody tried)."""
    if outbox.queue_confirmation(order_id):
        return True
    mongo.orders().update_one({"_id": order_id, "mail": MailState.PENDING}, {"$unset": {"mailTriedOn": ""}})
    return False


@dataclass(frozen=True)
class Resend:
    """What an operator's re-send did, and what to tell them: the admin shows ``message`` at
    ``level`` (a django.contrib.messages level name), the command prints it (an error unless ``ok``)."""

    level: str  # "success", "info", "warning" or "error"
    message: str
    reopened: bool = False  # this re-send made the mail pending again (the admin logs it)

    @property
    def ok(self) -> bool:
        return self.level in ("success", "info")


def resend(order: Order | None, seen_round: int | None, *, send_now: bool) -> Resend:
    """Operator: send an order's confirmation mail again on purpose (``reopen``), and say what
    happened. ``order``: as the operator saw it (None: there is no such order); ``seen_round``:
    the mail's round they saw (``mailRound``).

    ``send_now`` (``manage.py resend_confirmation``): send it from this process, also when it is
    pending already, so the operator sees the mail server's answer; if the server is away it is
    queued for the worker. Otherwise (the order page's button) it is queued for the worker, and a
    mail that is pending already is left to the worker."""
    if order is None:
        return Resend("error", ReopenOutcome.NO_SUCH_ORDER)
    opened = reopen(order["_id"], seen_round)
    return _send_reopened(order, opened) if send_now else _queue_reopened(order, opened)


def _queue_reopened(order: Order, opened: ReopenOutcome) -> Resend:
    ref = order["ref"]
    if opened == ReopenOutcome.REOPENED:
        if queue_reopened(order["_id"]):
            text = gettext("The confirmation mail of %(ref)s is on its way to %(email)s.")
        else:
            text = gettext(
                "The confirmation mail of %(ref)s is on its way to %(email)s (the queue is unreachable; it goes "
                "out once it is back)."
            )
        return Resend("success", text % {"ref": ref, "email": order["email"]}, reopened=True)
    if opened == ReopenOutcome.PENDING:
        text = gettext("The confirmation mail of %(ref)s is being sent already; nothing was changed.")
        return Resend("info", text % {"ref": ref})
    if opened == ReopenOutcome.NOT_PAID:
        text = gettext("Order %(ref)s is %(state)s: its confirmation mail is not sent.")
        return Resend("error", text % {"ref": ref, "state": order_state_label(order["state"])})
    return Resend("warning", gettext("The mail changed since this page was shown (re-sent or retried); see below."))


def _send_reopened(order: Order, opened: ReopenOutcome) -> Resend:
    oid = order["_id"]
    if opened == ReopenOutcome.NOT_PAID:
        return Resend("error", f"the order is {order.get('state')}; its mail is not sent")
    if opened == ReopenOutcome.NO_SUCH_ORDER:
        return Resend("error", ReopenOutcome.NO_SUCH_ORDER)
    if opened == ReopenOutcome.CHANGED:
        state = found["mail"] if (found := selectors.get_order(oid)) else "?"
        return Resend("error", f"not re-sent: it changed meanwhile (mail is {state} now); run again to re-send")
    reopened = opened == ReopenOutcome.REOPENED  # else pending already: sending it now is safe, the claim decides
    try:
        sent = send_confirmation(oid)
    except MailServerUnavailable as exc:
        later = "queued for the worker" if queue_reopened(oid) else "reconcile queues it once Redis is back"
        return Resend("error", f"the mail server did not take it ({exc}); {later}", reopened)
    if sent == SendOutcome.SENT:
        return Resend("success", f"sent to {order['email']}", reopened)
    if sent == SendOutcome.BUSY:
        return Resend("info", "a worker is sending it right now", reopened)
    if sent == SendOutcome.ALREADY_SENT:
        return Resend("info", "a worker sent it just now", reopened)
    failure = found.get("mailFailure", "") if (found := selectors.get_order(oid)) else ""
    return Resend("error", f"{sent}: {failure}" if failure else str(sent), reopened)


def _claim(order_id: ObjectId) -> bool:
    now = clock.now()
    result = mongo.orders().update_one(
        {
            "_id": order_id,
            "mail": MailState.PENDING,
            "$or": [{"mailClaimedUntil": {"$exists": False}}, {"mailClaimedUntil": {"$lte": now}}],
        },
        {"$set": {"mailClaimedUntil": now + timedelta(seconds=CLAIM_SECONDS), "mailTriedOn": now}},
    )
    return bool(result.modified_count)


def _release_claim(order_id: ObjectId) -> None:
    mongo.orders().update_one({"_id": order_id, "mail": MailState.PENDING}, {"$unset": {"mailClaimedUntil": ""}})


def _finish_sent(order_id: ObjectId) -> None:
    update = {"$set": {"mail": MailState.SENT, "mailDoneOn": clock.now()}, "$unset": {"mailClaimedUntil": ""}}
    mongo.orders().update_one({"_id": order_id, "mail": MailState.PENDING}, update)


# --- the message itself ---


@dataclass
class TicketLine:
    show: str
    when: str
    theater: str
    row: str
    seat: str
    category: str
    price: str
    ticket_type: str = ""  # as bought (ticket types)
    condition: str = ""  # what the ticket type asks its holder to show at the door


def ticket_link(order: Order) -> str:
    """The buyer's page for the booking: reference and e-mail together open it."""
    return f"{settings.SITE_URL}/orders/{quote(order['ref'])}/?{urlencode({'email': order['email']})}"


def confirmation_context(order: Order, *, venues: dict | None = None) -> dict:
    sessions = {s["_id"]: s for s in order.get("sessions", [])}
    currency = order.get("currency", settings.BOOKING_CURRENCY)
    lines = []
    for line in order["lines"]:
        session: Mapping[str, Any] = sessions.get(line["sessionId"], {})
        start = session.get("start")
        lines.append(
            TicketLine(
                show=localized(session, "name") or gettext("Performance"),
                when=mail_time(start) if start else "",
                theater=localized(session, "theaterName"),  # the staff's German venue name on German mails
                row=line["row"],
                seat=line["seat"],
                category=order_category(session, line["cat"])
                + (" · " + gettext("wheelchair space") if line.get("wheelchair") else ""),  # as the cart says
                price=format_money_code(line["price"], currency),
                ticket_type=ticket_type_name(sold_ticket_type(line)),
                condition=ticket_type_condition(sold_ticket_type(line)),
            )
        )
    shows = sorted({line.show for line in lines})
    return {
        "name": order.get("name", ""),
        # a subscription's booking names it, as its order page does
        "subscription": localized(order.get("subscription"), "name"),
        "performance_count": len(sessions),
        "ref": order["ref"],
        "lines": lines,
        "shows": shows,
        "seat_count": len(lines),
        "total": format_money_code(order["total"], currency),
        "discount": format_money_code(-order["discount"], currency) if order.get("discount") else "",
        "promo_code": (order.get("promo") or {}).get("code", ""),
        "fee": format_money_code(fee["amount"], currency) if (fee := order.get("fee")) and fee["amount"] else "",
        "donation": format_money_code(order["donation"]["amount"], currency) if order.get("donation") else "",
        "ticket_link": ticket_link(order),
        "receipt": bool(order.get("paidWith")),  # its PDF is attached (payments)
        "getting_there": getting_there(order, venues=venues or {}),
    }


def order_language(order: Order) -> str:
    """The language the buyer checked out in (orders made before it was kept: the default)."""
    return order.get("language") or settings.LANGUAGE_CODE


def confirmation_message(order: Order) -> EmailMultiAlternatives:
    """The confirmation mail (text, HTML, the receipt PDF) in the buyer's language, whoever sends
    it: the worker's task, reconcile's requeue or an operator's resend."""
    with translation.override(order_language(order)):
        return _confirmation_message(order)


def _confirmation_message(order: Order) -> EmailMultiAlternatives:
    venues = venues_of_order(order)
    context = {**confirmation_context(order, venues=venues), "calendar": has_calendar_entry(order)}
    subject = gettext("Your booking %(ref)s: %(shows)s") % {"ref": order["ref"], "shows": ", ".join(context["shows"])}
    message = EmailMultiAlternatives(
        subject=" ".join(subject.split())[:200],  # no line breaks in a header
        body=render_to_string("booking/email/order_confirmed.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[order["email"]],
    )
    message.attach_alternative(render_to_string("booking/email/order_confirmed.html", context), "text/html")
    if order.get("paidWith"):
        message.attach(f"receipt-{order['ref']}.pdf", receipt_pdf(order), "application/pdf")
    if context["calendar"]:
        entry = order_calendar(order=order, venues=venues, order_url=context["ticket_link"], host=site_host())
        message.attach(f"booking-{order['ref']}.ics", entry, "text/calendar")
    return message


def site_host() -> str:
    """The site's host name: what makes the calendar entries' UIDs unique to this site."""
    return urlsplit(settings.SITE_URL).hostname or "localhost"
