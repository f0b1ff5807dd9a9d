"""A sectioned performance's section documents (``performanceId``) read together, and a details
change staff saved for all of them (sales/performances.py ``update_details``) written into each:
also what reconcile runs to finish a change a crash left half written. Apart from the staff
services because it needs no session service, so reconcile reaches it without an import loop."""

from bson import ObjectId

from booking.core import faults, mongo
from booking.sales import listings
from booking.sales.session_prices import clean_prices


def sections_of(performance_id: ObjectId, fields: dict | None = None) -> list[dict]:
    """The performance's section documents in the venue's order (index performanceId+section.index)."""
    found = mongo.sessions().find({"performanceId": performance_id}, fields).sort("section.index", 1)
    return list(found)


def apply_details(performance_id: ObjectId, first_id: ObjectId, change: dict) -> int:
    """Write the recorded change into every section still behind it, then close it (only this
    revision: a newer save keeps its own open)."""
    rev = change["rev"]
    behind = {"$or": [{"detailsRev": {"$exists": False}}, {"detailsRev": {"$lt": rev}}]}
    written = 0
    for section in sections_of(performance_id, {"_id": 1, "layout": 1, "detailsRev": 1}):
        if section.get("detailsRev", 0) >= rev:
            continue
        prices = clean_prices(change["prices"], section["layout"])  # its categories' prices
        done = mongo.sessions().update_one(
            {"_id": section["_id"], **behind},
            listings.due({"$set": {**change["details"], "prices": prices, "detailsRev": rev}, "$inc": {"version": 1}}),
        )
        listings.refresh([section["_id"]])
        written += done.modified_count
        faults.point("performance.after_section")
    mongo.sessions().update_one(
        {"_id": first_id, "detailsChange.rev": rev, "detailsChange.open": True}, {"$unset": {"detailsChange.open": ""}}
    )
    return written


def finish_details(performance_id: ObjectId | None = None) -> int:
    """Finish details changes a crash left half written: of this performance, or (reconcile) of
    every performance with one open (sparse index ``detailsChange.open``). Returns sections written."""
    query: dict = {"detailsChange.open": True}
    if performance_id is not None:
        query["performanceId"] = performance_id
    written = 0
    for first in mongo.sessions().find(query, {"performanceId": 1, "detailsChange": 1}).limit(100):
        written += apply_details(first["performanceId"], first["_id"], first["detailsChange"])
    return written
