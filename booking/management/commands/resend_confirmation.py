"""Send an order's confirmation e-mail again, on purpose: after it failed, or because the buyer
lost it. The mail goes out from this process (the result is shown); if the mail server is away,
it is queued for the worker, which retries with backoff."""

from django.core.management.base import BaseCommand, CommandError

from booking.notifications import confirmations as notifications
from booking.sales import selectors


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
            order = selectors.get_order_by_ref(ref.strip().upper().replace("-", ""))
            done = notifications.resend(order, order.get("mailRound") if order else None, send_now=True)
            text = f"{ref}: {done.message}"
            self.stdout.write(text if done.ok else self.style.ERROR(text))
            problems += not done.ok
        if problems:
            raise CommandError(f"{problems} of {len(refs)} mails were not sent")
