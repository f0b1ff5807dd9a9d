"""Reads for the admin's promo code pages (booking/control/promo_codes.py): codes, voucher batches,
and the choices the code form offers (sessions, ticket types, seat categories)."""

from bson import ObjectId
from django.utils.translation import gettext as _

from booking.core import clock, mongo
from booking.core.domain import SessionStatus
from booking.core.formatting import format_money, performance_start
from booking.core.localized import ticket_type_name
from booking.sales import offers

LIST_LIMIT = 200
BATCH_LIMIT = 100


def codes(limit: int = LIST_LIMIT) -> list[dict]:
    """Codes made one by one (not vouchers of a batch), newest first (the batch_created index:
    a missing batch is null there)."""
    cursor = mongo.promo_codes().find({"batch": None}).sort([("createdOn", -1), ("_id", -1)]).limit(limit)
    return [{**doc, "id": str(doc["_id"]), "terms": terms_text(doc)} for doc in cursor]


def batches(limit: int = BATCH_LIMIT) -> list[dict]:
    """Voucher batches, newest first: size, vouchers used, and the terms they share."""
    pipeline: list[dict] = [
        {"$match": {"batch": {"$type": "string"}}},
        {
            "$group": {
                "_id": "$batch",
                "count": {"$sum": 1},
                "used": {"$sum": {"$cond": [{"$gt": ["$uses", 0]}, 1, 0]}},
                "createdOn": {"$min": "$createdOn"},
                "kind": {"$first": "$kind"},
                "value": {"$first": "$value"},
            }
        },
        {"$sort": {"createdOn": -1, "_id": -1}},
        {"$limit": limit},
    ]
    return [{**b, "id": b["_id"], "terms": terms_text(b)} for b in mongo.promo_codes().aggregate(pipeline)]


def batch(batch_id: str) -> dict | None:
    """One batch: its first voucher's terms, its size and how many were used."""
    first = mongo.promo_codes().find_one({"batch": batch_id}, sort=[("createdOn", -1), ("_id", -1)])
    if first is None:
        return None
    count = mongo.promo_codes().count_documents({"batch": batch_id})
    used = mongo.promo_codes().count_documents({"batch": batch_id, "uses": {"$gt": 0}})
    return {**first, "batch": batch_id, "count": count, "used": used, "terms": terms_text(first)}


def get_code(code_id: ObjectId) -> dict | None:
    doc = mongo.promo_codes().find_one({"_id": code_id})
    return {**doc, "id": str(doc["_id"]), "terms": terms_text(doc)} if doc else None


def terms_text(doc: dict) -> str:
    """What a code takes off, as staff read it: "10 % off", "€5.00 off", "fixed price €10.00"."""
    if doc["kind"] == "percent":
        return _("%(value)s %% off") % {"value": doc["value"]}
    if doc["kind"] == "amount":
        return _("%(amount)s off") % {"amount": format_money(doc["value"])}
    return _("fixed price %(amount)s") % {"amount": format_money(doc["value"])}


def session_choices(also: ObjectId | None = None) -> list[tuple[str, str]]:
    """Sessions a code can be for: upcoming ones (drafts too), and ``also`` (the code's own,
    which may have started since)."""
    query = {"start": {"$gt": clock.now()}, "status": {"$in": [SessionStatus.ON_SALE, SessionStatus.DRAFT]}}
    fields = {"name": 1, "start": 1, "theaterName": 1}
    found = list(mongo.sessions().find(query, fields).sort([("start", 1), ("_id", 1)]).limit(500))
    if also is not None and all(s["_id"] != also for s in found):
        own = mongo.sessions().find_one({"_id": also}, fields)
        if own is not None:
            found.insert(0, own)
    return [(str(s["_id"]), session_label(s)) for s in found]


def session_label(session: dict) -> str:
    when = performance_start(session["start"]) if session.get("start") else ""
    return f"{session.get('name', '')} – {when} – {session.get('theaterName', '')}"


def ticket_type_choices() -> list[tuple[str, str]]:
    """Every theater's ticket types (codes are per theater; the same code counts everywhere)."""
    seen: dict[str, str] = {offers.FULL: ticket_type_name(offers.FULL_PRICE)}
    for theater in mongo.theaters().find({}, {"ticketTypes": 1}).sort([("name", 1), ("_id", 1)]):
        for t in offers.ticket_types(theater):
            seen.setdefault(t["code"], ticket_type_name(t))
    return list(seen.items())


def category_choices() -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for theater in mongo.theaters().find({}, {"layout.categories": 1}).sort([("name", 1), ("_id", 1)]):
        for c in (theater.get("layout") or {}).get("categories", []):
            seen.setdefault(c["code"], c["name"])
    return sorted(seen.items())


def series_label(series: dict | None) -> str:
    if not series:
        return ""
    theater = mongo.theaters().find_one({"_id": series["theaterId"]}, {"name": 1}) or {}
    return f"{series['name']} ({theater.get('name', '?')})"
