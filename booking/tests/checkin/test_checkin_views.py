"""Door check-in pages and endpoints: who may use them, bad input, CSRF, the JSON answers, the
sync of offline check-ins, and the race through HTTP."""

import json
import re
import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from booking.core import clock, mongo
from booking.sales import cancels, checkin
from booking.tests.checkin_support import a_reduced_ticket, door_staff, sell, tickets
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants

pytestmark = pytest.mark.django_db

JSON: dict[str, Any] = {"HTTP_ACCEPT": "application/json"}  # Any: extra headers for Client


@pytest.fixture
def show():
    session = make_session(name="Hamlet")
    order = sell(session, ["1:2", "1:3"], name="Ada Q. Lovelace")
    return session, order


@pytest.fixture
def door(client):
    client.force_login(door_staff())
    return client


def url(session, tail=""):
    return f"/checkin/{session['_id']}/{tail}"


def post_json(client, path, data, **extra):
    return client.post(path, json.dumps(data), content_type="application/json", **JSON, **extra)


# --- who may ---


def test_without_the_permission_every_endpoint_is_403(client, show):
    session, order = show
    client.force_login(door_staff("clerk", allowed=False))
    for path in [
        "/checkin/",
        url(session),
        url(session, "tickets.json"),
        url(session, "stats"),
        url(session, "search?q=ada"),
    ]:
        assert client.get(path).status_code == 403, path
    assert client.post(url(session, "scan"), {"code": tickets(order)[0], "door": "A"}).status_code == 403
    assert post_json(client, url(session, "sync"), {"scans": []}).status_code == 403
    assert "checkedIn" not in mongo.orders().find_one({"_id": order["_id"]})["lines"][0]
    page = client.get(url(session))
    assert b"may not check in tickets" in page.content


def test_admin_staff_without_the_permission_are_403_too_and_superusers_may(client, show):
    session, _ = show
    staff = User.objects.create_user("editor", "e@theater.example", "pw-long-enough-1", is_staff=True)
    client.force_login(staff)
    assert client.get(url(session)).status_code == 403
    client.force_login(User.objects.create_superuser("boss", "b@theater.example", "pw-long-enough-2"))
    assert client.get(url(session)).status_code == 200


def test_signed_out_pages_go_to_the_door_login_and_json_is_403(client, show):
    session, _ = show
    response = client.get(url(session))
    assert response.status_code == 302 and response["Location"].startswith("/checkin/login/?next=/checkin/")
    assert client.get(url(session, "stats"), **JSON).status_code == 403
    assert post_json(client, url(session, "scan"), {"code": "x"}).status_code == 403


def test_a_signed_out_door_phone_is_told_to_sign_in_again_in_its_language(client, show):
    session, _ = show
    for language, words in (("en", "Please sign in again."), ("de", "Bitte melden Sie sich erneut an.")):
        response = post_json(client, url(session, "sync"), {"scans": []}, HTTP_ACCEPT_LANGUAGE=language)
        assert response.status_code == 403
        assert response.json() == {"error": words, "signedOut": True}


def test_door_staff_sign_in_on_the_door_login_without_admin_access(client, show):
    session, _ = show
    door_staff("anna")
    response = client.post(
        "/checkin/login/", {"username": "anna", "password": "a-long-test-password", "next": url(session)}
    )
    assert response.status_code == 302 and response["Location"] == url(session)
    assert client.get(url(session)).status_code == 200
    assert client.get("/admin/").status_code == 302  # not admin staff


# --- the page ---


def test_the_page_shows_counts_and_its_settings_for_the_script(door, show):
    session, order = show
    checkin.check_in(checkin.get_scope(session["_id"]), code=tickets(order)[0], door="North", by="anna")
    page = door.get(url(session))
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="count-in">1<' in html and 'id="count-sold">2<' in html and "North" in html
    config = json.loads(html.split('id="door-config" type="application/json">')[1].split("</script>")[0])
    assert config["urls"]["scan"] == url(session, "scan") and config["timeZone"]
    assert "<script>" not in html  # CSP: no inline script (the settings are JSON data)
    assert "/static/vendor/jsqr-1.4.0/jsQR.js" in html


