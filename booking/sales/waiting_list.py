"""The waiting list of a sold-out performance: buyers wait in the order they joined; seats that come
back (a cart's hold ended, an order canceled, an exchange's old seats freed) are offered to the
first buyer whose wish they fit, held for them for ``BOOKING_WAITING_LIST_OFFER_SECONDS``.

An entry (collection ``waiting_list``) is ``{_id, sessionId, email, language, count, together,
category, state, createdOn, offers, offer?: {cartId, owner, seats, until, at, token}, mail?}``;
its states:

- ``waiting -> offering`` (an offer is being made: the offer written first, naming its cart)
- ``offering -> offered`` (the seats are held for it) or ``offering -> waiting`` (they were gone)
- ``offered -> accepted`` (the buyer opened the link: the offer's cart becomes theirs)
- ``offered -> lapsed`` (not answered in time: its cart expires and the seats pass on)
- ``waiting -> left`` (the buyer left the list)

Making an offer is three writes, each conditional:

1. the entry ``waiting -> offering`` with the offer (a new cart id and owner token, the seats);
2. the offer's cart inserted, ``active`` until the offer ends, with the seats as items;
3. the session: one conditional update whose filter requires every offered cell free (and the
   performance on sale, not started, the prices the items carry) and which sets them held with
   the cart's reservation. The seats leave general sale and are held for the offer in this one
   write, so an offer and a buyer's click on a released seat cannot both have it;
4. the entry ``offering -> offered`` with its mail pending.

A miss at 3 cancels the cart and puts the entry back to waiting. A crash after 1 or 2 leaves the
entry ``offering``: ``finish_offers`` (reconcile) finishes it when the session holds the seats for
the cart, else cancels the cart and puts the entry back to waiting. A crash after 3 is finished
the same way (the hold is there).

The mail is owed in the write that makes the offer (``mail: pending``) and sent once by the
worker (notifications/waiting_list_mail.py); reconcile queues what is still pending.
"""

import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext, gettext_noop
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from booking.accounts.buyers import clean_email
from booking.core import clock, faults, mongo, publish, work_queue
from booking.core.domain import CartState, Layout, Session, SessionStatus, sale_open_filter, seats_left, within_quota
from booking.core.errors import Conflict, InvalidRequest, NotFound, SessionNotOnSale
from booking.sales import carts as cart_service
from booking.sales import offers, reservations, seats_returned, selectors
from booking.sales.holds import seats_free
from booking.venues.seat_grid import (
    FREE,
    HELD,
    best_available,
    best_split,
    cell_path,
    parse_seat_key,
    seat_at,
    seat_key,
)
from booking.venues.seat_words import describe_seats

logger = logging.getLogger("booking.waiting_list")

WAITING = seats_returned.WAITING
OFFERING = "offering"
OFFERED = "offered"
ACCEPTED = "accepted"
LAPSED = "lapsed"
LEFT = "left"
ALL_STATES = (WAITING, OFFERING, OFFERED, ACCEPTED, LAPSED, LEFT)
# An entry in one of these is on the list: one per address and performance.
ACTIVE_STATES = (WAITING, OFFERING, OFFERED)
# the offer's mail
MAIL_PENDING = "pending"
MAIL_SENT = "sent"
MAIL_FAILED = "failed"
OWNER_PREFIX = "s:"  # the offer's cart belongs to a buyer token like any buyer's (web/buyer.py)


OFFER_ENDED = gettext_noop("This offer has ended: its seats were passed on to the next buyer waiting.")


def most_seats() -> int:
    """The most seats one buyer may wait for: what one cart may hold."""
    return settings.BOOKING_MAX_SEATS_PER_CART


def offer_duration() -> timedelta:
    return timedelta(seconds=settings.BOOKING_WAITING_LIST_OFFER_SECONDS)


@dataclass(frozen=True)
class Wish:
    """What a buyer waits for: how many seats, side by side or not, of one category or any."""

    count: int
    together: bool
    category: str | None = None


