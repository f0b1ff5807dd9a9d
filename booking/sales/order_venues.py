"""Where and until when an order's performances take place: what the confirmation page, the
tickets, the mail and the calendar entry say beyond what the order keeps (the theater's current
address, so a corrected one reaches those who booked before; the performance's end)."""

from dataclasses import dataclass
from datetime import datetime

from bson import ObjectId

from booking.core import mongo
from booking.core.domain import Order, VenueAddress
from booking.core.localized import localized
from booking.venues.addresses import address_lines, directions_text


@dataclass(frozen=True)
class PerformanceVenue:
    end: datetime | None
    address: VenueAddress | None


def venues_of_order(order: Order) -> dict[ObjectId, PerformanceVenue]:
    """session id -> its end and its theater's address, for the order's sessions (two reads)."""
    session_ids = [s["_id"] for s in order.get("sessions", [])]
    if not session_ids:
        return {}
    sessions = list(mongo.sessions().find({"_id": {"$in": session_ids}}, {"theaterId": 1, "end": 1}))
    theater_ids = list({s["theaterId"] for s in sessions if s.get("theaterId")})
    addresses = {
        t["_id"]: t["address"]
        for t in mongo.theaters().find({"_id": {"$in": theater_ids}, "address": {"$exists": True}}, {"address": 1})
    }
    return {s["_id"]: PerformanceVenue(end=s.get("end"), address=addresses.get(s.get("theaterId"))) for s in sessions}


def getting_there(order: Order, *, venues: dict[ObjectId, PerformanceVenue]) -> list[dict]:
    """Each venue of the order once, with its address and directions in the page's language, for the
    "Getting there" part of the confirmation and the tickets (venues without an address left out)."""
    shown: list[dict] = []
    for session in order.get("sessions", []):
        venue = venues.get(session["_id"])
        if venue is None or not venue.address:
            continue
        entry = {
            "theater": localized(session, "theaterName"),
            "lines": address_lines(venue.address),
            "directions": directions_text(venue.address),
        }
        if entry not in shown:
            shown.append(entry)
    return shown
