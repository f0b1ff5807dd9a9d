"""The waiting room in real Chromium: a buyer who opens a high-demand performance before the sale
waits on the queue page with a live countdown, is let in at the on-sale by the page itself (htmx
poll, then the redirect; served by WSGI, where the stream answers 204) and holds a seat. Served by
ASGI, the place is pushed and the page sends no polls until it is let in. Screenshots at a phone's
390x844 and a laptop's 1366x768: the countdown, the place in line, the seat map with the buyer's turn, staff's view."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.core import clock
from booking.sales import admission, holds, selectors, waiting_room
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater
from booking.venues.seat_grid import HELD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}


@pytest.fixture
def show():
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    return make_session(theater, name="The Big Premiere", prices={"s": 2200, "r": 1500})


def seat(page, row: str, number: int):
    return page.get_by_role("button", name=re.compile(rf"^Row {row}, seat {number},"))


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_queue_page_admits_a_buyer_at_on_sale_who_then_holds_a_seat(new_page, shot, show, viewport, settings):
    settings.BOOKING_QUEUE_POLL_SECONDS = 1
    now = clock.now()
    on_sale = now + timedelta(seconds=8)
    waiting_room.enable(show["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=on_sale, rate=600)
    page = new_page(viewport)

    page.goto(f"/sessions/{show['_id']}/")  # the seat map sends a buyer without admission to the queue
    expect(page).to_have_url(re.compile(rf"/queue/{show['_id']}/$"))
    expect(page.get_by_role("heading", name="You are in the waiting room")).to_be_visible()
    timer = page.get_by_role("timer", name="Time until the sale starts")
    expect(timer).to_have_text(re.compile(r"^0:0[0-8]$"))
    expect(timer).not_to_have_text(timer.text_content(), timeout=4000)  # it counts down by itself
    shot(page, "queue-countdown")

    # At the on-sale the page asks by itself, is let in and goes to the seat map.
    expect(page).to_have_url(re.compile(rf"/sessions/{show['_id']}/$"), timeout=20_000)
    assert clock.now() >= on_sale
    banner = page.locator(".wr-turn")
    expect(banner).to_contain_text("It's your turn.")
    expect(banner.locator(".countdown-time")).to_have_text(re.compile(r"^(19|20):\d\d$"))
    shot(page, "admitted-seat-map")

    seat(page, "D", 4).click()
    expect(seat(page, "D", 4)).to_have_attribute("aria-label", re.compile("held by you$"))
    expect(page.locator("#cart-summary")).to_contain_text("Row D, seat 4")
    shot(page, "seat-held")
    assert selectors.get_session(show["_id"])["seats"][3][3] == HELD


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_queue_page_shows_the_place_and_the_wait_and_moves_up(new_page, shot, show, viewport, settings):
    settings.BOOKING_QUEUE_POLL_SECONDS = 1
    now = clock.now()
    config = waiting_room.enable(show["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now, rate=12)
    for i in range(20):  # twenty buyers came first; the first of them takes the first turn
        waiting_room.poll(config, f"s:ahead{i}")
    page = new_page(viewport)
    page.goto(f"/queue/{show['_id']}/")
    expect(page.get_by_role("heading", name="You are in line")).to_be_visible()
    place = page.locator(".wr-big strong")
    expect(place).to_have_text(re.compile(r"^(20|19)$"))
    expect(page.locator(".wr-wait")).to_contain_text("Estimated wait: about 2 minutes")
    shot(page, "in-line")
    # the next turns (one every 5 s at 12 a minute) move the buyer up without a reload
    before = place.text_content()
    expect(place).not_to_have_text(before, timeout=20_000)
    assert int(place.text_content()) < int(before)
    waiting_room.pause(show["_id"])
    expect(page.get_by_role("heading", name="The box office has paused the queue")).to_be_visible(timeout=15_000)
    expect(page.get_by_text("You keep your place.")).to_be_visible()
    shot(page, "paused")


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_the_place_is_pushed_and_the_page_sends_no_polls_until_its_turn(new_page, shot, show, asgi_url, viewport):
    now = clock.now()
    config = waiting_room.enable(show["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now, rate=12)
    for i in range(3):  # the first is let in at once, then one every 5 s: two wait ahead of our buyer
        waiting_room.poll(config, f"s:ahead{i}")
    page = new_page(viewport)
    polls, streams = [], []
    page.on("request", lambda r: polls.append(r.url) if r.url.endswith("/status") else None)
    page.on("request", lambda r: streams.append(r.url) if r.url.endswith("/live/") else None)
    page.goto(f"{asgi_url}/queue/{show['_id']}/")
    expect(page.get_by_role("heading", name="You are in line")).to_be_visible()
    place = page.locator(".wr-big strong")
    expect(place).to_have_text("3")
    shot(page, "pushed-place")
    expect(place).to_have_text("2", timeout=15_000)  # the next turn: moved up by a push
    shot(page, "pushed-next")
    assert streams == [f"{asgi_url}/queue/{show['_id']}/live/"] and polls == []
    waiting_room.set_rate(show["_id"], 60_000)  # everybody in
    expect(page).to_have_url(re.compile(rf"/sessions/{show['_id']}/$"), timeout=20_000)
    expect(page.locator(".wr-turn")).to_contain_text("It's your turn.")
    shot(page, "let-in-by-push")
    assert polls == []  # let in by the pushed "go", not by a poll


def test_a_seat_click_without_admission_is_refused_with_the_way_to_the_queue(new_page, shot, show):
    """An open seat map from before the room was opened: the server refuses the click."""
    page = new_page(LAPTOP)
    page.goto(f"/sessions/{show['_id']}/")
    now = clock.now()
    waiting_room.enable(show["_id"], opens_at=now, on_sale_at=now + timedelta(minutes=10), rate=60)
    seat(page, "D", 4).click()
    notice = page.locator("#notice")
    expect(notice).to_contain_text("sold through a waiting room")
    link = notice.get_by_role("link", name="Go to the waiting room")
    expect(link).to_have_attribute("href", f"/queue/{show['_id']}/")
    shot(page, "refused")
    link.click()
    expect(page.get_by_role("heading", name="You are in the waiting room")).to_be_visible()


def test_staff_watch_and_pause_the_queue(new_page, shot, show):
    now = clock.now()
    config = waiting_room.enable(show["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now, rate=6)
    for i in range(4):
        waiting_room.poll(config, f"s:buyer{i}")
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    page = new_page(LAPTOP)
    page.goto("/admin/")
    page.get_by_label("Username").fill("boss")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("link", name="Waiting rooms").click()
    expect(page.locator("#result_list")).to_contain_text("The Big Premiere")
    shot(page, "admin-list")
    page.get_by_role("link", name="The Big Premiere").click()
    expect(page.locator("#room-stats")).to_contain_text("admitting")
    shot(page, "admin-dashboard")
    page.get_by_role("button", name="Pause admission").click()
    expect(page.locator("#room-stats h2")).to_contain_text("paused")
    page.get_by_label("Admission rate (buyers per minute)").fill("30")
    page.get_by_role("button", name="Change the rate").click()
    expect(page.locator(".messagelist")).to_contain_text("rate 30/min")
    shot(page, "admin-paused-rerated")
    assert waiting_room.stats(config).rate == 30


@pytest.mark.parametrize(("viewport", "language"), [(PHONE, "de"), (LAPTOP, "en")], ids=["phone-de", "laptop-en"])
def test_a_sell_out_is_pushed_to_the_waiting_page_with_the_waiting_list(new_page, shot, asgi_url, viewport, language):
    last_two = make_session(grid="A: ss", prices={"s": 2000}, name="The Last Two")
    now = clock.now()
    config = waiting_room.enable(last_two["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now, rate=1)
    assert waiting_room.poll(config, "s:first").state == "admitted"  # the one buyer let in this minute
    page = new_page(viewport)
    page.context.add_cookies([{"name": "django_language", "value": language, "url": asgi_url}])
    page.goto(f"{asgi_url}/queue/{last_two['_id']}/")
    in_line = {"de": "Sie stehen in der Warteschlange", "en": "You are in line"}[language]
    expect(page.get_by_role("heading", name=in_line)).to_be_visible()
    tokens = {config.queue_id: admission.issue(config.queue_id, "s:first", admission.clock_ms())}
    context = holds.HoldContext(admitted_queues=admission.verified_queues("s:first", tokens))
    holds.hold_seats(last_two["_id"], "s:first", None, ["0:0", "0:1"], context=context)  # the hall's last two
    sold_out = {"de": "Ausverkauft", "en": "Sold out"}[language]
    expect(page.get_by_role("heading", name=sold_out)).to_be_visible(timeout=15_000)  # pushed, no reload
    join = {"de": "Auf die Warteliste", "en": "Join the waiting list"}[language]
    expect(page.get_by_role("link", name=join)).to_be_visible()
    shot(page, "sold-out-pushed")
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
