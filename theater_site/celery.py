"""The Celery app, configured from Django settings (the CELERY_* names).

Redis (REDIS_URL) is the broker; tasks are found in booking/upkeep/tasks.py (autodiscover_tasks below); the
beat schedule, with each task's time limit, is CELERY_BEAT_SCHEDULE in settings.py.
Run: ``celery -A theater_site worker`` (any number) and ``celery -A theater_site beat`` (one).
"""

import os

from celery import Celery
from celery.signals import setup_logging

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "theater_site.settings")

app = Celery("theater_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["booking.upkeep"])


@setup_logging.connect
def use_django_logging(**kwargs):
    """Logging is Django's LOGGING for the worker and beat too. Without this receiver Celery adds
    its own handler to the root logger and every booking line is printed twice."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)
