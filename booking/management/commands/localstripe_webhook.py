"""Development only: have localstripe send its webhooks to this app.

localstripe has no webhook endpoints like Stripe's dashboard; it keeps registrations in memory
(``POST /_config/webhooks/<id>``), so they are gone when it restarts. This command registers the
app's endpoint and, with ``--keep`` (the dev runner's way), registers it again every half minute
and never exits (honcho stops everything when one process exits).
"""

import json
import time
import urllib.error
import urllib.request

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse


class Command(BaseCommand):
    help = "Register this app's Stripe webhook at localstripe (development)."

    def add_arguments(self, parser):
        parser.add_argument("--url", default=settings.SITE_URL, help="where the app is reached")
        parser.add_argument("--once", action="store_true", help="register once and exit")

    def handle(self, *args, url, once, **options):
        if "127.0.0.1" not in settings.STRIPE_API_BASE and "localhost" not in settings.STRIPE_API_BASE:
            raise CommandError("STRIPE_API_BASE is not a local localstripe; real Stripe webhooks are set up at Stripe.")
        target = url.rstrip("/") + reverse("booking:stripe_webhook")
        body = json.dumps({"url": target, "secret": settings.STRIPE_WEBHOOK_SECRET}).encode()
        announced = False
        while True:
            request = urllib.request.Request(  # noqa: S310 - a local address from settings
                f"{settings.STRIPE_API_BASE}/_config/webhooks/app", body, method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=5):  # noqa: S310 - a local address from settings
                    pass
                if not announced:
                    self.stdout.write(f"localstripe sends webhooks to {target}")
                    announced = True
            except (urllib.error.URLError, OSError):
                announced = False  # not up yet, or restarted: try again
            if once and announced:
                return
            time.sleep(1 if not announced else 30)
