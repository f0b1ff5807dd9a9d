"""German and English: a German phone (Accept-Language: de, 390x844) gets the site in
German from the first page, holds a seat and reads the cart in German; the header's switch turns
the site English and it stays English on the next page."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/shots/i18n")


@pytest.fixture
def german_phone(chromium, live_server):
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 390, "height": 844}, locale="de-DE", timezone_id="Europe/Berlin"
    )
    context.set_default_timeout(8000)
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
    yield page
    context.close()


def test_a_german_phone_books_in_german_and_can_switch_to_english(german_phone, shot):
    SHOTS.mkdir(parents=True, exist_ok=True)
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studiobühne")
    make_session(
        theater,
        name="Waiting for Godot",
        name_de="Warten auf Godot",
        description_de="Zwei Männer warten.",
        prices={"s": 2200, "r": 1500},
    )
    page = german_phone
    page.goto("/")
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.get_by_role("heading", level=1)).to_have_text("Spielplan")
    card = page.locator("li.show").first
    expect(card).to_contain_text("Warten auf Godot")
    expect(card).to_contain_text("Plätze frei")
    expect(card).to_contain_text("15\xa0€ – 22\xa0€")
    page.screenshot(path=str(SHOTS / "whats-on-de-390.png"), full_page=True)
    shot(page, "whats-on-de")

    card.get_by_role("link").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Warten auf Godot")
    expect(page.locator("html")).to_have_class(re.compile(r"\bmap-js\b"))  # the map's script is ready
    page.get_by_role("button", name=re.compile(r"^Reihe C, Platz 4,")).click(force=True)
    expect(page.locator("#cart-summary")).to_contain_text("Reihe C, Platz 4", timeout=10_000)
    page.screenshot(path=str(SHOTS / "session-de-390.png"), full_page=False)
    shot(page, "session-de-held")

    page.goto("/cart/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Ihr Warenkorb")
    expect(page.locator(".lines-table")).to_contain_text("Reihe C, Platz 4")
    expect(page.get_by_role("link", name="Zur Kasse")).to_be_visible()
    page.screenshot(path=str(SHOTS / "cart-de-390.png"), full_page=True)
    shot(page, "cart-de")

    page.get_by_role("button", name="English").click()  # the header's switch
    expect(page.get_by_role("heading", level=1)).to_have_text("Your cart")
    expect(page.locator(".lines-table")).to_contain_text("Row C, seat 4")
    page.goto("/")
    expect(page.get_by_role("heading", level=1)).to_have_text("What's on")  # remembered
    expect(page.locator("li.show").first).to_contain_text("Waiting for Godot")
    page.screenshot(path=str(SHOTS / "whats-on-en-after-switch-390.png"), full_page=True)


def test_german_pages_on_a_laptop(chromium, live_server):
    """The same pages at 1366x768 in German, through checkout's details step (screenshots looked at)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studiobühne")
    show = make_session(theater, name="Waiting for Godot", name_de="Warten auf Godot", prices={"s": 123450, "r": 1500})
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 768}, locale="de-DE")
    context.set_default_timeout(8000)
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
    try:
        page.goto("/")
        expect(page.locator("li.show").first).to_contain_text("1.234,50\xa0€")  # Babel's German money
        page.screenshot(path=str(SHOTS / "whats-on-de-1366.png"))
        page.goto(f"/sessions/{show['_id']}/")
        expect(page.locator("html")).to_have_class(re.compile(r"\bmap-js\b"))  # the map's script is ready
        page.get_by_role("button", name=re.compile(r"^Reihe C, Platz 4,")).click(force=True)
        expect(page.locator("#cart-summary")).to_contain_text("Warten auf Godot")
        page.screenshot(path=str(SHOTS / "session-de-1366.png"))
        page.goto("/checkout/")
        expect(page.get_by_role("heading", level=1)).to_have_text("Kasse")
        expect(page.get_by_text("Wie möchten Sie bezahlen?")).to_be_visible()
        page.get_by_role("button", name=re.compile(r"^Weiter · 1 Ticket für")).click()
        expect(page.get_by_text("Bitte geben Sie Ihren Namen ein.")).to_be_visible()
        page.screenshot(path=str(SHOTS / "checkout-errors-de-1366.png"), full_page=True)
    finally:
        context.close()
