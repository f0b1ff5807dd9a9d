"""Theaters: the hall templates sessions are created from. Staff's edits of one, which its
sessions follow, are sales/theater_edits.py."""

from collections.abc import Mapping, Sequence
from typing import Any

from bson import ObjectId
from django.utils.translation import gettext
from pymongo import ReturnDocument

from booking.core import clock, mongo
from booking.core.domain import Section, Theater
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.venues.layouts import seat_count, validate_layout, validate_sections
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


def name_fields(name: str, name_de: str) -> tuple[dict, dict]:
    """``$set`` and ``$unset`` of a theater's name and German name (no German name: no field)."""
    german = _clean_name_de(name_de)
    return {"name": _clean_name(name), **({"nameDe": german} if german else {})}, ({} if german else {"nameDe": ""})


def create_theater(name: str, layout: Mapping[str, Any], front: str | None = None, name_de: str = "") -> Theater:
    """``layout``: as staff drew or imported it (checked here)."""
    clean = validate_layout(layout)
    now = clock.now()
    names, _ = name_fields(name, name_de)
    theater: Theater = {
        "_id": ObjectId(),
        "name": names["name"],
        "layout": clean,
        "seatCount": seat_count(clean),
        "createdOn": now,
        "modifiedOn": now,
    }
    if "nameDe" in names:
        theater["nameDe"] = names["nameDe"]
    theater["front"] = clean_front(front)
    mongo.theaters().insert_one(theater)
    return theater


def session_names(theater: Theater, section: Section | None = None) -> dict:
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


def delete_theater(theater_id: ObjectId) -> None:
    if mongo.sessions().count_documents({"theaterId": theater_id}, limit=1):
        raise Conflict(gettext("This theater still has sessions; delete or cancel them first."))
    result = mongo.theaters().delete_one({"_id": theater_id})
    if not result.deleted_count:
        raise NotFound(gettext("No such theater."))


def create_sectioned_theater(
    name: str, sections: Sequence[Mapping[str, Any]], front: str | None = None, name_de: str = ""
) -> Theater:
    """A venue too big for one seat map (a stadium): ``sections`` is ``[{name, layout}]``, each an
    ordinary layout. A performance there is one session document per section (see sales/sessions.py)."""
    clean = validate_sections(sections)
    now = clock.now()
    names, _ = name_fields(name, name_de)
    theater: Theater = {
        "_id": ObjectId(),
        "name": names["name"],
        "sections": clean,
        "seatCount": sum(seat_count(s["layout"]) for s in clean),
        "createdOn": now,
        "modifiedOn": now,
    }
    if "nameDe" in names:
        theater["nameDe"] = names["nameDe"]
    theater["front"] = clean_front(front)
    mongo.theaters().insert_one(theater)
    return theater


def set_admit_whole_booking(theater_id: ObjectId, *, allowed: bool) -> Theater:
    """Whether one scan at the door lets a booking's every ticket for that performance in (a
    family or a school class arriving together); read by each door's scope (sales/checkin.py)."""
    found = mongo.theaters().find_one_and_update(
        {"_id": theater_id},
        {"$set": {"admitWholeBooking": bool(allowed), "modifiedOn": clock.now()}},
        return_document=ReturnDocument.AFTER,
    )
    if found is None:
        raise NotFound(gettext("No such theater."))
    return found
