from django.core.management.base import BaseCommand

from booking.upkeep.reconcile import reconcile


class Command(BaseCommand):
    help = "Finish stuck checkouts, expire stale carts and release holds nobody owns (what the worker does)."

    def handle(self, *args, **options):
        self.stdout.write(f"reconcile: {reconcile()}")
