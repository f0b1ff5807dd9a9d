"""Small builders for tests: a theater from a text grid, a session on sale tomorrow."""

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from booking.core import clock, mongo
from booking.core.domain import Session, Theater
from booking.sales import selectors
from booking.sales.sessions import create_session
from booking.venues.layouts import parse_grid
from booking.venues.theaters import create_theater

CATEGORIES = [{"code": "s", "name": "Stalls"}, {"code": "p", "name": "Premium"}]
# Ticket types of a theater (sales.offers.set_theater_ticket_types); the companion has no
# German name or condition: German pages show its English name
TYPES: list[dict] = [
    {"code": "full", "name": "Full price"},
    {
        "code": "reduced",
        "name": "Reduced",
        "nameDe": "Ermäßigt",
        "description": "Students, seniors 65+; show proof at the door",
        "descriptionDe": "Studierende, Senioren ab 65; Nachweis am Einlass zeigen",
    },
    {"code": "companion", "name": "Companion", "companion": True},
]
SMALL_GRID = """\
A: ssss.ssss
B: sspp.ppss
C: ssss.ssss
"""


def reread(session_id) -> Session:
    """The session as stored now (a test's session exists: a None fails here, with its id)."""
    session = selectors.get_session(session_id)
    assert session is not None, f"session {session_id} is gone"
    return session


def make_theater(grid: str = SMALL_GRID, categories=None, name: str = "Test Hall") -> Theater:
    return create_theater(name, parse_grid(grid, categories or CATEGORIES))


def make_session(
    theater: Theater | None = None,
    *,
    grid: str = SMALL_GRID,
    prices=None,
    days: float = 1,
    published: bool = True,
    **details,
) -> dict:
    theater = theater or make_theater(grid)
    start = clock.now() + timedelta(days=days)
    return create_session(
        theater["_id"],
        published=published,
        name=details.get("name", "Hamlet"),
        description=details.get("description", "A play"),
        start=start,
        end=start + timedelta(hours=2),
        prices=prices or {"s": 2000, "p": 3500},
        name_de=details.get("name_de", ""),
        description_de=details.get("description_de", ""),
    )


def stored_against_id_order(collection, docs: Sequence[Mapping[str, Any]], *, descending: bool = False) -> list:
    """Store ``docs`` again against the expected order (ascending: the highest ``_id`` first);
    returns their ids in the expected order."""
    docs = sorted(docs, key=lambda d: d["_id"], reverse=descending)
    collection.delete_many({"_id": {"$in": [d["_id"] for d in docs]}})
    for doc in reversed(docs):
        collection.insert_one(doc)
    return [d["_id"] for d in docs]


def two_sessions_at_the_same_start(days: float = 1) -> list:
    theater = make_theater()
    first, second = make_session(theater, days=days), make_session(theater, days=days)
    start = first["start"]
    mongo.sessions().update_many({"_id": {"$in": [first["_id"], second["_id"]]}}, {"$set": {"start": start}})
    docs = list(mongo.sessions().find({"_id": {"$in": [first["_id"], second["_id"]]}}))
    return stored_against_id_order(mongo.sessions(), docs)
