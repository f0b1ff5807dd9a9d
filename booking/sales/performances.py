"""A sectioned venue's performance as one thing for staff: its section documents
(``performanceId``) blocked, released or canceled together, each through the one-session service
(``sales.sessions``), so every seat change stays one conditional update on one document."""

from bson import ObjectId
from django.utils.translation import gettext
from pymongo import ReturnDocument

from booking.core import clock, faults, mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, SessionStatus
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.sales import sessions as session_service
from booking.sales.performance_details import apply_details, sections_of
from booking.sales.session_prices import clean_prices
from booking.venues.seat_grid import BLOCKED, FREE

ATTEMPTS = 4  # a buyer may take a seat between the read and the write: read again


def set_section_blocked(session_id: ObjectId, blocked: bool) -> int:
    """Block every free seat of one section (house seats), or put every blocked one back on sale.
    Returns how many seats changed (seats taken meanwhile are left as they are)."""
    before = FREE if blocked else BLOCKED
    for _attempt in range(ATTEMPTS):
        session = mongo.sessions().find_one({"_id": session_id, "performanceId": {"$exists": True}}, {"seats": 1})
        if session is None:
            raise NotFound(gettext("No such section."))
        coords = [(r, c) for r, row in enumerate(session["seats"]) for c, state in enumerate(row) if state == before]
        if not coords:
            return 0
        try:
            return session_service.set_blocked(session_id, coords, blocked)
        except Conflict:
            continue  # someone held a seat meanwhile
    raise Conflict(gettext("The section kept changing; please try again."))


def set_sections_blocked(performance_id: ObjectId, section_ids: list[ObjectId], blocked: bool) -> int:
    known = {s["_id"] for s in sections_of(performance_id, {"_id": 1})}
    if not known:
        raise NotFound(gettext("No such performance."))
    if not section_ids or not set(section_ids) <= known:
        raise InvalidRequest(gettext("Choose sections of this performance."))
    return sum(set_section_blocked(section_id, blocked) for section_id in section_ids)


def paid_orders(performance_id: ObjectId) -> int:
    ids = [s["_id"] for s in sections_of(performance_id, {"_id": 1})]
    owning = {"$in": list(SEAT_OWNING_ORDER_STATES)}
    return mongo.orders().count_documents({"state": owning, "lines.sessionId": {"$in": ids}}) if ids else 0


def cancel_performance(performance_id: ObjectId, *, cancel_orders: bool = False, by: str = "") -> int:
    """Cancel every section of the performance (each through ``sessions.cancel_session``: off sale,
    and its worker task releases holds, calls off unpaid orders and refunds and mails the paid
    ones, resumably: sales/session_cancel.py). Refused before anything changes while it
    has paid orders and staff did not confirm. Safe to run again after a crash: canceled sections
    are canceled again (their orders once). Returns the paid orders to cancel."""
    sections = sections_of(performance_id, {"_id": 1, "status": 1})
    if not sections:
        raise NotFound(gettext("No such performance."))
    paid = paid_orders(performance_id)
    if paid and not cancel_orders:
        raise Conflict(f"This performance has {paid} paid orders. Confirm that they should be canceled too.")
    canceled = 0
    for section in sections:
        if section["status"] == SessionStatus.CANCELED and not paid:
            continue
        canceled += session_service.cancel_session(section["_id"], cancel_orders=cancel_orders, by=by)
    return canceled


def update_details(
    performance_id: ObjectId, *, name, description, start, end, prices, name_de="", description_de=""
) -> int:
    """The same name, description, times and prices for every section. Everything is checked
    before anything is written (prices against all the sections' categories). Then the change is
    recorded on the first section as ``detailsChange: {rev, details, prices, open: true}`` (one
    write, the revision counted up), and each section is written with ``detailsRev: rev``
    (conditional on an older one, so a later save is never overwritten by an earlier one). A crash
    part-way leaves the change recorded and open: ``finish_details`` (reconcile, and the
    performance's admin pages when they read it) writes the sections still behind, then closes it.
    Returns the sections updated."""
    sections = sections_of(performance_id, {"_id": 1, "layout": 1})
    if not sections:
        raise NotFound(gettext("No such performance."))
    details = session_service.clean_details(
        name, description, start, end, now=clock.now(), name_de=name_de, description_de=description_de
    )
    categories: dict = {}
    rows: list = []
    for section in sections:
        for cat in section["layout"]["categories"]:
            categories.setdefault(cat["code"], cat)
        rows.extend(section["layout"]["rows"])
    clean = clean_prices(prices, {"categories": list(categories.values()), "rows": rows})
    recorded = mongo.sessions().find_one_and_update(
        {"_id": sections[0]["_id"], "performanceId": performance_id},
        {
            "$set": {"detailsChange.details": details, "detailsChange.prices": clean, "detailsChange.open": True},
            "$inc": {"detailsChange.rev": 1},
        },
        projection={"detailsChange": 1},
        return_document=ReturnDocument.AFTER,
    )
    if recorded is None:
        raise NotFound(gettext("No such performance."))
    faults.point("performance.after_intent")
    return apply_details(performance_id, sections[0]["_id"], recorded["detailsChange"])
