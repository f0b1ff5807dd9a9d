"""Theaters: the hall templates sessions are created from."""

from bson import ObjectId
from django.utils.translation import gettext
from pymongo import ReturnDocument

from .. import clock, mongo
from ..errors import Conflict, InvalidRequest, NotFound
from ..layouts import seat_count, validate_layout
from ..venue_front import clean_front


def _clean_name(name: str) -> str:
    name = " ".join(str(name or "").split())
    if not name or len(name) > 100:
        raise InvalidRequest(gettext("A theater needs a name of 1 to 100 characters."))
    return name


def create_theater(name: str, layout: dict, front: str | None = None) -> dict:
    layout = validate_layout(layout)
    now = clock.now()
    theater = {
        "_id": ObjectId(),
        "name": _clean_name(name),
        "front": clean_front(front),
        "layout": layout,
        "seatCount": seat_count(layout),
        "createdOn": now,
        "modifiedOn": now,
    }
    mongo.theaters().insert_one(theater)
    return theater


def update_theater(theater_id: ObjectId, name: str, layout: dict) -> dict:
    """Changing a theater changes the template only; existing sessions keep their copied map."""
    layout = validate_layout(layout)
    result = mongo.theaters().update_one(
        {"_id": theater_id},
        {
            "$set": {
                "name": _clean_name(name),
                "layout": layout,
                "seatCount": seat_count(layout),
                "modifiedOn": clock.now(),
            }
        },
    )
    if not result.matched_count:
        raise NotFound("No such theater.")
    return mongo.theaters().find_one({"_id": theater_id})


def delete_theater(theater_id: ObjectId) -> None:
    if mongo.sessions().count_documents({"theaterId": theater_id}, limit=1):
        raise Conflict("This theater still has sessions; delete or cancel them first.")
    result = mongo.theaters().delete_one({"_id": theater_id})
    if not result.deleted_count:
        raise NotFound("No such theater.")


def create_sectioned_theater(name: str, sections: list[dict], front: str | None = None) -> dict:
    """A venue too big for one seat map (a stadium): ``sections`` is ``[{name, layout}]``, each an
    ordinary layout. A performance there is one session document per section (see sessions.py)."""
    from ..layouts import validate_sections

    sections = validate_sections(sections)
    now = clock.now()
    theater = {
        "_id": ObjectId(),
        "name": _clean_name(name),
        "front": clean_front(front),
        "sections": sections,
        "seatCount": sum(seat_count(s["layout"]) for s in sections),
        "createdOn": now,
        "modifiedOn": now,
    }
    mongo.theaters().insert_one(theater)
    return theater


def update_sectioned_theater(theater_id: ObjectId, name: str, sections: list[dict]) -> dict:
    """Staff edit a sectioned venue's name and sections. Performances already created keep their
    section documents (as a hall's sessions keep their seat map)."""
    from ..layouts import validate_sections

    sections = validate_sections(sections)
    updated = mongo.theaters().find_one_and_update(
        {"_id": theater_id, "sections": {"$exists": True}},
        {
            "$set": {
                "name": _clean_name(name),
                "sections": sections,
                "seatCount": sum(seat_count(s["layout"]) for s in sections),
                "modifiedOn": clock.now(),
            }
        },
        return_document=ReturnDocument.AFTER,
    )
    if updated is None:
        raise NotFound("No such sectioned venue.")
    return updated
