"""``/healthz``: can this web process do its job? For load balancers and the chaos harness.

MongoDB is required (every page reads it): when it cannot be reached the answer is 503 with a
Retry-After hint, and a load balancer should stop sending traffic here. Redis only carries the
worker's queue and the rate limits (counted per process while it is down), so Redis down is reported as
"degraded" with 200: taking every web process out of service for it would stop sales that can
still go on.
"""

import pymongo
import redis
from django.conf import settings
from django.http import JsonResponse
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from pymongo.errors import PyMongoError

from booking.core import faults, mongo

CHECK_TIMEOUT_SECONDS = 1.0


def mongodb_ok() -> bool:
    try:
        with pymongo.timeout(CHECK_TIMEOUT_SECONDS):
            mongo.get_client().admin.command("ping")
    except PyMongoError:
        return False
    return True


def redis_ok() -> bool:
    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_connect_timeout=CHECK_TIMEOUT_SECONDS, socket_timeout=CHECK_TIMEOUT_SECONDS
    )
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


@never_cache
@require_safe
def healthz(request):
    faults.point("healthz.before_checks")  # tests hold the answer here: a slow dependency
    checks = {"mongodb": "ok" if mongodb_ok() else "down", "redis": "ok" if redis_ok() else "down"}
    if checks["mongodb"] != "ok":
        response = JsonResponse({"status": "down", **checks}, status=503)
        response["Retry-After"] = "5"
        return response
    return JsonResponse({"status": "ok" if checks["redis"] == "ok" else "degraded", **checks})


# Included by theater_site/urls.py at "healthz".
urlpatterns = [path("", healthz, name="healthz")]
