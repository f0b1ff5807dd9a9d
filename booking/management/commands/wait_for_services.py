import time

import redis
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from pymongo.errors import PyMongoError

from booking.core import mongo


class Command(BaseCommand):
    help = "Wait until MongoDB and Redis answer (the dev runner starts everything at once)."

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=60)

    def handle(self, *args, timeout=60, **options):
        deadline = time.monotonic() + timeout
        checks = {
            "MongoDB": lambda: mongo.get_client().admin.command("ping"),
            "Redis": lambda: redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1).ping(),
        }
        for name, check in checks.items():
            while True:
                try:
                    check()
                    break
                except (PyMongoError, redis.RedisError) as exc:
                    if time.monotonic() > deadline:
                        raise CommandError(f"{name} did not answer within {timeout:.0f} s: {exc}") from exc
                    time.sleep(0.3)
