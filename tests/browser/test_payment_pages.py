"""Every payment page a buyer sees, on a phone (390x844) and a desktop (1366x768) in real Chromium
through localstripe's Stripe.js: the card form, a declined card and a refused 3-D Secure answered
inline, "processing" while the charge is under way (the page reloaded meanwhile), the confirmation
with its payment state and receipt, find my booking for a booking pending, paid and refunded, and
a box-office reservation. Each page is checked for what matters (totals with VAT, nothing wider
than the screen) and saved to /tmp/shots/pay/ (or PAYMENT_SHOTS) for a person to look at."""

import os
import re
import threading
from pathlib import Path

import pytest
from playwright.sync_api import expect

from booking.core import faults, mongo
from booking.sales import cancels
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater
from booking.tests.localstripe import DECLINED, THREE_D_SECURE, VISA
from booking.tests.paying import checkout_paid_setup, pay

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1366, "height": 768}}
SHOTS = Path(os.environ.get("PAYMENT_SHOTS", "/tmp/shots/pay"))


@pytest.fixture
def show():
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    return make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500})


@pytest.fixture
def fault_hook():
    """fault_hook(fn): booking.core.faults.point(name) calls fn(name) (in the live server's threads
    too) until the test ends."""
    yield faults.set_hook
    faults.set_hook(None)


@pytest.fixture(params=list(SIZES))
def size(request):
    return request.param


def save(page, size: str, name: str, full_page: bool = True) -> None:
    """The page fits the screen's width (nothing to scroll sideways), then its picture is kept."""
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{name}: {overflow}px wider than the {size} screen"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{size}-{name}.png"), full_page=full_page)


def seat(page, row: str, number: int):
    return page.get_by_role("button", name=re.compile(rf"^Row {row}, seat {number},"))


def hold_two(page, show):
    page.goto(f"/sessions/{show['_id']}/")
    for number in (4, 5):
        seat(page, "D", number).click()
        expect(seat(page, "D", number)).to_have_attribute("aria-label", re.compile("held by you$"))
    page.locator("#cart-summary").get_by_role("link", name="Check out").click()
    expect(page.get_by_role("heading", name="Checkout")).to_be_visible()


def details(page, method_name: str | None = None):
    page.get_by_label("Name").fill("Ada Lovelace")
    page.get_by_label("E-mail").fill("ada@example.com")
    if method_name:
        # pay.js prefers the card when it switches it on; choose after that, as a person would.
        expect(page.get_by_role("radio", name=re.compile("^Card"))).to_be_enabled()
        page.get_by_role("radio", name=re.compile(method_name)).check()
    page.get_by_role("button", name=re.compile("^Continue")).click()


def fill_card(page, number: str):
    element = page.locator("[data-card-element]")
    element.get_by_placeholder("number").fill(number)
    element.get_by_placeholder("exp_month").fill("12")
    element.get_by_placeholder("exp_year").fill("34")
    element.get_by_placeholder("cvc").fill("123")


def test_card_payment_pages(new_page, show, size, fault_hook):
    page = new_page(SIZES[size])
    hold_two(page, show)
    expect(page.locator(".totals")).to_contain_text("incl. 7 % VAT")
    save(page, size, "1-details")
    details(page)
    expect(page.get_by_role("heading", name="Payment")).to_be_visible()
    expect(page.locator(".totals")).to_contain_text("€44")
    save(page, size, "2-card-form")

    fill_card(page, DECLINED)
    page.get_by_role("button", name=re.compile("^Pay €44")).click()
    expect(page.locator("[data-card-error]")).to_contain_text("declined")
    save(page, size, "3-declined")

    # 3-D Secure the buyer's bank refuses: answered inline, the card form stays.
    fill_card(page, THREE_D_SECURE)
    page.get_by_role("button", name=re.compile("^Pay €44")).click()
    bank = page.get_by_role("button", name="Fail authentication")
    expect(bank).to_be_visible()
    save(page, size, "4-3d-secure", full_page=False)
    bank.click()
    expect(page.locator("[data-card-error]")).to_contain_text("3-D Secure")

    # The charge is under way at Stripe (held here after the attempt was claimed) and the buyer
    # reloads: "processing", no card form, no cancel; the page asks on and moves on when paid.
    claimed, go_on = threading.Event(), threading.Event()

    def hold_the_charge(name):
        if name == "pay.after_claim" and not go_on.is_set():
            claimed.set()
            go_on.wait(30)

    fault_hook(hold_the_charge)
    fill_card(page, VISA)
    page.get_by_role("button", name=re.compile("^Pay €44")).click()
    assert claimed.wait(30)
    page.reload()
    expect(page.get_by_text("Your payment is being processed")).to_be_visible()
    expect(page.get_by_role("button", name="Cancel and release the seats")).to_have_count(0)  # money may be taken
    expect(page.locator("[data-card-element]")).to_have_count(0)
    save(page, size, "5-processing")
    go_on.set()  # Stripe answers: the page moves on by itself
    expect(page.get_by_role("heading", name="You're going to the theater!")).to_be_visible(timeout=15000)
    expect(page.locator(".badge-paid")).to_have_text("Paid")
    expect(page.get_by_role("link", name=re.compile(r"Receipt \d+ \(PDF\)"))).to_be_visible()
    expect(page.locator("body")).to_contain_text("incl. 7 % VAT")
    save(page, size, "6-paid")


def find(page, order, size: str, name: str):
    page.goto("/find-booking/")
    page.get_by_label("Booking reference").fill(order["ref"])
    page.get_by_label("E-mail").fill("someone@example.com")
    page.get_by_role("button", name="Find booking").click()
    expect(page.locator(".ref-code")).to_have_text(order["ref"])
    save(page, size, name)


def test_find_my_booking_pending_paid_refunded(new_page, show, size):
    pending = checkout_paid_setup(show, "s:one", keys=("6:0", "6:1"))
    paid = pay(checkout_paid_setup(show, "s:two", keys=("6:8", "6:9")))
    refunded = pay(checkout_paid_setup(show, "s:three", keys=("3:8", "3:9")))
    cancels.cancel_order(refunded["_id"], by="staff", reason="show moved")
    page = new_page(SIZES[size])
    find(page, pending, size, "7-find-pending")
    expect(page.locator(".badge-pending_payment")).to_have_text("Waiting for payment")
    find(page, paid, size, "8-find-paid")
    expect(page.locator(".badge-paid")).to_have_text("Paid")
    find(page, refunded, size, "9-find-refunded")
    expect(page.locator(".badge-refunded")).to_have_text("Refunded")
    expect(page.locator("body")).to_contain_text("Refunded so far")
    refunded_row = page.locator("tr.refunded").first
    expect(refunded_row).to_contain_text("Waiting for Godot")  # which show, not only "refunded"
    expect(page.locator("tr.refunded-total")).to_contain_text("−€44")


def test_box_office_reservation_page(new_page, show, size):
    mongo.sessions().update_one({"_id": show["_id"]}, {"$set": {"boxOffice": {"enabled": True, "deadlineMinutes": 30}}})
    page = new_page(SIZES[size])
    hold_two(page, show)
    details(page, "Pay at the box office")
    expect(page.get_by_role("heading", name="Your seats are reserved")).to_be_visible()
    expect(page.locator(".badge-pending_payment")).to_have_text("Reserved: pay at the box office")
    expect(page.locator("body")).to_contain_text("€44")
    expect(page.get_by_text("These details are on their way to ada@example.com too.")).to_be_visible()
    save(page, size, "10-box-office-reserved")
    [order] = mongo.orders().find()
    assert order["method"] == "box_office" and order["state"] == "pending_payment"
