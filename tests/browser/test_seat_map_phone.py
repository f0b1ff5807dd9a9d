"""The seat map on a phone (issue 18) in real Chromium: no seat hidden by labels or chrome at 320,
390 and 768 px for every demo hall (the stadium's sections too), 24 px targets, pinch zoom by touch,
the seat's sheet, the sticky cart bar, best available with its split offer, a purchase end to end."""

import re

import pytest
from django.core import mail
from django.utils import timezone, translation
from django.utils.formats import date_format
from playwright.sync_api import expect

from booking import demo, formatting, mongo
from booking.demo_stadium import create_match, create_stadium
from booking.services import notifications
from booking.tests.factories import make_session
from booking.tests.localstripe import VISA
from tests.browser.test_card_payment import fill_card

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}

# Every seat, panned into view as a finger would leave it: at the map box's left edge, in its middle
# and at its right edge (no scroll padding: a pan stops anywhere), the page scrolled to put it in
# the middle of the screen. Whatever is at the seat's centre must be the seat itself.
HIDDEN_SEATS = """() => {
  const hidden = [];
  const box = document.querySelector('#seatmap .map-scroll');
  box.style.scrollPadding = '0px';
  for (const seat of document.querySelectorAll('#seatmap button.s')) {
    for (const inline of ['start', 'center', 'end']) {
      seat.scrollIntoView({block: 'center', inline});
      const r = seat.getBoundingClientRect();
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      if (hit !== seat && !seat.contains(hit)) {
        const what = hit ? hit.tagName + '.' + hit.className : 'nothing';
        hidden.push(seat.getAttribute('aria-label') + ' (' + inline + ') under ' + what);
        break;
      }
    }
  }
  return hidden;
}"""
SMALLEST_SEAT = (
    "() => Math.min(...[...document.querySelectorAll('#seatmap button.s')].map(b => b.getBoundingClientRect().width))"
)


def seat(page, row: str, number: int):
    return page.get_by_role("button", name=re.compile(rf"^Row {row}, seat {number},"))


@pytest.fixture
def halls():
    grand = demo.create_theater("Grand Hall", demo.parse_grid(demo.grand_hall_grid(), demo.GRAND_CATEGORIES))
    studio = demo.create_theater("Studio Stage", demo.parse_grid(demo.STUDIO_GRID, demo.STUDIO_CATEGORIES))
    return {
        "Grand Hall": make_session(grand, name="Hamlet", prices={"p": 5500, "s": 3900, "b": 2500}),
        "Studio Stage": make_session(studio, name="Waiting for Godot", prices={"s": 2200, "r": 1500}),
    }


def check_every_seat(page, url: str, width: int, what: str):
    page.goto(url)
    hidden = page.evaluate(HIDDEN_SEATS)
    assert hidden == [], f"{what} at {width} px: {len(hidden)} seats hidden, e.g. {hidden[:3]}"
    if width <= 600:  # thumbs: at least 24 px targets at the map's own zoom
        assert page.evaluate(SMALLEST_SEAT) >= 24, f"{what} at {width} px"


@pytest.mark.slow
@pytest.mark.parametrize("width", [320, 390, 768])
def test_no_seat_is_hidden_by_labels_or_chrome(new_page, halls, width):
    page = new_page({"width": width, "height": 800})
    for name, session in halls.items():
        url = f"/sessions/{session['_id']}/"
        check_every_seat(page, url, width, name)
        page.goto(url)
        first_free = page.locator("#seatmap button.s:not([aria-disabled])").first
        first_free.scroll_into_view_if_needed()
        first_free.click()  # with a seat held the sticky cart bar is on screen too
        expect(page.locator("#cart-bar")).to_contain_text("1 seat")
        hidden = page.evaluate(HIDDEN_SEATS)
        assert hidden == [], f"{name} at {width} px with the cart bar: {hidden[:3]}"
        page.context.clear_cookies()


