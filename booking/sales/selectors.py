"""Reads. Each function is one access pattern (docs/architecture.md, "Access patterns") and names its cost."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bson import ObjectId

from booking.core import clock, mongo
from booking.core.domain import (
    Cart,
    MailState,
    Order,
    Session,
    SessionStatus,
    Theater,
    holding_cart_filter,
    is_holding,
    is_live,
    live_cart_filter,
    seats_left,
    stale_cart_filter,
)
from booking.venues.seat_grid import BLOCKED, FREE, HELD, SOLD, restored_states

SUMMARY_FIELDS = {
    "name": 1,
    "description": 1,
    "nameDe": 1,  # the staff's German name and description (booking/core/localized.py)
    "descriptionDe": 1,
    "theaterId": 1,
    "theaterName": 1,
    "theaterNameDe": 1,  # the staff's German venue (and section) name (booking/core/localized.py)
    "start": 1,
    "end": 1,
    "prices": 1,
    "currency": 1,
    "status": 1,
    "seatsAvailable": 1,
    "seatsTotal": 1,
    "quota": 1,  # the seats left are what the quota still allows (domain.seats_left)
    "quotaFloor": 1,
    "performanceId": 1,  # sectioned venues: the section documents of one performance share it
    "section": 1,
    "venueName": 1,
    "venueNameDe": 1,
    "saleOpens": 1,  # the sale window (domain.sale_phase); of a presale not its code's hash
    "saleCloses": 1,
    "presale.opens": 1,
    "presale.key": 1,
    "ticketTypes": 1,  # the price table (sales/offers.py): the hold prices items by it
    "typePrices": 1,
    "priceRev": 1,
    "waitingRoom.queueId": 1,  # a high-demand sale's queue (sales/waiting_room.py), when it has one
}


# What's on shows this much of each session, no more: a stadium's hundred section documents come
# back on every request, so every field costs (no end, no status: the query asks for on_sale, no
# section: they are folded into one entry).
WHATS_ON_FIELDS = {
    "name": 1,
    "description": 1,
    "nameDe": 1,
    "descriptionDe": 1,
    "theaterId": 1,
    "theaterName": 1,
    "theaterNameDe": 1,
    "start": 1,
    "prices": 1,
    "currency": 1,
    "seatsAvailable": 1,
    "seatsTotal": 1,
    "performanceId": 1,
    "venueName": 1,
    "venueNameDe": 1,
    "saleOpens": 1,
}

# A listing (sales/listings.py) carries all of these but the seats left, read from the session.
LISTING_FIELDS = {field: 1 for field in WHATS_ON_FIELDS if field != "seatsAvailable"}


def upcoming_sessions(
    *, start_from: datetime | None = None, start_before: datetime | None = None, theater_id: ObjectId | None = None
) -> list[dict]:
    """Q1 what's on: one indexed range on the listings (ranged on start: shard-targeted), then
    the seats left of those sessions by _id (targeted too), no seat maps."""
    query: dict = {"start": {"$gt": start_from or clock.now()}, "status": SessionStatus.ON_SALE}
    if start_before is not None:
        query["start"]["$lt"] = start_before
    if theater_id is not None:
        query["theaterId"] = theater_id
    # batch_size: one reply for all of them (the server's default first batch is 101 documents,
    # which a stadium's section documents alone exceed: a getMore would follow)
    # _id last: sessions at the same start (a stadium's sections always) come in one order, so
    # which fall past the limit and which section summarises a performance never varies; the
    # indexes end with _id too, so they still serve the sort
    order = [("start", 1), ("_id", 1)]
    listed = list(mongo.listings().find(query, LISTING_FIELDS).sort(order).limit(500).batch_size(500))
    left = {
        s["_id"]: seats_left(s)
        for s in mongo.sessions()
        .find({"_id": {"$in": [listing["_id"] for listing in listed]}}, {"seatsAvailable": 1, "quotaFloor": 1})
        .batch_size(500)
    }
    for listing in listed:
        listing["seatsAvailable"] = left.get(listing["_id"], 0)  # what the quota still allows
    return group_sections(listed)


def group_sections(sessions: list[Session]) -> list[dict]:
    """One entry per performance: a sectioned venue's section documents become one summary whose
    ``_id`` is the performanceId, with availability and prices over all its sections."""
    grouped: list[Any] = []  # documents, and summaries of a performance's sections
    performances: dict[ObjectId, dict] = {}
    for session in sessions:
        performance_id = session.get("performanceId")
        if performance_id is None:
            grouped.append(session)
            continue
        summary = performances.get(performance_id)
        if summary is None:
            summary = performances[performance_id] = {
                **session,
                "_id": performance_id,
                "theaterName": session.get("venueName", session.get("theaterName")),
                "theaterNameDe": session.get("venueNameDe", ""),  # the venue alone, in German when named
                "prices": dict(session.get("prices", {})),
                "sections": 0,
            }
            summary.pop("section", None)
            grouped.append(summary)
        else:
            summary["seatsAvailable"] += session["seatsAvailable"]
            summary["seatsTotal"] += session["seatsTotal"]
            summary["prices"].update(session.get("prices", {}))
        summary["sections"] += 1
    return grouped


def performance_sections(performance_id: ObjectId) -> list[Session]:
    """A sectioned performance's overview, its sections in the venue's order, no seat maps: the
    section ids by the performanceId (``performances``, by _id: one shard), then the sections by
    ``_id: {$in}`` (the shards owning them). A performance with no such document (made before
    it, venues/performance_index.py) is read by performanceId (indexed, every shard)."""
    found = mongo.performances().find_one({"_id": performance_id}, {"sections": 1})
    if found is None:
        return list(mongo.sessions().find({"performanceId": performance_id}, SUMMARY_FIELDS).sort("section.index", 1))
    ids = found["sections"]
    # batch_size: one reply for all (the server's default first batch is 101 documents)
    sections = mongo.sessions().find({"_id": {"$in": ids}}, SUMMARY_FIELDS).batch_size(max(len(ids), 1))
    return sorted(sections, key=lambda section: section["section"]["index"])


def listed_performance_sections(performance_id: ObjectId) -> list[Session]:
    """``performance_sections`` as a buyer may see them: none while the performance is a draft."""
    return [s for s in performance_sections(performance_id) if s.get("status") != SessionStatus.DRAFT]


def get_session(session_id: ObjectId) -> Session | None:
    """Q2 the seat map: one read by _id. A session compacted after the show (sales/retention.py)
    shows every seat as taken."""
    session = mongo.sessions().find_one({"_id": session_id})
    if session is not None and "seats" not in session and "layout" in session:
        session["seats"] = restored_states(session["layout"])
    return session


# A hold's read of the session, when it reads one (the first hold of a session in a process, or
# after its write missed: see sales/holds.py): what the rules and the answer need, seat states
# included, without the layout (kept per process, see sales/hold_facts.py) and the other
# carts' reservations.
HOLD_FIELDS = {**SUMMARY_FIELDS, "seats": 1, "version": 1, "layoutRev": 1}


def get_session_for_hold(session_id: ObjectId) -> Session | None:
    """One read by _id: about 8 KB for 900 seats instead of the whole 40 KB document."""
    return mongo.sessions().find_one({"_id": session_id}, HOLD_FIELDS)


def get_session_head(session_id: ObjectId) -> Session | None:
    """Q2 when this process has already built the map of the current version: one read by _id of
    everything but the big parts (seat states, layout rows, reservations): about 1 KB, not 38."""
    return mongo.sessions().find_one({"_id": session_id}, {"seats": 0, "layout.rows": 0, "reservations": 0})


def session_version(session_id: ObjectId) -> int | None:
    """Q3 live refresh: one tiny read of the change counter."""
    doc = mongo.sessions().find_one({"_id": session_id}, {"version": 1})
    return None if doc is None else doc["version"]


def listed_session_version(session_id: ObjectId) -> int | None:
    """``session_version`` for a buyer's live stream: None for a draft (staff only)."""
    doc = mongo.sessions().find_one({"_id": session_id}, {"version": 1, "status": 1})
    return None if doc is None or doc.get("status") == SessionStatus.DRAFT else doc["version"]


