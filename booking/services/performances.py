"""A sectioned venue's performance as one thing for staff (issue 17): its section documents
(``performanceId``) blocked, released or canceled together, each through the one-session service
(``services.sessions``), so every seat change stays one conditional update on one document."""

from bson import ObjectId

from .. import mongo
from ..domain import SEAT_OWNING_ORDER_STATES, SessionStatus
from ..errors import Conflict, InvalidRequest, NotFound
from ..seat_grid import BLOCKED, FREE
from . import sessions as session_service

ATTEMPTS = 4  # a buyer may take a seat between the read and the write: read again


def sections_of(performance_id: ObjectId, fields: dict | None = None) -> list[dict]:
    """The performance's section documents in the venue's order (index performanceId+section.index)."""
    found = mongo.sessions().find({"performanceId": performance_id}, fields).sort("section.index", 1)
    return list(found)


def set_section_blocked(session_id: ObjectId, blocked: bool) -> int:
    """Block every free seat of one section (house seats), or put every blocked one back on sale.
    Returns how many seats changed (seats taken meanwhile are left as they are)."""
    before = FREE if blocked else BLOCKED
    for _attempt in range(ATTEMPTS):
        session = mongo.sessions().find_one({"_id": session_id, "performanceId": {"$exists": True}}, {"seats": 1})
        if session is None:
            raise NotFound("No such section.")
        coords = [(r, c) for r, row in enumerate(session["seats"]) for c, state in enumerate(row) if state == before]
        if not coords:
            return 0
        try:
            return session_service.set_blocked(session_id, coords, blocked)
        except Conflict:
            continue  # someone held a seat meanwhile
    raise Conflict("The section kept changing; please try again.")


def set_sections_blocked(performance_id: ObjectId, section_ids: list[ObjectId], blocked: bool) -> int:
    known = {s["_id"] for s in sections_of(performance_id, {"_id": 1})}
    if not known:
        raise NotFound("No such performance.")
    if not section_ids or not set(section_ids) <= known:
        raise InvalidRequest("Choose sections of this performance.")
    return sum(set_section_blocked(section_id, blocked) for section_id in section_ids)


def paid_orders(performance_id: ObjectId) -> int:
    ids = [s["_id"] for s in sections_of(performance_id, {"_id": 1})]
    owning = {"$in": list(SEAT_OWNING_ORDER_STATES)}
    return mongo.orders().count_documents({"state": owning, "lines.sessionId": {"$in": ids}}) if ids else 0


def cancel_performance(performance_id: ObjectId, *, cancel_orders: bool = False, by: str = "") -> int:
    """Cancel every section of the performance (each through ``sessions.cancel_session``: off sale,
    and its worker task releases holds, calls off unpaid orders and refunds and mails the paid
    ones, resumably: services/session_cancel.py). Refused before anything changes while it
    has paid orders and staff did not confirm. Safe to run again after a crash: canceled sections
    are canceled again (their orders once). Returns the paid orders to cancel."""
    sections = sections_of(performance_id, {"_id": 1, "status": 1})
    if not sections:
        raise NotFound("No such performance.")
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
    before the first section is written (prices against all the sections' categories); then each
    section is updated by the one-session service (a crash part-way leaves some sections done:
    saving again finishes them, every write sets the same values). Returns sections updated."""
    from .. import clock

    sections = sections_of(performance_id, {"_id": 1, "layout": 1})
    if not sections:
        raise NotFound("No such performance.")
    session_service.clean_details(
        name, description, start, end, now=clock.now(), name_de=name_de, description_de=description_de
    )
    categories: dict = {}
    rows: list = []
    for section in sections:
        for cat in section["layout"]["categories"]:
            categories.setdefault(cat["code"], cat)
        rows.extend(section["layout"]["rows"])
    session_service.clean_prices(prices, {"categories": list(categories.values()), "rows": rows})
    for section in sections:
        session_service.update_session_details(
            section["_id"],
            name=name,
            description=description,
            start=start,
            end=end,
            prices=prices,
            name_de=name_de,  # the staff's German text (booking/localized.py)
            description_de=description_de,
        )
    return len(sections)
