"""Sessions (performances): created from a theater template, priced per category, on sale."""

from datetime import datetime, timedelta

from bson import ObjectId
from django.conf import settings

from .. import clock, mongo
from ..errors import Conflict, InvalidRequest, NotFound
from ..layouts import category_codes_used
from ..seatmap import BLOCKED, FREE, HELD, SOLD, cell_path, count_state, initial_states, seat_cell, seat_name

MAX_PRICE = 1_000_000  # minor units: 10,000.00 is more than any seat here costs
MAX_DURATION = timedelta(hours=24)


def clean_details(name: str, description: str, start: datetime, end: datetime, *, now: datetime) -> dict:
    name = " ".join(str(name or "").split())
    description = str(description or "").strip()
    errors = {}
    if not name or len(name) > 120:
        errors["name"] = "The show needs a name of 1 to 120 characters."
    if len(description) > 2000:
        errors["description"] = "Please keep the description under 2,000 characters."
    if not isinstance(start, datetime) or start.tzinfo is None:
        errors["start"] = "Give the start as a date and time."
    elif start <= now:
        errors["start"] = "The start must be in the future."
    if not isinstance(end, datetime) or end.tzinfo is None:
        errors["end"] = "Give the end as a date and time."
    elif isinstance(start, datetime) and start.tzinfo and end <= start:
        errors["end"] = "The end must be after the start."
    elif isinstance(start, datetime) and start.tzinfo and end - start > MAX_DURATION:
        errors["end"] = "A performance cannot last longer than 24 hours."
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    return {"name": name, "description": description, "start": start, "end": end}


def clean_prices(prices: dict, layout: dict) -> dict[str, int]:
    clean = {}
    errors = {}
    names = {c["code"]: c["name"] for c in layout["categories"]}
    for code in category_codes_used(layout):
        value = prices.get(code)
        if isinstance(value, bool) or not isinstance(value, int):
            errors[f"price_{code}"] = f"Give a price for {names[code]} in cents."
        elif value < 0:
            errors[f"price_{code}"] = f"The price for {names[code]} cannot be below zero."
        elif value > MAX_PRICE:
            errors[f"price_{code}"] = f"The price for {names[code]} is too high (at most {MAX_PRICE // 100:,})."
        else:
            clean[code] = value
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    return clean


def create_session(
    theater_id: ObjectId, *, name: str, description: str, start: datetime, end: datetime, prices: dict
) -> dict:
    """A new performance: the theater's whole seat map is copied into the session (preallocated)."""
    theater = mongo.theaters().find_one({"_id": theater_id})
    if theater is None:
        raise NotFound("No such theater.")
    now = clock.now()
    details = clean_details(name, description, start, end, now=now)
    if theater.get("sections"):
        return create_section_sessions(theater, details, prices, now)[0]
    layout = theater["layout"]
    session = _session_document(theater, theater["name"], layout, details, clean_prices(prices, layout), now)
    mongo.sessions().insert_one(session)
    return session


def _session_document(theater: dict, theater_name: str, layout: dict, details: dict, prices: dict, now) -> dict:
    """A session on sale with the layout copied in full (preallocated) and every seat free."""
    seats = initial_states(layout)
    available = count_state(seats, FREE)
    return {
        "_id": ObjectId(),
        "theaterId": theater["_id"],
        "theaterName": theater_name,
        **details,
        "prices": prices,
        "currency": settings.BOOKING_CURRENCY,
        "status": "on_sale",
        "layout": layout,
        "seats": seats,
        "seatsTotal": available,
        "seatsAvailable": available,
        "reservations": [],
        "version": 1,
        "createdOn": now,
    }


def create_section_sessions(theater: dict, details: dict, prices: dict, now: datetime) -> list[dict]:
    """A performance in a sectioned venue: one session document per section, sharing a
    ``performanceId`` (the RavenDB seed's chunks), so no document carries the whole stadium.
    Each is an ordinary session to holds, checkout and expiry; cart items name the section's id.
    ``theaterName`` says venue and section (carts, orders and tickets copy it); ``venueName`` is
    the venue alone (what's on lists the performance once)."""
    sections = theater["sections"]
    categories = {}
    for section in sections:
        for cat in section["layout"]["categories"]:
            categories.setdefault(cat["code"], cat)
    every_row = [row for section in sections for row in section["layout"]["rows"]]
    all_prices = clean_prices(prices, {"categories": list(categories.values()), "rows": every_row})
    performance_id = ObjectId()
    docs = []
    for index, section in enumerate(sections):
        layout = section["layout"]
        section_prices = {code: all_prices[code] for code in category_codes_used(layout)}
        doc = _session_document(theater, f"{theater['name']} – {section['name']}", layout, details, section_prices, now)
        doc.update(
            performanceId=performance_id,
            section={"name": section["name"], "index": index, "count": len(sections)},
            venueName=theater["name"],
        )
        docs.append(doc)
    mongo.sessions().insert_many(docs)
    return docs


