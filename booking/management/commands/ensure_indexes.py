from django.core.management.base import BaseCommand

from booking import mongo


class Command(BaseCommand):
    help = "Create every MongoDB index the access patterns need (safe to repeat)."

    def handle(self, *args, **options):
        for name in mongo.ensure_indexes():
            self.stdout.write(f"index ok: {name}")
