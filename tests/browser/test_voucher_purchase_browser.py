"""Buying a gift voucher online in real Chromium: in English on a laptop (1366 px) and in German on
a phone (390 px). A value under the limit is refused on the page, a valid one leads to the card form
(localstripe's Stripe.js), and the paid page says the voucher goes out by mail. No page scrolls
sideways and axe-core finds nothing serious on them."""

import re

import pytest
from playwright.sync_api import expect

from booking.core import mongo
from booking.core.domain import VoucherState
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_theater
from booking.tests.localstripe import VISA
from tests.browser.test_accessibility import Audit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "limits": "worth from €5 to €500",
        "too_low": "A voucher is worth from €5 to €500.",
        "continue": "Continue to payment",
        "pay": "Pay €25",
        "paid": "The voucher is paid",
    },
    "de": {
        "limits": "von 5\xa0€ bis 500\xa0€",
        "too_low": "Ein Gutschein ist 5\xa0€ bis 500\xa0€ wert.",
        "continue": "Weiter zur Zahlung",
        "pay": "25\xa0€ bezahlen",
        "paid": "Der Gutschein ist bezahlt",
    },
}


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


@pytest.mark.parametrize(("language", "width"), [("en", 1366), ("de", 390)])
def test_buy_a_gift_voucher_online_and_pay_it_by_card(chromium, live_server, shot, language, width):
    words = WORDS[language]
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    viewport = {"width": width, "height": 844 if width == 390 else 768}
    context = chromium.new_context(
        base_url=live_server.url,
        viewport=viewport,
        locale="de-DE" if language == "de" else "en-GB",
        timezone_id="Europe/Berlin",
    )
    context.set_default_timeout(8000)
    audit = Audit(viewport, [])
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
        page.goto("/")
        page.locator(f"a[href='/theaters/{theater['_id']}/vouchers/']").first.click()
        expect(page.locator("#voucher-buy")).to_contain_text(words["limits"])
        assert page_width(page) <= width
        shot(page, f"{language}-{width}-form")
        audit.check(page, "gift voucher: form")

        page.locator("#voucher-value").fill("4")
        page.locator("#voucher-name").fill("Ada Lovelace")
        page.locator("#voucher-email").fill("ada@example.com")
        page.get_by_role("button", name=words["continue"]).click()

        expect(page.locator("#voucher-error")).to_have_text(words["too_low"])
        assert mongo.vouchers().count_documents({}) == 0
        assert page_width(page) <= width
        shot(page, f"{language}-{width}-too-low")

        page.locator("#voucher-value").fill("25")
        page.get_by_role("button", name=words["continue"]).click()
        expect(page.locator("[data-card-element] input")).to_have_count(5)
        expect(page.locator("[data-pay-button]")).to_have_text(words["pay"])
        assert page_width(page) <= width
        shot(page, f"{language}-{width}-card")
        audit.check(page, "gift voucher: card form")

        element = page.locator("[data-card-element]")
        element.get_by_placeholder("number").fill(VISA)
        element.get_by_placeholder("exp_month").fill("12")
        element.get_by_placeholder("exp_year").fill("34")
        element.get_by_placeholder("cvc").fill("123")
        page.locator("[data-pay-button]").click()
        expect(page.locator("#voucher-bought [role=status]")).to_contain_text(words["paid"])
        expect(page.locator("#voucher-bought h1")).to_contain_text(re.sub(r"^\D*|\D*$", "", words["pay"]))
        assert page_width(page) <= width
        shot(page, f"{language}-{width}-paid")
        audit.check(page, "gift voucher: paid")
        [voucher] = mongo.vouchers().find({}, hint=[("_id", 1)])
        assert voucher["state"] == VoucherState.ACTIVE and voucher["value"] == 2500
        audit.assert_clean()
    finally:
        context.close()
