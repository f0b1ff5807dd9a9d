"""What the Celery worker is up to, for an operator: is anyone answering, is expiry keeping up, and
which confirmation mails failed?"""

import redis
from django.conf import settings
from django.core.management.base import BaseCommand

from booking.payments.refunds import failed_refunds
from booking.sales import selectors
from booking.webhooks import selectors as webhooks
from theater_site.celery import app as celery_app


class Command(BaseCommand):
    help = (
        "Show the expiry backlog (active carts, carts past their hold but not yet expired, the oldest "
        "of them), pending and failed confirmation mails (each failed one with its reference), webhook "
        "deliveries still to be sent and whether a Celery worker answers a ping."
    )

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=1.0, help="seconds to wait for workers to answer")
        parser.add_argument("--no-ping", action="store_true", help="only read MongoDB; do not ask the workers")

    def handle(self, *args, timeout: float, no_ping: bool, **options):
        backlog = selectors.expiry_backlog()
        out = self.stdout
        out.write(f"active carts:                 {backlog['active']}")
        out.write(f"past their hold, not expired: {backlog['stale']}")
        oldest = backlog["oldest_stale_expired_at"]
        if oldest is not None:
            age = (backlog["now"] - oldest).total_seconds()
            every = settings.BOOKING_EXPIRE_EVERY_SECONDS
            note = "" if age <= 2 * every else f"  (expiry runs every {every:g} s: is the worker or beat down?)"
            out.write(f"oldest of them ended:         {age:.0f} s ago{note}")
        out.write(f"confirmation mails pending:   {backlog['mails_pending']}")
        self.write_failed_mails(backlog)
        self.write_refunds()
        out.write(f"webhook deliveries pending:   {webhooks.pending_deliveries()}")
        if no_ping:
            return
        try:
            queued = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=timeout).llen("celery")
            replies = celery_app.control.ping(timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - any broker failure is what the operator needs to see
            out.write(self.style.ERROR(f"broker (Redis) unreachable: {exc}"))
            return
        out.write(f"tasks waiting in the queue:   {queued}")
        if not replies:
            out.write(self.style.WARNING(f"workers: none answered within {timeout:g} s"))
            return
        names = sorted(name for reply in replies for name in reply)
        out.write(self.style.SUCCESS(f"workers answering: {len(names)} ({', '.join(names)})"))

    def write_failed_mails(self, backlog: dict) -> None:
        failed, given_up = backlog["mails_failed"], backlog["mails_given_up"]
        line = f"confirmation mails failed:    {failed}"
        if failed:
            line += f" ({failed - given_up} to be retried automatically, {given_up} given up)"
        self.stdout.write(self.style.WARNING(line) if given_up else line)
        if not failed:
            return
        now = backlog["now"]
        shown = selectors.failed_mails(limit=20)
        for order in shown:
            rounds = order.get("mailFailures") or 1
            retry_at = order.get("mailRetryAt")
            if retry_at is not None:
                wait = max((retry_at - now).total_seconds(), 0)
                status = f"next try in {wait / 60:.0f} min"
            else:
                status = "given up"
            reason = order.get("mailFailure", "")
            self.stdout.write(f"  {order['ref']}  {order.get('email', '')}  {status}, failed {rounds}x: {reason}")
        if failed > len(shown):
            self.stdout.write(f"  ... and {failed - len(shown)} more")
        if given_up:
            self.stdout.write("  re-send one on purpose: manage.py resend_confirmation <REF>")

    def write_refunds(self) -> None:
        """Refunds not done yet (payments/refunds.py): money owed back; failed ones are retried."""
        owed = failed_refunds(limit=20)
        line = f"refunds not done yet:         {len(owed)}"
        self.stdout.write(self.style.WARNING(line) if owed else line)
        for refund in owed:
            retry = refund.get("retryAt")
            status = refund["status"] + (f", next try {retry:%Y-%m-%d %H:%M} UTC" if retry else ", waits for staff")
            why = f": {refund['failure']}" if refund.get("failure") else ""
            self.stdout.write(f"  {refund['ref']}  {refund['amount'] / 100:.2f}  {status}{why}")
