"""Celery tasks: thin wrappers around the engine's services. Arguments are ids, never documents.

Every task is safe to run twice at once on several workers: each state change in the engine is
one conditional update, so whichever run gets there second finds nothing left to do. The beat
schedule (and the time limits) are in settings.CELERY_BEAT_SCHEDULE.
"""

import logging
import random
from collections.abc import Callable

from bson import ObjectId
from bson.errors import InvalidId
from celery import shared_task
from django.conf import settings

from booking.core import clock, work_queue
from booking.core.domain import SendOutcome
from booking.notifications import (
    change_notices,
    payment_notices,
    renewal_notices,
    sign_in,
    voucher_mail,
    waiting_list_mail,
)
from booking.notifications import confirmations as notifications
from booking.reports import summaries, takings
from booking.sales import cancels, cart_expiry, retention, subscriptions, waiting_list, wheelchair
from booking.upkeep import reconcile as reconcile_service
from booking.webhooks import deliveries, dispatch

logger = logging.getLogger("booking.tasks")


@shared_task(
    name="booking.tasks.expire_stale_carts",
    bind=True,
    time_limit=settings.BOOKING_EXPIRE_TIME_LIMIT_SECONDS,
    soft_time_limit=settings.BOOKING_EXPIRE_TIME_LIMIT_SECONDS * 0.9,
)
def expire_stale_carts(self) -> dict:
    """End every cart whose hold is over and free its seats; then finish any expiry a killed
    worker left half done (cart expired, seats still held)."""
    report = cart_expiry.expire_stale_carts()
    finished = reconcile_service.finish_interrupted_expiries()
    logger.info(
        "expire_stale_carts task=%s: carts expired: %d, seats released: %d, payments settled: %d, "
        "interrupted expiries finished: %d",
        self.request.id,
        report.carts_expired,
        report.seats_released + finished.seats_released,
        report.payments_settled,
        finished.holds_released,
    )
    return {
        "carts_expired": report.carts_expired,
        "seats_released": report.seats_released + finished.seats_released,
        "payments_settled": report.payments_settled,
        "interrupted_finished": finished.holds_released,
    }


@shared_task(name="booking.tasks.release_wheelchair_spaces", time_limit=120, soft_time_limit=108)
def release_wheelchair_spaces() -> dict:
    """Free wheelchair spaces of shows starting soon go on general sale (sales/wheelchair.py)."""
    report = wheelchair.release_due_spaces()
    return {"sessions": report.sessions, "released": report.released}


@shared_task(
    name="booking.tasks.reconcile",
    bind=True,
    time_limit=settings.BOOKING_RECONCILE_TIME_LIMIT_SECONDS,
    soft_time_limit=settings.BOOKING_RECONCILE_TIME_LIMIT_SECONDS * 0.9,
)
def reconcile(self) -> dict:
    """Finish stuck checkouts, release holds nobody owns, re-queue pending confirmation mails and
    retry failed ones whose next round is due."""
    report = reconcile_service.reconcile()
    logger.info("reconcile task=%s: %s", self.request.id, report)
    return dict(report.__dict__)


@shared_task(name="booking.tasks.subscription_renewals", time_limit=300, soft_time_limit=270)
def subscription_renewals() -> dict:
    """Beat: open the renewal windows that are due (the holders' seats reserved), mail the holders
    not yet mailed, and end the reservations whose window closed (their seats back on sale)."""
    now = clock.now()
    reserved = subscriptions.open_due_renewals(now=now)
    mailed = renewal_notices.send_pending()
    ended = subscriptions.end_renewal_carts(now)
    return {"reserved": reserved, "mailed": mailed, "ended": ended}


@shared_task(name="booking.tasks.compact_past_sessions", bind=True, time_limit=600, soft_time_limit=540)
def compact_past_sessions(self) -> int:
    """Past sessions' seat grids become a summary (sales/retention.py)."""
    compacted = retention.compact_past_sessions()
    logger.info("compact_past_sessions task=%s: %d sessions compacted", self.request.id, compacted)
    return compacted


