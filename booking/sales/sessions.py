"""Sessions (performances): created from a theater template, priced per category, on sale."""

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext

from booking.core import clock, faults, mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, Layout, Session, SessionStatus, Theater
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.sales import listings, session_cancel
from booking.sales.session_prices import clean_prices
from booking.venues import performance_index
from booking.venues.layouts import category_codes_used
from booking.venues.seat_grid import (
    BLOCKED,
    FREE,
    HELD,
    SOLD,
    cell_path,
    count_state,
    initial_states,
    seat_cell,
    seat_name,
)
from booking.venues.theaters import session_names

MAX_DURATION = timedelta(hours=24)


def clean_details(
    name: str,
    description: str,
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    name_de: str = "",
    description_de: str = "",
) -> dict:
    """The show's details as stored; ``name_de`` / ``description_de``: the German text staff may
    add (``nameDe`` / ``descriptionDe``; empty: German pages show the main text, booking/core/localized.py)."""
    name = " ".join(str(name or "").split())
    description = str(description or "").strip()
    name_de = " ".join(str(name_de or "").split())
    description_de = str(description_de or "").strip()
    errors = {}
    if not name or len(name) > 120:
        errors["name"] = gettext("The show needs a name of 1 to 120 characters.")
    if len(description) > 2000:
        errors["description"] = gettext("Please keep the description under 2,000 characters.")
    if len(name_de) > 120:
        errors["name_de"] = gettext("Please keep the German name under 120 characters.")
    if len(description_de) > 2000:
        errors["description_de"] = gettext("Please keep the German description under 2,000 characters.")
    if not isinstance(start, datetime) or start.tzinfo is None:
        errors["start"] = gettext("Give the start as a date and time.")
    elif start <= now:
        errors["start"] = gettext("The start must be in the future.")
    if not isinstance(end, datetime) or end.tzinfo is None:
        errors["end"] = gettext("Give the end as a date and time.")
    elif isinstance(start, datetime) and start.tzinfo and end <= start:
        errors["end"] = gettext("The end must be after the start.")
    elif isinstance(start, datetime) and start.tzinfo and end - start > MAX_DURATION:
        errors["end"] = gettext("A performance cannot last longer than 24 hours.")
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    return {
        "name": name,
        "description": description,
        "nameDe": name_de,
        "descriptionDe": description_de,
        "start": start,
        "end": end,
    }


def price_layout(theater: Theater) -> Layout:
    """The categories and rows a theater's prices are asked for and checked against: its layout,
    or for a sectioned venue all its sections together (staff's price form and create_session)."""
    if not theater.get("sections"):
        return theater["layout"]
    categories: dict = {}
    rows = []
    for section in theater["sections"]:
        for cat in section["layout"]["categories"]:
            categories.setdefault(cat["code"], cat)
        rows.extend(section["layout"]["rows"])
    return {"categories": list(categories.values()), "rows": rows}


def create_session(
    theater_id: ObjectId,
    *,
    name: str,
    description: str,
    start: datetime,
    end: datetime,
    prices: dict,
    name_de: str = "",
    description_de: str = "",
    published: bool = False,
    session_id: ObjectId | None = None,
    extra: dict | None = None,
) -> dict:
    """A new performance: the theater's whole seat map is copied into the session (preallocated).
    It starts as a draft (staff only, not held, not listed) unless ``published``. ``session_id``: an
    id chosen by the caller, so a repeated creation fails on the unique ``_id`` instead of making a
    twin; ``extra``: settings written with the document (one insert: never half a session)."""
    theater = mongo.theaters().find_one({"_id": theater_id})
    if theater is None:
        raise NotFound(gettext("No such theater."))
    now = clock.now()
    details = clean_details(name, description, start, end, now=now, name_de=name_de, description_de=description_de)
    status = SessionStatus.ON_SALE if published else SessionStatus.DRAFT
    if theater.get("sections"):
        return create_section_sessions(theater, details, prices, now, status=status, extra=extra)[0]
    layout = theater["layout"]
    session = _session_document(
        theater, session_names(theater), layout, details, clean_prices(prices, layout), now, status
    )
    session.update(extra or {})
    if session_id is not None:
        session["_id"] = session_id
    mongo.sessions().insert_one(session)
    listings.refresh([session["_id"]])
    return session