def test_the_index_lists_todays_and_coming_performances(door, show):
    session, _ = show
    old = make_session(name="Long ago")
    mongo.sessions().update_one({"_id": old["_id"]}, {"$set": {"start": clock.now() - timedelta(days=2)}})
    make_session(name="Next season", days=40)
    page = door.get("/checkin/").content.decode()
    assert "Hamlet" in page and f"/checkin/{session['_id']}/" in page
    assert "Long ago" not in page and "Next season" not in page


def test_unknown_and_malformed_performances_are_404(door):
    assert door.get("/checkin/not-an-id/").status_code == 404
    assert door.get("/checkin/64b7f0c2a1b2c3d4e5f60718/").status_code == 404
    assert door.get("/checkin/64b7f0c2a1b2c3d4e5f60718/stats", **JSON).status_code == 404


# --- checking in ---


def test_a_scan_answers_json_green_then_red(door, show):
    session, order = show
    code = tickets(order)[0]
    first = post_json(door, url(session, "scan"), {"code": code, "door": "North", "scan": "scan-0000001"})
    assert first.status_code == 200
    data = first.json()
    assert data["status"] == "admitted" and data["ticket"]["row"] == "B" and data["ticket"]["name"] == "Ada Q. Lovelace"
    assert data["used"]["door"] == "North" and data["used"]["by"] == "door"
    again = post_json(door, url(session, "scan"), {"code": code, "door": "South"}).json()
    assert again["status"] == "used" and again["used"]["door"] == "North"
    # the same scan sent again (the phone did not hear the answer): still green
    replay = post_json(door, url(session, "scan"), {"code": code, "door": "North", "scan": "scan-0000001"}).json()
    assert replay["status"] == "admitted" and replay["replay"] is True


def test_a_scan_as_a_plain_form_post_renders_the_verdict(door, show):
    session, order = show
    response = door.post(url(session, "scan"), {"code": tickets(order)[0], "door": "North"})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="result ok"' in html and "Row B · Seat 3" in html
    html = door.post(url(session, "scan"), {"code": tickets(order)[0], "door": "North"}).content.decode()
    assert 'class="result bad"' in html and "Already used" in html and "Used at North" in html


def test_the_door_page_says_the_ticket_type_and_what_to_ask_for_in_german(door):
    session, code = a_reduced_ticket()
    html = door.post(url(session, "scan"), {"code": code, "door": "North"}, HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert (
        "Ermäßigt" in html
        and '<p class="condition">Studierende, Senioren ab 65; Nachweis am Einlass zeigen</p>' in html
    )
    listed = door.get(url(session, "tickets.json"), HTTP_ACCEPT_LANGUAGE="de").json()["tickets"]  # offline doors
    assert [(t["type"], t["condition"]) for t in listed] == [
        ("Ermäßigt", "Studierende, Senioren ab 65; Nachweis am Einlass zeigen")
    ]


def test_canceled_and_wrong_session_tickets_are_red(door, show):
    session, order = show
    other = make_session(name="Macbeth", days=2)
    wrong = post_json(door, url(other, "scan"), {"code": tickets(order)[0], "door": "A"}).json()
    assert wrong["status"] == "wrong_session" and wrong["session"]["name"] == "Hamlet"
    cancels.cancel_order(order["_id"], by="boss")
    canceled = post_json(door, url(session, "scan"), {"code": tickets(order)[1], "door": "A"}).json()
    assert canceled["status"] == "not_valid" and canceled["state"] == "refunded"  # staff cancel refunds it
    unknown = post_json(door, url(session, "scan"), {"code": "Z" * 24, "door": "A"}).json()
    assert unknown["status"] == "unknown"


def test_search_then_admit_by_hash(door, show):
    session, order = show
    hits = door.get(url(session, "search"), {"q": "lovel"}, **JSON).json()["hits"]
    assert len(hits) == 2 and {h["seat"] for h in hits} == {"3", "4"}
    picked = post_json(door, url(session, "scan"), {"hash": hits[0]["h"], "door": "Side"}).json()
    assert picked["status"] == "admitted"
    # the same search without JavaScript: a page with an Admit button per ticket
    html = door.get(url(session), {"q": order["ref"]}).content.decode()
    assert html.count(">Admit<") == 1  # the ticket let in offers its undo instead
    assert html.count(">Undo check-in<") == 1


@pytest.mark.parametrize(
    "body",
    [
        {"door": "A"},
        {"code": "short", "door": "A"},
        {"code": "x" * 65, "door": "A"},
        {"code": "A" * 24},
        {"code": "A" * 24, "door": "x" * 41},
        {"code": "A" * 24, "door": "A", "scan": "no spaces allowed"},
        {"hash": "not-hex", "door": "A"},
        {"code": ["A" * 24], "door": "A"},
        {"code": {"$ne": 1}, "door": "A"},
        {"code": "A" * 24, "door": {"$gt": ""}},
    ],
)
def test_bad_scans_are_400_with_a_message(door, show, body):
    session, _ = show
    response = post_json(door, url(session, "scan"), body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'"text"', b"\xff\xfe", b"null"])
