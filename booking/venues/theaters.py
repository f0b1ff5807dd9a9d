"""Theaters: the hall templates sessions are created from."""

from bson import ObjectId
from django.utils.translation import gettext
from pymongo import ReturnDocument

from booking.core import clock, mongo
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.sales import listings
from booking.venues.layouts import seat_count, validate_layout
from booking.venues.venue_front import clean_front


def _clean_name(name: str) -> str:
    name = " ".join(str(name or "").split())
    if not name or len(name) > 100:
        raise InvalidRequest(gettext("A theater needs a name of 1 to 100 characters."))
    return name


def _clean_name_de(name_de: str) -> str:
    """The optional German name (``nameDe``; German pages show it, booking/core/localized.py)."""
    name_de = " ".join(str(name_de or "").split())
    if len(name_de) > 100:
        raise InvalidRequest(gettext("Please keep the German name of the theater under 100 characters."))
    return name_de


def _names(name: str, name_de: str) -> tuple[dict, dict]:
    """``$set`` and ``$unset`` of a theater's name and German name (no German name: no field)."""
    german = _clean_name_de(name_de)
    return {"name": _clean_name(name), **({"nameDe": german} if german else {})}, ({} if german else {"nameDe": ""})


def create_theater(name: str, layout: dict, front: str | None = None, name_de: str = "") -> dict:
    layout = validate_layout(layout)
    now = clock.now()
    names, _ = _names(name, name_de)
    theater = {
        "_id": ObjectId(),
        **names,
        "front": clean_front(front),
        "layout": layout,
        "seatCount": seat_count(layout),
        "createdOn": now,
        "modifiedOn": now,
    }
    mongo.theaters().insert_one(theater)
    return theater


def update_theater(theater_id: ObjectId, name: str, layout: dict, name_de: str = "") -> dict:
    """Changing a theater's layout changes the template only: existing sessions keep their copied
    map. Its names reach its sessions too (``rename_sessions``)."""
    layout = validate_layout(layout)
    names, unset = _names(name, name_de)
    update: dict = {"$set": {**names, "layout": layout, "seatCount": seat_count(layout), "modifiedOn": clock.now()}}
    if unset:
        update["$unset"] = unset
    result = mongo.theaters().update_one({"_id": theater_id}, update)
    if not result.matched_count:
        raise NotFound("No such theater.")
    theater = mongo.theaters().find_one({"_id": theater_id})
    rename_sessions(theater)
    return theater


def session_names(theater: dict, section: dict | None = None) -> dict:
    """What a session copies of its theater's names: ``theaterName`` (for a section "venue –
    section") and, when staff gave German names, ``theaterNameDe``; a section's session also
    ``venueName`` / ``venueNameDe``."""
    venue, venue_de = theater["name"], theater.get("nameDe", "")
    if section is None:
        return {"theaterName": venue, **({"theaterNameDe": venue_de} if venue_de else {})}
    section_name, section_de = section["name"], section.get("nameDe", "")
    names = {"theaterName": f"{venue} – {section_name}", "venueName": venue}
    if venue_de or section_de:
        names["theaterNameDe"] = f"{venue_de or venue} – {section_de or section_name}"
    if venue_de:
        names["venueNameDe"] = venue_de
    return names


def rename_sessions(theater: dict) -> int:
    """Staff renamed a theater (or gave it a German name): its sessions that have not started
    show the new names (what's on, the seat map, the cart), each through ``listings.due`` so the
    listing follows. A section's session keeps its own section names (as it keeps its seat map).
    Orders keep the names they were bought under. Returns how many sessions changed."""
    query = {"theaterId": theater["_id"], "start": {"$gt": clock.now()}}
    fields = {"theaterName": 1, "theaterNameDe": 1, "venueName": 1, "venueNameDe": 1, "section": 1}
    changed = []
    for session in mongo.sessions().find(query, fields):
        section = session.get("section")
        names = session_names(theater, section)
        kept = ("theaterName", "theaterNameDe", "venueName", "venueNameDe")
        if all(session.get(k) == names.get(k) for k in kept):
            continue
        update: dict = {"$set": names}
        gone = {k: "" for k in kept if k not in names and k in session}
        if gone:
            update["$unset"] = gone
        mongo.sessions().update_one({"_id": session["_id"]}, listings.due(update))
        changed.append(session["_id"])
    listings.refresh(changed)
    return len(changed)


def delete_theater(theater_id: ObjectId) -> None:
    if mongo.sessions().count_documents({"theaterId": theater_id}, limit=1):
        raise Conflict("This theater still has sessions; delete or cancel them first.")
    result = mongo.theaters().delete_one({"_id": theater_id})
    if not result.deleted_count:
        raise NotFound("No such theater.")


def create_sectioned_theater(name: str, sections: list[dict], front: str | None = None, name_de: str = "") -> dict:
    """A venue too big for one seat map (a stadium): ``sections`` is ``[{name, layout}]``, each an
    ordinary layout. A performance there is one session document per section (see sales/sessions.py)."""
    from booking.venues.layouts import validate_sections

    sections = validate_sections(sections)
    now = clock.now()
    names, _ = _names(name, name_de)
    theater = {
        "_id": ObjectId(),
        **names,
        "front": clean_front(front),
        "sections": sections,
        "seatCount": sum(seat_count(s["layout"]) for s in sections),
        "createdOn": now,
        "modifiedOn": now,
    }
    mongo.theaters().insert_one(theater)
    return theater


def update_sectioned_theater(theater_id: ObjectId, name: str, sections: list[dict], name_de: str = "") -> dict:
    """Staff edit a sectioned venue's name and sections. Performances already created keep their
    section documents (as a hall's sessions keep their seat map)."""
    from booking.venues.layouts import validate_sections

    sections = validate_sections(sections)
    names, unset = _names(name, name_de)
    update: dict = {
        "$set": {
            **names,
            "sections": sections,
            "seatCount": sum(seat_count(s["layout"]) for s in sections),
            "modifiedOn": clock.now(),
        }
    }
    if unset:
        update["$unset"] = unset
    updated = mongo.theaters().find_one_and_update(
        {"_id": theater_id, "sections": {"$exists": True}}, update, return_document=ReturnDocument.AFTER
    )
    if updated is None:
        raise NotFound("No such sectioned venue.")
    rename_sessions(updated)
    return updated
