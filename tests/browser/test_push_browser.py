"""Two buyers on one map, served by ASGI (uvicorn in this process), see each other's holds and
releases: through push (Server-Sent Events, no map polls sent), and through polling with push
disabled by the page's ``?push=0``."""

import re
import time

import pytest
from playwright.sync_api import expect

from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def show():
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    return make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})


def seat(page, row: str, number: int):
    return page.get_by_role("button", name=re.compile(rf"^Row {row}, seat {number},"))


def map_polls(page) -> list:
    polls = []
    page.on("request", lambda r: polls.append(r.url) if "/map/" in r.url else None)
    return polls


def two_buyers_see_each_other(a, b, shot, timeout):
    seat(a, "C", 3).click()
    expect(seat(a, "C", 3)).to_have_attribute("aria-label", re.compile("held by you$"))
    expect(seat(b, "C", 3)).to_have_attribute("aria-label", re.compile("held by someone else$"), timeout=timeout)
    expect(seat(b, "C", 3)).to_have_class(re.compile(r"\bh\b"))
    shot(b, "b-sees-a-hold")
    seat(a, "C", 3).click()  # A lets it go
    expect(seat(a, "C", 3)).to_have_attribute("aria-label", re.compile("available$"))
    expect(seat(b, "C", 3)).to_have_attribute("aria-label", re.compile("available$"), timeout=timeout)
    seat(b, "C", 3).click()
    expect(seat(b, "C", 3)).to_have_attribute("aria-label", re.compile("held by you$"))
    expect(seat(a, "C", 3)).to_have_attribute("aria-label", re.compile("held by someone else$"), timeout=timeout)
    shot(a, "a-sees-b-hold")


def test_two_buyers_see_each_other_through_push(new_page, shot, show, asgi_url):
    a, b = new_page(), new_page()
    url = f"{asgi_url}/sessions/{show['_id']}/"
    polls_a, polls_b = map_polls(a), map_polls(b)
    streams = []
    b.on("request", lambda r: streams.append(r.url) if "/live/" in r.url else None)
    a.goto(url)
    b.goto(url)
    b.wait_for_function("() => document.querySelector('#seatmap').dataset.live !== undefined")
    time.sleep(0.5)  # both streams open (hello received)
    # well under the 2 s poll: only push can be this quick
    two_buyers_see_each_other(a, b, shot, timeout=1500)
    assert streams, "B opened no event stream"
    time.sleep(2.5)  # a poll period passes: while pushed, no map is polled
    assert polls_a == [] and polls_b == [], (polls_a, polls_b)


def test_two_buyers_see_each_other_through_polling_with_push_off(new_page, shot, show, asgi_url):
    a, b = new_page(), new_page()
    url = f"{asgi_url}/sessions/{show['_id']}/?push=0"
    polls_b = map_polls(b)
    a.goto(url)
    b.goto(url)
    two_buyers_see_each_other(a, b, shot, timeout=5000)
    assert polls_b, "B did not poll"


def test_a_change_missed_before_the_stream_opened_is_fetched_once(new_page, show, asgi_url):
    """The page was built at version V; another buyer holds before B's stream is open: the hello
    says V+1 and B fetches the map once."""
    from booking.sales import holds

    b = new_page()
    b.route("**/live/", lambda route: (time.sleep(0.2), route.continue_()))  # the stream opens late
    b.goto(f"{asgi_url}/sessions/{show['_id']}/")
    holds.hold_seats(show["_id"], "someone", None, ["2:2"], allow_orphans=True)
    expect(b.locator("#s2-2")).to_have_attribute("aria-label", re.compile("held by someone else$"), timeout=3000)


def test_a_stream_held_back_by_a_buffering_proxy_leaves_the_page_polling(new_page, show, asgi_url):
    """A proxy that buffers the event stream: the request stays open and no event ever arrives.
    The page must go on polling, so another buyer's hold still shows."""
    from booking.sales import holds

    b = new_page()
    held_streams = []
    b.route("**/live/", lambda route: held_streams.append(route))  # never answered, like a buffer
    polls_b = map_polls(b)
    b.goto(f"{asgi_url}/sessions/{show['_id']}/")
    expect(b.locator("#s2-2")).to_have_attribute("aria-label", re.compile("available$"))
    holds.hold_seats(show["_id"], "someone", None, ["2:2"], allow_orphans=True)
    expect(b.locator("#s2-2")).to_have_attribute("aria-label", re.compile("held by someone else$"), timeout=8000)
    assert held_streams, "the page opened no event stream"
    assert polls_b, "the change did not come by polling"
