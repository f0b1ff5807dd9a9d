"""Helpers of the hostile-input suites: buyers with CSRF enforced, and database snapshots.
The fixtures are in conftest.py."""

import itertools

from bson import json_util
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.test import Client

from booking.core import mongo

_addresses = itertools.count(1)


def snapshot() -> dict:
    """Everything a request could change: every MongoDB document, the admin log, the users."""
    data = {}
    for name in ("theaters", "sessions", "carts", "orders"):
        data[name] = json_util.dumps(list(mongo.get_db()[name].find().sort("_id", 1)), sort_keys=True)
    data["admin_log"] = LogEntry.objects.count()
    data["users"] = sorted(get_user_model().objects.values_list("username", "is_staff", "is_superuser"))
    return data


def assert_unchanged(before: dict, after: dict) -> None:
    changed = [name for name in before if before[name] != after[name]]
    assert not changed, f"bad input changed the database: {changed}"


def buyer_client() -> Client:
    """A browser of its own (cookies, address), with CSRF checks on as in production."""
    n = next(_addresses)
    client = Client(enforce_csrf_checks=True, REMOTE_ADDR=f"203.0.{113 + n // 250 % 100}.{n % 250 + 1}")
    client.get("/")  # sets the CSRF cookie
    return client


def csrf(client: Client) -> dict:
    return {"HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value}
