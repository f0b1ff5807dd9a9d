"""Closing the till on a phone-sized screen (390 px) in German: the seller sees the cash expected,
enters what they counted, and gets the closing with its Z report; the page never scrolls
sideways. Screenshots go to test-artifacts/browser/<test>/."""

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.reports import tills
from booking.sales import counter, holds
from booking.tests.factories import make_session

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def cash_sale(session, key, seller):
    owner = counter.staff_owner(f"{seller}-{key}")
    held = holds.hold_seats(session["_id"], owner, None, [key], context=holds.BOX_OFFICE)
    return counter.sell(owner, held.cart_id, counter.CounterSale(name="Grace", method=counter.CASH, by=seller))


def test_a_seller_closes_the_till_on_a_phone_in_german(new_page, shot, settings, live_server):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    session = make_session(name="Hamlet")
    price = cash_sale(session, "0:0", "boss")["total"]
    cash_sale(session, "0:1", "boss")
    page = new_page(PHONE)
    page.context.add_cookies([{"name": "django_language", "value": "de", "url": live_server.url}])
    page.goto("/admin/login/")
    page.locator("#id_username").fill("boss")
    page.locator("#id_password").fill("a-long-test-password")
    page.locator("input[type=submit]").click()
    page.goto("/admin/booking/tillclosing/")
    expect(page.get_by_role("heading", name="Kassenabschluss: boss")).to_be_visible()
    expect(page.locator(".till-figures")).to_contain_text("Soll-Bestand in der Kasse")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "till-open")
    page.get_by_label("Gezähltes Bargeld in der Kasse").fill(f"{2 * price / 100 - 1:.2f}")
    page.get_by_role("button", name="Kasse abschließen").click()
    expect(page.locator(".till-figures")).to_contain_text("Differenz")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "till-closed")
    closing = tills.last_closing("boss")
    assert closing["expected"] == 2 * price and closing["difference"] == -100