@pytest.mark.slow
def test_no_seat_is_hidden_in_the_section_maps_of_the_100000_seat_stadium(new_page):
    """The demo's stadium: 100 sections of 1,000 seats. A section's map is drawn from its layout
    alone (states change colours, not places), so every distinct layout is checked seat by seat at
    each width, and each section is shown to have one of them (checking all 100 maps, 900,000
    probes, took over a quarter of an hour on this machine)."""
    stadium = create_stadium()
    first = create_match(stadium)
    sections = list(mongo.sessions().find({"performanceId": first["performanceId"]}, {"layout": 1, "section": 1}))
    seats = [cell for section in sections for row in section["layout"]["rows"] for cell in row["cells"] if cell]
    assert len(sections) == 100 and len(seats) == 100_000
    shapes: dict = {}
    for section in sections:
        rows = section["layout"]["rows"]
        shape = tuple(  # what places a seat on the map: its row, its column, its label and its mark
            (
                row["label"],
                tuple(
                    cell and (cell["label"], bool(cell.get("wheelchair")), bool(cell.get("companion")))
                    for cell in row["cells"]
                ),
            )
            for row in rows
        )
        shapes.setdefault(shape, section)
    assert len(shapes) == 1  # every section draws the same map (categories differ only in colour)
    for width in (320, 390, 768):
        page = new_page({"width": width, "height": 800})
        for section in shapes.values():
            check_every_seat(page, f"/sessions/{section['_id']}/", width, section["section"]["name"])
        page.goto(f"/sessions/{first['_id']}/")
        expect(page.locator(".stage")).to_have_text("Pitch")  # bug 2: the venue says what is at the front
        page.context.close()


def touch(page):
    return page.context.new_cdp_session(page)


def pinch(page, cdp, x: float, y: float, start: float, end: float, steps: int = 8):
    """Two fingers on (x, y), ``start`` px apart, moved to ``end`` px apart (CDP touch events)."""

    def points(d):
        return [{"x": x - d / 2, "y": y, "id": 1}, {"x": x + d / 2, "y": y, "id": 2}]

    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": points(start)})
    for i in range(1, steps + 1):
        cdp.send(
            "Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": points(start + (end - start) * i / steps)}
        )
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    page.wait_for_timeout(350)  # the end of a pinch is not a tap


def seat_width(page, row: str, number: int) -> float:
    return seat(page, row, number).bounding_box()["width"]


def map_centre(page):
    box = page.locator("#seatmap .map-scroll").bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def phone(chromium, live_server, locale: str = "en-GB"):
    context = chromium.new_context(
        base_url=live_server.url,
        viewport=PHONE,
        has_touch=True,
        is_mobile=True,
        device_scale_factor=2,
        locale=locale,  # the browser's Accept-Language
        timezone_id="Europe/Berlin",
    )
    context.set_default_timeout(8000)
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
    return context, page


def test_pinch_zooms_the_map_not_the_page_and_a_small_seat_is_zoomed_to_before_choosing(chromium, live_server, halls):
    context, page = phone(chromium, live_server)
    try:
        page.goto(f"/sessions/{halls['Grand Hall']['_id']}/")
        expect(page.locator("[data-minimap]")).to_be_visible()  # the hall is wider than the phone
        expect(page.locator("[data-pan-hint]")).to_contain_text("off-screen")
        page.locator("#seatmap .map-scroll").scroll_into_view_if_needed()
        cdp = touch(page)
        before = seat_width(page, "K", 20)
        assert before >= 24
        x, y = map_centre(page)
        pinch(page, cdp, x, y, 200, 60)  # fingers together: the whole hall comes into view
        smaller = seat_width(page, "K", 20)
        assert smaller < before * 0.5
        assert page.evaluate("window.visualViewport.scale") == 1  # the page itself did not zoom
        target = seat(page, "K", 20)
        target.scroll_into_view_if_needed()
        target.tap()  # too small for a finger: zoomed to, not chosen
        expect(page.locator("#seat-sheet")).to_be_hidden()
        assert seat_width(page, "K", 20) >= 24
        expect(page.locator("#notice")).to_contain_text("Zoomed in")
        x, y = map_centre(page)
        pinch(page, cdp, x, y, 80, 200)  # fingers apart: bigger seats
        assert seat_width(page, "K", 20) > 30
        target.scroll_into_view_if_needed()
        target.tap()
        expect(page.locator("#seat-sheet")).to_be_visible()
        expect(page.locator("#seat-sheet")).to_contain_text("Row K, Seat 20")
        expect(target).to_have_attribute("aria-label", re.compile("available$"))  # a tap alone holds nothing
    finally:
        context.close()