def clean_wish(*, count: Any, together: bool, category: str | None, categories: set[str]) -> Wish:
    try:
        number = int(count)
    except (TypeError, ValueError):
        raise InvalidRequest(gettext("Choose how many seats you need.")) from None
    most = most_seats()
    if not 1 <= number <= most:
        raise InvalidRequest(gettext("Choose between 1 and %(max)s seats.") % {"max": most})
    if category and category not in categories:
        raise InvalidRequest(gettext("Unknown seat category."))
    return Wish(number, bool(together), category or None)


def free_by_category(session: Mapping[str, Any]) -> dict[str, int]:
    """Free seats per category (``session``: layout and seats)."""
    counts = {c["code"]: 0 for c in session["layout"].get("categories", [])}
    for r, row in enumerate(session["seats"]):
        for c, state in enumerate(row):
            if state == FREE:
                cat = seat_at(session["layout"], r, c)["cat"]
                counts[cat] = counts.get(cat, 0) + 1
    return counts


def is_sold_out(session: Mapping[str, Any], category: str | None = None) -> bool:
    """No seat left to buy: of the whole performance (none free, or its quota taken), or of one category."""
    if seats_left(session) == 0:
        return True
    return category is not None and category != "" and free_by_category(session).get(category, 0) == 0


def join(
    *,
    session_id: ObjectId,
    email: str,
    count: Any,
    together: bool,
    category: str | None,
    language: str,
) -> dict:
    """Put the buyer on the performance's waiting list (or a category's, when it is sold out but
    others are not). Joining twice with one address keeps the first place; the entry is returned."""
    session = selectors.get_session(session_id)
    now = clock.now()
    if session is None or session.get("status") != SessionStatus.ON_SALE:
        raise NotFound(gettext("No such performance."))
    if session["start"] <= now:
        raise SessionNotOnSale(gettext("This performance has already started; seats can no longer be booked."))
    address = clean_email(email)
    wish = clean_wish(
        count=count,
        together=together,
        category=category,
        categories={c["code"] for c in session["layout"]["categories"]},
    )
    if not is_sold_out(session, wish.category):
        raise Conflict(gettext("Seats are still on sale: choose them on the seat map."))
    entry = {
        "_id": ObjectId(),
        "sessionId": session_id,
        "email": address,
        "language": language,
        "count": wish.count,
        "together": wish.together,
        "category": wish.category,
        "state": WAITING,
        "active": True,  # the unique index on (sessionId, email) covers only entries on the list
        "createdOn": now,
        "offers": 0,
    }
    # Flagged before the entry exists, so a release that reads no flag has nobody to offer to.
    mongo.sessions().update_one({"_id": session_id, "waitingList": {"$ne": True}}, {"$set": {"waitingList": True}})
    faults.point("waiting_list.after_flag")
    try:
        mongo.waiting_list().insert_one(entry)
    except DuplicateKeyError:
        found = mongo.waiting_list().find_one({"sessionId": session_id, "email": address, "active": True})
        if found is None:  # left between the insert and this read: join again
            return join(
                session_id=session_id,
                email=address,
                count=count,
                together=together,
                category=category,
                language=language,
            )
        return found
    return entry


def flag_listed_sessions() -> int:
    """Set ``waitingList`` on every session someone waits for, for entries made before joining
    set it (``ensure_indexes`` runs this). Returns the sessions flagged now."""
    listed = mongo.waiting_list().distinct("sessionId", {"state": {"$in": list(ACTIVE_STATES)}})
    if not listed:
        return 0
    flagged = mongo.sessions().update_many(
        {"_id": {"$in": listed}, "waitingList": {"$ne": True}}, {"$set": {"waitingList": True}}
    )
    return flagged.modified_count


def leave(*, entry_id: ObjectId, email: str) -> bool:
    """Leave the list (only while waiting: an offer made is answered or lapses)."""
    result = mongo.waiting_list().update_one(
        {"_id": entry_id, "email": email, "state": WAITING},
        {"$set": {"state": LEFT, "endedOn": clock.now()}, "$unset": {"active": ""}},
    )
    return bool(result.modified_count)


