"""A buyer on a phone finds where the performance is and puts it in their calendar."""

import pytest
from icalendar import Calendar
from playwright.sync_api import expect

from booking.tests.admin_support import sell
from booking.tests.factories import make_session, make_theater
from booking.venues.addresses import update_address

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


@pytest.mark.parametrize(
    ("locale", "heading", "button", "directions"),
    [
        ("en-GB", "Getting there", "Add to calendar", "U6 to Alte Oper, then the side entrance."),
        ("de-DE", "Anfahrt", "In den Kalender", "U6 bis Alte Oper, dann der Seiteneingang."),
    ],
)
def test_the_booking_says_where_it_is_and_its_calendar_file_opens(
    chromium, live_server, shot, locale, heading, button, directions
):
    theater = make_theater(name="Old Opera")
    update_address(
        theater_id=theater["_id"],
        street="Opernplatz 1",
        postal_code="60313",
        city="Frankfurt am Main",
        directions="U6 to Alte Oper, then the side entrance.",
        directions_de="U6 bis Alte Oper, dann der Seiteneingang.",
    )
    session = make_session(theater, name="Tosca")
    order = sell(session["_id"], ["0:0", "0:1"], email="ada@example.com")
    context = chromium.new_context(base_url=live_server.url, viewport=PHONE, locale=locale, accept_downloads=True)
    try:
        page = context.new_page()
        page.goto(f"/orders/{order['ref']}/?email=ada@example.com")
        part = page.locator("section.getting-there")
        expect(part.get_by_role("heading", name=heading)).to_be_visible()
        expect(part).to_contain_text("Opernplatz 1")
        expect(part).to_contain_text("60313 Frankfurt am Main")
        expect(part).to_contain_text(directions)
        box = part.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        expect(page.locator(".ticket-where").first).to_contain_text("Opernplatz 1, 60313 Frankfurt am Main")
        part.scroll_into_view_if_needed()
        shot(page, f"getting-there-{locale}", full_page=False)
        with page.expect_download() as download:
            page.get_by_role("link", name=button).click()
        path = download.value.path()
        assert download.value.suggested_filename == f"booking-{order['ref']}.ics"
        with open(path, "rb") as file:
            (event,) = [c for c in Calendar.from_ical(file.read()).walk() if c.name == "VEVENT"]
        assert "Opernplatz 1" in str(event["location"]) and directions in str(event["description"])
    finally:
        context.close()