def _session_document(
    theater: Theater, names: dict, layout: Layout, details: dict, prices: dict, now, status: SessionStatus
) -> dict:
    """A session (a draft or on sale) with the layout copied in full (preallocated) and every seat free;
    ``names``: the theater's names it copies (theaters.session_names)."""
    seats = initial_states(layout)
    available = count_state(seats, FREE)
    return {
        "_id": ObjectId(),
        "theaterId": theater["_id"],
        **names,  # theaterName, and theaterNameDe when staff gave German names
        "front": theater.get("front", "stage"),  # the word at the front of the map (booking/venues/venue_front.py)
        **details,
        "prices": prices,
        "currency": settings.BOOKING_CURRENCY,
        "status": status,
        "layout": layout,
        "seats": seats,
        "seatsTotal": available,
        "seatsAvailable": available,
        "reservations": [],
        "version": 1,
        "createdOn": now,
        # every ticket sold for it starts with its order's reference (checkout.new_ticket_code):
        # a door looks an unknown code up on one shard (sales/checkin.py)
        "ticketCodesByRef": True,
        **listings.new_session_fields(),
    }


def create_section_sessions(
    theater: Theater,
    details: dict,
    prices: dict,
    now: datetime,
    *,
    status: SessionStatus = SessionStatus.DRAFT,
    extra: dict | None = None,
) -> list[dict]:
    """A performance in a sectioned venue: one session document per section, sharing a
    ``performanceId`` (the RavenDB seed's chunks), so no document carries the whole stadium.
    Each is an ordinary session to holds, checkout and expiry; cart items name the section's id.
    ``theaterName`` says venue and section (carts, orders and tickets copy it); ``venueName`` is
    the venue alone (what's on lists the performance once); ``...De``: the German names."""
    sections = theater["sections"]
    all_prices = clean_prices(prices, price_layout(theater))
    performance_id = ObjectId()
    docs = []
    for index, section in enumerate(sections):
        layout = section["layout"]
        section_prices = {code: all_prices[code] for code in category_codes_used(layout)}
        doc = _session_document(theater, session_names(theater, section), layout, details, section_prices, now, status)
        german = {"nameDe": section["nameDe"]} if section.get("nameDe") else {}
        doc.update(extra or {})
        doc.update(
            performanceId=performance_id,
            section={"name": section["name"], **german, "index": index, "count": len(sections)},
        )
        docs.append(doc)
    # first: the performance page reads the section ids from it (shard-targeted); a crash before
    # the sections leaves ids that find nothing (venues/performance_index.py)
    performance_index.record(performance_id, (doc["_id"] for doc in docs), details["end"])
    faults.point("performance.before_sections")
    mongo.sessions().insert_many(docs)
    listings.refresh(doc["_id"] for doc in docs)
    return docs


def update_session_details(
    session_id: ObjectId, *, name, description, start, end, prices, name_de="", description_de=""
) -> dict:
    session = mongo.sessions().find_one({"_id": session_id}, {"layout": 1, "status": 1})
    if session is None:
        raise NotFound(gettext("No such session."))
    details = clean_details(
        name, description, start, end, now=clock.now(), name_de=name_de, description_de=description_de
    )
    clean = clean_prices(prices, session["layout"])
    mongo.sessions().update_one(
        {"_id": session_id}, listings.due({"$set": {**details, "prices": clean}, "$inc": {"version": 1}})
    )
    listings.refresh([session_id])
    return mongo.sessions().find_one({"_id": session_id})


def refresh_seat_map(session_id: ObjectId) -> Session:
    """Copy the theater's current layout again; refused once any seat is held or sold."""
    session = mongo.sessions().find_one(
        {"_id": session_id}, {"theaterId": 1, "seatsTotal": 1, "seatsAvailable": 1, "seats": 1, "quota": 1}
    )
    if session is None:
        raise NotFound(gettext("No such session."))
    theater = mongo.theaters().find_one({"_id": session["theaterId"]})
    if theater is None:
        raise NotFound(gettext("The session's theater no longer exists."))
    if count_state(session["seats"], HELD) or count_state(session["seats"], SOLD):
        raise Conflict(gettext("The seat map cannot be changed once seats are held or sold."))
    seats = initial_states(theater["layout"])
    available = count_state(seats, FREE)
    quota = session.get("quota")
    # nothing taken and nothing blocked: the quota's floor is the free seats beyond it
    floor = {"quotaFloor": available - quota} if quota is not None else {}
    result = mongo.sessions().update_one(
        {"_id": session_id, "seats": session["seats"], "reservations": {"$size": 0}, "quota": quota},
        listings.due(
            {
                "$set": {
                    "layout": theater["layout"],
                    "seats": seats,
                    "seatsTotal": available,
                    "seatsAvailable": available,
                    **floor,
                },
                "$inc": {"version": 1, "layoutRev": 1},  # processes keep layouts per revision
            }
        ),
    )
    if not result.matched_count:
        raise Conflict(gettext("Seats were taken meanwhile; the seat map can no longer be changed."))
    listings.refresh([session_id])
    return mongo.sessions().find_one({"_id": session_id})


