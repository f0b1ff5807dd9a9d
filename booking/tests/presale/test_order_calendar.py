"""The buyer's booking with its venue: the calendar file, the address and directions on the
confirmation page, the tickets and the confirmation mail."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from icalendar import Calendar

from booking.core import clock, mongo
from booking.notifications.confirmations import confirmation_message
from booking.payments import flow as payments
from booking.sales import holds
from booking.sales.cancels import cancel_order
from booking.tests.admin_support import sell
from booking.tests.factories import make_session, make_theater
from booking.venues.addresses import update_address

pytestmark = pytest.mark.django_db


def url(name, ref):
    return reverse(f"booking:{name}", kwargs={"ref": ref})


@pytest.fixture
def theater():
    theater = make_theater(name="Old Opera")
    update_address(
        theater_id=theater["_id"],
        street="Opernplatz 1",
        postal_code="60313",
        city="Frankfurt",
        directions="U6 to Alte Oper.",
        directions_de="U6 bis Alte Oper.",
    )
    return theater


@pytest.fixture
def paid(theater):
    session = make_session(theater, name="Tosca", name_de="Tosca (de)")
    return session, sell(session["_id"], ["0:0", "0:1"], email="ada@example.com")


def calendar_of(response) -> Calendar:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/calendar")
    return Calendar.from_ical(response.content)


def events(calendar: Calendar) -> list:
    return [c for c in calendar.walk() if c.name == "VEVENT"]


def test_the_calendar_file_has_the_performance_with_its_place_seats_and_the_way_back(paid):
    session, order = paid
    response = Client().get(url("order_calendar", order["ref"]) + "?email=ada@example.com")
    assert f'filename="booking-{order["ref"]}.ics"' in response["Content-Disposition"]
    (event,) = events(calendar_of(response))
    assert event.decoded("dtstart") == session["start"].replace(microsecond=0)
    assert event.decoded("dtend") == session["end"].replace(microsecond=0)
    assert str(event["summary"]) == "Tosca"
    assert str(event["location"]) == "Old Opera, Opernplatz 1, 60313 Frankfurt"
    text = str(event["description"])
    assert order["ref"] in text and "Row A, seat 1" in text and "Row A, seat 2" in text
    assert "U6 to Alte Oper." in text and f"/orders/{order['ref']}/" in text
    assert str(event["status"]) == "CONFIRMED"


def test_downloading_again_gives_the_same_entry_so_calendars_update_it(paid):
    _, order = paid
    link = url("order_calendar", order["ref"]) + "?email=ada@example.com"
    first, again = (events(calendar_of(Client().get(link)))[0] for _ in range(2))
    assert str(first["uid"]) == str(again["uid"])
    assert order["ref"] in str(first["uid"])


def test_a_german_buyer_gets_the_german_title_and_directions(paid):
    _, order = paid
    response = Client().get(url("order_calendar", order["ref"]) + "?email=ada@example.com", HTTP_ACCEPT_LANGUAGE="de")
    (event,) = events(calendar_of(response))
    assert str(event["summary"]) == "Tosca (de)"
    assert "U6 bis Alte Oper." in str(event["description"])
    assert "Reihe A" in str(event["description"])


def test_a_stranger_gets_no_calendar_file(paid):
    _, order = paid
    assert Client().get(url("order_calendar", order["ref"])).status_code == 404
    wrong = Client().get(url("order_calendar", order["ref"]) + "?email=eve@example.com")
    assert wrong.status_code == 404 and b"BEGIN:VCALENDAR" not in wrong.content
    assert Client().get(url("order_calendar", "NOSUCHREF") + "?email=ada@example.com").status_code == 404


def test_a_booking_not_paid_yet_has_no_calendar_entry(theater):
    session = make_session(theater)
    cart = holds.hold_seats(session["_id"], "s:bob", None, ["0:0"])
    order = payments.start("s:bob", cart.cart_id, "Bob", "bob@example.com")
    response = Client().get(url("order_calendar", order["ref"]) + "?email=bob@example.com")
    assert response.status_code == 404
    assert "nothing to put in a calendar" in response.content.decode()


def test_a_canceled_booking_s_entry_says_cancelled(paid):
    _, order = paid
    cancel_order(order["_id"], by="staff", reason="double booking")
    response = Client().get(url("order_calendar", order["ref"]) + "?email=ada@example.com")
    (event,) = events(calendar_of(response))
    assert str(event["status"]) == "CANCELLED"


def test_an_order_over_two_performances_has_one_event_each_and_none_for_a_past_one(theater):
    first, second = make_session(theater, name="Tosca"), make_session(theater, name="Aida", days=2)
    order = sell(first["_id"], ["0:0"], email="ada@example.com")
    mongo.orders().update_one(
        {"_id": order["_id"]},
        {
            "$push": {
                "sessions": {
                    "_id": second["_id"],
                    "name": "Aida",
                    "start": second["start"],
                    "theaterName": "Old Opera",
                },
                "lines": {**order["lines"][0], "sessionId": second["_id"], "row": "B", "seat": "1"},
            }
        },
    )
    found = events(calendar_of(Client().get(url("order_calendar", order["ref"]) + "?email=ada@example.com")))
    assert sorted(str(e["summary"]) for e in found) == ["Aida", "Tosca"]
    assert len({str(e["uid"]) for e in found}) == 2


def test_a_performance_without_an_end_is_given_two_hours(paid):
    session, order = paid
    mongo.sessions().update_one({"_id": session["_id"]}, {"$unset": {"end": ""}})
    (event,) = events(calendar_of(Client().get(url("order_calendar", order["ref"]) + "?email=ada@example.com")))
    assert event.decoded("dtend") - event.decoded("dtstart") == timedelta(hours=2)


def test_the_confirmation_page_and_the_tickets_say_where_and_how_to_get_there(paid):
    _, order = paid
    buyer = Client()
    page = buyer.get(url("order", order["ref"]) + "?email=ada@example.com").content.decode()
    assert "Getting there" in page and "Opernplatz 1" in page and "60313 Frankfurt" in page
    assert "U6 to Alte Oper." in page
    assert f'href="{url("order_calendar", order["ref"])}"' in page and "Add to calendar" in page
    tickets = buyer.get(url("order_tickets", order["ref"])).content.decode()
    assert tickets.count("Opernplatz 1, 60313 Frankfurt") == 2  # on each ticket
    german = buyer.get(url("order", order["ref"]), HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "U6 bis Alte Oper." in german


def test_a_theater_without_an_address_shows_no_getting_there_part():
    session = make_session(make_theater(name="Plain Hall"))
    order = sell(session["_id"], ["0:0"], email="ada@example.com")
    page = Client().get(url("order", order["ref"]) + "?email=ada@example.com").content.decode()
    assert "Getting there" not in page and "Add to calendar" in page


def test_an_address_corrected_later_reaches_those_who_booked_before(paid, theater):
    _, order = paid
    update_address(theater_id=theater["_id"], street="Opernplatz 2", postal_code="60313", city="Frankfurt")
    page = Client().get(url("order", order["ref"]) + "?email=ada@example.com").content.decode()
    assert "Opernplatz 2" in page and "Opernplatz 1" not in page


def test_the_confirmation_mail_has_the_address_and_the_calendar_file(paid):
    _, order = paid
    message = confirmation_message(mongo.orders().find_one({"_id": order["_id"]}))
    assert "Opernplatz 1" in message.body and "60313 Frankfurt" in message.body and "U6 to Alte Oper." in message.body
    html = str(message.alternatives[0][0])
    assert "Opernplatz 1" in html
    attached = {name: (body, kind) for name, body, kind in message.attachments}
    body, kind = attached[f"booking-{order['ref']}.ics"]
    assert kind == "text/calendar"
    (event,) = events(Calendar.from_ical(body))
    assert "Opernplatz 1" in str(event["location"])


def test_a_german_buyer_s_mail_has_the_german_directions(paid):
    _, order = paid
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"language": "de"}})
    message = confirmation_message(mongo.orders().find_one({"_id": order["_id"]}))
    assert "U6 bis Alte Oper." in message.body and "Anfahrt" in message.body


def test_a_performance_moved_in_time_shows_its_new_time_in_the_calendar(paid):
    session, order = paid
    later = clock.now() + timedelta(days=3)
    mongo.orders().update_one(
        {"_id": order["_id"], "sessions._id": session["_id"]}, {"$set": {"sessions.$.start": later}}
    )
    (event,) = events(calendar_of(Client().get(url("order_calendar", order["ref"]) + "?email=ada@example.com")))
    assert event.decoded("dtstart") == later.replace(microsecond=0)