def test_malformed_json_is_400(door, show, raw):
    session, _ = show
    for path in ("scan", "sync"):
        response = door.post(url(session, path), raw, content_type="application/json", **JSON)
        assert response.status_code == 400, (path, raw)


def test_bad_searches_are_400(door, show):
    session, _ = show
    assert door.get(url(session, "search"), {"q": "a"}, **JSON).status_code == 400
    assert door.get(url(session, "search"), {"q": "x" * 101}, **JSON).status_code == 400
    assert door.get(url(session), {"q": "a"}).status_code == 400


def test_head_answers_like_get(door, show):
    session, _ = show
    paths = ["/checkin/", "/checkin/login/", "/checkin/sw.js", url(session), url(session, "tickets.json")]
    paths += [url(session, "stats"), url(session, "search?q=ada"), url(session, "scan")]
    for path in paths:
        got, head = door.get(path), door.head(path)
        assert (head.status_code, head.get("Content-Type")) == (got.status_code, got.get("Content-Type")), path
        assert head.content == b""


def test_wrong_methods_are_405(door, show):
    session, _ = show
    assert door.get(url(session, "scan")).status_code == 405
    assert door.post(url(session, "stats")).status_code == 405


def test_posts_need_the_csrf_token(show):
    session, order = show
    client = Client(enforce_csrf_checks=True)
    client.force_login(door_staff())
    body = json.dumps({"code": tickets(order)[0], "door": "A"})
    assert client.post(url(session, "scan"), body, content_type="application/json").status_code == 403
    assert (
        client.post(url(session, "sync"), json.dumps({"scans": []}), content_type="application/json").status_code == 403
    )
    assert "checkedIn" not in mongo.orders().find_one({"_id": order["_id"]})["lines"][0]
    client.get(url(session))  # sets the CSRF cookie, as the page does
    token = client.cookies["csrftoken"].value
    ok = client.post(url(session, "scan"), body, content_type="application/json", HTTP_X_CSRFTOKEN=token, **JSON)
    assert ok.status_code == 200 and ok.json()["status"] == "admitted"


# --- offline: the list and the sync ---


def test_the_offline_list_holds_hashes_not_codes_nor_e_mails(door, show):
    session, order = show
    data = door.get(url(session, "tickets.json")).json()
    assert data["scope"] == str(session["_id"]) and len(data["tickets"]) == 2
    raw = json.dumps(data)
    for secret in [*tickets(order), "ada@example.com", "Lovelace"]:
        assert secret not in raw
    assert {t["h"] for t in data["tickets"]} == {checkin.ticket_hash(c) for c in tickets(order)}
    assert data["tickets"][0]["name"] == "Ada L."


