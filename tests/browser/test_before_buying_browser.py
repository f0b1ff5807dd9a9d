"""Before buying, on a phone (390 px) and a laptop (1366 px), in English and German: the stadium's
overview shows each section's free seats with their unit and its price range, coloured by price
tier, and on a phone lists the stands in the venue's order; a wide hall's row letters stay in
sight while the phone's map is scrolled sideways."""

import re

import pytest
from playwright.sync_api import expect

from booking.sales import offers
from booking.sales.demo_stadium import create_match, create_stadium
from booking.tests.factories import TYPES, make_session, make_theater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = [(390, 844), (1366, 900)]
WORDS = {
    "en": ("seats free", ["North", "East", "South", "West"]),
    "de": ("Plätze frei", ["Nord", "Ost", "Süd", "West"]),
}


@pytest.fixture
def browser_page(chromium, live_server):
    contexts = []

    def make(width, height, language):
        context = chromium.new_context(
            base_url=live_server.url,
            viewport={"width": width, "height": height},
            locale="de-DE" if language == "de" else "en-GB",
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
def test_the_stadium_overview_shows_free_seats_and_prices_by_tier(browser_page, shot, size, language):
    free_words, stands = WORDS[language]
    stadium = create_stadium("Test Stadium", seats=16 * 200, rows=4, half=25)
    match = create_match(stadium, days=3)
    page = browser_page(*size, language)

    page.goto(f"/performances/{match['performanceId']}/")
    blocks = page.locator("a.block")
    expect(blocks).to_have_count(16)
    expect(blocks.first).to_contain_text(f"200 {free_words}")
    expect(blocks.first).to_contain_text("45")  # the Stand's price, in this section's only category
    tiers = {
        block.get_attribute("class").split("tier-")[1].split()[0]  # type: ignore[union-attr]
        for block in blocks.all()
    }
    assert tiers == {"1", "3"}  # the stand and the dearer halfway-line sections
    expect(page.locator(".legend .tier-key")).to_have_count(2)
    headings = [h.inner_text() for h in page.locator(".stand h2").all()]
    assert headings == stands
    tops = [page.locator(f".stand-{slug}").bounding_box()["y"] for slug in ("north", "east", "south", "west")]  # type: ignore[index]
    if size[0] == 390:
        assert tops == sorted(tops), tops  # one under the other, in the venue's order
    shot(page, "overview")


@pytest.mark.parametrize("language", ["en", "de"])
def test_row_letters_stay_in_sight_while_the_phone_map_is_scrolled_sideways(browser_page, shot, language):
    grid = "\n".join(f"{row}: " + "s" * 30 for row in "ABCDEF")
    theater = make_theater(grid, [{"code": "s", "name": "Stalls"}], name="Long Hall")
    session = make_session(theater, prices={"s": 2000})
    page = browser_page(390, 844, language)
    page.goto(f"/sessions/{session['_id']}/")
    scroller = page.locator("#seatmap .map-scroll")
    page.locator("[data-zoom='in']").click()  # at least one zoom step: the hall is wider than the phone
    width = scroller.evaluate("el => el.scrollWidth - el.clientWidth")
    assert width > 50, "the map should be wider than the phone"
    scroller.evaluate("el => { el.scrollLeft = el.scrollWidth / 2; }")
    page.wait_for_timeout(200)
    view = scroller.bounding_box()
    first_letter = page.locator("#seatmap .r").first.locator(".rl").first
    last_letter = page.locator("#seatmap .r").first.locator(".rl").last
    left, right = first_letter.bounding_box(), last_letter.bounding_box()
    assert view and left and right
    assert view["x"] - 1 <= left["x"] <= view["x"] + 12, (view, left)  # at the map's left edge
    assert right["x"] + right["width"] <= view["x"] + view["width"] + 1  # and at its right edge
    expect(first_letter).to_have_text("A")
    shot(page, "scrolled-sideways", full_page=False)


KIND_WORDS = {
    "en": {"reduced": "Reduced", "find": "Find seats", "total": "€55"},
    "de": {"reduced": "Ermäßigt", "find": "Plätze suchen", "total": "55\xa0€"},
}


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("size", SIZES, ids=["390", "1366"])
def test_the_buyer_says_how_many_of_which_kind_before_the_map(browser_page, shot, size, language):
    words = KIND_WORDS[language]
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500}})
    page = browser_page(*size, language)

    page.goto(f"/sessions/{session['_id']}/")
    expect(page.locator(".legend .kind-price").first).to_contain_text(words["reduced"])
    kinds = page.locator("#best-kinds")
    expect(kinds).to_be_visible()
    page.locator("#best-count").select_option("3")
    page.locator("#best-category").select_option("s")
    page.locator("#best-kind-reduced").select_option("1")
    kinds.scroll_into_view_if_needed()
    shot(page, "kinds-chosen", full_page=False)
    page.get_by_role("button", name=words["find"]).click()
    summary = page.locator("#cart-summary")
    expect(summary).to_contain_text(words["reduced"])
    expect(summary.locator(".total")).to_contain_text(words["total"])  # 2 x 20 + 15
    summary.scroll_into_view_if_needed()
    shot(page, "held-with-kinds", full_page=False)


PICKER_WORDS = {
    "en": {"first": "Choose how many tickets of which kinds first", "go": "Choose seats on the map", "total": "€55"},
    "de": {
        "first": "Zuerst wählen, wie viele Karten welcher Art",
        "go": "Plätze im Saalplan wählen",
        "total": "55\xa0€",
    },
}


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("size", SIZES, ids=["390", "1366"])
def test_kinds_chosen_before_the_map_go_to_the_seats_clicked_one_by_one(browser_page, shot, size, language):
    words = PICKER_WORDS[language]
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500}})
    page = browser_page(*size, language)

    page.goto(f"/sessions/{session['_id']}/")
    page.get_by_role("link", name=words["first"]).click()
    form = page.locator("#kinds-choice #kinds-form")  # the picker, fetched into the page above the map
    expect(form).to_be_visible()
    form.locator("#kind-full").select_option("2")
    form.locator("#kind-reduced").select_option("1")
    shot(page, "kinds-picker", full_page=False)
    form.get_by_role("button", name=words["go"]).click()
    expect(page.locator("#kinds-chosen")).to_be_visible()
    expect(page.locator("html")).to_have_class(re.compile(r"\bmap-js\b"))  # the map's script is ready
    summary = page.locator("#cart-summary")
    for key in ("0-0", "0-1", "0-5"):
        page.locator(f"#s{key}").click(force=True)
        expect(page.locator(f"#s{key}")).to_have_class(re.compile(r"\bme\b"))
    expect(summary.locator(".total")).to_contain_text(words["total"])  # 2 x 20 + 15
    expect(summary).to_contain_text(KIND_WORDS[language]["reduced"])
    summary.scroll_into_view_if_needed()
    shot(page, "clicked-with-kinds", full_page=False)