@shared_task(name="booking.tasks.refresh_report_summaries", bind=True, time_limit=300, soft_time_limit=270)
def refresh_report_summaries(self) -> int:
    """Recount the sales summaries of sessions whose orders changed (booking/reports/summaries.py)."""
    counted = summaries.refresh_marked()
    if counted:
        logger.info("refresh_report_summaries task=%s: %d sessions counted", self.request.id, counted)
    return counted


@shared_task(name="booking.tasks.keep_takings_days", time_limit=600, soft_time_limit=540)
def keep_takings_days() -> int:
    """Count and keep the past days' takings (reports/takings.py) before staff open the report."""
    return takings.keep_past_days(now=clock.now())


def mail_retry_countdown(retries: int) -> float:
    """Exponential backoff with jitter (so many failed mails do not all come back at once)."""
    ceiling = min(settings.BOOKING_MAIL_RETRY_MAX_SECONDS, settings.BOOKING_MAIL_RETRY_BASE_SECONDS * 2**retries)
    return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not security


def send_once(task, document_id: str, send: Callable[[ObjectId], str]) -> str:
    """A mail task's run for one document: "invalid id" for an id that is none; a mail server that
    is away is tried again with backoff, then "failed" (still owed: reconcile queues it again)."""
    try:
        oid = ObjectId(document_id)
    except (InvalidId, TypeError):
        return "invalid id"
    try:
        return send(oid)
    except notifications.MailServerUnavailable as exc:
        if task.request.retries >= task.max_retries:
            return "failed"
        raise task.retry(countdown=mail_retry_countdown(task.request.retries)) from exc


@shared_task(name=work_queue.SEND_ORDER_CONFIRMATION, bind=True, max_retries=8, time_limit=90, soft_time_limit=60)
def send_order_confirmation(self, order_id: str) -> SendOutcome:
    """The confirmation e-mail of one order (queued once the order is stored)."""
    try:
        oid = ObjectId(order_id)
    except (InvalidId, TypeError):
        logger.error("send_order_confirmation: %r is not an order id", order_id)
        return SendOutcome.INVALID_ID
    try:
        outcome = notifications.send_confirmation(oid)
    except notifications.MailServerUnavailable as exc:
        if self.request.retries >= self.max_retries:
            # Failed for this round; reconcile starts the next one later, up to a cap.
            notifications.give_up(oid, f"mail server kept failing: {exc}")
            return SendOutcome.FAILED
        countdown = mail_retry_countdown(self.request.retries)
        logger.warning(
            "confirmation mail for order %s failed (%s); retry %d in %.1f s",
            order_id,
            exc,
            self.request.retries + 1,
            countdown,
        )
        raise self.retry(countdown=countdown) from exc
    logger.info("confirmation mail for order %s: %s", order_id, outcome)
    return outcome


@shared_task(name=work_queue.SEND_PAYMENT_NOTICE, bind=True, max_retries=8, time_limit=90, soft_time_limit=60)
def send_payment_notice(self, order_id: str) -> str:
    """The e-mail telling a buyer their payment was refunded without a booking (payments/refunds.py)."""
    outcome = send_once(self, order_id, payment_notices.send_notice)
    logger.info("refund notice for order %s: %s", order_id, outcome)
    return outcome


@shared_task(name=work_queue.SEND_CHANGE_NOTICES, bind=True, max_retries=8, time_limit=120, soft_time_limit=90)
def send_change_notices(self, order_id: str) -> list[str]:
    """The e-mails telling a customer their booking was changed or canceled by staff
    (notifications/change_notices.py); each notice is sent once however often this runs."""
    try:
        oid = ObjectId(order_id)
    except (InvalidId, TypeError):
        return ["invalid id"]
    try:
        outcomes = change_notices.send_pending(oid)
    except notifications.MailServerUnavailable as exc:
        if self.request.retries >= self.max_retries:
            return ["failed"]  # still pending: reconcile queues it again later
        raise self.retry(countdown=mail_retry_countdown(self.request.retries)) from exc
    logger.info("change notices for order %s: %s", order_id, outcomes)
    return outcomes


