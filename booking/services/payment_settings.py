"""The settings payments read from the documents: a session's box office, a theater's VAT."""

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext

from .. import mongo
from ..errors import NotFound
from ..payments import money


def deadline_minutes(session: dict) -> int:
    box = session.get("boxOffice") or {}
    return int(box.get("deadlineMinutes", settings.BOOKING_BOX_OFFICE_DEADLINE_MINUTES))


def set_box_office(session_id: ObjectId, *, enabled: bool, deadline_minutes: int) -> None:
    """Reservations already made keep the deadline they were given (their cart's expiresAt)."""
    done = mongo.sessions().update_one(
        {"_id": session_id},
        {"$set": {"boxOffice": {"enabled": bool(enabled), "deadlineMinutes": int(deadline_minutes)}}},
    )
    if not done.matched_count:
        raise NotFound(gettext("No such session."))


def set_vat_rates(theater_id: ObjectId, *, rate: str, per_category: dict) -> None:
    """Orders keep the rate of each line from when they were made (order lines' ``vat``)."""
    clean = {code: money.rate_text(value) for code, value in per_category.items()}
    done = mongo.theaters().update_one(
        {"_id": theater_id}, {"$set": {"vatRate": money.rate_text(rate), "vatRates": clean}}
    )
    if not done.matched_count:
        raise NotFound(gettext("No such theater."))
