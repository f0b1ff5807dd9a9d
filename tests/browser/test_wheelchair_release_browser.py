"""A wheelchair space released to general sale before the show (sales/wheelchair.py), as the
buyer and staff see it: an ordinary numbered seat on the buyer's map (its name no longer says
"wheelchair space"), outlined and explained on the staff seat map. Screenshots at 390x844 and
1366x768 go to /tmp/shots/a11y/."""

import re

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.sales import wheelchair
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.factories import make_session, make_theater

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(
    "viewport", [{"width": 390, "height": 844}, {"width": 1366, "height": 768}], ids=["phone", "laptop"]
)
def test_a_released_wheelchair_space_is_an_ordinary_seat_to_buyers_and_marked_for_staff(new_page, viewport):
    theater = make_theater(STUDIO_GRID, STUDIO_CATEGORIES, name="Studio Stage")
    show = make_session(theater, name="Waiting for Godot", prices={"s": 2200, "r": 1500}, days=0.5)
    buyer = new_page(viewport)
    buyer.goto(f"/sessions/{show['_id']}/")
    expect(buyer.get_by_role("button", name=re.compile(r"^Row F, seat 1, .*wheelchair space"))).to_have_text("♿")

    assert wheelchair.release_due_spaces(show["start"] - settings.BOOKING_WHEELCHAIR_RELEASE_BEFORE).released == 2
    buyer.reload()
    left = buyer.get_by_role("button", name=re.compile(r"^Row F, seat 1, "))
    expect(left).to_have_text("1")
    expect(left).to_have_attribute("aria-label", "Row F, seat 1, Standard, €22, available")
    buyer.screenshot(path=f"/tmp/shots/a11y/{viewport['width']}-wheelchair-released-buyer.png", full_page=True)
    left.click()
    expect(left).to_have_attribute("aria-label", re.compile("held by you$"))

    User.objects.create_superuser("boss", "boss@theater.example", "a-long-test-password")
    staff = new_page(viewport)
    staff.goto("/admin/login/")
    staff.get_by_label("Username").fill("boss")
    staff.get_by_label("Password").fill("a-long-test-password")
    staff.get_by_role("button", name="Log in").click()
    staff.goto(f"/admin/booking/session/{show['_id']}/seats/")
    expect(staff.locator("td.seat.released")).to_have_count(2)
    expect(staff.locator("td.seat.released").last).to_have_attribute("title", re.compile("on general sale since"))
    expect(staff.locator(".seat-legend")).to_contain_text("wheelchair spaces now on general sale (dashed outline): 2")
    staff.screenshot(path=f"/tmp/shots/a11y/{viewport['width']}-wheelchair-released-staff.png", full_page=True)
