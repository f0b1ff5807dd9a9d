"""Hostile requests against every staff (admin) page, found by walking the admin's URLs, so a
page added later is covered without touching this file.

- nobody but staff with the right permission gets in: anonymous visitors and non-staff users are
  sent to the login page, staff without the permission get 403; nothing changes either way;
- malformed and unknown document ids are 404; a POST without the CSRF token is 403;
- garbage and oversized form posts never cause a 500 and never create anything.
"""

import re

import pytest
from bson import ObjectId
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from booking.sales import holds
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep import invariants

from .support import assert_unchanged, snapshot

pytestmark = pytest.mark.django_db

GARBAGE = {
    "name": "<script>alert(1)</script>",
    "grid": "A: " + "s" * 5000,
    "start": "yesterday",
    "end": "-1",
    "price_s": "-5",
    "seats": ["99:99", "x"],
    "action": "$where",
    "confirm": "yes",
    "layout": '{"rows": "nope"}',
}


def booking_admin_routes() -> list[tuple[str, bool]]:
    """(path template, takes an object id) of every admin page over the booking documents."""
    admin_resolver = next(
        p for p in get_resolver().url_patterns if isinstance(p, URLResolver) and p.namespace == "admin"
    )
    routes = []

    def walk(patterns, prefix):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                route = prefix + str(p.pattern)
                if route.startswith("booking/") and "(?P" not in route:
                    route = route.replace("<str:object_id>", "{id}")
                    # the other parts of a path (a credit note's number, a delivery's id): any value
                    route = re.sub(r"<int:\w+>", "1", re.sub(r"<(?:str|slug|path):\w+>", "x", route))
                    routes.append(("/admin/" + route, "{id}" in route))

    walk(admin_resolver.url_patterns, "")
    return routes


ROUTES = booking_admin_routes()


@pytest.fixture
def documents():
    """One of each document, so every page has a real id to be asked about."""
    session = make_session()
    held = holds.hold_seats(session["_id"], "s:buyer", None, ["0:0", "0:1"])
    sold = holds.hold_seats(session["_id"], "s:other", None, ["2:0", "2:1"])
    order = checkout_paid("s:other", sold.cart_id, "Olga", "olga@example.org")
    return {
        "theater": str(session["theaterId"]),
        "session": str(session["_id"]),
        "cart": str(held.cart_id),
        "order": str(order["_id"]),
    }


def path_for(template: str, documents: dict, object_id: str | None = None) -> str:
    kind = template.split("/")[3]  # /admin/booking/<kind>/...
    return template.format(id=object_id or documents.get(kind, str(ObjectId())))


def make_user(username: str, *, staff: bool, superuser: bool = False):
    # No password: force_login needs none, and hashing one per test would be most of the run time.
    return get_user_model().objects.create_user(
        username, f"{username}@example.org", None, is_staff=staff, is_superuser=superuser
    )


def logged_in(user, *, csrf_checks: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf_checks)
    client.force_login(user)
    return client


def test_the_walk_finds_the_staff_pages():
    paths = [p for p, _ in ROUTES]
    assert "/admin/booking/theater/add/" in paths
    assert any(p.startswith("/admin/booking/session/{id}/") for p in paths)
    assert len(ROUTES) >= 10


@pytest.mark.parametrize("route, _takes_id", ROUTES, ids=[r for r, _ in ROUTES])
def test_outsiders_are_kept_out_of_every_staff_page(route, _takes_id, documents):
    anonymous = Client()
    visitor = logged_in(make_user("visitor", staff=False))
    clerk = logged_in(make_user("clerk", staff=True))  # staff, but no permission on anything
    before = snapshot()
    path = path_for(route, documents)
    for client, expect in ((anonymous, "login"), (visitor, "login"), (clerk, 403)):
        for method in ("get", "post"):
            response = getattr(client, method)(path, GARBAGE if method == "post" else None)
            if expect == "login":
                assert response.status_code == 302 and "/admin/login/" in response["Location"], (method, path)
            else:
                assert response.status_code in (403, 405), (method, path, response.status_code)
    assert_unchanged(before, snapshot())


@pytest.mark.parametrize("route", [r for r, takes_id in ROUTES if takes_id])
@pytest.mark.parametrize(
    "bad_id",
    ["nope", str(ObjectId()), "<script>", "0" * 200],
    ids=["word", "unknown-objectid", "markup", "long"],  # the same ids in every xdist worker
)
def test_malformed_and_unknown_ids_are_404(route, bad_id, documents):
    boss = logged_in(make_user("boss", staff=True, superuser=True))
    before = snapshot()
    for method in ("get", "post"):
        response = getattr(boss, method)(route.format(id=bad_id), GARBAGE if method == "post" else None)
        # a method the page does not take at all (GET on a POST-only action, POST on a print): 405
        assert response.status_code in (404, 405), (method, route, bad_id, response.status_code)
        if response.status_code == 405:
            assert method.upper() not in response["Allow"], (method, route, response["Allow"])
        assert b"Traceback" not in response.content
    assert_unchanged(before, snapshot())


@pytest.mark.parametrize("route, _takes_id", ROUTES, ids=[r for r, _ in ROUTES])
def test_staff_posts_without_csrf_token_are_refused(route, _takes_id, documents):
    boss = logged_in(make_user("boss", staff=True, superuser=True), csrf_checks=True)
    before = snapshot()
    response = boss.post(path_for(route, documents), GARBAGE)
    assert response.status_code in (403, 405), (route, response.status_code)
    assert_unchanged(before, snapshot())


@pytest.mark.parametrize("route, _takes_id", ROUTES, ids=[r for r, _ in ROUTES])
def test_garbage_from_staff_never_breaks_a_page(route, _takes_id, documents):
    boss = logged_in(make_user("boss", staff=True, superuser=True))
    before = snapshot()
    path = path_for(route, documents)
    response = boss.post(path, GARBAGE)
    assert response.status_code < 500, (path, response.status_code)
    assert b"Traceback" not in response.content
    if response.status_code in (200, 400):  # a form shown again with its errors: nothing was made
        assert_unchanged(before, snapshot())
    assert "<script>alert(1)</script>" not in response.content.decode(errors="replace")
    assert invariants.check_invariants() == []


@pytest.mark.parametrize("route, _takes_id", ROUTES, ids=[r for r, _ in ROUTES])
def test_oversized_staff_posts_change_nothing(route, _takes_id, documents):
    boss = logged_in(make_user("boss", staff=True, superuser=True))
    before = snapshot()
    response = boss.post(path_for(route, documents), {"grid": "s" * 3_000_000, "name": "x" * 3_000_000})
    assert response.status_code < 500
    if route.startswith("/admin/booking/theater/") and route.endswith(("/add/", "/import/", "/preview/")):
        assert response.status_code == 400  # these forms read the body: Django refuses it whole
    if response.status_code != 302:  # 302: a one-button action (expire a cart) that reads no input
        assert_unchanged(before, snapshot())
