"""Issue 18 bug 8: the cart table on a phone (390x844) keeps each seat on one line."""

import re

import pytest
from playwright.sync_api import expect

from booking.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_cart_seat_cell_is_one_line_on_a_phone(new_page, shot):
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    show = make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})
    page = new_page({"width": 390, "height": 844})
    page.goto(f"/sessions/{show['_id']}/")
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
