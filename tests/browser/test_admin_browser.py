"""The staff site in real Chromium: a theater manager logs in, draws a hall in the layout
editor (live preview, a mistake pointed out and fixed), puts a session on sale, blocks a house
seat, and the session appears on the public what's-on page with that seat map."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

from booking.core import mongo
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import BLOCKED

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GRID_WITH_MISTAKE = "A: sss..sss\nB: sssxssss\n"
GRID = "A: sss..sss\nB: ssssssss\nC: pppppppp\nD: Pp....pP\n"  # 26 seats, 2 wheelchair spaces


def log_in_as_boss(new_page, viewport: dict, then: str = "/admin/"):
    """A superuser signed in through the admin's login page, on the page ``then``."""
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    page = new_page(viewport)
    page.goto(f"/admin/login/?next={then}")
    page.get_by_label("Username").fill("boss")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()
    return page


@pytest.fixture
def staff_login(new_page):
    page = log_in_as_boss(new_page, {"width": 1400, "height": 1000})
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()
    return page


def test_manager_draws_a_theater_and_puts_a_session_on_sale(staff_login, new_page, shot):
    page = staff_login
    expect(page.get_by_role("link", name="Theaters", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="Users", exact=True)).to_be_visible()
    shot(page, "admin-index")

    # --- draw the hall ---
    page.get_by_role("link", name="Theaters", exact=True).click()
    page.get_by_role("link", name="Add theater").click()
    page.get_by_label("Name:").fill("Black Box")
    grid = page.locator("textarea[name=grid]")
    preview = page.locator("#layout-preview")
    grid.fill(GRID_WITH_MISTAKE)
    expect(preview).to_contain_text("Row 2, column 4")
    expect(preview.locator("mark")).to_have_text("x")
    shot(page, "editor-mistake-pointed-out")

    grid.fill(GRID)
    expect(preview).to_contain_text("26 seats")
    expect(preview.locator("td.seat")).to_have_count(26)
    expect(preview.locator("td.seat.wheelchair")).to_have_count(2)
    shot(page, "editor-live-preview")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".messagelist")).to_contain_text("“Black Box” was created with 26 seats")
    shot(page, "theater-saved")

    # --- a session in it ---
    page.get_by_role("link", name="New session", exact=True).click()
    start = timezone.localtime(timezone.now() + timedelta(days=2)).replace(hour=19, minute=30)
    page.get_by_label("Show name:").fill("The Seagull")
    page.get_by_label("Description:").fill("Chekhov in four acts.")
    page.get_by_label("Start:").fill(start.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("End:").fill((start + timedelta(hours=2, minutes=30)).strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("Price: Stalls:").fill("-3")
    page.get_by_label("Price: Premium:").fill("39.90")
    page.get_by_role("button", name="Save as draft").click()
    expect(page.locator(".field-price_s .errorlist")).to_have_text("A price cannot be below zero.")
    shot(page, "session-form-error-next-to-field")
    page.get_by_label("Price: Stalls:").fill("24.50")
    page.get_by_role("button", name="Save as draft").click()
    expect(page.locator(".messagelist")).to_contain_text("“The Seagull” was created as a draft (26 seats)")

    # --- block a house seat on the live seat map ---
    page.get_by_label(re.compile(r"^Row A, seat 1: Stalls: free")).check()
    page.get_by_role("button", name="Block ticked seats", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("Blocked 1 seat")
    expect(page.locator("td.seat.st-blocked")).to_have_count(1)
    shot(page, "admin-seat-map")

    session = mongo.sessions().find_one({"name": "The Seagull"}, hint=[("_id", 1)])  # a test's read: any field
    assert session["prices"] == {"s": 2450, "p": 3990}
    assert session["seats"][0][0] == BLOCKED and session["status"] == "draft"
    assert check_invariants() == []

    # --- a draft nobody sees until it is published ---
    buyer = new_page()
    assert buyer.goto(f"/sessions/{session['_id']}/").status == 404
    page.goto(f"/admin/booking/session/{session['_id']}/change/")
    page.get_by_role("link", name="Publish", exact=True).click()
    shot(page, "publish-confirm")
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("“The Seagull” is published")

    # --- the sessions list shows it selling ---
    page.get_by_role("link", name="Sessions", exact=True).first.click()
    expect(page.locator("#result_list")).to_contain_text("The Seagull")
    shot(page, "sessions-list")

    # --- the public site ---
    buyer.goto("/")
    expect(buyer.get_by_text("The Seagull").first).to_be_visible()
    shot(buyer, "public-whats-on")
    buyer.get_by_role("link", name=re.compile("The Seagull")).first.click()
    seats = buyer.get_by_role("button", name=re.compile(r"^Row [A-D], seat "))
    expect(seats).to_have_count(26)
    expect(buyer.get_by_role("button", name=re.compile(r"^Row C, seat 1, Premium, €39\.90"))).to_be_visible()
    expect(buyer.get_by_role("button", name=re.compile(r"^Row A, seat 1,"))).to_have_attribute("aria-disabled", "true")
    expect(buyer.get_by_role("button", name=re.compile(r"wheelchair space"))).to_have_count(2)
    shot(buyer, "public-session-seat-map")


def test_the_theater_editor_fits_a_phone(new_page, shot):
    """A manager fixing a category from a phone: the category table and the grid fit 390 px."""
    page = log_in_as_boss(new_page, {"width": 390, "height": 844}, then="/admin/booking/theater/add/")
    table = page.locator("table.categories")
    expect(table).to_be_visible()
    shot(page, "theater-editor-390")
    for control in table.locator("input").all():
        box = control.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, control.evaluate("e => e.name")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
