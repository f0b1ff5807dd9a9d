"""The what's-on page kept for a moment (booking/web/page_cache.py): a kept page costs no MongoDB
command, is at most BOOKING_WHATS_ON_CACHE_SECONDS old, is kept per language and per query, carries
each viewer's own CSRF token, and a browser holding the same page gets a 304."""

import re

import pytest
from django.test import Client

from booking.core import mongo
from booking.tests.commands import counting_commands
from booking.tests.factories import make_session
from booking.web import page_cache

pytestmark = pytest.mark.django_db

LIFETIME = 1.0


@pytest.fixture(autouse=True)
def kept_for_a_second(settings, monkeypatch):
    """The cache on (the test settings turn it off), on a clock the test moves."""
    settings.BOOKING_WHATS_ON_CACHE_SECONDS = LIFETIME
    page_cache.clear()
    now = [1000.0]
    monkeypatch.setattr(page_cache, "monotonic", lambda: now[0])
    yield now
    page_cache.clear()


def seats_left(page: str, name: str) -> str:
    card = re.search(rf'<span class="show-name">{name}</span>.*?<span class="badge[^"]*">([^<]*)</span>', page, re.S)
    assert card, page
    return card.group(1)


def csrf_token(page: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert found
    return found.group(1)


def test_a_kept_page_costs_no_mongodb_command_and_is_the_same_page():
    make_session(name="Hamlet", days=1)
    first = Client().get("/")
    with counting_commands() as counter:
        second = Client().get("/")
    assert counter.commands == []
    assert second.status_code == 200
    strip = re.compile(r'(value="|X-CSRFToken": ")[^"]+"')  # the one per-viewer part
    assert strip.sub("", second.content.decode()) == strip.sub("", first.content.decode())
    assert "Hamlet" in second.content.decode()


def test_seats_left_are_at_most_the_lifetime_old(kept_for_a_second):
    session = make_session(name="Hamlet", days=1)
    assert seats_left(Client().get("/").content.decode(), "Hamlet") == "24 seats left"
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"seatsAvailable": 20}})
    kept_for_a_second[0] += LIFETIME - 0.001  # just inside the lifetime: the kept page
    assert seats_left(Client().get("/").content.decode(), "Hamlet") == "24 seats left"
    kept_for_a_second[0] += 0.001  # exactly the lifetime: built again
    assert seats_left(Client().get("/").content.decode(), "Hamlet") == "20 seats left"


def test_each_viewer_gets_a_token_of_their_own_that_the_language_switch_accepts():
    make_session(name="Hamlet", days=1)
    Client().get("/")  # kept by another viewer
    viewer = Client(enforce_csrf_checks=True)
    page = viewer.get("/").content.decode()
    token = csrf_token(page)
    assert f'"X-CSRFToken": "{token}"' in page
    switched = viewer.post("/i18n/setlang/", {"language": "de", "next": "/", "csrfmiddlewaretoken": token})
    assert switched.status_code == 302
    german = viewer.get("/").content.decode()
    assert '<html lang="de">' in german and "Hamlet" in german


def test_a_returning_viewer_gets_a_new_token_each_time_that_the_csrf_check_accepts():
    """A viewer with a CSRF cookie gets the token masked by page_cache (not get_token):
    a different token on every answer (BREACH), each one accepted for their cookie."""
    make_session(name="Hamlet", days=1)
    viewer = Client(enforce_csrf_checks=True)
    first = csrf_token(viewer.get("/").content.decode())  # the cookie is set with this answer
    cookie = viewer.cookies["csrftoken"].value
    answer = viewer.get("/")
    second, third = csrf_token(answer.content.decode()), csrf_token(viewer.get("/").content.decode())
    assert len({first, second, third}) == 3 and all(len(t) == 64 for t in (second, third))
    assert "csrftoken" not in answer.cookies and viewer.cookies["csrftoken"].value == cookie  # kept, not re-sent
    for token in (second, third):
        switched = viewer.post("/i18n/setlang/", {"language": "de", "next": "/", "csrfmiddlewaretoken": token})
        assert switched.status_code == 302
    forged = second[:32] + ("a" if second[32] != "a" else "b") + second[33:]  # the secret changed
    assert viewer.post("/i18n/setlang/", {"language": "en", "csrfmiddlewaretoken": forged}).status_code == 403


def test_kept_per_language_and_per_query_and_for_htmx_apart():
    make_session(name="Hamlet", days=1)
    english = Client().get("/").content.decode()
    german = Client(HTTP_ACCEPT_LANGUAGE="de").get("/").content.decode()
    assert '<html lang="en">' in english and '<html lang="de">' in german
    assert '<html lang="en">' in Client().get("/").content.decode()
    listing = Client().get("/", HTTP_HX_REQUEST="true").content.decode()
    assert listing.startswith('<div id="listing">')
    assert Client().get("/").content.decode().startswith("<!doctype html>")
    tomorrow = Client().get("/?date=2000-01-01").content.decode()  # no show that day (past: none)
    assert "Hamlet" not in tomorrow and "Hamlet" in Client().get("/").content.decode()


def test_the_same_page_again_is_a_304_until_it_changes(kept_for_a_second):
    session = make_session(name="Hamlet", days=1)
    browser = Client()
    first = browser.get("/")
    tag = first["ETag"]
    assert tag.startswith('W/"') and first["Cache-Control"] == "private, no-cache"
    again = browser.get("/", HTTP_IF_NONE_MATCH=tag)
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == tag
    other = Client()
    other.get("/")  # a cookie of its own: the same page, another token, another tag
    assert other.get("/", HTTP_IF_NONE_MATCH=tag).status_code == 200
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"seatsAvailable": 20}})
    kept_for_a_second[0] += LIFETIME
    changed = browser.get("/", HTTP_IF_NONE_MATCH=tag)
    assert changed.status_code == 200 and changed["ETag"] != tag
    assert seats_left(changed.content.decode(), "Hamlet") == "20 seats left"


def test_a_viewer_with_a_message_gets_it_and_nobody_else_does():
    make_session(name="Hamlet", days=1)
    Client().get("/")
    told = Client()
    told.post("/checkout/", {"name": "Ada", "email": "ada@example.org"})  # no cart: a message waits
    page = told.get("/").content.decode()
    assert "You have no seats on hold." in page
    assert "You have no seats on hold." not in told.get("/").content.decode()  # shown once
    assert "You have no seats on hold." not in Client().get("/").content.decode()


def test_a_bad_filter_is_refused_and_never_kept():
    make_session(name="Hamlet", days=1)
    for _ in range(2):
        bad = Client().get("/?date=not-a-date")
        assert bad.status_code == 400
    assert Client().get("/").status_code == 200
