"""What's on, kept apart from the seat maps so that Q1 is shard-targeted.

Sessions are sharded on a hashed ``_id`` (the seat map and the hold find them by id), so a range
on ``start`` over them goes to every shard. ``listings`` holds one small document per session
(``_id`` = the session's): what the what's-on page shows, no seat map, no seats left, sharded
on ``start`` *ranged* (mongo.SHARD_KEYS), so the page's range reaches only the shards that own
those dates. Seats left are read from the sessions by ``_id`` (targeted); a listing would
otherwise be written by every hold.

A listing is derived from its session, never written on its own. Every session write that changes
a listed field goes through ``due()``: the same conditional update also sets ``listingDue`` and
bumps ``listingRev``; the caller then runs ``refresh()``, which copies the session into its
listing (only forward: the listing keeps the highest ``listingRev`` it was written from) and
clears the flag if no newer write came meanwhile. A crash between the two leaves the flag set, and
reconcile refreshes the flagged sessions (a partial index holds just those). Until then the
listing lags: it may show an old time or a canceled show for one reconcile period, but nothing is
sold from a listing (the seat map and the hold read the session itself).

Listing writes are staff-rate (publish, edit, price, cancel). On a sharded cluster they filter by
``_id`` without the shard key, which MongoDB 7.0 and later route (writeWithoutShardKey;
docs/deploy.md asks for 8.0).
"""

from collections.abc import Iterable

from bson import ObjectId
from pymongo.errors import DuplicateKeyError

from booking.core import faults, mongo
from booking.sales.selectors import LISTING_FIELDS

# What a listing copies from its session: what's on's fields but the seats left, and the status.
LISTED_FIELDS = (*LISTING_FIELDS, "status")

# A sweep's bound: reconcile refreshes at most this many flagged sessions per run.
SWEEP_LIMIT = 1000


def due(update: dict) -> dict:
    """``update`` (a session write) plus the mark that its listing must be written again."""
    return {
        **update,
        "$set": {**update.get("$set", {}), "listingDue": True},
        "$inc": {**update.get("$inc", {}), "listingRev": 1},
    }


def new_session_fields() -> dict:
    """The same mark for a session document about to be inserted."""
    return {"listingDue": True, "listingRev": 1}


def refresh(session_ids: Iterable[ObjectId]) -> int:
    """Copy each session into its listing; returns how many listings were written."""
    ids = list(session_ids)
    if not ids:
        return 0
    faults.point("listing.before_write")  # the session write is done: a crash here leaves the flag
    projection = {field: 1 for field in LISTED_FIELDS} | {"listingRev": 1}
    written = 0
    for session in mongo.sessions().find({"_id": {"$in": ids}}, projection):
        written += _write(session)
    return written


def _write(session: dict) -> int:  # the listed fields of a session
    rev = session.get("listingRev", 0)
    listing = {field: session[field] for field in LISTED_FIELDS if field in session}
    listing["rev"] = rev
    unset = {field: "" for field in LISTED_FIELDS if field not in session}
    update: dict = {"$set": listing}
    if unset:
        update["$unset"] = unset
    written = 1
    try:
        # only forward: a slower refresh that read an older revision matches nothing, and its
        # upsert then collides with the newer listing on _id
        mongo.listings().update_one({"_id": session["_id"], "rev": {"$lt": rev}}, update, upsert=True)
    except DuplicateKeyError:
        written = 0  # a newer revision is there already
    faults.point("listing.before_clear")
    mongo.sessions().update_one({"_id": session["_id"], "listingRev": rev}, {"$unset": {"listingDue": ""}})
    return written


def refresh_due(limit: int = SWEEP_LIMIT) -> int:
    """Reconcile: write the listings a crash left behind (sessions still flagged)."""
    flagged = mongo.sessions().find({"listingDue": True}, {"_id": 1}).limit(limit)
    return refresh(s["_id"] for s in flagged)


def backfill(now) -> int:
    """Listings for upcoming sessions made before listings existed (run by ensure_indexes): they
    are flagged and written like any other change."""
    query = {"start": {"$gt": now}, "listingRev": {"$exists": False}}
    ids = [s["_id"] for s in mongo.sessions().find(query, {"_id": 1})]
    for session_id in ids:
        mongo.sessions().update_one({"_id": session_id, "listingRev": {"$exists": False}}, due({}))
    return refresh(ids)
