"""The staff order list on a German phone (390x844): the filters and the rows fit the width (no
sideways scroll), Next and Previous page through the orders, a payment method filters them.
Screenshots go to test-artifacts/browser/."""

import pytest
from django.contrib.auth.models import Permission, User
from playwright.sync_api import expect

from booking.tests.order_support import make_shop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

PASSWORD = "pw-for-the-browser-test-1"


@pytest.fixture(autouse=True)
def _no_orphan_rule(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False


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


def no_sideways_scroll(page):
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= 391, f"the page scrolls sideways: {width}px"


def test_the_order_list_on_a_german_phone(german_phone, shot, monkeypatch):
    monkeypatch.setattr("booking.control.orders.ORDER_PAGE_SIZE", 4)  # two pages of the six orders
    shop = make_shop()
    seller = User.objects.create_user("seller", "seller@theater.example", PASSWORD, is_staff=True)
    seller.user_permissions.add(Permission.objects.get(codename="sell_at_counter"))
    page = german_phone
    page.goto("/admin/booking/order/")
    page.locator("#id_username").fill("seller")
    page.locator("#id_password").fill(PASSWORD)
    page.locator("input[type=submit]").click()
    expect(page.locator("#changelist-search")).to_contain_text("Zahlungsart")
    expect(page.locator("#result_list tbody tr")).to_have_count(4)
    expect(page.locator("#result_list")).to_contain_text("Vorstellung und Plätze")  # each row's label
    no_sideways_scroll(page)
    shot(page, "first-page")

    page.get_by_role("link", name="Weiter", exact=True).click()
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    expect(page.get_by_role("link", name="Zurück", exact=True)).to_be_visible()
    no_sideways_scroll(page)
    shot(page, "second-page")
    page.get_by_role("link", name="Zurück", exact=True).click()
    expect(page.locator("#result_list tbody tr")).to_have_count(4)

    page.locator("#id_method").select_option("cash")
    page.locator(".filter-row input[type=submit]").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    expect(page.locator("#result_list")).to_contain_text(shop["cas"]["ref"])
    expect(page.locator("#result_list")).to_contain_text("Faust")
    expect(page.locator(".order-exports")).to_contain_text("CSV")
    no_sideways_scroll(page)
    shot(page, "paid-in-cash")
