"""Theaters and performances: the token's theater, its performances (filtered, paged by a
cursor), one performance with its free seats per category and every seat's state, and its
availability alone (the cheap call a website's calendar makes)."""

import base64
import binascii
import json
from datetime import UTC, datetime

from bson import ObjectId
from bson.errors import InvalidId
from django.utils.translation import gettext
from ninja import Field, Query, Router

from booking.api import schemas
from booking.api.auth import needs, token_of
from booking.api.common import NotFoundHere, error_body, json_response, path_id
from booking.core import mongo
from booking.core.domain import SessionStatus, seats_left
from booking.sales import availability as seats
from booking.web.api_tokens import READ_PERFORMANCES

router = Router(tags=["performances"])
LIST_FIELDS = {**seats.HEAD_FIELDS}


def theater_out(theater: dict) -> dict:
    return {"id": str(theater["_id"]), "name": theater.get("name", ""), "seat_count": theater.get("seatCount")}


@router.get("/theaters/", response=list[schemas.TheaterOut], **needs(READ_PERFORMANCES), summary="The token's theater")
def theaters(request):
    token = token_of(request)
    found = mongo.theaters().find_one({"_id": token["theaterId"]}, {"name": 1, "seatCount": 1})
    return [theater_out(found)] if found else []


@router.get("/theaters/{theater_id}/", response=schemas.TheaterOut, **needs(READ_PERFORMANCES), summary="A theater")
def theater(request, theater_id: str):
    token = token_of(request)
    wanted = path_id(theater_id, gettext("No such theater."))
    if wanted != token["theaterId"]:
        raise NotFoundHere(gettext("No such theater."))
    found = mongo.theaters().find_one({"_id": wanted}, {"name": 1, "seatCount": 1})
    if found is None:
        raise NotFoundHere(gettext("No such theater."))
    return theater_out(found)


class PerformanceFilters(schemas.Request):
    start_from: datetime | None = Field(None, description="performances starting at or after this")
    start_until: datetime | None = Field(None, description="... and before this")
    status: SessionStatus | None = None
    cursor: str | None = Field(None, max_length=200)
    limit: int = Field(50, ge=1, le=200)


def performance_out(session: dict) -> dict:
    section = session.get("section") or {}
    return {
        "id": str(session["_id"]),
        "name": session.get("name", ""),
        "theater_id": str(session.get("theaterId", "")),
        "theater_name": session.get("theaterName", ""),
        "start": session["start"],
        "end": session.get("end"),
        "status": session.get("status", ""),
        "currency": session.get("currency", ""),
        "seats_total": session.get("seatsTotal", 0),
        "seats_available": seats_left(session),
        "performance_id": str(session["performanceId"]) if session.get("performanceId") else None,
        "section": section.get("name"),
    }


def encode_cursor(session: dict) -> str:
    start = session["start"].replace(tzinfo=session["start"].tzinfo or UTC)
    raw = json.dumps([int(start.timestamp() * 1000), str(session["_id"])]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, ObjectId] | None:
    try:
        millis, raw_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        return datetime.fromtimestamp(int(millis) / 1000, UTC), ObjectId(str(raw_id))
    except (ValueError, TypeError, InvalidId, binascii.Error, OverflowError, OSError):
        return None


@router.get("/performances/", response=schemas.PerformancePage, **needs(READ_PERFORMANCES), summary="Performances")
def performances(request, filters: Query[PerformanceFilters]):
    """The theater's performances by start (then id), a page at a time: pass ``next_cursor`` back
    as ``cursor`` for the next page (the same filters). One indexed query (``theaterId+start+_id``)."""
    token = token_of(request)
    query: dict = {"theaterId": token["theaterId"]}
    span: dict = {}
    if filters.start_from:
        span["$gte"] = filters.start_from
    if filters.start_until:
        span["$lt"] = filters.start_until
    # a draft is the staff's alone until it is published
    query["status"] = {"$ne": SessionStatus.DRAFT}
    if filters.status:
        query["status"] = str(filters.status) if filters.status != SessionStatus.DRAFT else {"$in": []}
    if filters.cursor:
        after = decode_cursor(filters.cursor)
        if after is None:
            message = gettext("This cursor is not one this API gave.")
            return json_response(400, error_body(400, message, {"cursor": message}))
        start, last_id = after
        query["$or"] = [{"start": {"$gt": start}}, {"start": start, "_id": {"$gt": last_id}}]
    if span:
        query["start"] = span
    found = list(mongo.sessions().find(query, LIST_FIELDS).sort([("start", 1), ("_id", 1)]).limit(filters.limit + 1))
    page = found[: filters.limit]
    more = len(found) > filters.limit
    return {
        "performances": [performance_out(s) for s in page],
        "next_cursor": encode_cursor(page[-1]) if more and page else None,
    }


def _availability(request, performance_id: str, *, with_seats: bool) -> seats.Availability:
    token = token_of(request)
    missing = gettext("No such performance.")
    found = seats.availability(path_id(performance_id, missing), theater_id=token["theaterId"], with_seats=with_seats)
    if found is None:
        raise NotFoundHere(missing)
    return found


def categories_out(found: seats.Availability) -> list[dict]:
    return [vars(c) for c in found.categories]


@router.get(
    "/performances/{performance_id}/",
    response=schemas.PerformanceDetailOut,
    **needs(READ_PERFORMANCES),
    summary="A performance with its seat map",
)
def performance(request, performance_id: str):
    found = _availability(request, performance_id, with_seats=True)
    return {
        **performance_out(found.session),
        "version": found.session.get("version", 0),
        "categories": categories_out(found),
        "seats": found.seats,
    }


@router.get(
    "/performances/{performance_id}/availability/",
    response=schemas.AvailabilityOut,
    **needs(READ_PERFORMANCES),
    summary="Free seats per category",
)
def performance_availability(request, performance_id: str):
    found = _availability(request, performance_id, with_seats=False)
    return {
        "id": str(found.session["_id"]),
        "status": found.session.get("status", ""),
        "seats_total": found.session.get("seatsTotal", 0),
        "seats_available": seats_left(found.session),
        "version": found.session.get("version", 0),
        "categories": categories_out(found),
    }
