"""The cart table on a phone (390x844) keeps each seat on one line."""

import re

import pytest
from playwright.sync_api import expect

from booking import mongo
from booking.demo import STUDIO_CATEGORIES, STUDIO_GRID
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