def theaters() -> list[Theater]:
    return list(mongo.theaters().find({}, {"name": 1, "nameDe": 1, "seatCount": 1}).sort([("name", 1), ("_id", 1)]))


def get_theater(theater_id: ObjectId) -> Theater | None:
    return mongo.theaters().find_one({"_id": theater_id})


@dataclass
class BuyerCarts:
    """What a hold needs to know of carts, from one read (buyer_carts)."""

    cart: Cart | None  # the buyer's cart in whatever state, None when they have none
    # carts of this owner holding seats, live or paying (BOOKING_MAX_LIVE_CARTS_PER_OWNER): counted
    # when the buyer has no live cart (a hold then starts one); at least 1 when ``cart`` is live
    owner_live: int
    # seats the read took from the cart's unreturned ones (sales/client_holds.py): already counted
    # for its address, so the hold reserves none there
    unreturned_taken: int = 0


def buyer_carts(owner: str, cart_id: ObjectId | None, now: datetime) -> BuyerCarts:
    """C1's one read of carts: the buyer's cart and the owner's carts holding seats (the per-owner
    limit: live ones, and those being paid for), in one query whose every branch has its index
    and names the shard key (owner). The seats per client address are counted on the address's
    own document (sales/client_holds.py)."""
    branches: list[dict] = [{"owner": owner, **holding_cart_filter(now)}]
    if cart_id is not None:
        branches.append({"_id": cart_id, "owner": owner})
    query = {"$or": branches} if len(branches) > 1 else branches[0]
    found = BuyerCarts(cart=None, owner_live=0)
    for doc in mongo.carts().find(query):
        if doc["_id"] == cart_id and doc["owner"] == owner:
            found.cart = doc
        if is_holding(doc, now) and doc["owner"] == owner:
            found.owner_live += 1
    return found


