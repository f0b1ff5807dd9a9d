"""Send an order's confirmation e-mail again, on purpose: after it failed, or because the buyer
lost it. The mail goes out from this process (the result is shown); if the mail server is away,
it is queued for the worker, which retries with backoff."""

from django.core.management.base import BaseCommand, CommandError

from booking import selectors
from booking.services import notifications


class Command(BaseCommand):
    help = (
        "Re-send the confirmation e-mail of the orders with these booking references (sent or failed "
        "mails; a pending one is sent now). Run twice at once, each mail still goes out once."
    )

    def add_arguments(self, parser):
        parser.add_argument("refs", nargs="+", metavar="REF", help="booking reference, e.g. K7M2QX9A")

    def handle(self, *args, refs: list[str], **options):
        problems = 0
        for ref in refs:
            ok, text = self.resend(ref.strip().upper().replace("-", ""))
            self.stdout.write(f"{ref}: {text}" if ok else self.style.ERROR(f"{ref}: {text}"))
            problems += not ok
        if problems:
            raise CommandError(f"{problems} of {len(refs)} mails were not sent")

    def resend(self, ref: str) -> tuple[bool, str]:
        order = selectors.get_order_by_ref(ref)
        if order is None:
            return False, "no such order"
        opened = notifications.reopen(order["_id"], order.get("mailRound"))
        if opened == "not paid":
            return False, f"the order is {order.get('state')}; its mail is not sent"
        if opened == "changed":
            state = (selectors.get_order(order["_id"]) or {}).get("mail", "?")
            return False, f"not re-sent: it changed meanwhile (mail is {state} now); run again to re-send"
        if opened == "no such order":
            return False, "no such order"
        try:
            outcome = notifications.send_confirmation(order["_id"])
        except notifications.MailServerUnavailable as exc:
            queued = notifications.queue_reopened(order["_id"])
            later = "queued for the worker" if queued else "reconcile queues it once Redis is back"
            return False, f"the mail server did not take it ({exc}); {later}"
        if outcome == "sent":
            return True, f"sent to {order['email']}"
        if outcome == "busy":
            return True, "a worker is sending it right now"
        if outcome == "already sent":
            return True, "a worker sent it just now"
        failure = (selectors.get_order(order["_id"]) or {}).get("mailFailure", "")
        return False, f"{outcome}: {failure}" if failure else outcome
