"""Per-session sales summaries: the report rows of one session (``tally.Tally``) stored in
``session_sales``, one document per session, so that a report reads one small document per
session instead of every order (docs/architecture.md, "Reports and exports"). A materialized view
of the orders, kept exact:

**Marks.** Every write that changes what an order counts for in the reports (a new order, paid,
failed, canceled, refunded in part or in full, exchanged, checked in) pushes, in the same
conditional update as the change, one mark per session it touches:
``reportStale: [{s: <session id>, t: <token>}]`` (booking/reports/marks.py; a new order is
stored with its marks). The sparse index ``reportStale.s`` lists a session's marked orders.
Nothing else in the write paths knows about reports.

**Refresh** (``recount``), for a list of sessions, safe anywhere, any number of times, at once:

1. read each summary's ``version`` (none yet: 0);
2. read the sessions' marks (order, its tokens);
3. count the sessions' orders (``tally.count``: one indexed read);
4. store each session's rows conditional on the version read in 1 (``version + 1``; the first
   one is an insert, and the unique ``_id`` decides between two);
5. pull, from each order, exactly the marks read in 2 of the sessions stored in 4.

Why a summary is never wrong once its marks are gone: a mark is pulled only by a refresh that read
it (2) before it counted (3) and whose rows were stored (4); a later store needs the version this
one wrote, so that refresh read it later and counted later: an older count never overwrites a
newer one. A write during 3-5 pushes its own mark (another token), which stays for the next
refresh. A crash anywhere leaves marks unpulled: the session is counted again. A crash can delay a
summary, never make it wrong; and a report shows how old a count is ("as of").

**Reading** (``read``): the summaries of the report's sessions (one find by ``_id``), the marks of
those sessions (one find on the sparse index, usually empty), then a recount of the sessions that
have none yet (or of an older format or time zone) and of up to ``recount_limit`` marked ones, in
one indexed read of their orders. A marked session beyond the limit is shown from its summary with
the time it was counted; the worker (``refresh_marked``, every
``BOOKING_REPORTS_REFRESH_EVERY_SECONDS``) recounts every marked session soon after it changed.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from bson import ObjectId
from django.conf import settings
from pymongo import UpdateOne
from pymongo.errors import DuplicateKeyError

from booking.core import clock, faults, mongo
from booking.core.domain import Session
from booking.reports import marks, tally
from booking.sales import orders as order_service

# the rows' shape (2: a top-up's part counted in its own channel); a summary of another format is
# counted again, never read
FORMAT = 2
STALE = marks.STALE


# --- refreshing ---


def _marked(session_ids: list[ObjectId]) -> dict[ObjectId, list[tuple[ObjectId, str, list]]]:
    """Per session, the orders marked for it: (order id, ref, tokens)."""
    found: dict[ObjectId, list[tuple[ObjectId, str, list]]] = defaultdict(list)
    wanted = set(session_ids)
    query = {f"{STALE}.s": {"$in": session_ids}}
    for order in mongo.orders().find(query, {"ref": 1, STALE: 1}):
        tokens: dict[ObjectId, list] = defaultdict(list)
        for entry in order.get(STALE) or []:
            if entry["s"] in wanted:
                tokens[entry["s"]].append(entry["t"])
        for sid, ts in tokens.items():
            found[sid].append((order["_id"], order["ref"], ts))
    return found


def _usable(summary: dict | None) -> bool:
    return summary is not None and summary.get("format") == FORMAT and summary.get("tz") == settings.TIME_ZONE


def _store(session_id: ObjectId, version: int, doc: dict) -> bool:
    """Step 4: the rows, if nobody stored a summary of this session since ``version`` was read."""
    if version == 0:
        try:
            mongo.session_sales().insert_one({"_id": session_id, "version": 1, **doc})
            return True
        except DuplicateKeyError:
            return False
    stored = mongo.session_sales().update_one(
        {"_id": session_id, "version": version}, {"$set": {**doc, "version": version + 1}}
    )
    return bool(stored.modified_count)


def _pull(found: list[tuple[ObjectId, ObjectId, str, list]]) -> None:
    """Step 5: exactly these marks (session, tokens) go from these orders; an order left without
    marks loses the field (and so leaves the sparse index)."""
    if not found:
        return
    ops = []
    for sid, order_id, ref, tokens in found:
        mine = {"_id": order_id, "ref": ref}
        ops.append(UpdateOne(mine, {"$pull": {STALE: {"s": sid, "t": {"$in": tokens}}}}))
        ops.append(UpdateOne({**mine, STALE: {"$size": 0}}, {"$unset": {STALE: ""}}))
    mongo.orders().bulk_write(ops, ordered=True)


def recount(
    sessions: list[Session], versions: dict[ObjectId, int], found: dict
) -> tuple[dict[ObjectId, dict], list[ObjectId]]:
    """Steps 3-5 for these sessions (``_id`` and ``end``), with the versions (step 1) and marks
    (step 2, ``_marked``) read before. Returns the summaries as stored now, and the sessions
    another refresh stored first (theirs is read back: counted after our step 1, not
    necessarily after the marks we read)."""
    ids = [s["_id"] for s in sessions]
    counted_on = clock.now()
    faults.point("reports.before_count")
    tallies = tally.count(ids)
    faults.point("reports.after_count")
    stored: dict[ObjectId, dict] = {}
    lost = []
    to_pull = []
    for session in sessions:
        sid = session["_id"]
        doc = {
            "format": FORMAT,
            "tz": settings.TIME_ZONE,
            "countedOn": counted_on,
            # goes when the session goes (sales/retention.py gives a compacted session this date)
            "purgeAt": order_service.purge_at(session.get("end") or counted_on),
            **tallies[sid],
        }
        if _store(sid, versions.get(sid, 0), doc):
            stored[sid] = {"_id": sid, "version": versions.get(sid, 0) + 1, **doc}
            to_pull += [(sid, *marked) for marked in found.get(sid, [])]
        else:
            lost.append(sid)
    faults.point("reports.after_store")
    _pull(to_pull)
    if lost:
        stored.update({d["_id"]: d for d in mongo.session_sales().find({"_id": {"$in": lost}})})
    return stored, lost


def refresh(session_ids: list[ObjectId]) -> dict[ObjectId, dict]:
    """Count these sessions again and store their summaries (steps 1-5)."""
    if not session_ids:
        return {}
    versions = {
        d["_id"]: d["version"] for d in mongo.session_sales().find({"_id": {"$in": session_ids}}, {"version": 1})
    }
    found = _marked(session_ids)
    sessions = list(mongo.sessions().find({"_id": {"$in": session_ids}}, {"end": 1}))
    return recount(sessions, versions, found)[0]


def refresh_marked(limit: int = 200) -> int:
    """The worker's round: recount every session with marked orders (at most ``limit`` sessions,
    the next round takes the rest). Returns how many were counted."""
    # every session id sorts at or above the zero ObjectId: a range over the sparse index, which
    # holds just the marked orders
    every_session = {"$gte": ObjectId("0" * 24)}
    marked = mongo.orders().distinct(f"{STALE}.s", {f"{STALE}.s": every_session})
    ids = sorted(marked)[:limit]
    for start in range(0, len(ids), 20):  # a few sessions per read of their orders
        refresh(ids[start : start + 20])
    return len(ids)


def refresh_all(batch: int = 20) -> int:
    """Every session counted again, in pages of ``_id`` (an operator's command: after a deploy
    that brings the summaries, every session without one is counted once here rather than at its
    first report). Returns how many."""
    counted, after = 0, None
    while True:
        page: dict = {"_id": {"$gt": after}} if after is not None else {}
        ids = [s["_id"] for s in mongo.sessions().find(page, {"_id": 1}).sort("_id", 1).limit(batch)]
        if not ids:
            return counted
        refresh(ids)
        counted += len(ids)
        after = ids[-1]


# --- reading ---


@dataclass
class Read:
    """What a report rests on: each session's rows, and how fresh they are."""

    tallies: dict[ObjectId, tally.Tally]
    as_of: datetime  # the oldest count shown (the read's time when every session was counted now)
    behind: list[ObjectId] = field(default_factory=list)  # sessions shown from a count before their last change


