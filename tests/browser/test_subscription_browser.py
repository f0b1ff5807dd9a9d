"""Buying a season subscription in real Chromium, in English and in German: the list, the map of
seats free at every performance, the checkout and card payment of every cart, the tickets."""

import re
from datetime import timedelta

import pytest
from django.core import mail
from playwright.sync_api import expect

from booking.core import clock, mongo
from booking.payments import flow as payments
from booking.sales import holds, subscriptions
from booking.tests.factories import make_session, make_theater
from booking.tests.localstripe import VISA, card
from booking.upkeep import tasks
from booking.venues.seat_grid import SOLD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "seat": r"^Row B, seat 4,",
        "taken": r"^Row A, seat 1,",
        "continue": r"^Continue",
        "email": "E-mail",
        "pay": r"^Pay",
        "going": "You're going to the theater!",
        "name": "Season A",
    },
    "de": {
        "seat": r"^Reihe B, Platz 4,",
        "taken": r"^Reihe A, Platz 1,",
        "continue": r"^Weiter",
        "email": "E-Mail",
        "pay": r"bezahlen$",
        "going": "Sie gehen ins Theater!",
        "name": "Abo A",
    },
}


@pytest.fixture
def season():
    halls = [make_theater(name="Grand Hall"), make_theater(name="Studio")]
    sessions = [
        make_session(halls[i % 2], name="Hamlet", name_de="Hamlet", days=2 + i, prices={"s": 2000, "p": 3500})
        for i in range(3)
    ]
    now = clock.now()
    sub = subscriptions.create_subscription(
        name="Season A",
        name_de="Abo A",
        session_ids=[s["_id"] for s in sessions],
        prices={"s": 5000, "p": 9000},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
    )
    holds.hold_seats(sessions[1]["_id"], "s:someone", None, ["0:0", "0:1"])  # taken at one performance
    return sub, sessions


def fill_card(page, number: str):
    element = page.locator("[data-card-element]")
    element.get_by_placeholder("number").fill(number)
    element.get_by_placeholder("exp_month").fill("12")
    element.get_by_placeholder("exp_year").fill("34")
    element.get_by_placeholder("cvc").fill("123")


@pytest.mark.parametrize("language", ["en", "de"])
def test_buy_a_subscription_and_pay_by_card(chromium, live_server, shot, season, language):
    sub, sessions = season
    words = WORDS[language]
    context = chromium.new_context(
        base_url=live_server.url,
        viewport={"width": 1280, "height": 900},
        locale="de-DE" if language == "de" else "en-GB",
        timezone_id="Europe/Berlin",
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
    try:
        page.goto("/")
        page.locator('.hero a[href="/subscriptions/"]').click()
        expect(page.get_by_role("link", name=words["name"])).to_be_visible()
        shot(page, f"list-{language}")
        page.get_by_role("link", name=words["name"]).click()
        expect(page.get_by_role("heading", level=1)).to_have_text(words["name"])
        expect(page.locator(".subscription-performances li")).to_have_count(3)
        taken = page.get_by_role("button", name=re.compile(words["taken"]))
        expect(taken).to_have_attribute("aria-disabled", "true")  # held at the second performance
        shot(page, f"map-{language}")

        page.get_by_role("button", name=re.compile(words["seat"])).click()
        expect(page.get_by_role("heading", level=1)).not_to_have_text(words["name"])
        assert page.url.endswith("/checkout/")
        expect(page.locator("main")).to_contain_text("Hamlet")
        shot(page, f"checkout-{language}")

        page.get_by_label("Name").fill("Ada Lovelace")
        page.get_by_label(words["email"]).fill("ada@example.com")
        page.get_by_role("button", name=re.compile(words["continue"])).click()
        fill_card(page, VISA)
        page.get_by_role("button", name=re.compile(words["pay"])).click()
        expect(page.get_by_role("heading", name=words["going"])).to_be_visible()
        expect(page.locator(".tickets .ticket")).to_have_count(3)  # a ticket per performance
        shot(page, f"paid-{language}")
    finally:
        context.close()
    [order] = mongo.orders().find()
    assert order["state"] == "paid" and order["total"] >= 5000
    assert order["language"] == language
    for session in sessions:
        seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
        assert seats[1][3] == SOLD


RENEW = {
    "en": {"reserved": "Your seat is reserved for you", "renew": "Renew and pay"},
    "de": {"reserved": "Ihr Platz ist für Sie reserviert", "renew": "Verlängern und bezahlen"},
}


@pytest.mark.parametrize("language", ["en", "de"])
def test_renew_a_subscription_from_the_mailed_link(chromium, live_server, shot, language):
    hall = make_theater()
    now = clock.now()
    old_sessions = [make_session(hall, days=2 + i) for i in range(2)]
    old = subscriptions.create_subscription(
        name="Season 1",
        session_ids=[s["_id"] for s in old_sessions],
        prices={"s": 4000, "p": 6000},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
    )
    cart = subscriptions.hold_subscription(
        subscription_id=old["_id"], seat_keys=["1:3"], request=subscriptions.SaleRequest(owner="s:ada")
    )
    payments.start("s:ada", cart["_id"], "Ada Lovelace", "ada@example.com", language=language)
    paid = mongo.orders().find_one()
    payments.pay_with_card(paid["_id"], "s:ada", card(VISA))
    new_sessions = [make_session(hall, name="Faust", name_de="Faust", days=10 + i) for i in range(3)]
    subscriptions.create_subscription(
        name="Season 2",
        name_de="Abo 2",
        session_ids=[s["_id"] for s in new_sessions],
        prices={"s": 4500, "p": 6600},
        sale_opens=now - timedelta(minutes=1),
        sale_closes=now + timedelta(days=5),
        renews=old["_id"],
        renewal_closes=now + timedelta(days=1),
    )
    mail.outbox.clear()
    assert tasks.subscription_renewals()["mailed"] == 1
    body = mail.outbox[0].body
    link = next(line for line in body.splitlines() if "/subscriptions/renew/" in line)
    words = {**WORDS[language], **RENEW[language]}
    context = chromium.new_context(
        base_url=live_server.url,
        viewport={"width": 1280, "height": 900},
        locale="de-DE" if language == "de" else "en-GB",
        timezone_id="Europe/Berlin",
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.on("pageerror", lambda exc: pytest.fail(f"JavaScript error: {exc}"))
    try:
        page.goto(link[link.index("/subscriptions/") :])
        expect(page.get_by_role("heading", name=words["reserved"])).to_be_visible()
        shot(page, f"renewal-{language}")
        page.get_by_role("button", name=words["renew"]).click()
        assert page.url.endswith("/checkout/")
        page.get_by_label(words["email"]).fill("ada@example.com")
        page.get_by_label("Name").fill("Ada Lovelace")
        page.get_by_role("button", name=re.compile(words["continue"])).click()
        fill_card(page, VISA)
        page.get_by_role("button", name=re.compile(words["pay"])).click()
        expect(page.get_by_role("heading", name=words["going"])).to_be_visible()
        expect(page.locator(".tickets .ticket")).to_have_count(3)
        shot(page, f"renewed-{language}")
    finally:
        context.close()
    for session in new_sessions:
        assert mongo.sessions().find_one({"_id": session["_id"]})["seats"][1][3] == SOLD
