"""The door on a phone (390 x 844) in real Chromium: a whole booking let in on one scan where the
theater allows it, a complimentary ticket marked as such, and a check-in taken back by staff so
the ticket admits again. Screenshots: test-artifacts/browser/<test>/."""

import re

import pytest
from playwright.sync_api import expect

from booking.core import mongo
from booking.sales import counter, holds
from booking.tests.checkin_support import door_staff, sell, tickets
from booking.tests.factories import make_session
from booking.venues.theaters import set_admit_whole_booking

from .test_door_checkin import PHONE, next_ticket, set_door, sign_in, type_code

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STAFF = counter.staff_owner(7)


def test_whole_booking_complimentary_and_undo_at_the_door(new_page, shot):
    session = make_session(name="The Seagull")
    set_admit_whole_booking(session["theaterId"], allowed=True)
    family = sell(session, ["1:0", "1:1", "1:2"], name="Ada Q. Lovelace")
    held = holds.hold_seats(
        session["_id"], STAFF, None, ["2:0", "2:1"], context=holds.HoldContext(house_seats=True), allow_orphans=True
    )
    sale = counter.CounterSale(name="Press Person", method=counter.COMPLIMENTARY, by="anna", by_id=7, reason="Press")
    press = counter.sell(STAFF, held.cart_id, sale)
    door_staff("anna")
    page = new_page(PHONE)
    sign_in(page, "anna", f"/checkin/{session['_id']}/")
    set_door(page, "North")
    result = page.locator("#result")

    type_code(page, tickets(family)[1])
    expect(result).to_have_class(re.compile(r"\bok\b"))
    expect(result).to_contain_text("The whole booking: 3 people let in.")
    shot(page, "whole-booking", full_page=False)
    next_ticket(page)
    expect(page.locator("#count-in")).to_have_text("3")

    type_code(page, tickets(press)[0])
    expect(result).to_contain_text("Complimentary")
    expect(result).to_contain_text("The whole booking: 2 people let in.")
    shot(page, "complimentary", full_page=False)
    next_ticket(page)

    type_code(page, tickets(family)[0])
    expect(result).to_contain_text("Already used")
    result.get_by_role("button", name="Undo check-in").click()
    expect(result).to_contain_text("Check-in undone")
    expect(result).to_contain_text("Ada Q. Lovelace")
    shot(page, "undone", full_page=False)
    next_ticket(page)
    stored = mongo.orders().find_one({"_id": family["_id"]})
    assert [u["by"] for u in stored["checkinUndos"]] == ["anna"]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