def read(sessions: list[Session], *, recount_limit: int) -> Read:
    """The rows of these sessions (``_id`` and ``end``), recounting those without a summary and
    up to ``recount_limit`` of those marked since (the rest: as of their last count)."""
    now = clock.now()
    ids = [s["_id"] for s in sessions]
    stored = {d["_id"]: d for d in mongo.session_sales().find({"_id": {"$in": ids}})}
    found = _marked(ids)
    missing = [sid for sid in ids if not _usable(stored.get(sid))]
    marked = [sid for sid in ids if sid in found and sid not in missing]
    again = set(missing) | set(marked[: max(0, recount_limit)])
    lost: list[ObjectId] = []
    if again:
        versions = {sid: doc["version"] for sid, doc in stored.items()}
        counted, lost = recount([s for s in sessions if s["_id"] in again], versions, found)
        stored.update(counted)
    behind = [sid for sid in marked if sid not in again or sid in lost]
    as_of = min([stored[sid]["countedOn"] for sid in behind], default=now)
    tallies = {sid: tally.Tally(groups=d["groups"], days=d["days"], refunds=d["refunds"]) for sid, d in stored.items()}
    return Read(tallies=tallies, as_of=as_of, behind=behind)


# --- checking ---


def breaches() -> list[str]:
    """Summaries without marks that differ from what their orders say (check_invariants): a write
    path that changed an order without its mark. Every summary, on purpose (hinted on _id_)."""
    found = []
    for summary in mongo.session_sales().find({}, hint=[("_id", 1)]):
        sid = summary["_id"]
        if not _usable(summary) or _marked([sid]):
            continue  # counted again before it is read
        counted = tally.count([sid])[sid]
        if not tally.same(counted, summary):
            found.append(f"the sales summary of session {sid} differs from its orders without a mark")
    return found