def set_blocked(session_id: ObjectId, coords: list[tuple[int, int]], blocked: bool) -> int:
    """Staff take free seats off sale (house seats) or put blocked seats back on sale.

    All or nothing: one conditional update requiring every cell to be in the expected state. A
    quota's floor (``domain.within_quota``) moves with the free seats, so blocking neither eats
    the quota nor unblocking raises it.
    """
    session = mongo.sessions().find_one({"_id": session_id}, {"layout": 1, "seats": 1, "quotaFloor": 1})
    if session is None:
        raise NotFound(gettext("No such session."))
    if not coords:
        raise InvalidRequest(gettext("Choose at least one seat."))
    if len(set(coords)) != len(coords):
        raise InvalidRequest(gettext("The same seat was chosen twice."))
    for r, c in coords:
        if seat_cell(session["layout"], r, c) is None:
            raise InvalidRequest(
                gettext("There is no seat at row %(row)d, position %(column)d.") % {"row": r + 1, "column": c + 1}
            )
    before, after = (FREE, BLOCKED) if blocked else (BLOCKED, FREE)
    wrong = [(r, c) for r, c in coords if session["seats"][r][c] != before]
    if wrong:
        names = ", ".join(seat_name(session["layout"], r, c) for r, c in wrong[:5])
        if blocked:
            raise Conflict(gettext("Only free seats can be blocked: %(seats)s.") % {"seats": names})
        raise Conflict(gettext("Only blocked seats can be released: %(seats)s.") % {"seats": names})
    change = -len(coords) if blocked else len(coords)
    has_quota = "quotaFloor" in session
    result = mongo.sessions().update_one(
        {"_id": session_id, "quotaFloor": {"$exists": has_quota}, **{cell_path(r, c): before for r, c in coords}},
        {
            "$set": {cell_path(r, c): after for r, c in coords},
            "$inc": {"seatsAvailable": change, "version": 1, **({"quotaFloor": change} if has_quota else {})},
        },
    )
    if not result.matched_count:
        raise Conflict(gettext("Some of those seats were taken meanwhile; please look again."))
    return len(coords)


def cancel_session(
    session_id: ObjectId,
    *,
    cancel_orders: bool = False,
    by: str = "",
    message: str = "",
    message_de: str = "",
    kept_per_ticket: int = 0,
) -> int:
    """Take a session off sale. Refused while it has paid orders, unless staff confirm canceling
    them: then a worker task refunds this session's tickets of each of them and mails everyone
    (sales/session_cancel.py). Holds in carts are released. ``message`` / ``message_de``: staff's
    words to the buyers in their mail (English and German); ``kept_per_ticket``: cents of each
    ticket's refund the theater keeps as a fee. Returns the paid orders to cancel."""
    session = mongo.sessions().find_one({"_id": session_id}, {"status": 1})
    if session is None:
        raise NotFound(gettext("No such session."))
    owning = {"$in": list(SEAT_OWNING_ORDER_STATES)}
    paid = mongo.orders().count_documents({"state": owning, "lines.sessionId": session_id})
    if paid and not cancel_orders:
        raise Conflict(
            gettext("This session has %(count)d paid orders. Confirm that they should be canceled too.")
            % {"count": paid}
        )
    session_cancel.start(session_id, by=by, message=message, message_de=message_de, kept_per_ticket=kept_per_ticket)
    return paid


# --- drafts: published, or deleted while nothing was ever sold ---


def _performance_ids(session: Mapping[str, Any]) -> list[ObjectId]:
    """The session's id, or every section of its sectioned performance (they go on sale and go
    away together)."""
    if not session.get("performanceId"):
        return [session["_id"]]
    found = mongo.sessions().find({"performanceId": session["performanceId"]}, {"_id": 1})
    return [doc["_id"] for doc in found]


