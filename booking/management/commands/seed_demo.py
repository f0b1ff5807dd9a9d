from django.core.management.base import BaseCommand

from booking.core import clock, mongo
from booking.sales import demo, listings


class Command(BaseCommand):
    help = "Create demo theaters and sessions (once; --force replaces them)."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="replace existing demo data")

    def handle(self, *args, force=False, **options):
        mongo.ensure_indexes()
        listings.backfill(clock.now())  # sessions kept from before what's on had its own collection
        if demo.seed(force=force):
            self.stdout.write(self.style.SUCCESS("Demo theaters and sessions created."))
        else:
            self.stdout.write("Demo data already present; nothing to do (use --force to recreate).")