def test_the_sheet_never_covers_the_seat_tapped(chromium, live_server, halls):
    """A seat tapped at the bottom of the screen: the sheet comes up from the bottom and the page
    moves up so that the seat stays in sight above it (before, the sheet hid it)."""
    context, page = phone(chromium, live_server)
    try:
        page.goto(f"/sessions/{halls['Studio Stage']['_id']}/")
        row = "G"  # the last row, scrolled to the bottom of the screen
        target = seat(page, row, 1)
        target.evaluate("b => b.scrollIntoView({block: 'end'})")
        assert target.bounding_box()["y"] > PHONE["height"] - 300  # low on the screen, where the sheet comes up
        target.tap()
        sheet = page.locator("#seat-sheet")
        expect(sheet).to_contain_text(f"Row {row}, Seat 1")
        page.screenshot(path="/tmp/shots/map/sheet-above-the-seat.png")
        seat_box, sheet_box = target.bounding_box(), sheet.bounding_box()
        assert seat_box["y"] >= 0 and seat_box["y"] + seat_box["height"] <= sheet_box["y"], (seat_box, sheet_box)
    finally:
        context.close()


# What the buyer reads in each language (the German from locale/de; the formats from Babel/CLDR).
WORDS = {
    "en": {
        "whats_on": "What's on",
        "row_seat": "Row {row}, seat {n},",
        "sheet_title": "Row {row}, Seat {n}",
        "held": "held by you$",
        "available": "available$",
        "wheelchair_sheet": "Standard · €22 · wheelchair space",
        "need_it": "This is a wheelchair space – do you need it?",
        "yes": "Yes, I need it: hold it",
        "no": "No",
        "hold": "Hold this seat",
        "reduced": "Reduced view · €15",
        "close": "Close",
        "seats": "Seats",
        "find": "Find seats",
        "none_in_hall": "There are no 8 seats side by side in this hall.",
        "split": "Not side by side, but close:",
        "hold_8": "Hold these 8 seats",
        "one_seat": "1 seat",
        "two_seats": "2 seats",
        "ten_seats": "10 seats",
        "bar_money": "€22",
        "check_out": "Check out",
        "checkout": "Checkout",
        "name": "Name",
        "email": "E-mail",
        "continue": "^Continue",
        "payment": "Payment",
        "pay": r"^Pay €",
        "paid_heading": "You're going to the theater!",
        "paid": "Paid",
        "receipt": r"Receipt \d+ \(PDF\)",
        "subject": "Your booking {ref}: Waiting for Godot",
        "show": "Waiting for Godot",
        "premiere": "The Big Premiere",
    },
    "de": {
        "whats_on": "Spielplan",
        "row_seat": "Reihe {row}, Platz {n},",
        "sheet_title": "Reihe {row}, Platz {n}",
        "held": "von Ihnen vorgemerkt$",
        "available": "frei$",
        "wheelchair_sheet": "Standard · 22\xa0€ · Rollstuhlplatz",
        "need_it": "Dies ist ein Rollstuhlplatz – brauchen Sie ihn?",
        "yes": "Ja, ich brauche ihn: vormerken",
        "no": "Nein",
        "hold": "Diesen Platz vormerken",
        "reduced": "Eingeschränkte Sicht · 15\xa0€",  # the staff's German category name
        "close": "Schließen",
        "seats": "Plätze",
        "find": "Plätze suchen",
        "none_in_hall": "In diesem Saal gibt es keine 8 Plätze nebeneinander.",
        "split": "Nicht nebeneinander, aber nah beieinander:",
        "hold_8": "Diese 8 Plätze vormerken",
        "one_seat": "1 Platz",
        "two_seats": "2 Plätze",
        "ten_seats": "10 Plätze",
        "bar_money": "22\xa0€",
        "check_out": "Zur Kasse",
        "checkout": "Kasse",
        "name": "Name",
        "email": "E-Mail",
        "continue": "^Weiter",
        "payment": "Zahlung",
        "pay": r"^[\d.,]+\s€ bezahlen",
        "paid_heading": "Sie gehen ins Theater!",
        "paid": "Bezahlt",
        "receipt": r"Quittung \d+ \(PDF\)",
        "subject": "Ihre Buchung {ref}: Warten auf Godot",
        "show": "Warten auf Godot",
        "premiere": "Die große Premiere",
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("language", ["en", "de"])
def test_a_phone_buys_end_to_end_by_touch(chromium, live_server, halls, language):
    """The whole purchase on a phone by touch, in each language: what's on, the map (pinch, a
    wheelchair space asked for in its sheet, a seat's facts on tap, the sticky bar), best
    available's split offer, checkout, the card payment through localstripe's Stripe.js, the
    confirmation page and the mail; each page in the buyer's language and its formats."""
    shots = f"/tmp/shots/map/phone-flow-{language}"
    words = WORDS[language]
    studio = halls["Studio Stage"]
    mongo.sessions().update_one({"_id": studio["_id"]}, {"$set": {"nameDe": "Warten auf Godot"}})

    def place(row: str, number: int):
        return page.get_by_role("button", name=re.compile("^" + words["row_seat"].format(row=row, n=number)))

    def money(cents: int) -> str:
        with translation.override(language):
            return formatting.format_money(cents)

    context, page = phone(chromium, live_server, locale={"en": "en-GB", "de": "de-DE"}[language])
    try:
        page.goto("/")
        expect(page.locator("html")).to_have_attribute("lang", language)
        expect(page.get_by_role("heading", level=1)).to_have_text(words["whats_on"])
        card = page.locator("li.show").filter(has_text=words["show"])
        expect(card).to_contain_text(f"{money(1500)} – {money(2200)}")  # the price range, per language
        card.get_by_role("link").first.tap()
        expect(page.get_by_role("heading", level=1)).to_have_text(words["show"])
        expect(page.locator(".stage")).to_have_text({"en": "Stage", "de": "Bühne"}[language])
        cdp = touch(page)
        x, y = map_centre(page)
        pinch(page, cdp, x, y, 100, 150)  # a little closer

        # a wheelchair space: the sheet asks whether the buyer needs it; "No" holds nothing
        wheelchair = place("F", 1)
        wheelchair.scroll_into_view_if_needed()
        wheelchair.tap()
        sheet = page.locator("#seat-sheet")
        expect(sheet).to_be_visible()
        expect(sheet).to_contain_text(words["sheet_title"].format(row="F", n=1))
        expect(sheet).to_contain_text(words["wheelchair_sheet"])
        expect(sheet).to_contain_text(words["need_it"])
        page.screenshot(path=f"{shots}-1-sheet.png")
        sheet.get_by_role("button", name=words["no"]).tap()
        expect(sheet).to_be_hidden()
        expect(wheelchair).to_have_attribute("aria-label", re.compile(words["available"]))
        wheelchair.tap()
        sheet.get_by_role("button", name=words["yes"]).tap()
        expect(wheelchair).to_have_attribute("aria-label", re.compile(words["held"]))
        bar = page.locator("#cart-bar")
        expect(bar).to_be_visible()
        expect(bar).to_contain_text(words["one_seat"])
        expect(bar).to_contain_text(words["bar_money"])
        expect(bar.locator(".countdown-time")).to_have_text(re.compile(r"^1[45]:\d\d$"))
        assert bar.bounding_box()["y"] + bar.bounding_box()["height"] <= PHONE["height"] + 1  # on screen
        page.screenshot(path=f"{shots}-2-bar.png")

        reduced = place("G", 1)  # reduced view: the category (in the buyer's language) says so
        reduced.scroll_into_view_if_needed()
        reduced.tap()
        expect(sheet).to_contain_text(words["reduced"])
        sheet.get_by_role("button", name=words["close"]).tap()
        expect(sheet).to_be_hidden()
        expect(reduced).to_have_attribute("aria-label", re.compile(words["available"]))  # a look holds nothing
        reduced.tap()
        sheet.get_by_role("button", name=words["hold"]).tap()
        expect(reduced).to_have_attribute("aria-label", re.compile(words["held"]))
        expect(bar).to_contain_text(words["two_seats"])

        # best available: 8 side by side never fit this hall; the engine's split is offered, then taken
        page.get_by_label(words["seats"], exact=True).select_option("8")
        page.get_by_role("button", name=words["find"]).tap()
        expect(page.locator("#notice")).to_contain_text(words["none_in_hall"])
        offer = page.locator("#best-result")
        expect(offer).to_contain_text(words["split"])
        page.screenshot(path=f"{shots}-3-split-offer.png")
        expect(bar).to_contain_text(words["two_seats"])  # nothing added before the buyer says so
        offer.get_by_role("button", name=words["hold_8"]).tap()
        expect(bar).to_contain_text(words["ten_seats"])
        expect(page.locator("#seatmap button.s.me")).to_have_count(10)
        page.screenshot(path=f"{shots}-4-held.png")
        [cart] = mongo.carts().find()
        total = sum(item["price"] for item in cart["items"])
        expect(bar).to_contain_text(money(total))

        bar.get_by_role("link", name=re.compile(words["check_out"])).tap()
        expect(page.get_by_role("heading", name=words["checkout"], exact=True)).to_be_visible()
        page.get_by_label(words["name"], exact=True).fill("Ada Lovelace")
        page.get_by_label(words["email"], exact=True).fill("ada@example.com")
        page.screenshot(path=f"{shots}-5-checkout.png", full_page=True)
        page.get_by_role("button", name=re.compile(words["continue"])).tap()
        expect(page.get_by_role("heading", name=words["payment"])).to_be_visible()
        fill_card(page, VISA)
        page.screenshot(path=f"{shots}-6-payment.png", full_page=True)
        pay = page.get_by_role("button", name=re.compile(words["pay"]))
        expect(pay).to_contain_text(money(total))
        pay.tap()

        expect(page.get_by_role("heading", name=words["paid_heading"])).to_be_visible()
        expect(page.locator(".badge-paid")).to_have_text(words["paid"])
        expect(page.get_by_role("link", name=re.compile(words["receipt"]))).to_be_visible()
        confirmation = page.locator(".confirmation")
        expect(confirmation).to_contain_text(money(total))
        expect(confirmation).to_contain_text(words["reduced"].split(" · ")[0])  # the category, translated
        with translation.override(language):  # the show's date in the language's own format
            when = date_format(timezone.localtime(studio["start"]), translation.gettext("D j M, H:i"))
        expect(confirmation).to_contain_text(when)
        page.screenshot(path=f"{shots}-7-paid.png", full_page=True)

        [order] = mongo.orders().find()
        assert order["state"] == "paid" and len(order["lines"]) == 10 and order["language"] == language
        assert notifications.send_confirmation(order["_id"]) == "sent"  # what the worker would do
        [message] = mail.outbox
        assert message.subject == words["subject"].format(ref=order["ref"])
        assert words["reduced"].split(" · ")[0] in message.body  # the category in the buyer's language
    finally:
        context.close()


def test_the_list_of_seats_holds_from_a_button_and_hovering_shows_the_price(new_page, halls):
    page = new_page({"width": 1366, "height": 768})
    studio = halls["Studio Stage"]
    page.goto(f"/sessions/{studio['_id']}/")
    legend = page.locator(".legend")
    assert legend.bounding_box()["y"] + legend.bounding_box()["height"] <= 768  # prices without scrolling
    seat(page, "C", 2).hover()
    expect(page.locator("#seat-tip")).to_contain_text("Row C, Seat 2 · Standard · €22")
    page.get_by_role("button", name="List of seats").click()
    expect(page.locator("#seatmap .map-scroll")).to_be_hidden()
    listing = page.locator("#seat-list")
    expect(listing.get_by_role("heading", name="Row A")).to_be_visible()
    listing.get_by_role("button", name=re.compile(r"^Hold this seat: Row A, Seat 1, Standard")).click()
    expect(page.locator('#seatmap button[aria-label^="Row A, seat 1,"]')).to_have_attribute(
        "aria-label", re.compile("held by you$")
    )  # the map's own seat (hidden while the list is shown)
    expect(listing.get_by_role("button", name=re.compile(r"^Let this seat go: Row A, Seat 1"))).to_be_visible()
    page.reload()  # the choice is remembered
    expect(page.locator("#seat-list")).to_be_visible()
    page.get_by_role("button", name="Seat map").click()
    expect(page.locator("#seatmap .map-scroll")).to_be_visible()


POP_BY = """id => {
  const pop = document.querySelector('.notice-pop');
  if (!pop) return null;
  const p = pop.getBoundingClientRect(), s = document.getElementById(id).getBoundingClientRect();
  const below = p.top - s.bottom, above = s.top - p.bottom;  // by the seat: just under it, or just over it
  const gap = below >= 0 && below <= 20 ? below : above;
  return {gap, text: pop.textContent, hidden: pop.getAttribute('aria-hidden')};
}"""


def test_notices_appear_by_the_seat_touched_and_are_announced(new_page, halls, settings):
    studio = halls["Studio Stage"]
    page, other = new_page(PHONE), new_page(PHONE)
    page.goto(f"/sessions/{studio['_id']}/")
    expect(page.locator("#notice")).to_have_attribute("aria-live", "polite")
    seat(page, "D", 1).click()
    expect(seat(page, "D", 1)).to_have_attribute("aria-label", re.compile("held by you$"))
    seat(page, "D", 3).click()  # would leave D2 alone
    expect(page.locator("#notice")).to_contain_text("would leave Row D, seat 2 on its own")
    expect(page.locator(".notice-pop")).to_be_visible()
    pop = page.evaluate(POP_BY, "s3-2")
    assert 0 <= pop["gap"] <= 20 and "on its own" in pop["text"] and pop["hidden"] == "true"
    assert page.locator("#notice").bounding_box()["height"] <= 1  # announced there, not shown twice
    page.screenshot(path="/tmp/shots/map/notice-by-the-seat.png")

    other.goto(f"/sessions/{studio['_id']}/")
    seat(other, "D", 1).click(force=True)  # held by the first buyer: just taken
    expect(other.locator("#notice")).to_contain_text("just taken by someone else")
    expect(other.locator(".notice-pop")).to_contain_text("just taken")
    assert 0 <= other.evaluate(POP_BY, "s3-0")["gap"] <= 20

    settings.BOOKING_HOLD_RATE = "2/m"  # the rate limit's answer (429) pops up by the seat too
    for number in (5, 6, 7):
        seat(other, "A", number - 4).click()
    expect(other.locator("#notice")).to_contain_text("choosing seats very fast")
    expect(other.locator(".notice-pop")).to_contain_text("choosing seats very fast")


def test_reduced_motion_is_respected_and_the_focused_seat_is_outlined(chromium, live_server, halls):
    context = chromium.new_context(base_url=live_server.url, viewport=PHONE, reduced_motion="reduce")
    try:
        page = context.new_page()
        page.goto(f"/sessions/{halls['Studio Stage']['_id']}/")
        page.get_by_label("Seats", exact=True).select_option("2")
        page.get_by_role("button", name="Find seats").click()
        expect(page.locator("#seatmap button.s.pk")).to_have_count(2)  # picked: highlighted without a pulse
        assert page.locator("#seatmap button.s.pk").first.evaluate("b => getComputedStyle(b).animationName") == "none"
        seat(page, "A", 1).focus()
        page.keyboard.press("ArrowRight")
        style = "() => getComputedStyle(document.activeElement).outline"
        assert re.search(r"solid 3px", page.evaluate(style))
    finally:
        context.close()


HINTS = "els => els.filter(e => e.getClientRects().length > 0).map(e => e.textContent.trim())"


@pytest.mark.parametrize("device", ["phone", "laptop"])
def test_the_hint_fits_the_device(chromium, live_server, halls, device):
    """A touch screen reads how to tap and pinch, a mouse-and-keyboard screen how to click and
    use the keys; never both (above the map and in the empty cart panel)."""
    if device == "phone":
        context, page = phone(chromium, live_server)
    else:
        context = chromium.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 768})
        page = context.new_page()
    try:
        page.goto(f"/sessions/{halls['Studio Stage']['_id']}/")
        shown = page.locator(".click-hint, .keys-hint, .touch-hint").evaluate_all(HINTS)
        if device == "phone":
            assert shown == [
                "Tap a seat to see its price, then hold it. Pinch or use + and − to zoom.",
                "Tap a free seat on the map to see it and hold it, or let us pick the best available.",
            ]
        else:
            assert shown == [
                "Click a seat to hold it; click it again to let it go.",
                "Keyboard: Tab to the map, arrow keys move between seats, Enter holds or lets go.",
                "Click a free seat on the map to hold it, or let us pick the best available.",
            ]
        page.screenshot(path=f"/tmp/shots/phone/hint-{device}.png")
    finally:
        context.close()