def test_sync_admits_queued_check_ins_and_reports_conflicts(door, show):
    session, order = show
    code, other = tickets(order)
    # East was offline: it let both tickets in. Meanwhile Main (online) admitted the first one.
    post_json(door, url(session, "scan"), {"code": code, "door": "Main"})
    scanned = (clock.now() - timedelta(minutes=3)).isoformat()
    body = {
        "scans": [
            {"id": "east-scan-0001", "code": code, "at": scanned, "door": "East"},
            {"id": "east-scan-0002", "hash": checkin.ticket_hash(other), "at": scanned, "door": "East"},
        ]
    }
    data = post_json(door, url(session, "sync"), body).json()
    first, second = data["results"]
    assert first["id"] == "east-scan-0001" and first["status"] == "used"
    assert first["conflict"]["offline"]["door"] == "East" and first["conflict"]["first"]["door"] == "Main"
    assert second["status"] == "admitted"
    assert data["counts"]["checkedIn"] == 2 and data["counts"]["openConflicts"] == 1
    # East sends the same batch again (it never heard back): nothing new
    again = post_json(door, url(session, "sync"), body).json()
    assert [r["status"] for r in again["results"]] == ["used", "admitted"]
    assert mongo.checkin_conflicts().count_documents({}) == 1
    stats = door.get(url(session, "stats")).json()
    assert stats["counts"]["conflicts"] == 1 and stats["conflicts"][0]["ticket"]["ref"] == order["ref"]
    assert stats["counts"]["doors"] == [{"door": "East", "count": 1}, {"door": "Main", "count": 1}]
    page = door.get(url(session)).content.decode()
    assert re.search(r"Let in twice: at East, \d\d:\d\d offline \(door\) and at Main, \d\d:\d\d \(door\)\.", page)
    # staff mark it seen
    seen = post_json(door, url(session, f"conflicts/{stats['conflicts'][0]['id']}/seen"), {}).json()
    assert seen == {"seen": True}
    assert door.get(url(session, "stats")).json()["counts"]["openConflicts"] == 0
    assert check_invariants() == []


@pytest.mark.parametrize(
    "scans",
    [
        "not a list",
        [{"id": "x" * 8}],
        [{"id": "east-scan-0001", "code": "A" * 24, "at": "yesterday", "door": "E"}],
        [{"id": "east-scan-0001", "code": "A" * 24, "at": "2020-01-01T00:00:00+00:00", "door": "E"}],
        [{"id": "east-scan-0001", "code": "A" * 24, "at": "2026-01-01T00:00:00", "door": "E"}],
        [{"id": "bad id", "code": "A" * 24, "at": "2026-01-01T00:00:00Z", "door": "E"}],
        [{"code": "A" * 24}],
        ["string"],
        [{"id": "east-scan-0001", "code": 5, "at": "2026-01-01T00:00:00Z", "door": "E"}],
    ],
)
def test_bad_sync_items_are_answered_invalid_one_by_one(door, show, scans):
    session, _ = show
    response = post_json(door, url(session, "sync"), {"scans": scans})
    if not isinstance(scans, list):
        assert response.status_code == 400
        return
    assert response.status_code == 200
    assert [r["status"] for r in response.json()["results"]] == ["invalid"] * len(scans)


def test_a_sync_batch_is_bounded(door, show):
    session, _ = show
    response = post_json(door, url(session, "sync"), {"scans": [{}] * 201})
    assert response.status_code == 400


def test_the_service_worker_is_served_from_the_checkin_scope(client):
    response = client.get("/checkin/sw.js")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/javascript")
    body = response.content.decode()
    assert '"/static/checkin/door.js"' in body and '"/static/vendor/jsqr-1.4.0/jsQR.js"' in body
    assert 'const SCOPE = "/checkin/"' in body


# --- the race through HTTP ---


