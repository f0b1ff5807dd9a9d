"""An order as a calendar file (RFC 5545, built with ``icalendar``): one event per performance the
order has seats in, with the venue's address as its place, the seats and the way to the booking in
its text. Each event's UID is fixed per order and performance, so importing the file again after a
change updates the entry instead of adding a second one; a canceled booking's events say CANCELLED."""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId
from django.utils import timezone
from django.utils.translation import gettext
from icalendar import Calendar, Event

from booking.core.domain import SEAT_OWNING_ORDER_STATES, Order, OrderState
from booking.core.localized import localized
from booking.sales.order_venues import PerformanceVenue
from booking.venues.addresses import address_lines, directions_text

PRODUCT_ID = "-//theater-booking//tickets//EN"
# a performance without a stored end (none is created so today) is put in the calendar for this long
ASSUMED_LENGTH = timedelta(hours=2)
# a booking with seats has a calendar entry; one canceled or refunded keeps it, marked CANCELLED, so a
# calendar that imported it sees the change (pending, expired or failed ones never had seats)
ENDED_ORDER_STATES = (OrderState.CANCELED, OrderState.REFUNDED)


def has_calendar_entry(order: Order) -> bool:
    """Whether the order has (or had: paid, then canceled or refunded) seats to put in a calendar."""
    state = order.get("state")
    return state in SEAT_OWNING_ORDER_STATES or (state in ENDED_ORDER_STATES and bool(order.get("paidWith")))


def order_calendar(*, order: Order, venues: dict[ObjectId, PerformanceVenue], order_url: str, host: str) -> bytes:
    calendar = Calendar()
    calendar.add("prodid", PRODUCT_ID)
    calendar.add("version", "2.0")
    calendar.add("method", "PUBLISH")
    stamp = timezone.now()
    canceled = order.get("state") in ENDED_ORDER_STATES
    for session in order.get("sessions", []):
        # a refunded booking's seats are its refunded lines: the entry still names them
        lines = order.get("lines") or order.get("refundedLines") or []
        seats = [line for line in lines if line["sessionId"] == session["_id"]]
        start = session.get("start")
        if not seats or start is None:
            continue
        venue = venues.get(session["_id"], PerformanceVenue(end=None, address=None))
        event = performance_event(
            order=order, session=session, seats=seats, start=start, venue=venue, order_url=order_url, host=host
        )
        event.add("dtstamp", stamp)
        event.add("status", "CANCELLED" if canceled else "CONFIRMED")
        calendar.add_component(event)
    return calendar.to_ical()


def performance_event(
    *,
    order: Order,
    session: Mapping[str, Any],
    seats: Sequence[Mapping[str, Any]],
    start: datetime,
    venue: PerformanceVenue,
    order_url: str,
    host: str,
) -> Event:
    event = Event()
    event.add("uid", f"{order['ref']}-{session['_id']}@{host}")
    event.add("summary", localized(session, "name") or gettext("Performance"))
    event.add("dtstart", start.astimezone(UTC))
    end = venue.end if venue.end and venue.end > start else start + ASSUMED_LENGTH
    event.add("dtend", end.astimezone(UTC))
    place = [localized(session, "theaterName"), *address_lines(venue.address)]
    event.add("location", ", ".join(part for part in place if part))
    seat_words = ", ".join(
        gettext("Row %(row)s, seat %(seat)s") % {"row": line["row"], "seat": line["seat"]} for line in seats
    )
    text = [gettext("Booking %(ref)s") % {"ref": order["ref"]}, seat_words]
    directions = directions_text(venue.address)
    if directions:
        text.append(directions)
    text.append(order_url)
    event.add("description", "\n".join(text))
    event.add("url", order_url)
    return event