def test_a_wheelchair_space_is_held_only_after_the_buyer_says_they_need_it(new_page, halls):
    """On a laptop too: a click, Enter or the list's button on a free wheelchair space opens its
    sheet with the question; "No" holds nothing and sends nothing; "Yes" holds it."""
    page = new_page({"width": 1366, "height": 768})
    studio = halls["Studio Stage"]
    page.goto(f"/sessions/{studio['_id']}/")
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if r.method == "POST" else None)
    space, sheet = seat(page, "F", 12), page.locator("#seat-sheet")
    space.click()
    expect(sheet).to_contain_text("This is a wheelchair space – do you need it?")
    sheet.get_by_role("button", name="No").click()
    expect(sheet).to_be_hidden()
    space.focus()
    page.keyboard.press("Enter")
    expect(sheet).to_be_visible()
    page.keyboard.press("Escape")
    expect(sheet).to_be_hidden()
    page.get_by_role("button", name="List of seats").click()
    page.locator("#seat-list").get_by_role("button", name=re.compile(r"^Hold this seat: Row F, Seat 12,")).click()
    expect(sheet).to_contain_text("do you need it?")
    assert requests == [] and mongo.carts().count_documents({}) == 0
    page.screenshot(path="/tmp/shots/phone/wheelchair-question-1366.png")
    sheet.get_by_role("button", name="Yes, I need it: hold it").click()
    expect(page.locator("#cart-summary")).to_contain_text("Row F, seat 12")
    [cart] = mongo.carts().find()
    assert [item.get("wheelchair") for item in cart["items"]] == [True]


