"""Every page that answers GET answers HEAD the same way (monitors, link checkers and caches ask
with HEAD): the whole URLconf is walked, so a view added with GET and without HEAD is caught."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# Values tried for a path's parameters, first that fits the pattern first: none names a real
# object, so each page answers its "not found" (or its form), which is where a method check that
# forgot HEAD shows (Django's require_http_methods answers 405 before the view runs).
SAMPLES = ("x", "0123456789abcdef01234567", "booking", "a" * 16)
# Django's own admin login sends a signed-in GET on to the index and shows HEAD the form.
HEAD_SEES_THE_FORM = {"/admin/login/"}


def routes() -> list[str]:
    """A path for every pattern of the URLconf (Django's admin catch-all aside)."""
    found: list[str] = []

    def walk(patterns, namespace: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                inner = ":".join(filter(None, (namespace, p.namespace)))
                walk(p.url_patterns, inner)
            elif isinstance(p, URLPattern) and p.name:
                name = f"{namespace}:{p.name}" if namespace else p.name
                path = _reversed(name, list(p.pattern.regex.groupindex))
                if path is not None:
                    found.append(path)
            elif isinstance(p, URLPattern) and not p.pattern.regex.groupindex:
                found.append("/" + str(p.pattern).lstrip("^").rstrip("$"))

    walk(get_resolver().url_patterns, "")
    return sorted(set(found))


def _reversed(name: str, params: list[str]) -> str | None:
    for sample in SAMPLES:
        try:
            return reverse(name, kwargs=dict.fromkeys(params, sample))
        except NoReverseMatch:
            continue
    return None  # a parameter none of the samples fits (a choice of words): left out


ROUTES = routes()


def test_the_walk_finds_the_buyer_staff_and_door_pages():
    assert "/" in ROUTES and "/orders/x/exchange-pay" in ROUTES and "/checkin/login/" in ROUTES
    assert "/admin/" in ROUTES and any(re.match(r"^/admin/booking/\w+/$", r) for r in ROUTES)
    assert len(ROUTES) >= 60


@pytest.mark.parametrize("who", ["anonymous", "superuser"])
def test_every_page_answers_head_like_get(who):
    client = Client()
    if who == "superuser":
        client.force_login(get_user_model().objects.create_superuser("boss", "boss@example.org", None))
    differ = []
    for path in ROUTES:
        got, head = client.get(path), client.head(path)
        assert not head.content, path
        if got.status_code == 405 or path in HEAD_SEES_THE_FORM:
            continue
        if (head.status_code, head.get("Content-Type")) != (got.status_code, got.get("Content-Type")):
            differ.append((path, got.status_code, head.status_code))
    assert differ == []
