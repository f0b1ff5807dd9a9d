"""The holes the hostile-input review found, one test (or a few) each. Every test here
failed against the code before its fix; the commit that fixed the hole says how it failed.

Limits with their own suite (the rate limits, Redis down) are in test_limits.py.
"""

import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from booking.core import clock, mongo
from booking.notifications import confirmations as notifications
from booking.sales import holds
from booking.tests.factories import make_theater
from booking.tests.headers import HTMX
from booking.tests.paying import checkout_paid
from booking.upkeep import reconcile

from .support import assert_unchanged, buyer_client, csrf, snapshot

pytestmark = pytest.mark.django_db


def staff_client() -> Client:
    boss = get_user_model().objects.create_user("boss", "boss@example.org", None, is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(boss)
    return client


# --- 1. what's on, a day at either end of the calendar ---


@pytest.mark.parametrize("day", ["9999-12-31", "9999-12-30", "0001-01-01"])
@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_whats_on_for_a_day_at_the_end_of_the_calendar_is_a_clear_400(day, htmx, session):
    before = snapshot()
    response = Client().get(f"/?date={day}", **(HTMX if htmx else {}))
    assert response.status_code == 400
    assert "Choose a date in the years 1900 to 9998." in response.content.decode()
    assert_unchanged(before, snapshot())


def test_whats_on_still_shows_the_days_inside_the_range(session):
    day = session["start"].date().isoformat()  # tomorrow, in UTC; the site is a few hours off at most
    response = Client().get(f"/?date={day}", **HTMX)
    assert response.status_code == 200


# --- 2. the staff's session list, a day at either end of the calendar ---


@pytest.mark.parametrize(
    "query",
    ["day=9999-12-31", "day=9999-12-31&when=all", "day=0001-01-01&when=past", "day=0001-01-01", "day=0001-01-02"],
)
def test_staff_session_list_for_a_day_at_the_end_of_the_calendar_is_a_clear_400(query, session):
    client = staff_client()
    before = snapshot()
    response = client.get(f"/admin/booking/session/?{query}")
    assert response.status_code == 400
    assert "Choose a date in the years 1900 to 9998." in response.content.decode()
    assert_unchanged(before, snapshot())


def test_staff_session_list_still_filters_by_a_day(session):
    day = session["start"].date().isoformat()
    response = staff_client().get(f"/admin/booking/session/?day={day}&when=all")
    assert response.status_code == 200


def test_a_series_ending_at_the_end_of_the_calendar_is_refused_not_a_500():
    theater = make_theater()
    client = staff_client()
    before = snapshot()
    form = {
        "name": "Hamlet",
        "first_day": "9999-12-31",
        "last_day": "9999-12-31",
        "start_time": "23:30",
        "duration": "150",  # ends in the year 10000
        "weekdays": [str(d) for d in range(7)],
        "price_s": "10",
        "price_p": "20",
    }
    response = client.post(f"/admin/booking/session/add-series/?theater={theater['_id']}", form)
    assert response.status_code == 400
    assert "Choose a date in the years 1900 to 9998." in response.content.decode()
    assert_unchanged(before, snapshot())


# --- 3. theater layout import: any JSON at all is a form error or a theater, never a 500 ---


def _layout_doc() -> dict:
    return {
        "name": "Imported Hall",
        "layout": {
            "categories": [{"code": "s", "name": "Stalls", "color": "#3b82f6"}],
            "rows": [{"label": "A", "cells": [{"label": "1", "cat": "s"}, None, {"label": "2", "cat": "s"}]}],
        },
    }


# Where in the document a hostile value goes: a path of keys and indexes.
IMPORT_PLACES = [
    ("name",),
    ("layout",),
    ("layout", "categories"),
    ("layout", "categories", 0),
    ("layout", "categories", 0, "code"),
    ("layout", "categories", 0, "name"),
    ("layout", "categories", 0, "color"),
    ("layout", "rows"),
    ("layout", "rows", 0),
    ("layout", "rows", 0, "label"),
    ("layout", "rows", 0, "cells"),
    ("layout", "rows", 0, "cells", 0),
    ("layout", "rows", 0, "cells", 0, "label"),
    ("layout", "rows", 0, "cells", 0, "cat"),
    ("layout", "rows", 0, "cells", 0, "wheelchair"),
]
HOSTILE_VALUES = [["s"], {"s": 1}, [], {}, 1e308, -1, True, None, "", "s" * 5000, [[[[[[[[["s"]]]]]]]]]]


def _import(client, text: str | None = None, upload: bytes | None = None):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = {"text": text or ""}
    if upload is not None:
        data["file"] = SimpleUploadedFile("layout.json", upload, content_type="application/json")
    return client.post("/admin/booking/theater/import/", data)


def test_an_unhashable_category_in_an_imported_layout_is_a_form_error():
    doc = _layout_doc()
    doc["layout"]["rows"][0]["cells"][0]["cat"] = ["s"]
    client = staff_client()
    before = snapshot()
    for response in (_import(client, text=json.dumps(doc)), _import(client, upload=json.dumps(doc).encode())):
        assert response.status_code == 400
        assert "Seat 1 has no category letter" in response.content.decode()
    assert_unchanged(before, snapshot())


@pytest.mark.parametrize("shape", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_deeply_nested_json_is_a_form_error(shape):
    client = staff_client()
    before = snapshot()
    for response in (_import(client, text=shape), _import(client, upload=shape.encode())):
        assert response.status_code == 400
        assert "nested too deeply" in response.content.decode()
    assert_unchanged(before, snapshot())


def test_nesting_within_the_parsers_reach_is_a_form_error_too():
    doc = _layout_doc()
    deep: list = ["s"]
    for _ in range(900):  # json.loads takes it; repr() or str() of it may not, deeper in the stack
        deep = [deep]
    doc["layout"]["rows"][0]["cells"][0]["label"] = deep
    response = _import(staff_client(), text=json.dumps(doc))
    assert response.status_code == 400
    assert "nested too deeply" in response.content.decode()


def test_nan_and_infinity_are_not_json():
    response = _import(staff_client(), text=json.dumps(_layout_doc()).replace('"1"', "NaN"))
    assert response.status_code == 400
    assert "not valid JSON" in response.content.decode()


def test_any_value_anywhere_in_an_imported_layout_is_a_form_error_or_a_theater():
    client = staff_client()
    broken = []
    for place in IMPORT_PLACES:
        for value in HOSTILE_VALUES:
            doc = _layout_doc()
            target = doc
            for step in place[:-1]:
                target = target[step]
            target[place[-1]] = value
            before = snapshot()
            response = _import(client, text=json.dumps(doc))
            if response.status_code == 400:
                if "errornote" not in response.content.decode() or snapshot() != before:
                    broken.append((place, value, "400 without a message, or something changed"))
            elif response.status_code != 302:
                broken.append((place, value, response.status_code))
    assert not broken


def test_a_sectioned_venues_export_is_imported_as_a_sectioned_venue_and_a_broken_one_refused():
    doc = {"name": "Stadium", "sections": [{"name": "North", "layout": _layout_doc()["layout"]}]}
    client = staff_client()
    before = snapshot()
    broken = {**doc, "sections": [{"name": "", "layout": _layout_doc()["layout"]}]}
    response = _import(client, text=json.dumps(broken))
    assert response.status_code == 400 and "the name must be" in response.content.decode()
    assert_unchanged(before, snapshot())
    response = _import(client, text=json.dumps(doc))
    assert response.status_code == 302  # sectioned venues are drawn, edited and imported in the admin


# --- 4. booking lookups: a real reference and a made-up one answer alike, under the same limit ---


def _paid_order(session, email="ada@example.org") -> dict:
    held = holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    return checkout_paid("s:ada", held.cart_id, "Ada", email)


@pytest.mark.parametrize("page", ["order", "order_tickets"])
def test_lookups_of_real_and_made_up_references_answer_alike_and_share_the_limit(settings, session, page):
    settings.BOOKING_LOOKUP_RATE = "2/m"
    real = _paid_order(session)["ref"]
    made_up = "ZZZZZZZZ" if real != "ZZZZZZZZ" else "YYYYYYYY"
    answers = {}
    for ref in (real, made_up):
        client = buyer_client()  # an address of its own: a fresh budget
        link = reverse(f"booking:{page}", kwargs={"ref": ref}) + "?email=guess@example.org"
        answers[ref] = [client.get(link).status_code for _ in range(4)]
    assert answers[real] == answers[made_up] == [404, 404, 429, 429]


def test_the_buyer_and_a_browser_that_found_the_order_are_not_counted(settings, session):
    settings.BOOKING_LOOKUP_RATE = "1/m"
    order = _paid_order(session)
    client = buyer_client()
    link = reverse("booking:order", kwargs={"ref": order["ref"]}) + "?email=ada@example.org"
    assert client.get(link).status_code == 200  # the one lookup the budget allows: found
    for _ in range(3):
        assert client.get(link).status_code == 200  # remembered in its session: no lookup, no count


# --- 5. addresses and names with control or formatting characters ---

RLO = "\u202e"  # right-to-left override


def _checkout_page(client, name, email):
    return client.post("/checkout/", {"name": name, "email": email}, **csrf(client))


@pytest.fixture
def holding_buyer(session):
    client = buyer_client()
    hold_url = reverse("booking:hold", args=[str(session["_id"])])
    response = client.post(hold_url, {"seats": "0:0"}, **HTMX, **csrf(client))
    assert response.status_code == 200
    return client


@pytest.mark.parametrize(
    "email",
    [
        f"bob@{RLO}example.org",
        f"bob@example{RLO}.org",
        "bob@exa\u200bmple.org",  # zero-width space (Cf)
        "bob@exa\u200dmple.org",  # zero-width joiner (Cf): IDNA would drop it, and send elsewhere
        "bob@" + "ä" * 60 + ".org",  # a valid-looking label whose IDNA form is longer than DNS allows
    ],
)
def test_checkout_refuses_an_address_no_mail_can_be_sent_to(email, holding_buyer):
    before = snapshot()
    response = _checkout_page(holding_buyer, "Bob", email)
    assert response.status_code == 400
    assert "Please enter a valid e-mail address." in response.content.decode()
    assert_unchanged(before, snapshot())


@pytest.mark.parametrize(
    "name",
    [f"Bob{RLO}", "Bo\x00b", "Bob\x1bSmith", "Bob\u2028Smith", "Bob\u2029Smith", "Bo\u200bb", "\ufeffBob", "Bob\u2066"],
    ids=["RLO", "NUL", "ESC", "line separator", "paragraph separator", "ZWSP", "BOM", "LRI"],
)
def test_checkout_refuses_control_and_format_characters_in_the_name(name, holding_buyer):
    before = snapshot()
    response = _checkout_page(holding_buyer, name, "bob@example.org")
    assert response.status_code == 400
    says = "Null characters are not allowed" if "\x00" in name else "invisible control or formatting characters"
    assert says in response.content.decode()
    assert_unchanged(before, snapshot())


@pytest.mark.parametrize("name", ["Zoë Ñúñez", "Mehr\u200cnaz", "Anand\u200d"], ids=["accents", "ZWNJ", "ZWJ"])
def test_names_that_need_joiners_or_accents_still_check_out(name, holding_buyer):
    response = _checkout_page(holding_buyer, name, "zoe@exämple.org")
    assert response.status_code == 302 and "/orders/" in response["Location"]


def test_a_stored_address_that_cannot_be_encoded_fails_at_once_for_good(session, mailoutbox):
    """An order stored before checkout refused such addresses: its mail fails on the first try,
    recorded as failed (no retry round, no re-queuing), instead of raising on every retry."""
    order = _paid_order(session)
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"email": f"bob@{RLO}example.org"}})
    assert notifications.send_confirmation(order["_id"]) == "failed"
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert stored["mail"] == "failed" and stored["mailFailures"] == 1
    assert "mailRetryAt" not in stored  # permanent: no next round; an operator can re-send after fixing it
    assert "cannot be sent" in stored["mailFailure"]
    assert mailoutbox == []
    later = clock.now() + timedelta(days=1)
    report = reconcile.reconcile(now=later)
    assert report.mails_requeued == report.mails_retried == 0
    assert mongo.orders().find_one({"_id": order["_id"]})["mail"] == "failed"