# The choices of a select the buyer reads without opening it: the chosen option's text against
# the room inside the box (its padding and Chromium's arrow, about 20 px, taken off).
CUT_CHOICES = """() => [...document.querySelectorAll('.best-fields select')].flatMap(select => {
  const style = getComputedStyle(select);
  const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
  return [...select.options].filter(option => {
    const probe = document.createElement('span');
    probe.style.cssText = 'position:absolute;visibility:hidden;white-space:pre';
    probe.style.font = style.font;
    probe.textContent = option.text;
    document.body.append(probe);
    const cut = probe.getBoundingClientRect().width > room;
    probe.remove();
    return cut && option.value === '';  // the choice shown before any is made
  }).map(option => option.text);
})"""


@pytest.mark.parametrize("width", [390, 1366])
def test_best_availables_first_choices_are_read_whole_in_german(chromium, live_server, halls, width):
    """Seen in the end-to-end screenshots: "Jede Kategorie (beste Pl" at both sizes (and "Any
    category (best" in English) in the best available panel's category box."""
    context = chromium.new_context(base_url=live_server.url, viewport={"width": width, "height": 800}, locale="de-DE")
    try:
        page = context.new_page()
        page.goto(f"/sessions/{halls['Studio Stage']['_id']}/")
        expect(page.get_by_label("Kategorie", exact=True)).to_be_visible()
        assert page.evaluate(CUT_CHOICES) == []
    finally:
        context.close()
