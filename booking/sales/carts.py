"""Carts: a buyer's live cart, expiry, cancelation.

A cart belongs to an owner string: ``s:<random token>``, kept in the buyer's signed ``buyer``
cookie (``booking/web/buyer.py``). It is the authority on when its holds end (``expiresAt``).
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from django.conf import settings

from booking.core import clock, faults, mongo
from booking.core.domain import CanceledShow, Cart, CartState
from booking.sales import client_holds, promos, reservations

logger = logging.getLogger("booking.carts")


def hold_duration() -> timedelta:
    return timedelta(seconds=settings.BOOKING_HOLD_SECONDS)


# Carts of staff selling at the counter (sales/counter.py) are owned by "staff:<user id>".
STAFF_OWNER_PREFIX = "staff:"


def is_staff_owner(owner: str | None) -> bool:
    return bool(owner) and str(owner).startswith(STAFF_OWNER_PREFIX)


def staff_idle() -> timedelta:
    return timedelta(seconds=settings.BOOKING_STAFF_HOLD_IDLE_SECONDS)


def next_expiry(cart: Cart | None, now: datetime, owner: str | None = None) -> datetime:
    """Every change extends the hold, but never past the cap from the cart's first hold. A staff
    member's cart has no cap: it lasts while they work and ends BOOKING_STAFF_HOLD_IDLE_SECONDS
    after their last action (a forgotten counter screen does not block seats for the night)."""
    if is_staff_owner(owner or (cart["owner"] if cart else None)):
        return now + staff_idle()
    extended = now + hold_duration()
    if cart is None:
        return extended
    return min(extended, hold_cap(cart, now))


def hold_cap(cart: Cart | None, now: datetime) -> datetime:
    """The latest a buyer's active cart can hold its seats: BOOKING_HOLD_CAP_SECONDS after its first
    hold (a cart not made yet: after ``now``), however often a change extends the hold."""
    first_hold = cart["firstHoldOn"] if cart else now
    return first_hold + timedelta(seconds=settings.BOOKING_HOLD_CAP_SECONDS)


def expire_cart(cart_id: ObjectId, now: datetime | None = None, *, owner: str | None = None) -> int | None:
    """Expire one stale cart and free its seats. Returns seats freed, or None if the cart was not
    stale (already expired by someone else, checked out, or its hold was extended).

    ``owner``: the cart's owner when the caller knows it: carts are sharded on owner, so the
    write then goes to one shard. The write answers with the cart's sessions, and their holds are
    settled by _id (targeted); a hold the cart never recorded (a crash between a hold's two
    writes) is left to reconcile.finish_interrupted_expiries, which the expiry task runs next."""
    now = now or clock.now()
    # One write that answers with the cart's sessions and whether a promo code is applied. An
    # active cart only: a paying one is expire_paying_cart's (its order expires too).
    cart = mongo.carts().find_one_and_update(
        {"_id": cart_id, **({"owner": owner} if owner else {}), "state": CartState.ACTIVE, "expiresAt": {"$lte": now}},
        {"$set": {"state": CartState.EXPIRED, "endedOn": now}},
        projection={"items.sessionId": 1, "promo.codeId": 1},
    )
    if cart is None:
        return None
    faults.point("expire.after_cart")
    freed = reservations.release_all(cart_id, session_ids=session_ids_of(cart))
    if cart.get("promo"):
        promos.release_for_cart(cart_id, owner=owner)  # the promo code's use goes back (once)
    return freed


@dataclass(frozen=True)
class CartEnd:
    """What ending a cart past its hold did. ``freed``: the seats given back, None when the cart
    was not ended (extended, checked out or paid meanwhile). ``settled``: a paying cart's payment
    had gone through, so its order was settled instead of expired."""

    freed: int | None
    settled: bool = False


def session_ids_of(cart: Mapping[str, Any]) -> list[ObjectId]:  # a Cart, or its items
    """The sessions a cart holds seats in, as its items list them (first seen first)."""
    return list(dict.fromkeys(item["sessionId"] for item in cart.get("items", [])))


def force_expire_cart(cart_id: ObjectId) -> int | None:
    """Staff end an active cart now: its hold ends at once and its seats are free again.

    The hold's end is moved to now (only while the cart is active), then the normal expiry runs,
    so a cart that began checking out meanwhile is never touched. Returns seats freed, or None
    when the cart was not active.
    """
    now = clock.now()
    result = mongo.carts().update_one({"_id": cart_id, "state": CartState.ACTIVE}, {"$set": {"expiresAt": now}})
    if not result.matched_count:
        return None
    return expire_cart(cart_id, now)


def cancel_cart(cart_id: ObjectId, owner: str) -> int:
    """The buyer gives up: the cart ends and every seat it holds is free again."""
    now = clock.now()
    cart = mongo.carts().find_one_and_update(
        {"_id": cart_id, "owner": owner, "state": CartState.ACTIVE},
        {"$set": {"state": CartState.CANCELED, "endedOn": now}},
        projection={"items.sessionId": 1, "promo.codeId": 1, "client": 1},
    )
    if cart is None:
        return 0
    freed = reservations.release_all(cart_id, session_ids=session_ids_of(cart))
    if cart.get("client") and client_holds.limit():
        client_holds.end_cart(cart["client"], cart_id, now)  # its seats stop counting for the address
    if cart.get("promo"):
        promos.release_for_cart(cart_id, owner=owner)
    return freed


@dataclass(frozen=True)
class GiveUp:
    freed: int  # seats free again
    paying_ref: str | None = None  # not canceled: its payment has begun (the order's reference)


def give_up_cart(*, cart_id: ObjectId, owner: str) -> GiveUp:
    """The buyer's "Cancel and release the seats" on the cart page. A cart whose payment has begun
    (the page was left open in another tab) is left as it is: its seats stay with the payment,
    which the booking's own page can cancel."""
    freed = cancel_cart(cart_id, owner)
    if freed:
        return GiveUp(freed)
    cart = mongo.carts().find_one({"_id": cart_id, "owner": owner}, {"state": 1, "orderRef": 1})
    if cart is not None and cart["state"] == CartState.PAYING and cart.get("orderRef"):
        return GiveUp(0, paying_ref=cart["orderRef"])
    return GiveUp(0)


def drop_canceled_session(cart_id: ObjectId, session: Mapping[str, Any]) -> int:
    """A performance was canceled while this cart held seats in it: the cart drops those seats
    (their hold was released by the cancelation) and remembers why, so the buyer is told that the
    performance was canceled rather than that their hold ran out. Returns the seats dropped.

    ``session``: its _id, name and start. Safe to repeat: the update requires the items still listed."""
    now = clock.now()
    session_id = session["_id"]
    cart = mongo.carts().find_one({"_id": cart_id}, {"items": 1, "owner": 1, "state": 1})
    if cart is None or cart["state"] != CartState.ACTIVE:
        return 0
    items = [i for i in cart["items"] if i["sessionId"] == session_id]
    if not items:
        return 0
    note: CanceledShow = {
        "sessionId": session_id,
        "name": session.get("name", ""),
        "start": session.get("start"),
        "seats": len(items),
    }
    result = mongo.carts().update_one(
        {
            "_id": cart_id,
            "owner": cart["owner"],
            "state": CartState.ACTIVE,
            "items": {"$elemMatch": {"sessionId": session_id}},
        },
        {
            "$pull": {"items": {"sessionId": session_id}},
            "$inc": {"total": -sum(i["price"] for i in items)},
            "$push": {"canceledShows": note},
            "$set": {"modifiedOn": now},
        },
    )
    return len(items) if result.modified_count else 0
