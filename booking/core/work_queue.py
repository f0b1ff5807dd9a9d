"""Handing work to the Celery worker by the name its task is registered under.

The domains queue a task (a mail to send, a canceled session's orders to refund) without importing
the task module: the tasks call into every domain (booking/upkeep/tasks.py), so importing them
from below would close an import loop. A task's work is written to MongoDB before it is queued,
so a publish lost to an unreachable broker is queued again by reconcile.
"""

from celery import current_app

SEND_ORDER_CONFIRMATION = "booking.tasks.send_order_confirmation"
SEND_PAYMENT_NOTICE = "booking.tasks.send_payment_notice"
SEND_CHANGE_NOTICES = "booking.tasks.send_change_notices"
CANCEL_SESSION_ORDERS = "booking.tasks.cancel_session_orders"
DISPATCH_WEBHOOK_EVENTS = "booking.tasks.dispatch_webhook_events"
DELIVER_WEBHOOK = "booking.tasks.deliver_webhook"
SEND_SIGN_IN_LINK = "booking.tasks.send_sign_in_link"
SEND_WAITING_LIST_OFFER = "booking.tasks.send_waiting_list_offer"
SEND_VOUCHER_MAIL = "booking.tasks.send_voucher_mail"
OFFER_RETURNED_SEATS = "booking.tasks.offer_returned_seats"

# One quick reconnect (a pooled connection may be stale after a Redis restart), no more: a buyer
# may be waiting for the request that queues.
ONE_RETRY = {"max_retries": 1}


def queue(task_name: str, *args: str, retry_policy: dict | None = None) -> None:
    """Publish ``task_name(*args)``. Raises whatever the broker raises; callers log it and let
    reconcile queue the work again."""
    current_app.send_task(task_name, args=list(args), retry=True, retry_policy=retry_policy or ONE_RETRY)