def position(entry: Mapping[str, Any]) -> int | None:
    """The entry's place among those still waiting (1 = next), None when it is not waiting."""
    if entry["state"] != WAITING:
        return None
    ahead = mongo.waiting_list().count_documents(
        {
            "sessionId": entry["sessionId"],
            "state": WAITING,
            "$or": [
                {"createdOn": {"$lt": entry["createdOn"]}},
                {"createdOn": entry["createdOn"], "_id": {"$lt": entry["_id"]}},
            ],
        }
    )
    return ahead + 1


def entries_of(session_id: ObjectId) -> list[dict]:
    """Staff: every entry of the performance, first come first, with its place while waiting."""
    rows = list(mongo.waiting_list().find({"sessionId": session_id}).sort([("createdOn", 1), ("_id", 1)]).limit(2000))
    place = 0
    for row in rows:
        if row["state"] == WAITING:
            place += 1
            row["position"] = place
        else:
            row["position"] = None
    return rows


def _candidate_grid(session: Mapping[str, Any]) -> list[list[int]]:
    """The seat states as the offer may pick from: wheelchair spaces are left to buyers who say
    they need one (they are never offered)."""
    layout: Layout = session["layout"]
    grid = [list(row) for row in session["seats"]]
    for r, row in enumerate(grid):
        for c, state in enumerate(row):
            if state == FREE and seat_at(layout, r, c).get("wheelchair"):
                grid[r][c] = HELD
    return grid


def seats_for(layout: Layout, grid: list[list[int]], wish: Wish) -> list[tuple[int, int]] | None:
    """The seats the wish fits among the free ones, or None: side by side in one row when asked,
    else the fewest, closest groups."""
    categories = {wish.category} if wish.category else None
    seats = best_available(layout, grid, wish.count, categories)
    if seats is None and not wish.together:
        split = best_split(layout, grid, wish.count, categories)
        seats = split if split and len(split) == wish.count else None
    return seats


@dataclass
class SweepReport:
    offered: int = 0
    missed: int = 0  # the seats were taken between the read and the hold (general sale was faster)


def offer_free_seats(session_id: ObjectId, *, now: datetime | None = None) -> SweepReport:
    """Offer the performance's free seats to its waiting list, first come first offered among
    the entries they fit. Safe to run at once in several workers: each offer's hold is one
    conditional write."""
    report = SweepReport()
    for _attempt in range(3):
        now = now or clock.now()
        session = selectors.get_session(session_id)
        if session is None or session.get("status") != SessionStatus.ON_SALE or session["start"] <= now:
            return report
        if not seats_left(session):  # none free, or the quota taken
            return report
        grid = _candidate_grid(session)
        room = seats_left(session)  # the quota may allow fewer than are free
        missed = False
        for entry in (
            mongo.waiting_list().find({"sessionId": session_id, "state": WAITING}).sort([("createdOn", 1), ("_id", 1)])
        ):
            wish = Wish(entry["count"], entry["together"], entry.get("category"))
            seats = seats_for(session["layout"], grid, wish) if wish.count <= room else None
            if seats is None:
                continue
            if make_offer(entry=entry, session=session, seats=seats, now=now):
                report.offered += 1
                room -= len(seats)
                for r, c in seats:
                    grid[r][c] = HELD
            else:
                report.missed += 1
                missed = True
                break  # the map changed: read it again
        if not missed:
            return report
        now = None
    return report


