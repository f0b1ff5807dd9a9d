"""A performance's free seats per category and each seat's state, for the REST API (booking/api/).

One read by ``_id`` of the seat states and the session's head; the layout comes from this
process's copy (``hold_facts.session_layout``, kept per layout revision), so a call reads about
8 KB for 900 seats, not the whole document. A session compacted after the show has no grid: its
seats are all taken (``seat_grid.restored_states``)."""

from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter

from bson import ObjectId

from booking.core import mongo
from booking.core.domain import Layout, SessionStatus
from booking.core.lru import LRUCache
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
    "quotaFloor": 1,  # seats left: what the quota still allows (domain.seats_left)
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


@dataclass(frozen=True)
class CategoryColumns:
    """Where each category's seats are in one row: read with one ``itemgetter`` call per category
    and row instead of a Python step per seat (a call counts 1,200 seats in about 0.1 ms)."""

    code: str
    width: int  # the row's cells
    pick: Callable[[list[int]], tuple[int, ...]]


def _columns_by_category(layout: Layout) -> list[list[CategoryColumns]]:
    rows = []
    for row in layout["rows"]:
        columns: dict[str, list[int]] = {}
        for c, cell in enumerate(row["cells"]):
            if cell is not None:
                columns.setdefault(cell.get("cat", ""), []).append(c)
        width = len(row["cells"])
        rows.append([CategoryColumns(code, width, _picker(cols)) for code, cols in columns.items()])
    return rows


def _picker(columns: list[int]) -> Callable[[list[int]], tuple[int, ...]]:
    if len(columns) > 1:
        return itemgetter(*columns)
    only = columns[0]  # itemgetter of one index answers the item, not a 1-tuple
    return lambda states: (states[only],)


_columns: LRUCache[tuple[ObjectId, int], list[list[CategoryColumns]]] = LRUCache(hold_facts.CACHE_SIZE)


def availability(session_id: ObjectId, *, theater_id: ObjectId, with_seats: bool = False) -> Availability | None:
    """The session of this theater with its free seats per category (and every seat's state when
    ``with_seats``); None when there is no such session in the theater."""
    session = mongo.sessions().find_one({"_id": session_id, "theaterId": theater_id}, {**HEAD_FIELDS, "seats": 1})
    if session is None or session.get("status") == SessionStatus.DRAFT:  # a draft: staff only
        return None
    revision = session.get("layoutRev", 0)
    layout = hold_facts.session_layout(session_id, revision)
    if layout is None:
        return None
    grid = session.pop("seats", None) or restored_states(layout)
    names = {c["code"]: c.get("name", c["code"]) for c in layout.get("categories", [])}
    free: dict[str, int] = dict.fromkeys(names, 0)
    total: dict[str, int] = dict.fromkeys(names, 0)
    index = _columns.get_or_build((session_id, revision), lambda: _columns_by_category(layout))
    for r, row_columns in enumerate(index):
        states = grid[r] if r < len(grid) else []
        for category in row_columns:
            if len(states) < category.width:  # a short row: the missing cells are gaps
                states = [*states, *[GAP] * (category.width - len(states))]
            picked = category.pick(states)
            total[category.code] = total.get(category.code, 0) + len(picked) - picked.count(GAP)
            free[category.code] = free.get(category.code, 0) + picked.count(FREE)
    prices = session.get("prices") or {}
    categories = [
        Category(code, names.get(code, code), prices.get(code), free.get(code, 0), count)
        for code, count in total.items()
        if count
    ]
    return Availability(session, categories, _seats(layout, grid) if with_seats else None)


def _seats(layout: Layout, grid: list[list[int]]) -> list[dict]:
    seats = []
    for r, row in enumerate(layout["rows"]):
        states = grid[r] if r < len(grid) else []
        for c, cell in enumerate(row["cells"]):
            if cell is None:
                continue
            state = states[c] if c < len(states) else GAP
            if state == GAP:
                continue
            seats.append(
                {
                    "key": seat_key(r, c),
                    "row": row.get("label", ""),
                    "seat": cell.get("label", ""),
                    "category": cell.get("cat", ""),
                    "state": STATE_NAMES.get(state, "blocked"),
                    "wheelchair": bool(cell.get("wheelchair")),
                }
            )
    return seats
