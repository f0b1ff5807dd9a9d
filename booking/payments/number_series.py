"""Gap-free number series (receipts per theater; invoices and credit notes can take their own):
every number given exactly once, none skipped, no caller ever refused because another took one.

One document per series in ``number_series``::

    {_id: "receipt:<theaterId>", last: n, openFrom: f, open: [{owner, key}, ...],
     target: {collection, field, set, stamp}}

``open`` is the series' ticket log of numbers given but perhaps not yet written: entry ``i`` is
number ``openFrom + i`` and names its owner (the document that gets it: ``{_id: owner, **key}``
in ``target.collection``, the number in ``target.field``). Taking a number is one atomic update,
``$inc last`` with ``$push open``: the number and its owner are bound in the same write, so two
takers never collide (no compare-and-swap to lose, however many race) and a crash right after it
leaves an entry saying whose number it is. Then the owner's document gets the number (only if it
has none).

A crash between the two writes is finished by whoever finishes the log: the owner trying again
(it finds its own entry), the taker of every ``PRUNE_EVERY``-th number, or reconcile
(:func:`finish_all`). Finishing writes each entry's number to its owner if missing and only then
drops the entries from the front (``openFrom`` moves on); so a number once given is either in the
log or on its owner: no gap, and a retry never takes a second one.

No owner gets two numbers: the take is conditional on the owner not being in the log, and on
``openFrom`` being the one read before looking at the owner's document. If the owner had got a
number, either its entry is still in the log (the condition fails, and the entry is used) or it
was dropped, which happened after its number was on the owner (seen, and returned) or after that
read (``openFrom`` moved: look again). Only a finish can fail a take, one in ``PRUNE_EVERY``
numbers, and then the caller simply reads again: nobody gives up.

``booking/tests/payments/test_number_series.py`` races threads and processes over one series
and crashes each step.
"""

import dataclasses
import logging

from bson import ObjectId
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError, PyMongoError

from booking.core import clock, faults, mongo

logger = logging.getLogger("booking.number_series")

PRUNE_EVERY = 64  # the log is finished and trimmed by the taker of each 64th number
# A take fails only when a finish trimmed the log between its read and its write; this many in a
# row means tens of thousands of numbers were taken meanwhile: something else is wrong.
MAX_LOOKS = 1000
LOOK = {"openFrom": 1, "open.owner": 1}  # what a taker reads of its series: whose numbers are open


@dataclasses.dataclass(frozen=True)
class Target:
    """Where a series' numbers are written: ``field`` of the owner documents in ``collection``,
    with ``set``'s fields and the time in ``stamp`` alongside."""

    collection: str
    field: str
    set: dict = dataclasses.field(default_factory=dict)  # (``field`` is taken: the number's)
    stamp: str = ""

    def as_document(self) -> dict:
        return {"collection": self.collection, "field": self.field, "set": self.set, "stamp": self.stamp}


def series_documents():
    return mongo.get_db()["number_series"]


def _target_of(doc: dict) -> Target:
    return Target(**doc["target"])


def _owners(target: Target):
    return mongo.get_db()[target.collection]


def _series(series: str, target: Target, start_after) -> dict:
    found = series_documents().find_one({"_id": series}, LOOK)
    if found is not None:
        return found
    last = start_after() if start_after else 0
    try:
        series_documents().insert_one(
            {"_id": series, "last": last, "openFrom": last + 1, "open": [], "target": target.as_document()}
        )
    except DuplicateKeyError:
        pass  # made by a racing first taker
    return series_documents().find_one({"_id": series}, LOOK)


def _write(target: Target, owner_filter: dict, number: int) -> int | None:
    """The owner's number after writing ``number`` if it had none (None: no such owner)."""
    fields = {target.field: number, **target.set}
    if target.stamp:
        fields[target.stamp] = clock.now()
    written = _owners(target).update_one({**owner_filter, target.field: {"$exists": False}}, {"$set": fields})
    if written.modified_count:
        return number
    found = _owners(target).find_one(owner_filter, {target.field: 1})
    return None if found is None else found.get(target.field)


def take(*, series: str, owner: ObjectId | str, target: Target, key: dict | None = None, start_after=None) -> int:
    """The owner's number in ``series``, given now if it has none (safe to repeat, from any number
    of threads and processes at once). ``key``: more of the owner's filter (its shard key);
    ``start_after``: a function giving the number before the first, called when the series starts."""
    owner_filter = {"_id": owner, **(key or {})}
    for _look in range(MAX_LOOKS):
        doc = _series(series, target, start_after)
        position = next((i for i, entry in enumerate(doc["open"]) if entry["owner"] == owner), None)
        if position is not None:
            number = doc["openFrom"] + position  # ours, from a take whose write never happened
        else:
            mine = _owners(target).find_one(owner_filter, {target.field: 1})
            if mine is None:
                raise LookupError(f"no {target.collection} document {owner} to number")
            if mine.get(target.field):
                return mine[target.field]
            taken = series_documents().find_one_and_update(
                {"_id": series, "openFrom": doc["openFrom"], "open.owner": {"$ne": owner}},
                {"$inc": {"last": 1}, "$push": {"open": {"owner": owner, "key": key or {}}}},
                projection={"last": 1, "openFrom": 1},
                return_document=ReturnDocument.AFTER,
            )
            if taken is None:
                continue  # the log was trimmed, or a parallel call for this owner took one: look again
            number = taken["last"]
        faults.point("series.after_take")
        written = _write(target, owner_filter, number)
        if written != number:
            raise RuntimeError(f"{series}: {owner} has number {written}, the log gave it {number}")
        if number % PRUNE_EVERY == 0:
            try:
                finish(series=series)
            except PyMongoError:  # the number is the owner's already; reconcile finishes the log
                logger.warning("%s: the log was not finished after number %s", series, number, exc_info=True)
        return number
    raise RuntimeError(f"{series}: no number for {owner} after {MAX_LOOKS} looks")


def finish(*, series: str) -> int:
    """Write every logged number its owner is missing, then trim the log; returns how many were
    written here (a crash's, or a taker's still on its way: it then finds its number there)."""
    doc = series_documents().find_one({"_id": series})
    if doc is None or not doc["open"]:
        return 0
    target = _target_of(doc)
    owners = [entry["owner"] for entry in doc["open"]]
    missing = {
        found["_id"]
        for found in _owners(target).find({"_id": {"$in": owners}, target.field: {"$exists": False}}, {"_id": 1})
    }
    written = 0
    for position, entry in enumerate(doc["open"]):
        if entry["owner"] in missing:
            number = doc["openFrom"] + position
            now_on_owner = _write(target, {"_id": entry["owner"], **entry["key"]}, number)
            if now_on_owner == number:
                written += 1
            else:  # only if an owner was deleted or numbered by other means: say so loudly
                logger.error("%s: number %s not written on %s (has %s)", series, number, entry["owner"], now_on_owner)
    faults.point("series.before_trim")
    series_documents().update_one(  # entries leave only from the front: openFrom pins which ones
        {"_id": series, "openFrom": doc["openFrom"]},
        {"$pull": {"open": {"owner": {"$in": owners}}}, "$inc": {"openFrom": len(owners)}},
    )
    return written


def finish_all() -> int:
    """Every series' log finished (reconcile): the numbers written here."""
    # one document per theater and kind: walking them by _id is cheap, and no index to keep
    pending = series_documents().find({"open.0": {"$exists": True}}, {"_id": 1}).hint([("_id", 1)])
    return sum(finish(series=doc["_id"]) for doc in pending)
