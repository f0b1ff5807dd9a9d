"""Members' presale: before the public on-sale, only buyers who entered the access code
can hold; the hold's write itself refuses the others. Wrong codes, rate limit."""

import time
from datetime import timedelta

import pytest

from booking.core import clock, mongo
from booking.core.errors import SessionNotOnSale
from booking.sales import hold_facts, holds, selectors
from booking.sales import sessions as session_service
from booking.tests.factories import make_session
from booking.venues.seat_grid import HELD
from booking.web import ratelimits

CODE = "friends-2026"


@pytest.fixture(autouse=True)
def _rates(settings, monkeypatch):
    settings.BOOKING_HOLD_RATE = ""
    settings.BOOKING_ACCESS_CODE_RATE = "5/m"
    window = time.time() + 10**6 * (time.monotonic_ns() % 10**6)  # a window of this test's own
    monkeypatch.setattr(ratelimits, "window_seconds", lambda: window)


@pytest.fixture
def presale():
    session = make_session()
    now = clock.now().replace(microsecond=0)
    session_service.set_sale_window(
        session["_id"],
        published=True,
        sale_opens=now + timedelta(hours=1),
        sale_closes=None,
        presale_opens=now - timedelta(minutes=5),
        presale_code=CODE,
    )
    return selectors.get_session(session["_id"])


def test_the_code_is_stored_hashed(presale):
    stored = mongo.sessions().find_one({"_id": presale["_id"]})["presale"]
    assert CODE.upper() not in str(stored) and CODE not in str(stored)
    assert len(stored["codeHash"]) == 64


@pytest.mark.parametrize("facts_known", [False, True])
def test_without_the_code_the_hold_is_refused_by_the_server(presale, facts_known):
    if facts_known:
        hold_facts.sale_facts(presale)
    with pytest.raises(SessionNotOnSale, match="On sale to members"):
        holds.hold_seats(presale["_id"], "s:public", None, ["0:0"])
    wrong = holds.HoldContext(presale_keys=frozenset({"not-the-key"}))
    with pytest.raises(SessionNotOnSale):
        holds.hold_seats(presale["_id"], "s:public", None, ["0:0"], context=wrong)
    assert selectors.get_session(presale["_id"])["seats"][0][0] != HELD


def test_with_the_code_the_hold_goes_through(presale):
    key = session_service.unlock_presale(presale["_id"], " Friends-2026 ")
    assert key is not None and key == presale["presale"]["key"]
    holds.hold_seats(
        presale["_id"], "s:member", None, ["0:0"], context=holds.HoldContext(presale_keys=frozenset({key}))
    )
    assert selectors.get_session(presale["_id"])["seats"][0][0] == HELD


def test_a_new_code_locks_out_the_old_key(presale):
    old = presale["presale"]["key"]
    session_service.set_sale_window(
        presale["_id"],
        published=True,
        sale_opens=presale["saleOpens"],
        sale_closes=None,
        presale_opens=presale["presale"]["opens"],
        presale_code="new-code-1",
    )
    assert session_service.unlock_presale(presale["_id"], CODE) is None
    with pytest.raises(SessionNotOnSale):
        holds.hold_seats(
            presale["_id"], "s:member", None, ["0:0"], context=holds.HoldContext(presale_keys=frozenset({old}))
        )


def test_buyer_page_refuses_then_opens_with_the_code(client, presale):
    url = f"/sessions/{presale['_id']}/"
    page = client.get(url).content.decode()
    assert "On sale to members until" in page and "to everyone from" in page
    assert 'name="code"' in page and "map-lock" in page
    client.post(f"{url}toggle", {"seat": "0:0"}, HTTP_HX_REQUEST="true")
    assert selectors.get_session(presale["_id"])["seats"][0][0] != HELD

    response = client.post(f"{url}access", {"code": CODE}, follow=True)
    page = response.content.decode()
    assert "Code accepted" in page and "map-lock" not in page
    client.post(f"{url}toggle", {"seat": "0:0"}, HTTP_HX_REQUEST="true")
    assert selectors.get_session(presale["_id"])["seats"][0][0] == HELD


def test_wrong_codes_answer_alike_in_like_time(client, presale):
    other = make_session()
    answers, times = [], []
    for session_id, code in [(presale["_id"], "wrong"), (other["_id"], CODE), ("nonsense", CODE)]:
        started = time.perf_counter()
        response = client.post(f"/sessions/{session_id}/access", {"code": code})
        times.append(time.perf_counter() - started)
        answers.append((response.status_code, response.url.endswith(f"/sessions/{session_id}/")))
        follow = client.get(response.url)
        assert "does not open a presale" in follow.content.decode() or follow.status_code == 404
    assert answers == [(302, True)] * 3
    assert client.cookies.get("buyer") is None  # nothing was unlocked, nothing remembered
    assert max(times) < 10 * min(times) + 0.05  # the same work: one read, one HMAC


def test_access_codes_are_rate_limited(client, presale):
    url = f"/sessions/{presale['_id']}/access"
    statuses = [client.post(url, {"code": f"guess-{n}"}).status_code for n in range(5)]
    assert statuses == [302] * 5
    response = client.post(url, {"code": CODE})  # even the right code, once over the limit
    assert response.status_code == 429 and response["Retry-After"] == "60"
    page = client.get(f"/sessions/{presale['_id']}/").content.decode()
    assert "map-lock" in page
