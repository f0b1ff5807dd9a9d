"""Staff change a booking in real Chromium: move a ticket to a cheaper seat (preview, then the
exchange, the difference refunded through the card) and refund one ticket of the order; the
buyer's page then shows the new tickets and what happened. Screenshots at 1366x768 (and the
buyer's page on a phone) go to /tmp/shots/changes/ as well as test-artifacts/browser/."""

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.core import clock, mongo
from booking.sales import cancels
from booking.sales.sessions import create_session
from booking.tests.admin_support import sell
from booking.tests.factories import CATEGORIES, make_session, make_theater
from booking.upkeep.invariants import check_invariants
from booking.venues.layouts import parse_grid
from booking.venues.seat_grid import FREE, SOLD
from booking.venues.theaters import create_sectioned_theater

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
SHOTS = Path("/tmp/shots/front")


def keep(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def cell(session, key):
    r, c = (int(x) for x in key.split(":"))
    return mongo.sessions().find_one({"_id": session["_id"]})["seats"][r][c]


def test_staff_exchange_a_ticket_and_refund_another(new_page, shot):
    session = make_session(name="The Seagull")
    order = sell(session["_id"], ["1:2", "1:3", "1:5", "1:6"])  # four premium seats, B3, B4, B5, B6
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    page = new_page(LAPTOP)
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("boss")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()

    # --- exchange: B3 moves to A1, 15.00 cheaper ---
    page.goto(f"/admin/booking/order/{order['_id']}/change/")
    page.get_by_role("link", name="Move tickets…").click()
    expect(page.get_by_role("heading", name="2. New seats")).to_be_visible()
    page.get_by_label("B3 · €35").check()
    page.locator('input[name=seats][value="0:0"]').check()
    page.get_by_role("button", name="Preview").click()
    preview = page.locator(".exchange-preview")
    expect(preview).to_contain_text("the customer gets €15 back")
    expect(preview).to_contain_text("A1")
    shot(page, "exchange-preview")
    keep(page, "exchange-preview-1366")
    phone = new_page(PHONE)  # the same page on a phone (staff at the counter with a tablet or phone)
    phone.context.add_cookies(page.context.cookies())
    phone.goto(page.url)
    keep(phone, "exchange-page-390")
    phone.context.close()
    page.get_by_role("button", name="Move the tickets").click()
    expect(page.locator(".messagelist")).to_contain_text("Moved B3 to A1")
    expect(page.locator(".order-history")).to_contain_text("B3 → A1")
    assert cell(session, "0:0") == SOLD and cell(session, "1:2") == FREE

    # --- partial refund: B6 is canceled, the others stay valid ---
    refund = page.locator("form.refund-tickets")
    refund.get_by_label("Row B, seat 6 · 35.00 EUR").check()
    refund.get_by_label("Reason:").fill("Customer cannot come")
    refund.get_by_role("button", name="Refund the chosen tickets").click()
    expect(page.locator(".messagelist")).to_contain_text("Refunded 1 ticket")
    expect(page.locator(".order-history")).to_contain_text("Tickets canceled and refunded")
    shot(page, "order-after-changes")
    keep(page, "order-after-changes-1366")
    after = mongo.orders().find_one({"_id": order["_id"]})
    assert after["state"] == "partially_refunded"
    assert sorted(line["key"] for line in after["lines"]) == ["0:0", "1:3", "1:5"]
    assert [r["status"] for r in after["refunds"]] == ["succeeded", "succeeded"]
    assert check_invariants() == []

    # --- the buyer's page (the mail's link), on a phone ---
    buyer = new_page(PHONE)
    buyer.goto(f"/orders/{order['ref']}/?email=ada%40example.com")
    expect(buyer.locator(".order-history")).to_contain_text("B3 → A1")
    expect(buyer.locator(".tickets")).to_contain_text("Row A · Seat 1")
    keep(buyer, "buyer-order-390")
    buyer_laptop = new_page(LAPTOP)
    buyer_laptop.goto(f"/orders/{order['ref']}/?email=ada%40example.com")
    keep(buyer_laptop, "buyer-order-1366")


def test_the_customer_pays_a_dearer_exchange_on_their_phone(new_page, shot):
    from booking.sales import exchanges
    from booking.tests.localstripe import VISA

    session = make_session(name="The Seagull")
    order = sell(session["_id"], ["0:0", "0:1"])  # two stalls seats, A1 and A2
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"], by="anna")
    page = new_page(PHONE)
    page.goto(f"/orders/{order['ref']}/?email=ada%40example.com")
    due = page.locator(".exchange-due")
    expect(due).to_contain_text("A1 becomes B3")
    expect(due.locator("[data-card-element] input")).to_have_count(5)
    element = due.locator("[data-card-element]")
    element.get_by_placeholder("number").fill(VISA)
    element.get_by_placeholder("exp_month").fill("12")
    element.get_by_placeholder("exp_year").fill("34")
    element.get_by_placeholder("cvc").fill("123")
    shot(page, "difference-card-form")
    keep(page, "buyer-pay-difference-390")
    due.get_by_role("button", name="Pay €15").click()
    expect(page.locator(".tickets")).to_contain_text("Row B · Seat 3")
    expect(page.locator(".exchange-due")).to_have_count(0)
    keep(page, "buyer-after-paying-difference-390")
    after = mongo.orders().find_one({"_id": order["_id"]})
    assert sorted(line["key"] for line in after["lines"]) == ["0:1", "1:2"]
    assert cell(session, "0:0") == FREE and check_invariants() == []


def test_staff_see_a_series_preview_and_a_session_cancellation_progress(new_page, shot):
    """Screenshots to look at: the series' bulk actions with a price preview, the cancel page."""

    theater = make_theater()
    shows = [make_session(theater, name="The Seagull", days=d) for d in (1, 2, 3)]
    sell(shows[0]["_id"], ["0:0", "0:1"])
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    page = new_page(LAPTOP)
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("boss")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()

    page.goto(f"/admin/booking/session/{shows[0]['_id']}/change/")
    page.get_by_role("link", name="Series: bulk actions…").click()
    page.get_by_label("Change a category's price").check()
    page.get_by_label("Category:").select_option("s")
    page.get_by_label("New price:").fill("24.50")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator(".series-preview")).to_contain_text("€20 → €24.50")
    keep(page, "series-preview-1366")
    page.get_by_role("button", name="Apply to these performances").click()
    expect(page.locator(".messagelist")).to_contain_text("3 performances changed")

    page.goto(f"/admin/booking/session/{shows[0]['_id']}/cancel/")
    page.get_by_label(re.compile("cancel", re.I)).first.check()
    page.get_by_role("button", name="Cancel the session").click()
    expect(page.locator("#cancel-progress")).to_contain_text("0 of 1 orders canceled and refunded")
    cancels.cancel_session_orders(shows[0]["_id"])  # the worker
    expect(page.locator("#cancel-progress")).to_contain_text("1 of 1 orders canceled and refunded")  # polled
    keep(page, "session-cancel-progress-1366")
    assert check_invariants() == []