def make_offer(
    *, entry: Mapping[str, Any], session: Mapping[str, Any], seats: list[tuple[int, int]], now: datetime
) -> bool:
    """Offer these seats to the entry, held for it (the module's steps 1 to 4). False when the
    entry is no longer waiting or the seats were taken first."""
    layout = session["layout"]
    cart_id = ObjectId()
    owner = OWNER_PREFIX + secrets.token_urlsafe(18)
    keys = [seat_key(r, c) for r, c in seats]
    until = now + offer_duration()
    offer = {
        "cartId": cart_id,
        "owner": owner,
        "seats": keys,
        "until": until,
        "at": now,
        "token": secrets.token_urlsafe(24),
    }
    taken = mongo.waiting_list().update_one(
        {"_id": entry["_id"], "state": WAITING}, {"$set": {"state": OFFERING, "offer": offer}}
    )
    if not taken.modified_count:
        return False
    faults.point("waiting_list.after_offer_record")
    items = [cart_item(session, r, c) for r, c in seats]
    total = sum(i["price"] for i in items)
    mongo.carts().insert_one(
        {
            "_id": cart_id,
            "owner": owner,
            "state": CartState.ACTIVE,
            "items": items,
            "total": total,
            "createdOn": now,
            "modifiedOn": now,
            "firstHoldOn": now,
            "expiresAt": until,
            "waitingListEntry": entry["_id"],
        }
    )
    faults.point("waiting_list.after_cart")
    categories = sorted({seat_at(layout, r, c)["cat"] for r, c in seats})
    held = mongo.sessions().find_one_and_update(
        {
            "_id": session["_id"],
            "status": SessionStatus.ON_SALE,
            "start": {"$gt": now},
            **{f"prices.{cat}": session["prices"][cat] for cat in categories},
            **seats_free(seats),
            "reservations._id": {"$ne": cart_id},
            "$and": [*sale_open_filter(now)["$and"], within_quota(len(seats))],  # in the window, within the quota
        },
        {
            "$set": {cell_path(r, c): HELD for r, c in seats},
            "$inc": {"seatsAvailable": -len(seats), "version": 1},
            "$push": {
                "reservations": {
                    "_id": cart_id,
                    "owner": owner,
                    "seats": keys,
                    "total": total,
                    "v": reservations.new_token(),
                    "modifiedOn": now,
                }
            },
        },
        projection={"_id": 1},
        return_document=ReturnDocument.AFTER,
    )
    if held is None:
        _undo_offer(entry["_id"], cart_id, owner, now)
        return False
    faults.point("waiting_list.after_hold")
    _offer_made(entry["_id"], cart_id, now)
    return True


def cart_item(session: Mapping[str, Any], row: int, col: int) -> dict:
    """A cart item for an offered seat: full price, with its category's row of the price table (a
    cheaper ticket type can be chosen in the cart, as for any hold)."""
    layout = session["layout"]
    cell = seat_at(layout, row, col)
    return {
        "sessionId": session["_id"],
        "key": seat_key(row, col),
        "row": layout["rows"][row]["label"],
        "seat": cell["label"],
        "cat": cell["cat"],
        "price": session["prices"][cell["cat"]],
        "ticketType": offers.FULL,
        "offers": offers.offers_for(session, cell["cat"]),
    }


def _undo_offer(entry_id: ObjectId, cart_id: ObjectId, owner: str, now: datetime) -> None:
    """The seats were gone: the offer's cart ends (it holds nothing) and the entry waits again."""
    mongo.carts().update_one(
        {"_id": cart_id, "owner": owner, "state": CartState.ACTIVE},
        {"$set": {"state": CartState.CANCELED, "endedOn": now, "items": [], "total": 0}},
    )
    mongo.waiting_list().update_one(
        {"_id": entry_id, "state": OFFERING, "offer.cartId": cart_id},
        {"$set": {"state": WAITING}, "$unset": {"offer": ""}},
    )


def _offer_made(entry_id: ObjectId, cart_id: ObjectId, now: datetime) -> None:
    done = mongo.waiting_list().update_one(
        {"_id": entry_id, "state": OFFERING, "offer.cartId": cart_id},
        {"$set": {"state": OFFERED, "mail": MAIL_PENDING, "mailDueOn": now}, "$inc": {"offers": 1}},
    )
    if done.modified_count:
        publish.soon(queue_offer_mail, entry_id)


def queue_offer_mail(entry_id: ObjectId) -> bool:
    try:
        work_queue.queue(work_queue.SEND_WAITING_LIST_OFFER, str(entry_id))
    except Exception as exc:  # noqa: BLE001 - any broker failure: reconcile queues it again
        logger.warning("could not queue the waiting-list offer mail %s (%s); reconcile will", entry_id, exc)
        return False
    return True