def publish_session(session_id: ObjectId) -> int:
    """Put a draft on sale (on its sale window, if it has one): one conditional update per
    performance (``status: draft`` in the filter), a sectioned performance's sections together.
    Returns how many session documents went on sale."""
    session = mongo.sessions().find_one({"_id": session_id}, {"status": 1, "performanceId": 1})
    if session is None:
        raise NotFound(gettext("No such session."))
    if session.get("status") == SessionStatus.CANCELED:
        raise Conflict(gettext("This session was canceled; it cannot go on sale."))
    ids = _performance_ids(session)
    result = mongo.sessions().update_many(
        {"_id": {"$in": ids}, "status": SessionStatus.DRAFT},
        listings.due({"$set": {"status": SessionStatus.ON_SALE}, "$inc": {"version": 1}}),
    )
    if not result.modified_count:
        raise Conflict(gettext("This session is already on sale."))
    listings.refresh(ids)
    return result.modified_count


def has_orders(session_ids: list[ObjectId]) -> bool:
    """Whether any order ever had a ticket of these sessions (valid, refunded or exchanged away):
    such a performance stays for the books and can only be canceled. Three indexed reads."""
    clause = {"$in": session_ids}
    return any(
        mongo.orders().find_one({field: clause}, {"_id": 1}) is not None
        for field in ("lines.sessionId", "refundedLines.sessionId", "exchangedLines.sessionId")
    )


def delete_session(session_id: ObjectId) -> int:
    """Delete a draft, or a published session nobody has bought from (no order, no seat held or
    sold). Each document goes by a delete conditional on the version read before the orders were
    counted: a hold (the only way to a sale) bumps it, so a sale that starts meanwhile makes the
    delete refuse. Returns how many session documents were deleted."""
    session = mongo.sessions().find_one({"_id": session_id}, {"status": 1, "performanceId": 1})
    if session is None:
        raise NotFound(gettext("No such session."))
    ids = _performance_ids(session)
    docs = list(mongo.sessions().find({"_id": {"$in": ids}}, {"version": 1, "seats": 1, "reservations": 1}))
    busy = any(
        doc.get("reservations")
        or count_state(doc.get("seats") or [], HELD)
        or count_state(doc.get("seats") or [], SOLD)
        for doc in docs
    )
    if busy or has_orders(ids):
        raise Conflict(gettext("This session has orders or seats in carts: it can only be canceled, not deleted."))
    deleted = 0
    for doc in docs:
        faults.point("session_delete.before_delete")
        result = mongo.sessions().delete_one(
            {"_id": doc["_id"], "version": doc["version"], "reservations": {"$size": 0}}
        )
        if not result.deleted_count:
            raise Conflict(gettext("The session changed meanwhile (seats were taken); please look again."))
        deleted += 1
    mongo.listings().delete_many({"_id": {"$in": ids}})
    if session.get("performanceId"):
        performance_index.forget(session["performanceId"])
    return deleted


# --- the sale window: draft or published, on-sale and off-sale times, a members' presale ---

ACCESS_CODE_MAX = 64


def clean_sale_window(
    start: datetime, sale_opens, sale_closes, presale_opens, *, has_code: bool
) -> dict[str, datetime | None]:
    """The window's times, checked together (InvalidRequest with per-field messages): off-sale
    after on-sale and not after the start; a presale opens before the public on-sale and needs
    an access code."""
    errors = {}
    for field, value in (("sale_opens", sale_opens), ("sale_closes", sale_closes), ("presale_opens", presale_opens)):
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            errors[field] = "Give a date and time."
    if not errors:
        if sale_closes is not None and sale_closes > start:
            errors["sale_closes"] = gettext("Sales cannot close after the performance starts.")
        elif sale_closes is not None and sale_opens is not None and sale_closes <= sale_opens:
            errors["sale_closes"] = gettext("The off-sale time must be after the on-sale time.")
        if sale_opens is not None and sale_opens >= start:
            errors["sale_opens"] = gettext("Sales must open before the performance starts.")
        if presale_opens is not None:
            if sale_opens is None:
                errors["presale_opens"] = gettext("A presale needs a public on-sale time to end at.")
            elif presale_opens >= sale_opens:
                errors["presale_opens"] = gettext("The presale must open before the public on-sale time.")
            elif not has_code:
                errors["presale_code"] = gettext("A presale needs an access code.")
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    return {"saleOpens": sale_opens, "saleCloses": sale_closes, "presaleOpens": presale_opens}


