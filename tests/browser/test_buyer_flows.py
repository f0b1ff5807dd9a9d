"""The buyer's flows in real Chromium: purchase, two buyers on one map, expiry, keyboard only."""

import re

import pytest
from playwright.sync_api import expect

from booking.sales import selectors
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater
from booking.venues.seat_grid import FREE, HELD
from tests.browser.scrolling import scroll_into_view

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def show():
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    return make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})


def seat(page, row: str, number: int):
    return page.get_by_role("button", name=re.compile(rf"^Row {row}, seat {number},"))


def seat_state(session, key):
    r, c = (int(x) for x in key.split(":"))
    return selectors.get_session(session["_id"])["seats"][r][c]


def test_full_purchase(new_page, shot, show):
    page = new_page()
    page.goto("/")
    expect(page.get_by_role("heading", name="What's on")).to_be_visible()
    shot(page, "whats-on")

    page.get_by_role("link", name=re.compile("Waiting for Godot")).click()
    expect(page.get_by_role("heading", name="Waiting for Godot")).to_be_visible()
    shot(page, "session")

    seat(page, "D", 4).click()
    expect(seat(page, "D", 4)).to_have_attribute("aria-label", re.compile("held by you$"))
    seat(page, "D", 5).click()
    expect(seat(page, "D", 5)).to_have_attribute("aria-label", re.compile("held by you$"))
    summary = page.locator("#cart-summary")
    expect(summary).to_contain_text("Row D, seat 4")
    expect(summary).to_contain_text("Row D, seat 5")
    expect(summary).to_contain_text("€44")
    expect(summary.locator(".countdown-time")).to_have_text(re.compile(r"^1[45]:\d\d$"))
    shot(page, "two-seats-held")

    summary.get_by_role("link", name="Check out").click()
    expect(page.get_by_role("heading", name="Checkout")).to_be_visible()
    page.get_by_role("button", name=re.compile("2 tickets for €44")).click()  # was "Buy 2 tickets"
    expect(page.get_by_text("Please enter your name.")).to_be_visible()
    shot(page, "checkout-errors")

    page.get_by_label("Name").fill("Ada Lovelace")
    page.get_by_label("E-mail").fill("ada@example.com")
    page.get_by_role("button", name=re.compile("2 tickets for €44")).click()
    # since payments: the card form on the same page (card payments: tests/browser/test_card_payment.py)
    element = page.locator("[data-card-element]")
    element.get_by_placeholder("number").fill("4242424242424242")
    element.get_by_placeholder("exp_month").fill("12")
    element.get_by_placeholder("exp_year").fill("34")
    element.get_by_placeholder("cvc").fill("123")
    page.get_by_role("button", name="Pay €44").click()
    expect(page.get_by_role("heading", name="You're going to the theater!")).to_be_visible()
    expect(page.locator(".ref-code")).to_have_text(re.compile(r"^[A-Z2-9]{8}$"))
    tickets = page.locator(".tickets .ticket")
    expect(tickets).to_have_count(2)
    for qr in page.locator("img.qr").all():  # each QR code image loaded and decoded
        expect(qr).to_have_js_property("complete", True)
        assert qr.evaluate("img => img.naturalWidth") > 50
    shot(page, "confirmation")

    page.get_by_role("link", name="Print tickets").click()
    expect(page.locator(".ticket")).to_have_count(2)
    shot(page, "printable")
    assert seat_state(show, "3:3") != FREE


def test_two_buyers_see_each_other(new_page, shot, show):
    a, b = new_page(), new_page()
    url = f"/sessions/{show['_id']}/"
    a.goto(url)
    b.goto(url)

    seat(a, "C", 3).click()
    expect(seat(a, "C", 3)).to_have_attribute("aria-label", re.compile("held by you$"))
    # B's open map shows it within 3 seconds, without a reload.
    expect(seat(b, "C", 3)).to_have_attribute("aria-label", re.compile("held by someone else$"), timeout=3000)
    shot(b, "b-sees-a-hold")

    seat(b, "C", 3).click(force=True)  # aria-disabled: a real click still goes through and explains
    expect(b.locator("#notice")).to_contain_text("just taken by someone else")
    expect(seat(b, "C", 3)).to_have_attribute("aria-label", re.compile("held by someone else$"))
    shot(b, "b-just-taken")

    seat(a, "C", 3).click()  # A lets it go
    expect(seat(a, "C", 3)).to_have_attribute("aria-label", re.compile("available$"))
    expect(seat(b, "C", 3)).to_have_attribute("aria-label", re.compile("available$"), timeout=3000)
    seat(b, "C", 3).click()
    expect(seat(b, "C", 3)).to_have_attribute("aria-label", re.compile("held by you$"))
    expect(b.locator("#notice")).not_to_contain_text("just taken")
    shot(b, "b-took-it")
    expect(seat(a, "C", 3)).to_have_attribute("aria-label", re.compile("held by someone else$"), timeout=3000)


