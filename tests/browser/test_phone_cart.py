"""The cart table on a phone (390x844) keeps each seat on one line."""

import re

import pytest
from playwright.sync_api import expect

from booking.core import mongo
from booking.sales import offers
from booking.sales.demo import (
    GRAND_CATEGORIES,
    STUDIO_CATEGORIES,
    STUDIO_GRID,
    TICKET_TYPES,
    grand_hall_grid,
    reduced_prices,
)
from booking.tests.factories import make_session, make_theater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_cart_seat_cell_is_one_line_on_a_phone(new_page, shot):
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    show = make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})
    page = new_page({"width": 390, "height": 844})
    page.goto(f"/sessions/{show['_id']}/")
    expect(page.locator("html")).to_have_class(re.compile(r"\bmap-js\b"))  # the map's script is ready
    page.get_by_role("button", name=re.compile(r"^Row C, seat 4,")).click(force=True)
    expect(page.locator("#cart-summary")).to_contain_text("Row C, seat 4")
    page.goto("/cart/")
    cell = page.locator(".lines-table tbody td").first  # the seat cell
    expect(cell).to_contain_text("Row C")
    shot(page, "cart-390")
    line_height = cell.evaluate("td => parseFloat(getComputedStyle(td).lineHeight)")
    text_height = cell.evaluate(
        "td => { const r = document.createRange(); r.selectNodeContents(td); return r.getBoundingClientRect().height; }"
    )
    assert text_height < 1.6 * line_height, f"seat cell wraps: {text_height}px of text at {line_height}px a line"


ONE_LINE_SEATS = """() => [...document.querySelectorAll('.confirmation .lines-table tbody td:nth-child(2)')].map(td => {
  const words = document.createRange();  // "Row D, seat 12": the cell's first text, in its span or not
  words.selectNodeContents(td.querySelector('.seat-label') || td.firstChild);
  return words.getClientRects().length === 1 ? null : words.toString();  // one rect per line it covers
}).filter(Boolean)"""


@pytest.mark.parametrize("width", [320, 390])
def test_order_page_seats_are_one_line_on_a_phone(new_page, shot, width):
    """The confirmation's table (the same on the order page found later): seen at 390 in the
    end-to-end screenshots as "Reihe F, Platz / 1" with the show over three lines."""
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    show = make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})
    mongo.sessions().update_one({"_id": show["_id"]}, {"$set": {"boxOffice": {"enabled": True, "deadlineMinutes": 30}}})
    page = new_page({"width": width, "height": 844})
    page.goto(f"/sessions/{show['_id']}/")
    expect(page.locator("html")).to_have_class(re.compile(r"\bmap-js\b"))  # the map's script is ready
    for number in (11, 12):
        page.get_by_role("button", name=re.compile(rf"^Row D, seat {number},")).click(force=True)
        expect(page.locator("#cart-summary")).to_contain_text(f"Row D, seat {number}")
    page.goto("/checkout/")
    page.get_by_label("Name", exact=True).fill("Ada Lovelace")
    page.get_by_label("E-mail", exact=True).fill("ada@example.com")
    page.get_by_role("radio", name=re.compile("Pay at the box office")).check()
    page.get_by_role("button", name=re.compile("^Continue")).click()
    expect(page.get_by_role("heading", name="Your seats are reserved")).to_be_visible()
    table = page.locator(".confirmation .lines-table")
    expect(table).to_contain_text("Row D, seat 12")
    shot(page, f"order-{width}")
    assert page.evaluate(ONE_LINE_SEATS) == []
    assert table.evaluate("t => t.scrollWidth <= t.clientWidth + 1")  # nothing sticks out sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= width


HOLD = """async ([url, seats]) => {
  const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
  const headers = {'X-CSRFToken': token, 'Content-Type': 'application/x-www-form-urlencoded'};
  return (await fetch(url, {method: 'POST', headers, body: 'seats=' + seats})).status;
}"""