@shared_task(name=work_queue.CANCEL_SESSION_ORDERS, bind=True, max_retries=5, time_limit=3600, soft_time_limit=3500)
def cancel_session_orders(self, session_id: str) -> dict:
    """Cancel and refund every order of a canceled session (sales/session_cancel.py): resumable,
    each order once."""
    try:
        sid = ObjectId(session_id)
    except (InvalidId, TypeError):
        return {"error": "invalid id"}
    return cancels.cancel_session_orders(sid)


@shared_task(name=work_queue.DISPATCH_WEBHOOK_EVENTS, time_limit=120, soft_time_limit=100)
def dispatch_webhook_events(collection: str, document_id: str) -> int:
    """An order's or a performance's webhook events become deliveries (webhooks/dispatch.py)."""
    try:
        oid = ObjectId(document_id)
    except (InvalidId, TypeError):
        return 0
    return len(dispatch.dispatch(collection, oid))


@shared_task(name=work_queue.DELIVER_WEBHOOK, bind=True, max_retries=None, time_limit=60, soft_time_limit=50)
def deliver_webhook(self, delivery_id: str) -> str:
    """One webhook delivery (webhooks/deliveries.py): tried again with backoff while it is due; the
    delivery counts its own tries, so Celery's count is not the limit."""
    outcome = deliveries.attempt(delivery_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.state


@shared_task(name=work_queue.SEND_SIGN_IN_LINK, bind=True, max_retries=5, time_limit=60, soft_time_limit=45)
def send_sign_in_link(self, email: str, language: str) -> str:
    """The buyer's sign-in mail (notifications/sign_in.py); no trace of it is kept but the log."""
    try:
        outcome = sign_in.send_sign_in_link(email=email, language=language)
    except notifications.MailServerUnavailable as exc:
        if self.request.retries >= self.max_retries:
            return "failed"
        raise self.retry(countdown=mail_retry_countdown(self.request.retries)) from exc
    logger.info("sign-in link: %s", outcome)
    return outcome


@shared_task(name="booking.tasks.offer_waiting_list_seats", time_limit=120, soft_time_limit=108)
def offer_waiting_list_seats() -> dict:
    """Waiting lists (sales/waiting_list.py): lapsed offers pass on, seats that came back are offered."""
    report = waiting_list.pass_on()
    return {"lapsed": report.lapsed, "offered": report.offered}


@shared_task(name=work_queue.OFFER_RETURNED_SEATS, time_limit=60, soft_time_limit=45)
def offer_returned_seats(session_id: str) -> dict:
    """Seats of one performance came back (sales/seats_returned.py): offered to its waiting list now."""
    try:
        oid = ObjectId(session_id)
    except (InvalidId, TypeError):
        return {"offered": 0, "error": "invalid id"}
    report = waiting_list.offer_free_seats(oid)
    return {"offered": report.offered, "missed": report.missed}


@shared_task(name=work_queue.SEND_WAITING_LIST_OFFER, bind=True, max_retries=8, time_limit=60, soft_time_limit=45)
def send_waiting_list_offer(self, entry_id: str) -> str:
    """The mail offering a waiting buyer their seats (notifications/waiting_list_mail.py), once."""
    return send_once(self, entry_id, waiting_list_mail.send_offer)


@shared_task(name=work_queue.SEND_VOUCHER_MAIL, bind=True, max_retries=8, time_limit=60, soft_time_limit=45)
def send_voucher_mail(self, voucher_id: str) -> str:
    """The mail with a gift voucher bought online (notifications/voucher_mail.py), once."""
    return send_once(self, voucher_id, voucher_mail.send_voucher)