def test_finding_and_choosing_a_performance_brings_its_own_seat_map(new_page):
    """Many performances on sale before the order's own (a stadium's sections): the list starts
    with the order's own and its map; typing finds a later one and choosing it swaps the map in
    place (htmx, no reload), so the seats ticked are always on the chosen performance's map."""
    own = make_session(days=5, name="Hamlet")
    later = make_session(make_theater(name="Studio"), days=6, name="Endgame")
    grid = parse_grid("A: ssss.ssss\n", CATEGORIES)
    venue = create_sectioned_theater("Arena", [{"name": f"Block {n}", "layout": grid} for n in range(1, 71)])
    start = clock.now() + timedelta(days=1)
    create_session(
        venue["_id"],
        published=True,
        name="Cup Final",
        description="",
        start=start,
        end=start + timedelta(hours=2),
        prices={"s": 1000},
    )
    order = sell(own["_id"], ["1:2", "1:3"])
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    page = new_page(LAPTOP)
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("boss")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()

    page.goto(f"/admin/booking/order/{order['_id']}/exchange/")
    choice = page.get_by_label("To the performance:")
    expect(choice).to_have_value(str(own["_id"]))
    expect(page.locator(".map-of")).to_contain_text("Seat map of Hamlet · Test Hall")
    expect(page.locator(".targets-more")).to_contain_text("21 more performances match")
    page.evaluate("window.notReloaded = true")

    page.get_by_label("B3 · €35").check()
    page.locator('input[name=seats][value="0:0"]').check()  # on Hamlet's map
    page.get_by_label("Find a performance:").press_sequentially("endg")
    expect(choice.locator("option")).to_have_count(2)  # found while typing
    expect(page.get_by_label("Find a performance:")).to_have_value("endg")
    choice.select_option(str(later["_id"]))
    expect(page.locator(".map-of")).to_contain_text("Seat map of Endgame · Studio")
    expect(page.locator("input[name=map]")).to_have_value(str(later["_id"]))
    expect(page.locator('input[name=seats][value="0:0"]')).not_to_be_checked()  # Hamlet's tick is not carried
    assert page.evaluate("window.notReloaded") is True

    page.locator('input[name=seats][value="0:1"]').check()
    page.get_by_role("button", name="Preview").click()
    route = page.locator(".exchange-route")
    expect(route).to_contain_text("Hamlet · Test Hall")
    expect(route).to_contain_text("Endgame · Studio")
    expect(page.locator(".exchange-changes")).to_contain_text("another hall, another date")
    page.get_by_role("button", name="Move the tickets").click()
    expect(page.locator(".messagelist")).to_contain_text("Moved B3 to A2")
    after = mongo.orders().find_one({"_id": order["_id"]})
    moved = next(line for line in after["lines"] if line["key"] == "0:1")
    assert moved["sessionId"] == later["_id"] and cell(later, "0:1") == SOLD and cell(own, "1:2") == FREE
    assert check_invariants() == []
