"""Screenshots of every buyer page at a phone's 390x844 (touch) and a laptop's 1366x768, in English
and in German, for a person to look at: /tmp/shots/phone/<lang>-<size>-<nn>-<page>.png. What's on,
the session map with seats held, the sticky bar and a seat's sheet, best available's split offer,
the list of seats, checkout, payment, the confirmation, find my booking, the order page found
there, the waiting room and the stadium's section overview. Each step also checks that the page is
the one meant, in the language meant."""

import re
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect

from booking import clock, demo, mongo
from booking.demo_stadium import create_match, create_stadium
from booking.services import waiting_room
from booking.tests.factories import make_session
from booking.tests.localstripe import VISA
from tests.browser.test_card_payment import fill_card
from tests.browser.test_seat_map_phone import WORDS

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/shots/phone")
SIZES = {"390x844": {"width": 390, "height": 844}, "1366x768": {"width": 1366, "height": 768}}
MORE = {
    "en": {"list": "List of seats", "map": "Seat map", "find": "Find my booking", "find_button": "Find booking"},
    "de": {"list": "Liste der Plätze", "map": "Saalplan", "find": "Buchung finden", "find_button": "Buchung finden"},
}


@pytest.fixture
def venues():
    studio = demo.create_theater("Studio Stage", demo.parse_grid(demo.STUDIO_GRID, demo.STUDIO_CATEGORIES))
    show = make_session(studio, name="Waiting for Godot", name_de="Warten auf Godot", prices={"s": 2200, "r": 1500})
    premiere = make_session(
        studio, name="The Big Premiere", name_de="Die große Premiere", days=3, prices={"s": 2200, "r": 1500}
    )
    now = clock.now()
    waiting_room.enable(
        premiere["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now + timedelta(hours=1), rate=600
    )
    match = create_match(create_stadium("Riverside Stadium", seats=8 * 1000))
    return {"show": show, "premiere": premiere, "match": match}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("language", ["en", "de"])
def test_every_buyer_page(chromium, live_server, venues, language, size):
    SHOTS.mkdir(parents=True, exist_ok=True)
    words, more = WORDS[language], MORE[language]
    touch = size == "390x844"
    options = {"has_touch": True, "is_mobile": True, "device_scale_factor": 2} if touch else {}
    locale = {"en": "en-GB", "de": "de-DE"}[language]
    context = chromium.new_context(
        base_url=live_server.url, viewport=SIZES[size], locale=locale, timezone_id="Europe/Berlin", **options
    )
    context.set_default_timeout(8000)
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
    count = iter(range(1, 100))

    def shot(name: str, full_page: bool = False):
        page.wait_for_timeout(150)
        page.screenshot(path=str(SHOTS / f"{language}-{size}-{next(count):02d}-{name}.png"), full_page=full_page)

    def press(locator):
        locator.tap() if touch else locator.click()

    def place(row: str, number: int):
        return page.get_by_role("button", name=re.compile("^" + words["row_seat"].format(row=row, n=number)))

    def hold(row: str, number: int):
        target = place(row, number)
        press(target)  # (scrolls it into view; a swap of the seat meanwhile is retried)
        if touch:  # the tap opens the seat's sheet; it holds from there
            page.locator("#seat-sheet").get_by_role("button", name=words["hold"]).tap()
        expect(target).to_have_attribute("aria-label", re.compile(words["held"]))

    try:
        page.goto("/")
        expect(page.get_by_role("heading", level=1)).to_have_text(words["whats_on"])
        shot("whats-on", full_page=True)

        show = venues["show"]
        page.goto(f"/sessions/{show['_id']}/")
        expect(page.get_by_role("heading", level=1)).to_have_text(words["show"])
        shot("session")
        hold("D", 4)
        hold("D", 5)
        space = place("F", 12)  # a wheelchair space: its sheet asks (on a laptop too)
        press(space)
        expect(page.locator("#seat-sheet")).to_contain_text(words["need_it"])
        shot("session-held-bar-sheet")
        page.locator("#seat-sheet").get_by_role("button", name=words["no"]).click()

        page.get_by_label(words["seats"], exact=True).select_option("8")
        page.get_by_role("button", name=words["find"]).click()
        offer = page.locator("#best-result")
        expect(offer).to_contain_text(words["split"])
        page.evaluate("document.getElementById('best-result').scrollIntoView({block: 'center'})")
        shot("best-available-split-offer")

        page.get_by_role("button", name=more["list"]).click()
        expect(page.locator("#seat-list")).to_be_visible()
        shot("list-of-seats")
        page.get_by_role("button", name=more["map"]).first.click()

        page.goto("/checkout/")
        expect(page.get_by_role("heading", name=words["checkout"], exact=True)).to_be_visible()
        page.get_by_label(words["name"], exact=True).fill("Ada Lovelace")
        page.get_by_label(words["email"], exact=True).fill("ada@example.com")
        shot("checkout", full_page=True)
        page.get_by_role("button", name=re.compile(words["continue"])).click()
        expect(page.get_by_role("heading", name=words["payment"])).to_be_visible()
        fill_card(page, VISA)
        shot("payment", full_page=True)
        page.get_by_role("button", name=re.compile(words["pay"])).click()
        expect(page.get_by_role("heading", name=words["paid_heading"])).to_be_visible()
        shot("confirmation", full_page=True)
        [order] = mongo.orders().find()

        context.clear_cookies()  # another browser: the booking is found by reference and e-mail
        page.goto("/find-booking/")
        expect(page.get_by_role("heading", level=1)).to_have_text(more["find"])
        page.locator("input[name=ref]").fill(order["ref"])
        page.get_by_label(words["email"], exact=True).fill("ada@example.com")
        shot("find-my-booking", full_page=True)
        page.get_by_role("button", name=more["find_button"]).click()
        expect(page.locator(".ref-code")).to_have_text(order["ref"])
        shot("order-page", full_page=True)

        page.goto(f"/sessions/{venues['premiere']['_id']}/")  # a queued sale: the waiting room
        expect(page).to_have_url(re.compile(r"/queue/"))
        expect(page.get_by_role("heading", level=1)).to_have_text(words["premiere"])  # the staff's German title
        shot("queue", full_page=True)

        page.goto(f"/performances/{venues['match']['performanceId']}/")
        expect(page.locator("html")).to_have_attribute("lang", language)
        shot("stadium-overview", full_page=True)
    finally:
        context.close()
