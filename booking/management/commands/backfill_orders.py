from django.core.management.base import BaseCommand

from booking.upkeep import backfill


class Command(BaseCommand):
    help = (
        "Bring carts, orders and sessions made by older versions up to what this one relies on: checkouts "
        "begun before payments finished, the staff search's nameKeys, the retention's purgeAt, and which "
        "sessions' tickets all start with their order's reference (safe to repeat; run once after "
        "upgrading, with every web node upgraded)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=500)

    def handle(self, *args, **options):
        report = backfill.backfill_orders(batch_size=options["batch_size"])
        self.stdout.write(
            f"checkouts begun before payments finished: {report.checkouts_finished}; "
            f"orders read: {report.orders_read}; nameKeys set: {report.name_keys_set}; "
            f"purgeAt set: {report.purge_dates_set}; sessions marked ticketCodesByRef: {report.sessions_marked}; "
            f"sessions keeping older ticket codes: {len(report.sessions_with_older_codes)}"
        )
