from django.core.management.base import BaseCommand, CommandError

from booking.upkeep.invariants import check_invariants


class Command(BaseCommand):
    help = "Check the booking invariants (no seat sold twice, none stuck on hold...). Exit 1 on a breach."

    def handle(self, *args, **options):
        breaches = check_invariants()
        for breach in breaches:
            self.stderr.write(f"BREACH: {breach}")
        if breaches:
            raise CommandError(f"{len(breaches)} invariant breaches")
        self.stdout.write(self.style.SUCCESS("All booking invariants hold."))
