"""The admin's promo code pages in real Chromium, on a laptop and a phone: a manager
adds a code for a series with a mistake pointed out next to its field, generates a voucher batch
and downloads it as CSV."""

import csv
import io
import re

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.core import mongo
from booking.payments import flow as payments
from booking.sales import holds, offers, promos
from booking.tests.factories import TYPES, make_session, make_theater
from booking.tests.paying import pay

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = pytest.mark.parametrize(
    "viewport", [{"width": 1366, "height": 768}, {"width": 390, "height": 844}], ids=["1366x768", "390x844"]
)


@VIEWPORTS
def test_manager_adds_a_series_code_and_exports_a_voucher_batch(new_page, shot, viewport):
    session = make_session(name="Hamlet")
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    page = new_page(viewport)
    page.goto("/admin/")
    page.get_by_label("Username").fill("boss")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()
    page.goto("/admin/booking/promocode/")
    page.get_by_role("link", name="Add a promo code").click()

    page.get_by_label("Code").fill("hamlet-fans")
    page.get_by_label("Percentage off").check()
    page.get_by_label("Value").fill("120")  # a mistake
    page.get_by_role("radio", name=re.compile("A series")).check()
    page.get_by_label("Session:", exact=True).select_option(str(session["_id"]))
    page.get_by_label("Uses in total").fill("100")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".field-value .errorlist")).to_contain_text("whole number from 1 to 100")
    assert mongo.promo_codes().count_documents({"code": "HAMLET-FANS"}) == 0
    shot(page, "code-form-error")
    page.get_by_label("Value").fill("20")
    page.get_by_role("button", name="Save").click()
    row = page.locator("#result_list tr", has_text="HAMLET-FANS")
    expect(row).to_contain_text("20 % off")
    expect(row).to_contain_text("series “Hamlet”")
    expect(row).to_contain_text("0 / 100")

    page.get_by_role("link", name="Generate vouchers").click()
    page.get_by_label("Number of vouchers").fill("12")
    page.get_by_label("Prefix").fill("GIFT")
    page.get_by_label("Fixed price").check()
    page.get_by_label("Value").fill("0")
    page.get_by_role("button", name="Generate").click()
    expect(page.get_by_text("12 vouchers were generated.")).to_be_visible()
    expect(page.locator("table.details")).to_contain_text("12, 0 used")
    shot(page, "batch")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the vouchers (CSV)").click()
    with open(download.value.path(), encoding="utf-8") as f:
        rows = list(csv.DictReader(io.StringIO(f.read())))
    assert len(rows) == 12 and all(r["code"].startswith("GIFT") and r["used"] == "no" for r in rows)
    page.goto("/admin/booking/promocode/")
    expect(page.locator("table.voucher-batches")).to_contain_text("0 / 12")
    shot(page, "list")


@VIEWPORTS
def test_the_order_page_shows_ticket_types_and_the_code(new_page, shot, viewport):
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater, name="Hamlet")
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500}})
    promos.create_code("SPRING-24", "percent", 10, cap=5)
    hold = holds.hold_seats(session["_id"], "s:ada", None, ["0:0", "0:1"])
    offers.choose_ticket_type("s:ada", hold.cart_id, session["_id"], "0:1", "reduced")
    promos.apply_code("s:ada", hold.cart_id, "SPRING-24")
    order = pay(payments.start("s:ada", hold.cart_id, "Ada Lovelace", "ada@example.com"))
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    page = new_page(viewport)
    page.goto(f"/admin/login/?next=/admin/booking/order/{order['_id']}/change/")
    page.get_by_label("Username").fill("boss")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".order-discount")).to_contain_text("SPRING-24: −€3.50")
    expect(page.get_by_role("cell", name="Reduced", exact=True)).to_be_visible()
    shot(page, "order")
