"""Donating at checkout in real Chromium, in English and German, on a phone (390 px) and a laptop
(1366 px): the theater's appeal and suggested amounts, a free amount refused under 1 EUR on its
field, then an own amount charged with the tickets by card (localstripe's Stripe.js), shown as its
own line without VAT on the payment panel and the order page."""

import re

import pytest
from playwright.sync_api import expect

from booking.core import mongo
from booking.payments import donations
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater
from booking.tests.localstripe import VISA

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "seat": "Row D, seat {n},",
        "held": "held by you",
        "check_out": "Check out",
        "legend": "Add a donation (optional)",
        "other": "Other amount",
        "too_small": "A donation is from",
        "line": "Donation (no VAT)",
    },
    "de": {
        "seat": "Reihe D, Platz {n},",
        "held": "von Ihnen vorgemerkt",
        "check_out": "Zur Kasse",
        "legend": "Eine Spende hinzufügen (freiwillig)",
        "other": "Anderer Betrag",
        "too_small": "Eine Spende beträgt",
        "line": "Spende (ohne MwSt.)",
    },
}


@pytest.fixture
def show():
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    donations.set_offer(
        theater["_id"],
        enabled=True,
        suggested=[300, 500, 1000],
        free=True,
        appeal="Every euro helps us keep student tickets at five euros.",
        appeal_de="Jeder Euro hilft, Studentenkarten bei fünf Euro zu halten.",
    )
    return make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})


@pytest.mark.parametrize("width", [390, 1366])
@pytest.mark.parametrize("language", ["en", "de"])
def test_donate_an_own_amount_at_checkout_and_pay_it_with_the_tickets(
    chromium, live_server, shot, show, language, width
):
    words = WORDS[language]
    context = chromium.new_context(
        base_url=live_server.url,
        viewport={"width": width, "height": 900},
        locale="de-DE" if language == "de" else "en-GB",
        timezone_id="Europe/Berlin",
    )
    context.set_default_timeout(8000)
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
        page.goto(f"/sessions/{show['_id']}/")
        button = page.get_by_role("button", name=re.compile("^" + re.escape(words["seat"].format(n=4))))
        button.click()
        expect(button).to_have_attribute("aria-label", re.compile(re.escape(words["held"]) + "$"))
        page.locator("#cart-summary").get_by_role("link", name=words["check_out"]).click()
        page.locator("input[name=name]").fill("Ada Lovelace")
        page.locator("input[name=email]").fill("ada@example.com")
        donation = page.get_by_role("group", name=words["legend"])
        expect(donation).to_contain_text("Jeder Euro" if language == "de" else "Every euro")
        expect(donation.get_by_role("radio")).to_have_count(5)  # none, three suggested, other
        shot(page, f"{language}-{width}-offer")

        donation.get_by_role("radio", name=words["other"]).check()
        page.locator("input[name=donation_other]").fill("0,99")
        page.locator("#checkout button[type=submit]").click()
        expect(page.locator("#checkout .donation .field-error")).to_contain_text(words["too_small"])
        assert mongo.orders().count_documents({}) == 0
        shot(page, f"{language}-{width}-too-small")

        page.locator("input[name=donation_other]").fill("7,50" if language == "de" else "7.50")
        page.locator("#checkout button[type=submit]").click()
        expect(page.locator("[data-card-element] input")).to_have_count(5)
        expect(page.locator(".totals-donation")).to_contain_text(words["line"])
        expect(page.locator("[data-pay-button]")).to_contain_text("29")  # €22 and the €7.50 donation
        shot(page, f"{language}-{width}-card")

        element = page.locator("[data-card-element]")
        element.get_by_placeholder("number").fill(VISA)
        element.get_by_placeholder("exp_month").fill("12")
        element.get_by_placeholder("exp_year").fill("34")
        element.get_by_placeholder("cvc").fill("123")
        page.locator("[data-pay-button]").click()
        expect(page.locator(".badge-paid")).to_be_visible()
        expect(page.locator(".donation-line")).to_contain_text(words["line"])
        shot(page, f"{language}-{width}-paid")
        [order] = mongo.orders().find()
        assert order["state"] == "paid" and order["donation"] == {"amount": 750}
        assert order["paidWith"]["amount"] == 2950
    finally:
        context.close()