def test_hold_expires(new_page, shot, show, settings):
    settings.BOOKING_HOLD_SECONDS = 3
    page = new_page()
    page.goto(f"/sessions/{show['_id']}/")
    seat(page, "A", 1).click()
    expect(seat(page, "A", 1)).to_have_attribute("aria-label", re.compile("held by you$"))
    expect(page.locator("#cart-summary .countdown")).to_be_visible()
    shot(page, "held")
    expect(page.locator("#cart-summary")).to_contain_text("Your hold has expired", timeout=9000)
    expect(seat(page, "A", 1)).to_have_attribute("aria-label", re.compile("available$"), timeout=4000)
    assert seat_state(show, "0:3") == FREE
    shot(page, "expired-on-map")

    seat(page, "A", 1).click()  # a new hold; this time the cart page is open when it runs out
    expect(seat(page, "A", 1)).to_have_attribute("aria-label", re.compile("held by you$"))
    page.goto("/cart/")
    expect(page.get_by_role("heading", name="Your cart")).to_be_visible()
    expect(page.locator(".countdown")).to_be_visible()
    expect(page.get_by_text("Your hold has expired")).to_be_visible(timeout=9000)
    shot(page, "expired-cart")


def test_keyboard_only(new_page, shot, show):
    page = new_page()
    page.goto(f"/sessions/{show['_id']}/")
    for _ in range(40):
        page.keyboard.press("Tab")
        focused = page.evaluate("document.activeElement.getAttribute('aria-label') || ''")
        if focused.startswith("Row ") and focused.endswith("available"):
            break
    else:
        pytest.fail("no seat reachable with Tab")
    shot(page, "seat-focused", full_page=False)
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name=focused.replace("available", "held by you"))).to_be_visible()
    # Focus stays on the seat after the map is swapped, so the next key press continues from there.
    expect(page.locator("button.s:focus")).to_have_attribute("aria-label", re.compile("held by you$"))
    r, c = (int(x) for x in page.evaluate("document.activeElement.value").split(":"))
    assert selectors.get_session(show["_id"])["seats"][r][c] == HELD
    shot(page, "seat-held-by-keyboard", full_page=False)


def test_phone_layout_and_big_hall(new_page, shot):
    from booking.sales.demo import GRAND_CATEGORIES, grand_hall_grid

    grand = make_session(
        make_theater(grand_hall_grid(), GRAND_CATEGORIES, name="Grand Hall"),
        name="Hamlet",
        prices={"p": 5500, "s": 3900, "b": 2500},
    )
    laptop = new_page()
    laptop.goto(f"/sessions/{grand['_id']}/")
    expect(laptop.locator("button.s")).to_have_count(grand["seatsTotal"])
    shot(laptop, "grand-hall-laptop", full_page=False)
    phone = new_page(viewport={"width": 390, "height": 844})
    phone.goto(f"/sessions/{grand['_id']}/")
    scroll_into_view(seat(phone, "K", 20))
    seat(phone, "K", 20).click()
    expect(seat(phone, "K", 20)).to_have_attribute("aria-label", re.compile("held by you$"))
    shot(phone, "grand-hall-phone", full_page=False)
    phone.goto("/")
    shot(phone, "whats-on-phone")


def test_a_map_older_than_the_buyers_own_click_is_never_swapped_in(new_page, shot, show):
    """A seat click answers with the changed seat only. A live refresh that comes back after it
    with a map from before it (it left first, or a slow worker answered it) must not undo it."""
    page = new_page()
    page.goto(f"/sessions/{show['_id']}/")
    map_url = f"/sessions/{show['_id']}/map/"
    before = page.request.get(map_url)  # the map as it is now, before the click
    stale = {"body": before.text(), "etag": before.headers["etag"]}
    page.route(
        "**/map/?stale=1",
        lambda route: route.fulfill(status=200, body=stale["body"], headers={"ETag": stale["etag"]}),
    )

    def late_refresh():  # the live refresh's own request and swap, answered with the stale map
        page.evaluate(
            "url => htmx.ajax('GET', url, {source: '#seatmap', target: '#seatmap', swap: 'outerHTML'})",
            map_url + "?stale=1",
        )

    late_refresh()  # control: before any click the same answer is not older than the map shown
    expect(page.locator("#seatmap")).to_have_attribute("data-version", stale["etag"].strip('"'))

    seat(page, "D", 4).click()
    expect(seat(page, "D", 4)).to_have_attribute("aria-label", re.compile("held by you$"))
    clicked = page.locator("#seatmap").get_attribute("data-version")
    assert int(clicked) > int(stale["etag"].strip('"'))  # raised by the click's X-Seatmap-Version
    late_refresh()
    page.wait_for_timeout(300)  # the swap would have happened by now
    expect(seat(page, "D", 4)).to_have_attribute("aria-label", re.compile("held by you$"))
    shot(page, "click-kept-after-a-stale-refresh")
    # and the next real refresh brings the map of the click's version (or newer) as usual
    expect(page.locator("#seatmap")).to_have_attribute("data-etag", re.compile(rf'^"{clicked}"$'), timeout=4000)
    expect(seat(page, "D", 4)).to_have_attribute("aria-label", re.compile("held by you$"))


def test_a_refused_choice_is_a_message_on_the_map_also_in_development(new_page, settings, show):
    """A seat that would leave another alone is refused with a 400 and a message. With DEBUG on,
    django-htmx's development helper shows 400 answers as error pages (the whole document
    replaced); this one is an answer for the buyer, so the page and the map must stay."""
    settings.DEBUG = True
    page = new_page()
    page.goto(f"/sessions/{show['_id']}/")
    seat(page, "D", 1).click()
    expect(seat(page, "D", 1)).to_have_attribute("aria-label", re.compile("held by you$"))
    seat(page, "D", 3).click()
    expect(page.locator("#notice")).to_contain_text("would leave Row D, seat 2 on its own")
    expect(page.locator("h1")).to_have_text("Waiting for Godot")
    expect(seat(page, "D", 3)).to_have_attribute("aria-label", re.compile("available$"))
    assert seat_state(show, "3:2") == FREE
