"""The settings payments read from the documents: a session's box office, a theater's VAT."""

import time

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext

from booking.core import mongo
from booking.core.domain import Session
from booking.core.errors import NotFound
from booking.core.lru import LRUCache
from booking.payments import money

# A theater's VAT settings as orders read them, kept per process for BOOKING_VAT_CACHE_SECONDS
# (checkout's one read of theaters, a round trip of every checkout, for a setting staff change
# a few times a year): (when read, {_id, vatRate, vatRates}). The process that changes them
# forgets its copy at once; the others take the new rates within the lifetime.
_theater_vat: LRUCache[ObjectId, tuple[float, dict]] = LRUCache(256)


def monotonic() -> float:  # a function of its own: the tests move it forward
    return time.monotonic()


def theater_vat_settings(theater_ids) -> dict:
    """{theater _id: {vatRate, vatRates, donations}} of these theaters (money.ticket_rate and
    the donation offer read them); a
    theater that is gone is left out. One read of theaters for those not kept (or none)."""
    lifetime = settings.BOOKING_VAT_CACHE_SECONDS
    now = monotonic()
    found, missing = {}, []
    for theater_id in dict.fromkeys(theater_ids):
        kept = _theater_vat.get(theater_id) if lifetime > 0 else None
        if kept is not None and now - kept[0] < lifetime:
            found[theater_id] = kept[1]
        else:
            missing.append(theater_id)
    if missing:
        for theater in mongo.theaters().find({"_id": {"$in": missing}}, {"vatRate": 1, "vatRates": 1, "donations": 1}):
            found[theater["_id"]] = theater
            if lifetime > 0:
                _theater_vat.put(theater["_id"], (now, theater))
    return found


def deadline_minutes(session: Session) -> int:
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
    forget_theater(theater_id)
    if not done.matched_count:
        raise NotFound(gettext("No such theater."))


def forget_theater(theater_id: ObjectId) -> None:
    """Its settings changed: this process reads them again at once."""
    _theater_vat.put(theater_id, (float("-inf"), {}))