def get_cart(owner: str, cart_id: ObjectId | None) -> Cart | None:
    if cart_id is None:
        return None
    return mongo.carts().find_one({"_id": cart_id, "owner": owner})


def live_cart_or_none(cart: Cart | None) -> Cart | None:
    """The cart if it is live (active, its hold not run out), else None."""
    return cart if is_live(cart, clock.now()) else None


def cart_seat_keys(cart: Cart | None, session_id: ObjectId) -> set[str]:
    if not cart:
        return set()
    return {i["key"] for i in cart["items"] if i["sessionId"] == session_id}


def cart_price_of(cart: Cart | None, session_id: ObjectId, keys: set[str]) -> int | None:
    """What the cart charges for these seats of the session (each at its chosen kind); None when
    the cart does not hold every one of them."""
    items = [i for i in (cart["items"] if cart else []) if i["sessionId"] == session_id and i["key"] in keys]
    if len(items) != len(keys):
        return None
    return sum(i["price"] for i in items)


def get_order_for_cart(cart_id: ObjectId) -> Order | None:
    return mongo.orders().find_one({"cartId": cart_id})


def find_order(ref: str, email: str) -> Order | None:
    """Find my booking: reference and e-mail must both match (neither alone reveals an order)."""
    ref = (ref or "").strip().upper().replace(" ", "").replace("-", "")
    email = (email or "").strip().lower()
    if not ref or not email:
        return None
    return mongo.orders().find_one({"ref": ref, "email": email})


def get_order(order_id: ObjectId) -> Order | None:
    return mongo.orders().find_one({"_id": order_id})


def get_order_by_ref(ref: str) -> Order | None:
    """One read on the unique ref index; the caller decides whether the viewer may see it."""
    if not isinstance(ref, str) or not ref.isalnum() or len(ref) > 16:
        return None
    return mongo.orders().find_one({"ref": ref.upper()})


def session_summaries(session_ids) -> dict[ObjectId, Session]:
    """Names, times and category names of a few sessions (a cart's), one query by _id."""
    ids = list(session_ids)
    if not ids:
        return {}
    fields = {**SUMMARY_FIELDS, "layout.categories": 1}
    return {s["_id"]: s for s in mongo.sessions().find({"_id": {"$in": ids}}, fields)}


def expiry_backlog(now: datetime | None = None) -> dict:
    """What the expiry worker has to do, for an operator (worker_status): live active carts, carts
    whose hold ended but which are not expired yet, the oldest such one, pending
    and failed mails (those with a next round due, and those given up). Counting queries on the
    state_expires and mail_pending indexes."""
    now = now or clock.now()
    carts = mongo.carts()
    oldest = carts.find_one(stale_cart_filter(now), {"expiresAt": 1}, sort=[("expiresAt", 1)])
    failed = {"mail": MailState.FAILED}
    return {
        "now": now,
        "active": carts.count_documents(live_cart_filter(now)),
        "stale": carts.count_documents(stale_cart_filter(now)),
        "oldest_stale_expired_at": oldest["expiresAt"] if oldest else None,
        "mails_pending": mongo.orders().count_documents({"mail": MailState.PENDING}),
        "mails_failed": mongo.orders().count_documents(failed),
        "mails_given_up": mongo.orders().count_documents({**failed, "mailRetryAt": {"$exists": False}}),
    }


FAILED_MAIL_FIELDS = {"ref": 1, "email": 1, "mailFailures": 1, "mailFailure": 1, "mailDoneOn": 1, "mailRetryAt": 1}


def failed_mails(limit: int = 20) -> list[Order]:
    """Orders whose confirmation mail failed, newest failure first (worker_status lists them)."""
    newest = [("mailDoneOn", -1), ("_id", -1)]
    found = mongo.orders().find({"mail": MailState.FAILED}, FAILED_MAIL_FIELDS).sort(newest).limit(limit)
    return list(found)


# A session's seat counts, from the document read already (no query): staff lists and reports show them.
def seat_counts(seats: list[list[int]]) -> dict:
    """Sold, held, blocked, free and occupancy (sold share of all seats, in percent)."""
    counts = {"sold": 0, "held": 0, "blocked": 0, "free": 0}
    names = {SOLD: "sold", HELD: "held", BLOCKED: "blocked", FREE: "free"}
    for row in seats:
        for state in row:
            if state in names:
                counts[names[state]] += 1
    total = sum(counts.values())
    counts["total"] = total
    counts["occupancy"] = round(100 * counts["sold"] / total) if total else 0
    return counts


def session_counts(session: Mapping[str, Any]) -> dict:  # a Session, or its projection
    """seat_counts of the session's grid, or of its summary once the grid was compacted."""
    if "seats" in session:
        return seat_counts(session["seats"])
    summary = session.get("seatSummary") or {"sold": 0, "blocked": 0, "free": 0, "total": 0}
    total = summary["total"]
    occupancy = round(100 * summary["sold"] / total) if total else 0
    return {
        "sold": summary["sold"],
        "held": 0,
        "blocked": summary["blocked"],
        "free": summary["free"],
        "total": total,
        "occupancy": occupancy,
    }
