"""A sectioned performance's section ids, by its performanceId, so that its page is shard-targeted.

Sessions are sharded on a hashed ``_id``: the performance page's read of the sections by
``performanceId`` went to every shard. ``performances`` holds one small document per sectioned
performance (``_id`` = the performanceId, hashed shard key): its sections' session ids. The page
reads it by ``_id`` (one shard), then the sections by ``_id: {$in: ids}`` (only the shards owning
them).

The set of a performance's sections is fixed when it is made (create_section_sessions makes them
all at once; nothing adds or removes one later, but the retention TTL), so the document is written
once, before the sections: a crash between the two leaves ids that find nothing (the page answers
"No such performance", as it would with no sections), a crash during the sections' insert leaves
the ones inserted (what the page showed before this collection too). Nothing to reconcile.

A performance with no document (made before this collection, before ``ensure_indexes`` backfilled
it, or whose document's TTL came before its sections'): the page reads by ``performanceId`` as
before (every shard, index-backed).
"""

from collections.abc import Iterable
from datetime import datetime

from bson import ObjectId

from booking.core import mongo
from booking.core.order_retention import purge_at

# ObjectIds sort by their bytes: every performanceId is at least this (a range on the index's
# leading field, so the backfill's read is index-backed).
LOWEST_ID = ObjectId("0" * 24)


def record(performance_id: ObjectId, section_ids: Iterable[ObjectId], end: datetime) -> None:
    """Before the sections are inserted. ``purgeAt``: it goes when the sections' orders would
    (a compacted section gets the same date, sales/retention.py)."""
    mongo.performances().insert_one({"_id": performance_id, "sections": list(section_ids), "purgeAt": purge_at(end)})


def backfill() -> int:
    """Documents for the sectioned performances made before this collection (ensure_indexes);
    returns how many were written. Never overwrites one (the sections of a performance being made
    now are inserted after its document, so their performance has one already)."""
    fields = {"performanceId": 1, "end": 1}
    found: dict[ObjectId, dict] = {}
    query = {"performanceId": {"$gte": LOWEST_ID}}
    for section in mongo.sessions().find(query, fields).sort([("performanceId", 1), ("section.index", 1)]):
        performance = found.setdefault(section["performanceId"], {"end": section["end"], "sections": []})
        performance["sections"].append(section["_id"])
    written = 0
    for performance_id, performance in found.items():
        end = performance.pop("end")
        document = {**performance, "purgeAt": purge_at(end)}
        result = mongo.performances().update_one({"_id": performance_id}, {"$setOnInsert": document}, upsert=True)
        written += result.upserted_id is not None
    return written


def forget(performance_id: ObjectId) -> None:
    """After its sections were deleted (a draft staff threw away): the page then finds none."""
    mongo.performances().delete_one({"_id": performance_id})
