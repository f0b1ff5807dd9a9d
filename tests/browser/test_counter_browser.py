"""Selling at the counter in real Chromium: a counter sale paid in cash, a phone sale
on invoice (also on a phone-sized screen), and the staff live seat map keeping its scroll place
and its column widths while it refreshes. Screenshots go to /tmp/shots/counter/."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.core import clock, mongo
from booking.sales import holds
from booking.sales import sessions as session_service
from booking.tests.admin_support import sell
from booking.tests.factories import make_session, make_theater
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import BLOCKED, HELD, SOLD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/shots/front")
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}


def snap(page, name, full_page=False):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)


def login(new_page, viewport):
    if not User.objects.filter(username="boss").exists():
        User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    page = new_page(viewport)
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("boss")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()
    return page


def cell(session, key):
    r, c = (int(x) for x in key.split(":"))
    return mongo.sessions().find_one({"_id": session["_id"]})["seats"][r][c]


def test_counter_sale_paid_in_cash_with_a_house_seat_and_printed_tickets(new_page):
    session = make_session(name="Hamlet")
    session_service.set_blocked(session["_id"], [(0, 0)], True)
    page = login(new_page, LAPTOP)
    page.goto(f"/admin/booking/session/{session['_id']}/change/")
    page.get_by_role("link", name="Sell", exact=True).click()
    expect(page.get_by_role("heading", name="Sell: Hamlet")).to_be_visible()
    page.locator("#s0-0").click()  # a house seat: staff may sell it
    expect(page.locator("#s0-0")).to_have_class("s me c-s")
    page.locator("#s0-1").click()
    expect(page.locator("#cart-summary")).to_contain_text("Row A, seat 2")
    assert cell(session, "0:0") == HELD and cell(session, "0:1") == HELD
    page.get_by_label("Customer name").fill("Grace Hopper")
    page.get_by_label("Cash").check()
    snap(page, "01-counter-cash-before-sale")
    page.get_by_role("button", name="Sell the held seats").click()
    expect(page.get_by_text("Sold: booking")).to_be_visible()
    snap(page, "02-counter-cash-sold", full_page=True)
    order = mongo.orders().find_one({"name": "Grace Hopper"}, hint=[("_id", 1)])
    assert order["state"] == "paid" and order["method"] == "cash" and order["soldBy"]["name"] == "boss"
    assert cell(session, "0:0") == SOLD and cell(session, "0:1") == SOLD
    for layout in ("page", "thermal"):
        link = page.locator(f"a[href$='tickets.pdf?layout={layout}']")
        pdf = page.request.get(link.get_attribute("href"))
        assert pdf.ok and pdf.body().startswith(b"%PDF")
        (SHOTS / f"03-tickets-{layout}.pdf").write_bytes(pdf.body())
    page.get_by_role("link", name="Sell to the next customer").click()
    expect(page.locator("#cart-summary")).to_contain_text("Click seats on the map")
    assert check_invariants() == []


def test_phone_sale_on_invoice_from_a_phone_sized_screen(new_page):
    session = make_session(name="Tosca", days=6)
    opens = clock.now().replace(microsecond=0) + timedelta(days=1)  # online from tomorrow: the box office sells now
    session_service.set_sale_window(session["_id"], published=True, sale_opens=opens, sale_closes=None)
    page = login(new_page, PHONE)
    page.goto(f"/admin/booking/session/{session['_id']}/sell/")
    expect(page.locator(".online-note")).to_contain_text("Not on sale online yet; the box office sells now.")
    page.locator("#best-count").select_option("3")
    page.get_by_role("button", name="Find seats").click()
    expect(page.locator("#cart-summary")).to_contain_text("Total (3 seats)")
    snap(page, "04-phone-sell-map-390", full_page=True)
    page.get_by_label("On the phone").check()
    page.get_by_label("Customer name").fill("Ada Lovelace")
    page.get_by_label("E-mail (optional)").fill("ada@example.com")
    page.get_by_label("Phone (optional)").fill("+49 30 123456")
    page.get_by_label("Invoice / pay later").check()
    page.get_by_role("button", name="Sell the held seats").click()  # no due date yet: refused, kept
    expect(page.get_by_text("Please give the date the invoice is due.")).to_be_visible()
    due = (clock.now() + timedelta(days=3)).date().isoformat()
    page.get_by_label("Invoice due on").fill(due)
    page.get_by_role("button", name="Sell the held seats").click()
    expect(page.get_by_text("Reserved on invoice")).to_be_visible()
    snap(page, "05-phone-invoice-reserved-390", full_page=True)
    order = mongo.orders().find_one({"name": "Ada Lovelace"}, hint=[("_id", 1)])
    assert order["state"] == "pending_payment" and order["channel"] == "phone" and order["phone"] == "+49 30 123456"
    assert all(cell(session, line["key"]) == HELD for line in order["lines"])
    page.set_viewport_size(LAPTOP)
    page.goto(f"/admin/booking/session/{session['_id']}/sell/")
    snap(page, "06-sell-page-1366")
    assert check_invariants() == []


def test_staff_live_map_keeps_its_scroll_place_and_column_widths_on_refresh(new_page):
    wide = "\n".join(f"{chr(65 + r)}: " + "s" * 70 for r in range(6)) + "\n"
    session = make_session(make_theater(wide, name="Wide Hall"))
    sell(session["_id"], ["0:60", "0:61"])  # order references beside the seats the staff look at
    page = login(new_page, LAPTOP)
    page.goto(f"/admin/booking/session/{session['_id']}/seats/")
    scroller = page.locator(".live-map-scroll")
    page.wait_for_timeout(300)
    scroller.evaluate("el => el.scrollLeft = el.scrollWidth")
    left = scroller.evaluate("el => el.scrollLeft")
    assert left > 300
    widths = (
        page.locator("table.seatgrid tr")
        .first.locator("td.seat")
        .evaluate_all("cells => cells.map(c => Math.round(c.getBoundingClientRect().width))")
    )
    assert len(set(widths)) == 1, widths  # sold cells are as wide as the others
    holds.hold_seats(session["_id"], "s:someone", None, ["3:30", "3:31"])  # the next refresh brings news
    with page.expect_response(lambda r: "/seats/map/" in r.url, timeout=9000):
        pass
    expect(page.locator("#live-map")).to_contain_text("held (cart)")
    page.wait_for_timeout(200)
    assert scroller.evaluate("el => el.scrollLeft") == left
    snap(page, "07-staff-live-map-scrolled")
    assert mongo.sessions().find_one({"_id": session["_id"]})["seats"][0][0] != BLOCKED


def test_the_demo_stadium_performance_is_one_row_and_one_page_with_its_sections(new_page):
    from booking.sales.demo_stadium import create_match, create_stadium

    stadium = create_stadium(seats=8000, rows=4, half=10)  # the demo's 100 sections, smaller ones
    match = create_match(stadium)
    page = login(new_page, LAPTOP)
    page.goto("/admin/booking/session/")
    expect(page.get_by_text("(100 sections)")).to_be_visible()
    assert page.locator("#result_list tbody tr").count() == 1
    page.get_by_role("link", name="Cup Final").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(100)
    snap(page, "08-stadium-performance")
    page.locator(f"input[name=sections][value='{match['_id']}']").check()
    page.get_by_role("button", name="Block ticked sections").click()
    expect(page.get_by_text("Blocked 80 seats in 1 sections.")).to_be_visible()
    assert mongo.sessions().find_one({"_id": match["_id"]})["seatsAvailable"] == 0
    assert check_invariants() == []
    page.goto(f"/admin/booking/theater/{stadium['_id']}/change/")  # its own editor, sections as text
    assert "[North 1 | Nord 1]" in page.get_by_label("Sections").input_value()  # with its German name
    snap(page, "09-sectioned-venue-editor")
