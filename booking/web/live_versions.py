"""Seat map versions kept for a moment per process, so an unchanged live map's 304 reads nothing.

Every viewer of a map without pushed updates asks every two seconds whether it changed (Q3,
``If-None-Match`` with the version it has). During an on-sale hundreds ask about the same few
performances, and the version read was most of a 304's cost. So each process keeps the version it
last read for ``settings.BOOKING_LIVE_MAP_VERSION_SECONDS`` (0.5 s) and answers a viewer that
has exactly that version with a 304 from it: a change reaches such a viewer at most that much later.
Anything else is read: a viewer with another version (older: it gets the new map; newer, after its
own hold: the kept one is behind) and every viewer once the kept version is older than the
lifetime. Versions only grow, so a kept version never makes a changed map look current for longer.
0 turns it off (the tests do, so each sees its own writes at once).
"""

import time

from bson import ObjectId
from django.conf import settings

from booking.core.lru import LRUCache

# one entry per performance whose map was asked for recently: (version, when read)
_kept: LRUCache[ObjectId, tuple[int, float]] = LRUCache(4096)


def monotonic() -> float:  # a function of its own: the tests move it forward
    return time.monotonic()


def fresh(session_id: ObjectId) -> int | None:
    """The version this process read within the lifetime, or None (read it)."""
    lifetime = settings.BOOKING_LIVE_MAP_VERSION_SECONDS
    kept = _kept.get(session_id) if lifetime > 0 else None
    if kept is None or monotonic() - kept[1] >= lifetime:
        return None
    return kept[0]


def keep(session_id: ObjectId, version: int) -> None:
    if settings.BOOKING_LIVE_MAP_VERSION_SECONDS > 0:
        _kept.put(session_id, (version, monotonic()))


def clear() -> None:
    _kept.clear()
