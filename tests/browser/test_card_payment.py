"""Paying by card in real Chromium through localstripe's Stripe.js (its fake card form and 3-D
Secure dialog), on a desktop and a phone screen; the box office without JavaScript."""

import re

import pytest
from playwright.sync_api import expect

from booking.core import mongo
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater
from booking.tests.localstripe import DECLINED, THREE_D_SECURE, VISA
from booking.venues.seat_grid import SOLD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def show():
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    return make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})


def seat(page, row: str, number: int):
    return page.get_by_role("button", name=re.compile(rf"^Row {row}, seat {number},"))


def hold_two_and_check_out(page, show):
    page.goto(f"/sessions/{show['_id']}/")
    for number in (4, 5):
        seat(page, "D", number).click()
        expect(seat(page, "D", number)).to_have_attribute("aria-label", re.compile("held by you$"))
    page.locator("#cart-summary").get_by_role("link", name="Check out").click()
    expect(page.get_by_role("heading", name="Checkout")).to_be_visible()


def fill_card(page, number: str):
    """localstripe's card element: five plain inputs named by their placeholders."""
    element = page.locator("[data-card-element]")
    element.get_by_placeholder("number").fill(number)
    element.get_by_placeholder("exp_month").fill("12")
    element.get_by_placeholder("exp_year").fill("34")
    element.get_by_placeholder("cvc").fill("123")


def the_order():
    [order] = mongo.orders().find()
    return order


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_pay_by_card_declined_then_3d_secure(new_page, shot, show, viewport):
    page = new_page(viewport)
    hold_two_and_check_out(page, show)
    expect(page.get_by_role("radio", name=re.compile("Card"))).to_be_checked()  # JavaScript turned it on
    expect(page.locator(".totals")).to_contain_text("incl. 7 % VAT")
    shot(page, "details")

    page.get_by_label("Name").fill("Ada Lovelace")
    page.get_by_label("E-mail").fill("ada@example.com")
    page.get_by_role("button", name=re.compile("^Continue")).click()
    expect(page.get_by_role("heading", name="Payment")).to_be_visible()  # same page, the card form in place
    assert page.url.endswith("/checkout/")
    expect(page.locator(".countdown-time")).to_have_text(re.compile(r"^1[45]:\d\d$"))
    expect(page.locator("[data-card-element] input")).to_have_count(5)
    shot(page, "card-form")

    fill_card(page, DECLINED)
    page.get_by_role("button", name=re.compile("^Pay €44")).click()
    expect(page.locator("[data-card-error]")).to_contain_text("declined")
    assert the_order()["state"] == "pending_payment"
    shot(page, "declined")

    fill_card(page, THREE_D_SECURE)
    page.get_by_role("button", name=re.compile("^Pay €44")).click()
    bank = page.get_by_role("button", name="Complete authentication")  # localstripe's 3-D Secure dialog
    expect(bank).to_be_visible()
    shot(page, "3d-secure", full_page=False)
    bank.click()

    expect(page.get_by_role("heading", name="You're going to the theater!")).to_be_visible()
    expect(page.locator(".badge-paid")).to_have_text("Paid")
    expect(page.locator(".tickets .ticket")).to_have_count(2)
    expect(page.get_by_role("link", name=re.compile(r"Receipt \d+ \(PDF\)"))).to_be_visible()
    shot(page, "paid")
    order = the_order()
    assert order["state"] == "paid" and order["payment"]["attempt"] == 2
    seats = mongo.sessions().find_one({"_id": show["_id"]})["seats"]
    keys = [tuple(int(x) for x in line["key"].split(":")) for line in order["lines"]]
    assert [seats[r][c] for r, c in keys] == [SOLD, SOLD]

    pdf = page.request.get(page.get_by_role("link", name=re.compile("Receipt")).get_attribute("href"))
    assert pdf.status == 200 and pdf.headers["content-type"] == "application/pdf" and pdf.body()[:5] == b"%PDF-"


def test_pay_by_card_on_a_phone_straight_away(new_page, shot, show):
    page = new_page(PHONE)
    hold_two_and_check_out(page, show)
    page.get_by_label("Name").fill("Grace Hopper")
    page.get_by_label("E-mail").fill("grace@example.com")
    page.get_by_role("button", name=re.compile("^Continue")).click()
    fill_card(page, VISA)
    shot(page, "card-filled")
    page.get_by_role("button", name=re.compile("^Pay €44")).click()
    expect(page.get_by_role("heading", name="You're going to the theater!")).to_be_visible()
    shot(page, "paid")


def test_without_javascript_the_box_office_still_works_and_card_says_why_not(chromium, live_server, shot, show):
    mongo.sessions().update_one({"_id": show["_id"]}, {"$set": {"boxOffice": {"enabled": True, "deadlineMinutes": 30}}})
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False, viewport=DESKTOP)
    try:
        page = context.new_page()
        page.goto(f"/sessions/{show['_id']}/")
        for number in (4, 5):
            seat(page, "D", number).click()  # a plain form post per click
        page.goto("/checkout/")
        card = page.get_by_role("radio", name=re.compile("Card"))
        expect(card).to_be_disabled()
        expect(page.get_by_text("Card payment needs JavaScript")).to_be_visible()
        expect(page.get_by_role("radio", name=re.compile("Pay at the box office"))).to_be_checked()
        shot(page, "no-js-checkout")
        page.get_by_label("Name").fill("Ada Lovelace")
        page.get_by_label("E-mail").fill("ada@example.com")
        page.get_by_role("button", name=re.compile("^Continue")).click()
        expect(page.get_by_role("heading", name="Your seats are reserved")).to_be_visible()
        expect(page.locator(".badge-pending_payment")).to_have_text("Reserved: pay at the box office")
        shot(page, "no-js-reserved")
        assert the_order()["method"] == "box_office" and the_order()["state"] == "pending_payment"
    finally:
        context.close()