def finish_offers(*, older_than: datetime) -> int:
    """Reconcile: offers a crash left ``offering`` (made before ``older_than``) are finished when
    the session holds their seats for the offer's cart, else undone. Returns how many."""
    finished = 0
    for entry in mongo.waiting_list().find({"state": OFFERING, "offer.at": {"$lt": older_than}}):
        offer = entry["offer"]
        now = clock.now()
        if reservations.read_reservation(entry["sessionId"], offer["cartId"]) is not None:
            _offer_made(entry["_id"], offer["cartId"], now)
        else:
            _undo_offer(entry["_id"], offer["cartId"], offer["owner"], now)
        finished += 1
    return finished


@dataclass
class Accepted:
    owner: str
    cart_id: ObjectId
    session_id: ObjectId


def offer_of(token: str) -> dict | None:
    """The entry a link's token names, or None."""
    if not isinstance(token, str) or not 16 <= len(token) <= 64:
        return None
    return mongo.waiting_list().find_one({"offer.token": token, "state": {"$in": [OFFERED, ACCEPTED]}})


def accept(*, token: str) -> Accepted:
    """The buyer opened the offer's link before it ended: its cart (the held seats) is theirs to
    pay. Opening it again (another device) answers the same cart while it lasts."""
    now = clock.now()
    entry = mongo.waiting_list().find_one_and_update(
        {"offer.token": token, "state": {"$in": [OFFERED, ACCEPTED]}, "offer.until": {"$gt": now}},
        {"$set": {"state": ACCEPTED, "acceptedOn": now}, "$unset": {"active": ""}},
        return_document=ReturnDocument.AFTER,
    )
    if entry is None:
        raise NotFound(gettext(OFFER_ENDED))
    offer = entry["offer"]
    cart = mongo.carts().find_one({"_id": offer["cartId"], "owner": offer["owner"]}, {"state": 1})
    if cart is None or cart["state"] not in (CartState.ACTIVE, CartState.PAYING):
        raise NotFound(gettext(OFFER_ENDED))
    return Accepted(owner=offer["owner"], cart_id=offer["cartId"], session_id=entry["sessionId"])


@dataclass
class PassOnReport:
    lapsed: int = 0
    offered: int = 0


def pass_on(*, now: datetime | None = None) -> PassOnReport:
    """The worker's round: offers not answered in time lapse (their cart expires, freeing the
    seats), then every performance with buyers waiting and seats free offers them."""
    now = now or clock.now()
    report = PassOnReport()
    sessions: set[ObjectId] = set()
    for entry in mongo.waiting_list().find({"state": OFFERED, "offer.until": {"$lte": now}}):
        offer = entry["offer"]
        cart_service.expire_cart(offer["cartId"], now, owner=offer["owner"])  # None: paid or already ended
        lapsed = mongo.waiting_list().update_one(
            {"_id": entry["_id"], "state": OFFERED, "offer.cartId": offer["cartId"]},
            {"$set": {"state": LAPSED, "endedOn": now}, "$unset": {"active": ""}},
        )
        report.lapsed += lapsed.modified_count
        sessions.add(entry["sessionId"])
    sessions.update(mongo.waiting_list().distinct("sessionId", {"state": WAITING}))
    for session_id in sorted(sessions):
        report.offered += offer_free_seats(session_id, now=now).offered
    return report


def seat_words(session: Session, entry: Mapping[str, Any]) -> str:
    """The offered seats in words ("Row F, seats 14–17, Premium, €220")."""
    return describe_seats(session, [parse_seat_key(k) for k in entry["offer"]["seats"]])


def pending_mails(*, due_before: datetime) -> list[ObjectId]:
    """Offers whose mail is still to send since before ``due_before`` (reconcile queues them)."""
    return [
        e["_id"]
        for e in mongo.waiting_list().find({"mail": MAIL_PENDING, "mailDueOn": {"$lt": due_before}}, {"_id": 1})
    ]
