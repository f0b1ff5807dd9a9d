"""What a hold takes from a session besides its seat states, kept per process: the layout (per
layout revision) and the prices.

A process that knows these facts writes a hold without reading the session first: the write's
filter names the layout revision and the prices it priced the seats by, so facts gone stale make
the write miss (and the hold read again), never take a seat at a wrong price or by a wrong layout
(see sales/holds.py). Both caches are ``booking.core.lru.LRUCache``s, shared read-only between a
process's threads.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bson import ObjectId

from booking.core import mongo
from booking.core.domain import Layout
from booking.core.lru import LRUCache

CACHE_SIZE = 256  # sessions (layouts: session and revision) kept per process


@dataclass(frozen=True)
class SaleFacts:
    """A session's layout (of a revision) and prices, as the hold decides by them."""

    layout_rev: int
    layout: Layout
    prices: dict
    price_rev: int = 0  # bumped by every change of the price table's other columns (sales/offers.py)


_layouts: LRUCache[tuple[ObjectId, int], Layout] = LRUCache(CACHE_SIZE)
_sale_facts: LRUCache[ObjectId, SaleFacts] = LRUCache(CACHE_SIZE)


def session_layout(session_id: ObjectId, revision: int) -> Layout | None:
    """A session's layout. It changes only when staff copy the theater's layout again (allowed
    while no seat is taken), which bumps ``layoutRev``; so a layout read once is kept per
    (session, revision) in this process and shared read-only. One read by _id when not kept."""
    layout = _layouts.get((session_id, revision))
    if layout is not None:
        return layout
    doc = mongo.sessions().find_one({"_id": session_id}, {"layout": 1, "layoutRev": 1})
    if doc is None:
        return None
    return _layouts.put((session_id, doc.get("layoutRev", 0)), doc["layout"])


def known_sale_facts(session_id: ObjectId) -> SaleFacts | None:
    """This process's last facts of the session, without a read (None when it has none)."""
    return _sale_facts.get(session_id)


def sale_facts(session: Mapping[str, Any]) -> SaleFacts | None:
    """The facts of a session just read (with ``prices`` and ``layoutRev``), kept for the next
    hold; the layout comes from session_layout. None when the session is gone."""
    layout = session.get("layout") or session_layout(session["_id"], session.get("layoutRev", 0))
    if layout is None:
        return None
    facts = SaleFacts(session.get("layoutRev", 0), layout, dict(session["prices"]), session.get("priceRev", 0))
    return _sale_facts.put(session["_id"], facts)