def hash_access_code(code: str, salt: str) -> str:
    """An access code as stored: HMAC-SHA256 keyed with SECRET_KEY and the presale's salt, so a
    database copy alone does not let anyone try codes offline."""
    key = hashlib.sha256(f"booking.access-code|{settings.SECRET_KEY}".encode()).digest()
    return hmac.new(key, f"{salt}|{normalize_access_code(code)}".encode(), hashlib.sha256).hexdigest()


def clean_access_code(code) -> str:
    """A new members' access code as stored before hashing ("" when none is given)."""
    normalized = normalize_access_code(code)
    if code and len(normalized) < 4:
        raise InvalidRequest(
            gettext("Use an access code of at least 4 characters."), fields={"presale_code": gettext("Too short.")}
        )
    return normalized


def normalize_access_code(code) -> str:
    return " ".join(str(code or "").split()).upper()[:ACCESS_CODE_MAX]


def set_sale_window(
    session_id: ObjectId,
    *,
    published: bool,
    sale_opens: datetime | None,
    sale_closes: datetime | None,
    presale_opens: datetime | None = None,
    presale_code: str = "",
) -> dict:
    """Staff set a session draft or published and its sale window. ``presale_code``: a new
    members' code (blank keeps the current one; a presale removed forgets it). A new code gets a
    new key, so buyers who unlocked the old one must enter the new one. Back to draft only while
    nothing is held or sold. One conditional update; a canceled session is refused."""
    session = mongo.sessions().find_one({"_id": session_id}, {"start": 1, "status": 1, "presale": 1, "seats": 1})
    if session is None:
        raise NotFound(gettext("No such session."))
    if session.get("status") == SessionStatus.CANCELED:
        raise Conflict(gettext("This session was canceled; its sale window can no longer change."))
    code = clean_access_code(presale_code)
    clean_sale_window(
        session["start"], sale_opens, sale_closes, presale_opens, has_code=bool(code or session.get("presale"))
    )
    query: dict = {"_id": session_id, "status": {"$in": [SessionStatus.DRAFT, SessionStatus.ON_SALE]}}
    sets: dict = {"status": SessionStatus.ON_SALE if published else SessionStatus.DRAFT}
    unsets: dict = {}
    for field, value in (("saleOpens", sale_opens), ("saleCloses", sale_closes)):
        if value is None:
            unsets[field] = ""
        else:
            sets[field] = value
    if presale_opens is None:
        unsets["presale"] = ""
    elif code:
        salt = secrets.token_hex(8)
        sets["presale"] = {
            "opens": presale_opens,
            "codeHash": hash_access_code(code, salt),
            "salt": salt,
            "key": secrets.token_urlsafe(9),
        }
    else:
        sets["presale.opens"] = presale_opens
    if not published:
        if count_state(session["seats"], HELD) or count_state(session["seats"], SOLD):
            raise Conflict(gettext("Seats are held or sold: this session can no longer go back to draft."))
        query["reservations"] = {"$size": 0}
    update: dict = {"$set": sets, "$inc": {"version": 1}}
    if unsets:
        update["$unset"] = unsets
    if not mongo.sessions().update_one(query, listings.due(update)).matched_count:
        raise Conflict(gettext("The session changed meanwhile (canceled, or seats taken); please look again."))
    listings.refresh([session_id])
    return mongo.sessions().find_one({"_id": session_id})


# The same work for a session without a presale, so an answer's time does not tell which exist.
_NO_PRESALE = {"salt": "-", "codeHash": "0" * 64, "key": ""}


def unlock_presale(session_id: ObjectId | None, code: str) -> str | None:
    """The presale key a members' access code opens for this session, or None (wrong code, no
    presale, no such session: the same answer after the same work)."""
    doc = mongo.sessions().find_one({"_id": session_id}, {"presale": 1, "status": 1}) if session_id else None
    presale = (doc or {}).get("presale") or _NO_PRESALE
    given = hash_access_code(code, presale["salt"])
    matches = hmac.compare_digest(given, presale["codeHash"])
    if matches and presale["key"] and doc is not None and doc.get("status") == SessionStatus.ON_SALE:
        return presale["key"]
    return None