def update_session_details(session_id: ObjectId, *, name, description, start, end, prices) -> dict:
    session = mongo.sessions().find_one({"_id": session_id}, {"layout": 1, "status": 1})
    if session is None:
        raise NotFound("No such session.")
    details = clean_details(name, description, start, end, now=clock.now())
    clean = clean_prices(prices, session["layout"])
    mongo.sessions().update_one({"_id": session_id}, {"$set": {**details, "prices": clean}, "$inc": {"version": 1}})
    return mongo.sessions().find_one({"_id": session_id})


def refresh_seat_map(session_id: ObjectId) -> dict:
    """Copy the theater's current layout again; refused once any seat is held or sold."""
    session = mongo.sessions().find_one(
        {"_id": session_id}, {"theaterId": 1, "seatsTotal": 1, "seatsAvailable": 1, "seats": 1}
    )
    if session is None:
        raise NotFound("No such session.")
    theater = mongo.theaters().find_one({"_id": session["theaterId"]})
    if theater is None:
        raise NotFound("The session's theater no longer exists.")
    if count_state(session["seats"], HELD) or count_state(session["seats"], SOLD):
        raise Conflict("The seat map cannot be changed once seats are held or sold.")
    seats = initial_states(theater["layout"])
    available = count_state(seats, FREE)
    result = mongo.sessions().update_one(
        {"_id": session_id, "seats": session["seats"], "reservations": {"$size": 0}},
        {
            "$set": {"layout": theater["layout"], "seats": seats, "seatsTotal": available, "seatsAvailable": available},
            "$inc": {"version": 1, "layoutRev": 1},  # processes keep layouts per revision
        },
    )
    if not result.matched_count:
        raise Conflict("Seats were taken meanwhile; the seat map can no longer be changed.")
    return mongo.sessions().find_one({"_id": session_id})


def set_blocked(session_id: ObjectId, coords: list[tuple[int, int]], blocked: bool) -> int:
    """Staff take free seats off sale (house seats) or put blocked seats back on sale.

    All or nothing: one conditional update requiring every cell to be in the expected state.
    """
    session = mongo.sessions().find_one({"_id": session_id}, {"layout": 1, "seats": 1})
    if session is None:
        raise NotFound("No such session.")
    if not coords:
        raise InvalidRequest("Choose at least one seat.")
    if len(set(coords)) != len(coords):
        raise InvalidRequest("The same seat was chosen twice.")
    for r, c in coords:
        if seat_cell(session["layout"], r, c) is None:
            raise InvalidRequest(f"There is no seat at row {r + 1}, position {c + 1}.")
    before, after = (FREE, BLOCKED) if blocked else (BLOCKED, FREE)
    wrong = [(r, c) for r, c in coords if session["seats"][r][c] != before]
    if wrong:
        what = "free" if blocked else "blocked"
        names = ", ".join(seat_name(session["layout"], r, c) for r, c in wrong[:5])
        raise Conflict(f"Only {what} seats can be {'blocked' if blocked else 'released'}: {names}.")
    result = mongo.sessions().update_one(
        {"_id": session_id, **{cell_path(r, c): before for r, c in coords}},
        {
            "$set": {cell_path(r, c): after for r, c in coords},
            "$inc": {"seatsAvailable": -len(coords) if blocked else len(coords), "version": 1},
        },
    )
    if not result.matched_count:
        raise Conflict("Some of those seats were taken meanwhile; please look again.")
    return len(coords)


def cancel_session(session_id: ObjectId, *, cancel_orders: bool = False, by: str = "") -> int:
    """Take a session off sale. Refused while it has paid orders, unless staff confirm canceling
    them (their seats become free). Holds in carts are released. Returns orders canceled."""
    from . import orders as order_service
    from . import reservations

    session = mongo.sessions().find_one({"_id": session_id}, {"status": 1, "reservations": 1})
    if session is None:
        raise NotFound("No such session.")
    owning = {"$in": ["paid", "partially_refunded"]}  # their remaining tickets: refunded (services/refunds.py)
    paid = list(mongo.orders().find({"state": owning, "lines.sessionId": session_id}, {"_id": 1}))
    if paid and not cancel_orders:
        raise Conflict(f"This session has {len(paid)} paid orders. Confirm that they should be canceled too.")
    mongo.sessions().update_one({"_id": session_id}, {"$set": {"status": "canceled"}, "$inc": {"version": 1}})
    for order in paid:
        order_service.cancel_order(order["_id"], by=by, reason="Performance canceled")
    for hold in session.get("reservations", []):
        reservations.settle(session_id, hold["_id"])
    from . import payments  # orders still waiting for their money: the payment is called off

    for order in mongo.orders().find({"state": "pending_payment", "lines.sessionId": session_id}, {"_id": 1}):
        payments.cancel_unpaid(order["_id"], by=by, reason="Performance canceled")
    return len(paid)
