"""Unsold wheelchair spaces go on general sale shortly before the show.

A wheelchair space is a layout cell with ``wheelchair: true`` (``booking/venues/layouts.py``). Until
``BOOKING_WHEELCHAIR_RELEASE_BEFORE`` before the start it is sold as a wheelchair space (shown
with its sign, counted for companion tickets). From then on a space that is still free becomes an
ordinary seat of its category: its cell in the session's layout loses ``wheelchair`` and records
``releasedFrom: "wheelchair"`` (when: ``releasedOn``), and seats beside it that sit next to no
other wheelchair space stop being companion seats.

One conditional update per session and run: it requires every space it releases to be free and
the layout revision it read (so the companion seats it clears were decided on that layout), and
bumps ``layoutRev`` and ``version``. A buyer who holds a space at the same moment therefore either
gets there first (the space is not free: the release leaves it alone, reads again and releases
the others) or second: the hold's own filter names the layout revision it priced by, misses, reads
the session again and holds an ordinary seat. A space held then and freed later (its cart
expired, its order refunded) is released by a later run. Running twice changes nothing more.
"""

import logging
from dataclasses import dataclass
from datetime import datetime

from bson import ObjectId
from django.conf import settings

from booking.core import clock, faults, mongo
from booking.core.domain import Row, Session, SessionStatus
from booking.venues.seat_grid import FREE

logger = logging.getLogger("booking.wheelchair")

# What a run reads of each session: the cells (flags) and their states.
_FIELDS = {"layout.rows.cells": 1, "seats": 1, "layoutRev": 1, "start": 1}
_ATTEMPTS = 5  # per session and run; a miss means a buyer just held a space (or staff changed the layout)


@dataclass
class ReleaseReport:
    sessions: int = 0  # sessions starting within the window that were looked at
    released: int = 0  # wheelchair spaces put on general sale


def release_window(now: datetime) -> dict:
    """The sessions whose wheelchair spaces are due: on sale, starting after now and no later
    than the release period from now (``start <= now + before``: due at the exact boundary)."""
    return {
        "start": {"$gt": now, "$lte": now + settings.BOOKING_WHEELCHAIR_RELEASE_BEFORE},
        "status": SessionStatus.ON_SALE,
    }


def release_due_spaces(now: datetime | None = None) -> ReleaseReport:
    """Release every free wheelchair space of the sessions in the window (see the module)."""
    now = now or clock.now()
    report = ReleaseReport()
    # the start+_id index serves the range; sessions of the next hours, a few per hall
    for session in mongo.sessions().find(release_window(now), _FIELDS).sort([("start", 1), ("_id", 1)]):
        report.sessions += 1
        report.released += release_session(session["_id"], now, session)
    if report.released:
        logger.info("wheelchair spaces released to general sale: %d in %d sessions", report.released, report.sessions)
    return report


def release_session(session_id: ObjectId, now: datetime, session: Session | None = None) -> int:
    """Release this session's free wheelchair spaces if it is in the window; how many were."""
    for _attempt in range(_ATTEMPTS):
        if session is None:
            session = mongo.sessions().find_one({"_id": session_id}, _FIELDS)
            if session is None:
                return 0
        spaces = free_spaces(session)
        if not spaces:
            return 0
        faults.point("wheelchair.before_release")
        result = mongo.sessions().update_one(*_release_write(session, spaces, now))
        if result.modified_count:
            return len(spaces)
        session = None  # a buyer held a space, the layout changed or the show left the window: look again
    logger.warning("wheelchair release of session %s gave up after %d attempts", session_id, _ATTEMPTS)
    return 0


def free_spaces(session: Session) -> list[tuple[int, int]]:
    """The wheelchair spaces of the session (as read) that are free."""
    seats = session.get("seats")
    if not seats:  # compacted: the show is over
        return []
    return [
        (r, c)
        for r, row in enumerate(session["layout"]["rows"])
        for c, cell in enumerate(row["cells"])
        if cell and cell.get("wheelchair") and seats[r][c] == FREE
    ]


def _release_write(session: Session, spaces: list[tuple[int, int]], now: datetime) -> tuple[dict, dict]:
    rows = session["layout"]["rows"]
    released = set(spaces)
    rev = session.get("layoutRev", 0)
    query: dict = {
        "_id": session["_id"],
        **release_window(now),
        "layoutRev": rev if rev else {"$in": [0, None]},  # the layout the companions were decided on
        **{f"seats.{r}.{c}": FREE for r, c in spaces},
        **{f"layout.rows.{r}.cells.{c}.wheelchair": True for r, c in spaces},
    }
    unset = {f"layout.rows.{r}.cells.{c}.wheelchair": "" for r, c in spaces}
    for r, c in _lone_companions(rows, released):
        unset[f"layout.rows.{r}.cells.{c}.companion"] = ""
    update = {
        "$unset": unset,
        "$set": {
            **{f"layout.rows.{r}.cells.{c}.releasedFrom": "wheelchair" for r, c in spaces},
            **{f"layout.rows.{r}.cells.{c}.releasedOn": now for r, c in spaces},
        },
        # processes keep layouts per revision (hold_facts): a hold priced on the old one misses
        "$inc": {"version": 1, "layoutRev": 1},
    }
    return query, update


def _lone_companions(rows: list[Row], released: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """Companion seats beside a released space that will sit beside no wheelchair space at all."""
    out = []
    for r, c in released:
        cells = rows[r]["cells"]
        for n in (c - 1, c + 1):
            cell = cells[n] if 0 <= n < len(cells) else None
            if not cell or not cell.get("companion"):
                continue
            beside = [cells[m] for m in (n - 1, n + 1) if 0 <= m < len(cells) and (r, m) not in released]
            if not any(b and b.get("wheelchair") for b in beside):
                out.append((r, n))
    return out