# Per cart line: the boxes of the seat label's text, the price's text, the ticket type select and
# the Remove button; whether the label is one line and whole; whether the select is as wide as it
# wants (a narrower one cuts its option's text); pairs of them that overlap; what sticks out.
CART_LINES = """() => {
  const textBox = (el) => { const r = document.createRange(); r.selectNodeContents(el); return r; };
  const overlap = (a, b) =>
    a.left < b.right - .5 && b.left < a.right - .5 && a.top < b.bottom - .5 && b.top < a.bottom - .5;
  const table = document.querySelector('.cart-page .lines-table').getBoundingClientRect();
  return [...document.querySelectorAll('.cart-page .lines-table tbody tr')].map(tr => {
    const label = tr.querySelector('.seat-label');
    const words = textBox(label);
    const style = getComputedStyle(label);
    const cell = label.getBoundingClientRect();
    const inner = cell.right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
    const boxes = {
      label: words.getBoundingClientRect(),
      price: textBox(tr.querySelector('td:nth-child(4)')).getBoundingClientRect(),
      remove: tr.querySelector('td:last-child button').getBoundingClientRect(),
    };
    const select = tr.querySelector('select');
    let selectCut = false;
    if (select) {
      boxes.select = select.getBoundingClientRect();
      const free = select.cloneNode(true);  // the same select with room: its natural width
      free.style.cssText = 'position:absolute; left:0; top:0; width:auto; max-width:none; visibility:hidden';
      tr.closest('.cart-page').append(free);
      selectCut = boxes.select.width < free.getBoundingClientRect().width - .5;
      free.remove();
    }
    const names = Object.keys(boxes);
    const overlaps = names.flatMap((a, i) =>
      names.slice(i + 1).filter(b => overlap(boxes[a], boxes[b])).map(b => a + '/' + b));
    return {
      label: words.toString(),
      lines: words.getClientRects().length,
      cut: boxes.label.right > inner + .5 || label.scrollWidth > label.clientWidth,
      selectCut,
      overlaps,
      outside: names.filter(n => boxes[n].right > table.right + .5 || boxes[n].left < table.left - .5),
    };
  });
}"""


def seat_key(session: dict, row: str, seat: str) -> str:
    for r, line in enumerate(session["layout"]["rows"]):
        if line["label"] == row:
            return f"{r}:{next(c for c, cell in enumerate(line['cells']) if cell and cell['label'] == seat)}"
    raise LookupError(row)


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("width", [320, 390, 768])
def test_cart_lines_keep_seat_price_and_ticket_type_apart(chromium, live_server, shot, width, language):
    """With ticket types on offer the phone's cart drew "Reihe G, Platz 20" over "40 €" (German)
    and squeezed the English: each line's seat label stays whole on one line, and it, the price,
    the ticket type select and Remove never overlap, at 320, 390 and 768 px in both languages."""
    theater = make_theater(grand_hall_grid(), GRAND_CATEGORIES, name="Grand Hall")
    offers.set_theater_ticket_types(theater["_id"], TICKET_TYPES)
    prices = {"p": 4000, "s": 3900, "b": 2500}
    show = make_session(theater, name="The Magic Flute", name_de="Die Zauberflöte", prices=prices)
    offers.set_price_table(show["_id"], prices, reduced_prices(prices))
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 844}, locale="de-DE" if language == "de" else "en"
    )
    context.set_default_timeout(8000)
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
    try:
        page.goto("/cart/")
        keys = ",".join(seat_key(show, row, seat) for row, seat in [("G", "20"), ("G", "21"), ("T", "1")])
        assert page.evaluate(HOLD, [f"/sessions/{show['_id']}/hold", keys]) == 200
        page.goto("/cart/")
        choice = "Ticketart für Reihe G, Platz 21" if language == "de" else "Ticket type for row G, seat 21"
        page.get_by_label(choice).select_option("child")  # the longest choice, with a condition under it
        expect(page.locator(".lines-table tbody tr").nth(1)).to_contain_text("14")  # its condition (htmx)
        shot(page, f"cart-{language}-{width}")
        lines = page.evaluate(CART_LINES)
        assert len(lines) == 3
        for line in lines:
            assert line == {**line, "lines": 1, "cut": False, "selectCut": False, "overlaps": [], "outside": []}, line
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()
