from django.core.management.base import BaseCommand

from booking.core import clock, mongo
from booking.sales import listings, waiting_list
from booking.venues import performance_index


class Command(BaseCommand):
    help = "Create every MongoDB index the access patterns need (safe to repeat)."

    def handle(self, *args, **options):
        for name in mongo.ensure_indexes():
            self.stdout.write(f"index ok: {name}")
        # sessions made before what's on had its own collection get their listings
        written = listings.backfill(clock.now())
        self.stdout.write(f"listings written for older sessions: {written}")
        # sectioned performances made before their page read the section ids by performanceId
        written = performance_index.backfill()
        self.stdout.write(f"performance documents written for older performances: {written}")
        # waiting lists joined before a session carried the flag that a release reads
        written = waiting_list.flag_listed_sessions()
        self.stdout.write(f"sessions flagged as having a waiting list: {written}")
