"""A performance's quota: at most so many seats held or sold, through every channel.

The session stores the quota and a floor, ``quotaFloor``: the free seats the quota keeps off sale.
Every write that takes free seats requires ``seatsAvailable >= quotaFloor + seats taken``
(``domain.within_quota``) in its own filter, so racing holds can never pass the quota; a release
raises ``seatsAvailable`` and so makes room by itself; blocking or unblocking free seats moves the
floor with them (``sessions.set_blocked``). House seats staff sell from the blocked ones stay
outside the quota: they were never on sale, and their holds and releases leave the floor alone.

Setting the quota computes the floor from one read and writes it only if the session has not
changed since (its ``version``): ``floor = free + counted - quota``. A quota below what is already
counted takes nothing away: the floor is then above the free seats and no hold passes until
enough seats are given back.
"""

from collections.abc import Mapping
from typing import Any

from bson import ObjectId
from django.utils.translation import gettext

from booking.core import mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, Session, SessionStatus, quota_taken
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.venues.seat_grid import HELD, SOLD, count_state

ATTEMPTS = 5  # a buyer may hold or release between the read and the write: read again
FIELDS = {
    "seats": 1,
    "seatsTotal": 1,
    "seatsAvailable": 1,
    "reservations.house": 1,
    "version": 1,
    "status": 1,
    "performanceId": 1,
    "quota": 1,
    "quotaFloor": 1,
}


def clean_quota(quota: Any, *, seats_total: int) -> int | None:
    """A quota as staff give it: None (no quota) or a whole number from 1 to the hall's seats."""
    if quota is None:
        return None
    if isinstance(quota, bool) or not isinstance(quota, int) or not 1 <= quota <= seats_total:
        message = gettext("Give a whole number of seats from 1 to %(max)d, or leave it empty for no quota.") % {
            "max": seats_total
        }
        raise InvalidRequest(message, fields={"quota": message})
    return quota


def counted(session: Mapping[str, Any]) -> int:
    """Seats the quota counts now: held or sold, less the house seats staff took (held in a
    reservation's ``house``, sold on an order line marked ``house``)."""
    taken = count_state(session["seats"], HELD) + count_state(session["seats"], SOLD)
    house_held = sum(len(res.get("house", ())) for res in session.get("reservations", ()))
    house_sold = 0
    orders = mongo.orders().find(
        {"lines.sessionId": session["_id"], "state": {"$in": list(SEAT_OWNING_ORDER_STATES)}},
        {"lines.sessionId": 1, "lines.house": 1},
    )
    for order in orders:
        house_sold += sum(1 for line in order["lines"] if line["sessionId"] == session["_id"] and line.get("house"))
    return taken - house_held - house_sold


def set_quota(session_id: ObjectId, *, quota: Any) -> Session:
    """Staff set (a whole number) or clear (None) the quota of one performance. Refused for a
    canceled performance and for a stadium's sections; nothing changes on bad input."""
    for _attempt in range(ATTEMPTS):
        session = mongo.sessions().find_one({"_id": session_id}, FIELDS)
        if session is None:
            raise NotFound(gettext("No such session."))
        refuse_quota_change(session)
        clean = clean_quota(quota, seats_total=session["seatsTotal"])
        if clean is None:
            update: dict = {"$unset": {"quota": "", "quotaFloor": ""}, "$inc": {"version": 1}}
        else:
            floor = session["seatsAvailable"] + counted(session) - clean
            update = {"$set": {"quota": clean, "quotaFloor": floor}, "$inc": {"version": 1}}
        written = mongo.sessions().update_one(
            {
                "_id": session_id,
                "version": session["version"],  # nothing held, released or blocked since the read
                "status": {"$in": [SessionStatus.DRAFT, SessionStatus.ON_SALE]},
            },
            update,
        )
        if written.matched_count:
            found = mongo.sessions().find_one({"_id": session_id})
            assert found is not None
            return found
    raise Conflict(gettext("The performance kept changing; please try again."))


def refuse_quota_change(session: Mapping[str, Any]) -> None:
    if session.get("status") == SessionStatus.CANCELED:
        raise Conflict(gettext("This session was canceled; its quota can no longer change."))
    if session.get("performanceId") is not None:
        raise InvalidRequest(gettext("A stadium's sections have no quota of their own."))


def quota_line(session: Mapping[str, Any]) -> str:
    """“12 of 50 taken”, or an empty string: no quota."""
    taken = quota_taken(session)
    if taken is None:
        return ""
    return gettext("%(taken)d of %(quota)d taken") % {"taken": taken, "quota": session["quota"]}
