"""manage.py compile_catalogs: the .mo files from locale/'s .po files (booking/core/catalogs.py)."""

from django.conf import settings
from django.core.management.base import BaseCommand

from booking.core.catalogs import compile_catalogs


class Command(BaseCommand):
    help = "Compile the translation catalogs (locale/*/LC_MESSAGES/*.po) with Babel; no GNU gettext needed."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="compile even when a .mo is newer than its .po")

    def handle(self, *args, force=False, **options):
        for locale_dir in settings.LOCALE_PATHS:
            for path in compile_catalogs(locale_dir, force=force):
                self.stdout.write(f"compiled {path}")
