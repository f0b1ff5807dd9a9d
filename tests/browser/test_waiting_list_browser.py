"""Around a sold-out performance and a paid ticket, on a phone (390 px) and a laptop (1366 px), in
English and German: the sold-out map leads to the waiting list, the buyer joins and sees their
place, the offer's link puts the seats held for them in their cart; the order page offers each
ticket as a wallet pass."""

import re

import pytest
from playwright.sync_api import expect

from booking.core import mongo
from booking.sales import holds, waiting_list
from booking.tests.admin_support import sell
from booking.tests.factories import make_session, make_theater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GRID = "A: ssssss\nB: pppppp\n"
WORDS = {
    "en": {
        "join": "Join the waiting list",
        "place": "Your place",
        "take": "Put them in my cart",
        "row": "Row A, seat 5",
        "wallet": "Add to Apple Wallet",
    },
    "de": {
        "join": "Auf die Warteliste",
        "place": "Ihr Platz",
        "take": "In meinen Warenkorb legen",
        "row": "Reihe A, Platz 5",
        "wallet": "Zu Apple Wallet hinzufügen",
    },
}
SIZES = [(390, 844), (1366, 900)]


@pytest.fixture
def browser_page(chromium, live_server):
    contexts = []

    def make(width, height, language):
        context = chromium.new_context(
            base_url=live_server.url,
            viewport={"width": width, "height": height},
            locale="de-DE" if language == "de" else "en-GB",
            timezone_id="Europe/Berlin",
        )
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("size", SIZES, ids=["390", "1366"])
def test_a_buyer_waits_for_a_sold_out_show_and_takes_the_seats_offered(browser_page, shot, size, language):
    words = WORDS[language]
    theater = make_theater(GRID, [{"code": "s", "name": "Stalls"}, {"code": "p", "name": "Premium"}])
    session = make_session(theater, name="Tosca", name_de="Tosca")
    first = holds.hold_seats(session["_id"], "s:first", None, [f"0:{c}" for c in range(6)])
    holds.hold_seats(session["_id"], "s:second", None, [f"1:{c}" for c in range(6)])
    page = browser_page(*size, language)

    page.goto(f"/sessions/{session['_id']}/")
    entry_panel = page.locator("#waiting-list-entry")
    expect(entry_panel).to_be_visible()
    shot(page, "sold-out")
    page.locator("#waiting-list-join").click()

    expect(page.locator("#waiting-list-form")).to_be_visible()
    page.locator("#wl-count").select_option("2")
    page.locator("#wl-email").fill("ada@example.com")
    shot(page, "join-form")
    page.get_by_role("button", name=words["join"]).click()
    expect(page.locator("#waiting-list-joined")).to_contain_text(words["place"])
    expect(page.locator(".wl-position strong")).to_have_text("1")
    box = page.locator("#waiting-list-joined").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= size[0]  # no sideways scroll
    shot(page, "joined")

    holds.release_seats(session["_id"], "s:first", first.cart_id, ["0:4", "0:5"])
    assert waiting_list.offer_free_seats(session["_id"]).offered == 1
    entry = mongo.waiting_list().find_one({"sessionId": session["_id"], "email": "ada@example.com"})
    page.goto(f"/waiting-list/offers/{entry['offer']['token']}/")
    expect(page.locator("#waiting-list-offer")).to_be_visible()
    shot(page, "offer")
    page.get_by_role("button", name=words["take"]).click()

    expect(page).to_have_url(re.compile(r"/cart/$"))
    expect(page.locator("main")).to_contain_text(words["row"])
    shot(page, "cart")


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("size", SIZES, ids=["390", "1366"])
def test_the_order_page_offers_each_ticket_as_a_wallet_pass(browser_page, shot, size, language, settings, tmp_path):
    settings.BOOKING_WALLET_DEV_DIR = str(tmp_path / "wallet")
    session = make_session(name="Tosca")
    order = sell(session["_id"], ["0:0", "0:1"], email="ada@example.com")
    page = browser_page(*size, language)

    page.goto(f"/orders/{order['ref']}/?email=ada@example.com")
    links = page.locator("a.wallet-pass")
    expect(links).to_have_count(2)
    expect(links.first).to_have_text(WORDS[language]["wallet"])
    links.first.scroll_into_view_if_needed()
    shot(page, "order-wallet-links")
    with page.expect_download() as download:
        links.first.click()
    assert download.value.suggested_filename.endswith(".pkpass")
    answer = page.request.get(links.nth(1).get_attribute("href") or "")
    assert answer.status == 200 and answer.headers["content-type"] == "application/vnd.apple.pkpass"
