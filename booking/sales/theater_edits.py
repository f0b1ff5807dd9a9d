"""Staff edit a theater: its template changes (venues/theaters.py), and its sessions that have not
started follow its names, each write through ``listings.due`` so what's on follows too."""

from collections.abc import Mapping, Sequence
from typing import Any

from bson import ObjectId
from django.utils.translation import gettext
from pymongo import ReturnDocument

from booking.core import clock, mongo
from booking.core.domain import Theater
from booking.core.errors import NotFound
from booking.sales import listings
from booking.venues.layouts import seat_count, validate_layout, validate_sections
from booking.venues.theaters import name_fields, session_names


def update_theater(theater_id: ObjectId, name: str, layout: Mapping[str, Any], name_de: str = "") -> Theater:
    """Changing a theater's layout changes the template only: existing sessions keep their copied
    map. Its names reach its sessions too (``rename_sessions``)."""
    clean = validate_layout(layout)
    names, unset = name_fields(name, name_de)
    update: dict = {"$set": {**names, "layout": clean, "seatCount": seat_count(clean), "modifiedOn": clock.now()}}
    if unset:
        update["$unset"] = unset
    result = mongo.theaters().update_one({"_id": theater_id}, update)
    if not result.matched_count:
        raise NotFound(gettext("No such theater."))
    theater = mongo.theaters().find_one({"_id": theater_id})
    rename_sessions(theater)
    return theater


def rename_sessions(theater: Theater) -> int:
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


def update_sectioned_theater(
    theater_id: ObjectId, name: str, sections: Sequence[Mapping[str, Any]], name_de: str = ""
) -> Theater:
    """Staff edit a sectioned venue's name and sections. Performances already created keep their
    section documents (as a hall's sessions keep their seat map)."""
    clean_sections = validate_sections(sections)
    names, unset = name_fields(name, name_de)
    update: dict = {
        "$set": {
            **names,
            "sections": clean_sections,
            "seatCount": sum(seat_count(s["layout"]) for s in clean_sections),
            "modifiedOn": clock.now(),
        }
    }
    if unset:
        update["$unset"] = unset
    updated = mongo.theaters().find_one_and_update(
        {"_id": theater_id, "sections": {"$exists": True}}, update, return_document=ReturnDocument.AFTER
    )
    if updated is None:
        raise NotFound(gettext("No such sectioned venue."))
    rename_sessions(updated)
    return updated
