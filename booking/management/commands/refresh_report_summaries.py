from django.core.management.base import BaseCommand

from booking.reports import summaries


class Command(BaseCommand):
    help = (
        "Recount the sales reports' summaries of sessions whose orders changed (what the worker does "
        "every minute); with --all, of every session (after a deploy that brings the summaries, or "
        "to rebuild them: safe while the site runs)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="every session, not only the changed ones")

    def handle(self, *args, **options):
        counted = summaries.refresh_all() if options["all"] else summaries.refresh_marked(limit=10**9)
        self.stdout.write(self.style.SUCCESS(f"{counted} sessions counted."))