def test_an_encoding_error_while_sending_is_permanent(session, mailoutbox, monkeypatch):
    order = _paid_order(session)

    def unencodable(*args, **kwargs):
        raise UnicodeEncodeError("ascii", "ä", 0, 1, "no")

    monkeypatch.setattr("django.core.mail.backends.locmem.EmailBackend.send_messages", unencodable)
    assert notifications.send_confirmation(order["_id"]) == "failed"
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert stored["mail"] == "failed" and "mailRetryAt" not in stored and "mailClaimedUntil" not in stored


# --- 7. HEAD answers like GET, without a body, wherever GET is allowed ---


def _every_get_path(documents: dict) -> list[str]:
    """Every buyer page, /healthz, and every staff page over the booking documents, with real ids."""
    buyer_pages = [
        "/",
        "/healthz",
        f"/sessions/{documents['session']}/",
        f"/sessions/{documents['session']}/map/",
        f"/performances/{documents['session']}/",
        "/cart/",
        "/checkout/",
        f"/orders/{documents['ref']}/",
        f"/orders/{documents['ref']}/tickets/",
        f"/orders/{documents['ref']}/?email=ada@example.org",
        "/find-booking/",
        f"/tickets/{documents['ticket']}.svg",
        # POST-only endpoints: GET is 405, so HEAD must be too
        f"/sessions/{documents['session']}/hold",
        "/cart/cancel",
    ]
    admin = next(p for p in get_resolver().url_patterns if isinstance(p, URLResolver) and p.namespace == "admin")
    staff_pages = ["/admin/", "/admin/booking/"]

    def walk(patterns, prefix):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern) and (prefix + str(p.pattern)).startswith("booking/"):
                route = prefix + str(p.pattern)
                if "(?P" not in route:
                    kind = route.split("/")[1]
                    staff_pages.append("/admin/" + route.replace("<str:object_id>", documents.get(kind, "")))

    walk(admin.url_patterns, "")
    return buyer_pages + staff_pages


@pytest.fixture
def documents(session):
    order = _paid_order(session)
    held = holds.hold_seats(session["_id"], "s:carl", None, ["2:0"])
    return {
        "session": str(session["_id"]),
        "theater": str(session["theaterId"]),
        "cart": str(held.cart_id),
        "order": str(order["_id"]),
        "ref": order["ref"],
        "ticket": order["lines"][0]["ticket"],
    }


def test_head_answers_like_get_on_every_page(documents):
    client = staff_client()  # staff pages need a login; buyer pages do not care
    wrong = []
    paths = _every_get_path(documents)
    assert len(paths) > 25
    for path in paths:
        got = client.get(path)
        head = client.head(path)
        if (head.status_code, head.get("Content-Type")) != (got.status_code, got.get("Content-Type")):
            wrong.append((path, got.status_code, head.status_code))
    assert not wrong, "\n".join(map(str, wrong))


def test_head_on_healthz_and_the_first_page_over_http_has_no_body(live_server):
    from urllib.request import Request, urlopen

    for path in ("/healthz", "/"):
        with urlopen(Request(live_server.url + path, method="HEAD"), timeout=10) as answer:  # noqa: S310
            assert answer.status == 200
            assert answer.read() == b""
