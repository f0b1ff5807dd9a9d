"""The one way a session's reservation (a cart's hold in that session) is settled.

A reservation is ``{_id: cartId, owner, seats: ["r:c", ...], total, v, modifiedOn}`` inside the session
document. ``v`` is a random token renewed on every change, so "settle exactly what I read" is one
conditional update: its filter names the token, and any change in between makes it miss.
"""

import secrets
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from bson import ObjectId

from booking.core import faults, mongo
from booking.sales import seats_returned
from booking.venues.seat_grid import BLOCKED, FREE, HELD, SOLD, cell_path, parse_seat_key

MAX_ATTEMPTS = 8


def new_token() -> str:
    return secrets.token_hex(6)


class HoldLost(Exception):
    """The cart no longer holds a seat it wanted to buy."""

    def __init__(self, missing: list[str]):
        super().__init__(f"hold lost on {missing}")
        self.missing = missing


@dataclass
class Settled:
    freed: int = 0
    sold: int = 0
    found: bool = True


def read_reservation(session_id: ObjectId, cart_id: ObjectId) -> dict | None:
    doc = mongo.sessions().find_one(
        {"_id": session_id, "reservations._id": cart_id},
        {"reservations": {"$elemMatch": {"_id": cart_id}}},
    )
    if not doc or not doc.get("reservations"):
        return None
    return doc["reservations"][0]


def settle(
    session_id: ObjectId,
    cart_id: ObjectId,
    *,
    sell: AbstractSet[str] = frozenset(),
    keep: AbstractSet[str] = frozenset(),
    older_than=None,
) -> Settled:
    """Settle a cart's hold in one session: seats in ``sell`` become sold, seats in ``keep`` stay
    held, every other seat of the hold becomes free. One conditional update (retried if the
    hold changed in between). Raises HoldLost if a seat to sell is not in the hold.

    ``older_than``: only touch a hold last changed before this time (reconcile's grace period).
    """
    for _ in range(MAX_ATTEMPTS):
        reservation = read_reservation(session_id, cart_id)
        if reservation is None:
            return Settled(found=False)
        if older_than is not None and reservation["modifiedOn"] >= older_than:
            return Settled(found=False)
        held = set(reservation["seats"])
        missing = sorted(sell - held)
        if missing:
            raise HoldLost(missing)
        to_sell = held & set(sell)
        to_keep = (held & set(keep)) - to_sell
        to_free = held - to_sell - to_keep
        house = set(reservation.get("house", ())) & held  # staff took these blocked: they go back to blocked
        cells: dict[str, Any] = {}
        for key in to_sell:
            cells[cell_path(*parse_seat_key(key))] = SOLD
        for key in to_free:
            cells[cell_path(*parse_seat_key(key))] = BLOCKED if key in house else FREE
        on_sale_again = len(to_free - house)
        update: dict[str, dict[str, Any]] = {"$inc": {"seatsAvailable": on_sale_again, "version": 1}}
        array_filters = None
        if to_keep:
            cells["reservations.$[r].seats"] = sorted(to_keep)
            if house:
                cells["reservations.$[r].house"] = sorted(house & to_keep)
            cells["reservations.$[r].v"] = new_token()
            array_filters = [{"r._id": cart_id}]
        else:
            update["$pull"] = {"reservations": {"_id": cart_id}}
        if cells:
            update["$set"] = cells
        held_filter = {cell_path(*parse_seat_key(k)): HELD for k in held}
        faults.point("settle.after_read")  # the hold may change since it was read: the token decides
        result = mongo.sessions().update_one(
            {"_id": session_id, "reservations": {"$elemMatch": {"_id": cart_id, "v": reservation["v"]}}, **held_filter},
            update,
            array_filters=array_filters,
        )
        if result.matched_count:
            if on_sale_again:
                seats_returned.offer_to_waiting_list(session_id)
            return Settled(freed=len(to_free), sold=len(to_sell))  # released (house seats back to blocked)
    raise RuntimeError(f"could not settle hold of cart {cart_id} in session {session_id}: it kept changing")


def sessions_held_by(cart_id: ObjectId, session_ids=None) -> list[ObjectId]:
    """The sessions holding seats for the cart: of ``session_ids`` when given (by _id, the
    sessions' shard key: one shard each), else of every session (the reservations index, asked
    of every shard)."""
    query: dict[str, Any] = {"reservations._id": cart_id}
    if session_ids is not None:
        query = {"_id": {"$in": list(session_ids)}, **query}
    return [d["_id"] for d in mongo.sessions().find(query, {"_id": 1})]


def release_all(cart_id: ObjectId, older_than=None, *, session_ids=None) -> int:
    """Free every seat a cart holds: in the sessions ``session_ids`` (its items'), or in every
    session when not given (found by the reservations index)."""
    freed = 0
    if session_ids is not None and not session_ids:
        return 0
    for session_id in sessions_held_by(cart_id, session_ids):
        freed += settle(session_id, cart_id, older_than=older_than).freed
    return freed
