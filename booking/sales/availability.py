"""A performance's free seats per category and each seat's state, for the REST API (booking/api/).

One read by ``_id`` of the seat states and the session's head; the layout comes from this
process's copy (``hold_facts.session_layout``, kept per layout revision), so a call reads about
8 KB for 900 seats, not the whole document. A session compacted after the show has no grid: its
seats are all taken (``seat_grid.restored_states``)."""

from dataclasses import dataclass

from bson import ObjectId

from booking.core import mongo
from booking.core.domain import SessionStatus
from booking.sales import hold_facts
from booking.venues.seat_grid import FREE, GAP, STATE_NAMES, restored_states, seat_key

HEAD_FIELDS = {
    "name": 1,
    "theaterId": 1,
    "theaterName": 1,
    "start": 1,
    "end": 1,
    "status": 1,
    "prices": 1,
    "currency": 1,
    "seatsAvailable": 1,
    "seatsTotal": 1,
    "version": 1,
    "layoutRev": 1,
    "performanceId": 1,
    "section": 1,
}


@dataclass
class Category:
    code: str
    name: str
    price: int | None
    free: int
    total: int


@dataclass
class Availability:
    session: dict  # the head fields above
    categories: list[Category]
    seats: list[dict] | None  # {key, row, seat, category, state, wheelchair} when asked for


def availability(session_id: ObjectId, *, theater_id: ObjectId, with_seats: bool = False) -> Availability | None:
    """The session of this theater with its free seats per category (and every seat's state when
    ``with_seats``); None when there is no such session in the theater."""
    session = mongo.sessions().find_one({"_id": session_id, "theaterId": theater_id}, {**HEAD_FIELDS, "seats": 1})
    if session is None or session.get("status") == SessionStatus.DRAFT:  # a draft: staff only
        return None
    layout = hold_facts.session_layout(session_id, session.get("layoutRev", 0))
    if layout is None:
        return None
    grid = session.pop("seats", None) or restored_states(layout)
    names = {c["code"]: c.get("name", c["code"]) for c in layout.get("categories", [])}
    free: dict[str, int] = dict.fromkeys(names, 0)
    total: dict[str, int] = dict.fromkeys(names, 0)
    seats: list[dict] | None = [] if with_seats else None
    for r, row in enumerate(layout["rows"]):
        states = grid[r] if r < len(grid) else []
        for c, cell in enumerate(row["cells"]):
            if cell is None:
                continue
            state = states[c] if c < len(states) else GAP
            if state == GAP:
                continue
            cat = cell.get("cat", "")
            total[cat] = total.get(cat, 0) + 1
            if state == FREE:
                free[cat] = free.get(cat, 0) + 1
            if seats is not None:
                seats.append(
                    {
                        "key": seat_key(r, c),
                        "row": row.get("label", ""),
                        "seat": cell.get("label", ""),
                        "category": cat,
                        "state": STATE_NAMES.get(state, "blocked"),
                        "wheelchair": bool(cell.get("wheelchair")),
                    }
                )
    prices = session.get("prices") or {}
    categories = [
        Category(code, names.get(code, code), prices.get(code), free.get(code, 0), count)
        for code, count in total.items()
        if count
    ]
    return Availability(session, categories, seats)
