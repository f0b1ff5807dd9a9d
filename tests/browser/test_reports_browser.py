"""The sales report pages in Chromium, as staff see them on a laptop (1366x768) and a phone
(390x844): the figures, the chart (an <img> of the server's SVG) and the order list's filters.
Screenshots go to /tmp/shots/reports/ (and test-artifacts/browser/)."""

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from playwright.sync_api import expect

from booking.core import clock, mongo
from booking.core.domain import SalesChannel
from booking.tests.reports.test_reports import buy, hall, on_sale

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

PASSWORD = "pw-for-the-browser-test-1"
SHOTS = Path("/tmp/shots/reports")
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(autouse=True)
def _no_orphan_rule(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False


@pytest.fixture
def known_sales():
    theater = hall()
    first, second = on_sale(theater), on_sale(theater, days=2)
    orders = [
        buy(first, "s:a", ["0:0", "0:1", "1:2"], types={"0:1": "reduced"}),
        buy(first, "s:b", ["2:0", "2:1"]),
        buy(first, "s:d", ["0:5", "0:6"], method="box_office", channel=SalesChannel.BOX_OFFICE),
        buy(first, "s:e", ["1:5"], method="box_office", given_away=True),
        buy(second, "s:f", ["0:0"], channel=SalesChannel.PHONE),
    ]
    for n, order in enumerate(orders):  # sold over the last days, for the chart
        mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"paidOn": clock.now() - timedelta(days=2 * n)}})
    staff = User.objects.create_user("analyst", "analyst@theater.example", PASSWORD, is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_reports"))
    staff.user_permissions.add(Permission.objects.get(codename="view_order", content_type__app_label="booking"))
    return {"first": first, "second": second, "orders": orders}


def log_in(page, path):
    page.goto(path)
    page.get_by_label("Username").fill("analyst")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def save(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def no_sideways_scroll(page):
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 1, f"the page scrolls sideways: {width}px"


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_report_pages(new_page, known_sales, shot, viewport, settings):
    size = "laptop" if viewport is LAPTOP else "phone"
    first = known_sales["first"]
    page = new_page(viewport)
    log_in(page, f"/admin/booking/report/session/{first['_id']}/")
    expect(page.locator(".report-cards")).to_contain_text("€150")
    chart = page.locator(".report-chart img")
    expect(chart).to_be_visible()
    loaded = "() => { const i = document.querySelector('.report-chart img'); return i.complete && i.naturalWidth > 0 }"
    page.wait_for_function(loaded, timeout=20000)  # drawn on the server: a second on a busy machine
    no_sideways_scroll(page)
    save(page, f"session-{size}")
    shot(page, "session")

    page.goto(f"/admin/booking/report/series/{first['_id']}/")
    expect(page.locator("body")).to_contain_text("2 sessions")
    expect(page.locator(".report-as-of")).to_contain_text("Sales figures as of")
    no_sideways_scroll(page)
    save(page, f"series-{size}")

    # a sale since the second session's count, with no recount on read: shown as of its count
    settings.BOOKING_REPORTS_RECOUNT_ON_READ = 0
    buy(known_sales["second"], "s:late", ["0:5"])
    page.goto(f"/admin/booking/report/series/{first['_id']}/")
    expect(page.locator(".report-as-of.behind")).to_contain_text("The sales figures of 1 session are as of")
    expect(page.locator(".report-behind")).to_have_count(1)
    no_sideways_scroll(page)
    save(page, f"series-behind-{size}")

    page.goto("/admin/booking/report/?when=on_sale")
    no_sideways_scroll(page)
    save(page, f"index-{size}")

    page.goto(f"/admin/booking/order/?session={first['_id']}&channel=box_office")
    expect(page.locator("#result_list")).to_contain_text(known_sales["orders"][2]["ref"])
    no_sideways_scroll(page)
    save(page, f"orders-filtered-{size}")
    page.goto("/admin/booking/order/")
    page.locator("#id_q").fill(known_sales["orders"][0]["ref"].lower())
    page.locator("#id_q").press("Enter")
    expect(page).to_have_url(re.compile(f"/admin/booking/order/{known_sales['orders'][0]['_id']}/change/$"))
