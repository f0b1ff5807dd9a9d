from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Dev only: create the staff user admin/admin if no superuser exists (refused when DEBUG is off)."

    def handle(self, *args, **options):
        if not settings.DEBUG:
            self.stderr.write("Refusing to create a dev admin with DEBUG off.")
            return
        users = get_user_model()
        if not users.objects.filter(is_superuser=True).exists():
            users.objects.create_superuser("admin", "admin@theater.example", "admin")
            self.stdout.write("Created dev superuser admin / admin.")
