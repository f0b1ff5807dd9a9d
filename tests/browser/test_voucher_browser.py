"""Buying tickets with a gift voucher in real Chromium, in English and German: the voucher pays
part, the card (localstripe's Stripe.js) the rest; a wrong code is refused on its field first."""

import re

import pytest
from playwright.sync_api import expect

from booking.core import clock, mongo
from booking.payments import vouchers
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater
from booking.tests.localstripe import VISA

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "seat": "Row D, seat {n},",
        "held": "held by you",
        "check_out": "Check out",
        "unknown": "We do not know this voucher code",
    },
    "de": {
        "seat": "Reihe D, Platz {n},",
        "held": "von Ihnen vorgemerkt",
        "check_out": "Zur Kasse",
        "unknown": "Diesen Gutscheincode kennen wir nicht",
    },
}


@pytest.fixture
def show():
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    return make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})


@pytest.mark.parametrize("language", ["en", "de"])
def test_buy_with_a_voucher_paying_part_and_the_card_the_rest(chromium, live_server, shot, show, language):
    words = WORDS[language]
    voucher = vouchers.issue(value=2000, sold_via="counter", now=clock.now(), by="anna")
    context = chromium.new_context(
        base_url=live_server.url,
        viewport={"width": 1280, "height": 900},
        locale="de-DE" if language == "de" else "en-GB",
        timezone_id="Europe/Berlin",
    )
    context.set_default_timeout(8000)
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
        page.goto(f"/sessions/{show['_id']}/")
        for number in (4, 5):
            button = page.get_by_role("button", name=re.compile("^" + re.escape(words["seat"].format(n=number))))
            button.click()
            expect(button).to_have_attribute("aria-label", re.compile(re.escape(words["held"]) + "$"))
        page.locator("#cart-summary").get_by_role("link", name=words["check_out"]).click()
        page.locator("input[name=name]").fill("Ada Lovelace")
        page.locator("input[name=email]").fill("ada@example.com")

        page.locator("input[name=voucher]").fill("ABCD-EFGH-JKLM-NPQR")  # well formed, but nobody's
        page.locator("#checkout button[type=submit]").click()
        expect(page.locator("#checkout .field-error")).to_contain_text(words["unknown"])
        assert mongo.orders().count_documents({}) == 0
        shot(page, f"{language}-unknown-code")

        page.locator("input[name=voucher]").fill(vouchers.display_code(voucher["code"]).lower())
        page.locator("#checkout button[type=submit]").click()
        expect(page.locator("[data-card-element] input")).to_have_count(5)
        expect(page.locator(".totals-voucher")).to_contain_text("20")
        expect(page.locator("[data-pay-button]")).to_contain_text("24")  # €44 less the voucher's €20
        shot(page, f"{language}-card-for-the-rest")

        element = page.locator("[data-card-element]")
        element.get_by_placeholder("number").fill(VISA)
        element.get_by_placeholder("exp_month").fill("12")
        element.get_by_placeholder("exp_year").fill("34")
        element.get_by_placeholder("cvc").fill("123")
        page.locator("[data-pay-button]").click()
        expect(page.locator(".badge-paid")).to_be_visible()
        shot(page, f"{language}-paid")
        [order] = mongo.orders().find()
        assert order["state"] == "paid" and order["voucher"]["amount"] == 2000
        assert order["paidWith"]["amount"] == 2400
        assert mongo.vouchers().find_one({"_id": voucher["_id"]})["balance"] == 0
    finally:
        context.close()