@pytest.fixture
def web_server(tmp_path):
    """The app under gunicorn (two processes, four threads each) on the test MongoDB, with a
    SQLite file of its own holding one door account. Not the live server: that one shares a
    single in-memory SQLite connection between its threads, which concurrent requests break."""
    import os
    import socket
    import subprocess
    import sys
    import time

    import httpx
    from django.conf import settings

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'web.sqlite3'}",
        "MONGODB_URI": settings.MONGODB_URI,
        "MONGODB_DB": settings.MONGODB_DB,
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "theater_site.settings",
    }
    root = settings.BASE_DIR
    python = sys.executable
    subprocess.run(
        [python, "manage.py", "migrate", "--noinput"], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL
    )
    make_door = "from booking.tests.checkin_support import door_staff; door_staff('door')"
    subprocess.run([python, "manage.py", "shell", "-c", make_door], cwd=root, env=env, check=True)
    log = open(tmp_path / "gunicorn.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [python, "-m", "gunicorn", "theater_site.wsgi", "--workers", "2", "--threads", "4"]
        + ["--worker-class", "gthread", "--bind", f"127.0.0.1:{port}", "--no-control-socket"],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError((tmp_path / "gunicorn.log").read_text()[-2000:])
        time.sleep(0.2)
    yield base
    proc.terminate()
    proc.wait(timeout=20)
    log.close()


@pytest.mark.slow
def test_two_doors_posting_the_same_ticket_at_once_admit_it_once(web_server):
    """Eight doors post the same ticket at the same moment to gunicorn (two processes, each its
    own MongoClient): one green, seven red naming the winner's door."""
    import httpx

    session = make_session()
    order = sell(session, ["0:0"])
    clients = []
    for _ in range(8):
        # A new connection per request: a kept-alive one idles past gunicorn's keep-alive while
        # the other doors log in, and gunicorn drops it as the scan is sent.
        c = httpx.Client(base_url=web_server, timeout=30, headers={"Connection": "close"})
        c.get("/checkin/login/")
        c.post(
            "/checkin/login/",
            data={
                "username": "door",
                "password": "a-long-test-password",
                "csrfmiddlewaretoken": c.cookies["csrftoken"],
            },
        )
        assert "sessionid" in c.cookies
        clients.append(c)
    start = threading.Barrier(len(clients))
    answers = []

    def door(n, c):
        start.wait()
        response = c.post(
            url(session, "scan"),
            json={"code": tickets(order)[0], "door": f"Door {n}"},
            headers={"X-CSRFToken": c.cookies["csrftoken"], "Accept": "application/json"},
        )
        body = response.json() if response.status_code == 200 else response.text[:300]
        answers.append((n, response.status_code, body))

    threads = [threading.Thread(target=door, args=(n, c)) for n, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in clients:
        c.close()
    assert all(status == 200 for _, status, _ in answers), [a for a in answers if a[1] != 200]
    assert Counter(a["status"] for _, _, a in answers) == {"admitted": 1, "used": 7}
    [winner] = [n for n, _, a in answers if a["status"] == "admitted"]
    assert all(a["used"]["door"] == f"Door {winner}" for _, _, a in answers)
    line = mongo.orders().find_one({"_id": order["_id"]})["lines"][0]
    assert line["checkedIn"]["door"] == f"Door {winner}" and line["checkedIn"]["by"] == "door"
    assert check_invariants() == []


def test_the_admin_session_page_shows_check_ins_and_conflicts(admin_client, show):
    session, order = show
    scope = checkin.get_scope(session["_id"])
    checkin.check_in(scope, code=tickets(order)[0], door="North", by="anna")
    checkin.check_in(
        scope, code=tickets(order)[0], door="East", by="ben", scan_id="east-scan-0009", at=clock.now(), offline=True
    )
    html = admin_client.get(f"/admin/booking/session/{session['_id']}/change/").content.decode()
    summary = html.split('id="checkin-summary"')[1]
    assert "<strong>1</strong> of 2 tickets checked in" in summary and "North 1" in summary
    assert "1 conflict (1 not seen yet)" in summary and "Let in twice" in summary and order["ref"] in summary
    assert f'href="/checkin/{session["_id"]}/"' in summary  # superusers may check in
