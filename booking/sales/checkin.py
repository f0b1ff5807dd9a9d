"""Door check-in: every ticket lets one person in.

A door checks tickets for a *scope*: one session, or all section documents of a sectioned
venue's performance (a stadium's gate sees every section). Checking in is one conditional update
on the order (``check_in``): the line whose ``ticket`` is the code, in the scope, without
``checkedIn``, of an order in an admitting state, gets ``checkedIn: {at, door, by, scanId,
offline, recordedOn}``. Two doors scanning the same ticket at once: one update matches, the other
reads the order and answers "already used at <door>, <time>".

A door without network decides from the list it downloaded (``door_list``: ticket codes hashed
with SHA-256, seat, ticket type, a short name) and queues what it admitted. When it is back, each
queued check-in is the same conditional update with ``offline=True`` and the scan's own time and
id. The scan id makes a replay (a queued scan whose first try did reach us) harmless. A queued
check-in that does not match (the ticket was used meanwhile at another door, online or offline,
or its order was canceled) is a person already let in on a ticket that did not admit them: it is
stored as a *conflict* (collection ``checkin_conflicts``, one per scan id) and shown to staff on
the check-in page and the admin's session page, never dropped.
"""

import hashlib
import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from bson import ObjectId
from django.utils.translation import gettext, gettext_noop
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from booking.core import clock, faults, mongo
from booking.core.domain import COMPLIMENTARY_METHOD, Order, OrderLine, OrderState, SessionStatus
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.core.formatting import mail_time
from booking.core.localized import sold_ticket_type, ticket_type_condition, ticket_type_name
from booking.reports import marks
from booking.sales import outbox
from booking.sales.checkout import ref_of_ticket
from booking.sales.selectors import group_sections

logger = logging.getLogger("booking.checkin")

# The order states whose tickets let people in: paid, and partly refunded (its remaining lines;
# a refunded ticket has left ``lines`` for ``refundedLines``: payments/refunds.py).
ADMITTING_STATES = (OrderState.PAID, OrderState.PARTIALLY_REFUNDED)
NOT_ADMITTING = {
    OrderState.CANCELED: gettext_noop("The booking was canceled."),
    OrderState.REFUNDED: gettext_noop("The booking was refunded."),
    OrderState.FAILED: gettext_noop("The booking was never completed."),
    OrderState.PENDING_PAYMENT: gettext_noop("The booking is not paid."),
    OrderState.EXPIRED: gettext_noop("The booking expired unpaid."),
}

# A ticket moved to another seat by an exchange (sales/exchanges.py): its line left ``lines``
# for ``exchangedLines``; the door names the seat that replaced it.
EXCHANGED = "exchanged"
REPLACED = gettext_noop("Replaced by an exchange.")
# A ticket handed to someone else by its buyer (sales/buyer_changes.py): its line left ``lines``
# for ``transferredLines`` and the new holder's ticket has a new code.
TRANSFERRED = "transferred"
HANDED_ON = gettext_noop("Handed to someone else: only their new ticket admits.")

# Outcomes of a scan
ADMITTED = "admitted"
USED = "used"
NOT_VALID_BOOKING = gettext_noop("The booking is not valid.")
NOT_VALID = "not_valid"  # canceled, refunded, unpaid order
WRONG_SESSION = "wrong_session"
UNKNOWN = "unknown"

TICKET_CODE = re.compile(r"[A-Za-z0-9_-]{16,64}")
TICKET_HASH = re.compile(r"[0-9a-f]{64}")
SCAN_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
DOOR_MAX_LENGTH = 40
# An offline scan's time comes from the door's phone: believed within these bounds.
OFFLINE_PAST_LIMIT = timedelta(days=2)
CLOCK_SKEW = timedelta(minutes=5)

ORDER_FIELDS = {"ref": 1, "name": 1, "state": 1, "lines": 1, "sessions": 1, "method": 1}


# --- input ---


def ticket_hash(code: str) -> str:
    """What the offline list knows a ticket by: SHA-256 of the code, hex (the page hashes the
    scanned code the same way with crypto.subtle)."""
    return hashlib.sha256(code.encode()).hexdigest()


def _text(value) -> str:
    """Input that must be text (JSON can send anything)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidRequest(gettext("Expected text."))
    return value


def clean_code(code) -> str:
    code = _text(code).strip()
    if not TICKET_CODE.fullmatch(code):
        raise InvalidRequest(gettext("That is not a ticket code."))
    return code


def clean_hash(value) -> str:
    value = _text(value).strip().lower()
    if not TICKET_HASH.fullmatch(value):
        raise InvalidRequest(gettext("That is not a ticket."))
    return value


def clean_door(door) -> str:
    door = re.sub(r"\s+", " ", _text(door)).strip()
    if not door:
        raise InvalidRequest(gettext("Choose the door you are at first."))
    if len(door) > DOOR_MAX_LENGTH or not door.isprintable():
        raise InvalidRequest(gettext("A door's name is at most %(max)d characters.") % {"max": DOOR_MAX_LENGTH})
    return door


def clean_scan_id(scan_id) -> str:
    if scan_id in (None, ""):
        return secrets.token_urlsafe(12)
    scan_id = _text(scan_id)
    if not SCAN_ID.fullmatch(scan_id):
        raise InvalidRequest(gettext("Malformed scan id."))
    return scan_id


def clean_scan_time(at: datetime | None, now: datetime) -> datetime:
    """An offline scan's time: not in the future (beyond clock skew, then now), not days ago."""
    if at is None:
        return now
    if at.tzinfo is None:
        raise InvalidRequest(gettext("A scan time needs its time zone."))
    if at < now - OFFLINE_PAST_LIMIT or at > now + CLOCK_SKEW:
        raise InvalidRequest(gettext("The scan's time is off by more than the phone's clock can be."))
    at = min(at, now)
    return at.replace(microsecond=at.microsecond // 1000 * 1000)


# --- the scope a door checks ---


@dataclass(frozen=True)
class Scope:
    """What a door admits to: one session, or every section of a performance."""

    id: ObjectId  # the session's id, or the performance's
    session_ids: tuple[ObjectId, ...]
    name: str
    start: datetime
    venue: str
    status: str
    sections: dict  # session id -> section name ("" for an ordinary session)
    # every ticket of the scope's sessions starts with its order's reference (``ticketCodesByRef``
    # on each: sessions made since, or surveyed by ``manage.py backfill_orders``): a code that does
    # not, or whose reference finds nothing, is not one of them, and no shard but one is asked
    codes_by_ref: bool = False
    # the theater lets a booking's every ticket in on one scan of any of them (``admitWholeBooking``)
    whole_booking: bool = False

    @property
    def sectioned(self) -> bool:
        return len(self.session_ids) > 1 or any(self.sections.values())

    def lines_filter(self) -> dict:
        if len(self.session_ids) == 1:
            return {"lines.sessionId": self.session_ids[0]}
        return {"lines.sessionId": {"$in": list(self.session_ids)}}

    def session_clause(self):
        return self.session_ids[0] if len(self.session_ids) == 1 else {"$in": list(self.session_ids)}


SCOPE_FIELDS = {
    "name": 1,
    "start": 1,
    "theaterName": 1,
    "venueName": 1,
    "status": 1,
    "performanceId": 1,
    "section": 1,
    "ticketCodesByRef": 1,
    "theaterId": 1,
}


def _admits_whole_booking(theater_id) -> bool:
    theater = mongo.theaters().find_one({"_id": theater_id}, {"admitWholeBooking": 1}) if theater_id else None
    return bool((theater or {}).get("admitWholeBooking"))


def get_scope(scope_id: ObjectId) -> Scope:
    """A session (by its id) or a sectioned performance (by its performanceId). A section's own
    id gives its whole performance: a stadium's gate admits to every section."""
    session = mongo.sessions().find_one({"_id": scope_id}, SCOPE_FIELDS)
    if session is not None and session.get("performanceId") is None:
        return Scope(
            id=session["_id"],
            session_ids=(session["_id"],),
            name=session["name"],
            start=session["start"],
            venue=session.get("theaterName", ""),
            status=session.get("status", ""),
            sections={session["_id"]: ""},
            codes_by_ref=bool(session.get("ticketCodesByRef")),
            whole_booking=_admits_whole_booking(session.get("theaterId")),
        )
    performance_id = session["performanceId"] if session is not None else scope_id
    sections = list(mongo.sessions().find({"performanceId": performance_id}, SCOPE_FIELDS).sort("section.index", 1))
    if not sections:
        raise NotFound(gettext("No such performance."))
    first = sections[0]
    return Scope(
        id=performance_id,
        session_ids=tuple(s["_id"] for s in sections),
        name=first["name"],
        start=first["start"],
        venue=first.get("venueName", first.get("theaterName", "")),
        status=SessionStatus.CANCELED
        if all(s.get("status") == SessionStatus.CANCELED for s in sections)
        else first.get("status", ""),
        sections={s["_id"]: (s.get("section") or {}).get("name", "") for s in sections},
        codes_by_ref=all(s.get("ticketCodesByRef") for s in sections),
        whole_booking=_admits_whole_booking(first.get("theaterId")),
    )


def door_sessions(now: datetime | None = None) -> list[dict]:
    """The performances a door may be checking now: started up to 12 hours ago or starting within
    two weeks (one query on the ``start+_id`` index; ties of start by id), a sectioned venue's
    sections as one."""
    now = now or clock.now()
    query = {"start": {"$gt": now - timedelta(hours=12), "$lt": now + timedelta(days=14)}}
    fields = {**SCOPE_FIELDS, "seatsTotal": 1, "seatsAvailable": 1, "prices": 1}
    cursor = mongo.sessions().find(query, fields).sort([("start", 1), ("_id", 1)]).limit(500).batch_size(500)
    return group_sections(list(cursor))


# --- what a door sees of a ticket ---


def short_name(name: str) -> str:
    """ "Jane Q. Smith" -> "Jane S.": enough to tell two people apart at the door."""
    parts = str(name or "").split()
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0][:24]
    return f"{parts[0][:20]} {parts[-1][0]}."


def _categories(order: Order, session_id) -> dict:
    for s in order.get("sessions", []):
        if s.get("_id") == session_id:
            return s.get("categories") or {}
    return {}


def door_ticket(order: Order, line: Mapping[str, Any], scope: Scope | None = None, *, full_name: bool = True) -> dict:
    section = scope.sections.get(line["sessionId"], "") if scope is not None else ""
    holder = (line.get("holder") or {}).get("name") or order.get("name", "")  # a ticket handed on: its holder
    return {
        "row": line["row"],
        "seat": line["seat"],
        "section": section,
        "category": _categories(order, line["sessionId"]).get(line["cat"], line["cat"]),
        # in the door staff's language; the condition is what the holder must show (a student card)
        "type": ticket_type_name(sold_ticket_type(line)),
        "condition": ticket_type_condition(sold_ticket_type(line)),
        "name": holder if full_name else short_name(holder),
        "ref": order["ref"],
        # given away: the door and the attendee list say so (no money was taken for it)
        "comp": order.get("method") == COMPLIMENTARY_METHOD,
    }


def _used(record: Mapping[str, Any] | None) -> dict | None:
    if not record:
        return None
    return {
        "at": record["at"],
        "door": record.get("door", ""),
        "by": record.get("by", ""),
        "offline": bool(record.get("offline")),
    }


@dataclass
class Outcome:
    status: str  # ADMITTED, USED, NOT_VALID, WRONG_SESSION, UNKNOWN
    message: str
    ticket: dict | None = None
    used: dict | None = None  # the check-in that used the ticket (for USED; also ADMITTED: this one)
    session: dict | None = None  # WRONG_SESSION: the ticket's own session {name, start, venue}
    state: str = ""  # the order's state (NOT_VALID)
    hash: str = ""
    replay: bool = False  # ADMITTED by this same scan before (a retried request or sync)
    replaced_by: dict | None = None  # NOT_VALID, exchanged: the seat that replaced it {row, seat, section}
    conflict: dict | None = None  # an offline check-in that did not match, as stored
    party: int = 1  # ADMITTED: how many people this scan let in (the whole booking, where allowed)

    @property
    def admitted(self) -> bool:
        return self.status == ADMITTED


# --- checking in ---


def _find_line(order: Order, code: str) -> OrderLine | None:
    return next((line for line in order["lines"] if line.get("ticket") == code), None)


def _code_for_hash(scope: Scope, digest: str) -> str | None:
    """A ticket picked by its hash (a search hit, an offline list entry): the code behind it,
    from the scope's orders (index on lines.sessionId). Refunded and exchanged tickets too: an
    offline phone's list may be older than the refund or the exchange, and its sync must hear
    why such a ticket no longer admits, not "not a ticket for this performance"."""
    arrays = ("lines", "refundedLines", "exchangedLines", "transferredLines")
    query = {"$or": [{f"{name}.sessionId": scope.session_clause()} for name in arrays]}
    fields = {f"{name}.{part}": 1 for name in arrays for part in ("ticket", "sessionId")}
    for order in mongo.orders().find(query, fields):
        for name in arrays:
            for line in order.get(name, []):
                if line["sessionId"] in scope.session_ids and ticket_hash(line["ticket"]) == digest:
                    return line["ticket"]
    return None


def check_in(
    scope: Scope,
    *,
    door: str | None,  # as the door sent it: cleaned (and refused if empty) here
    by: str,
    code: str | None = None,
    digest: str | None = None,
    scan_id: str | None = None,
    at: datetime | None = None,
    offline: bool = False,
) -> Outcome:
    """Let the holder of this ticket in, once. ``code`` is the ticket code (scanned or typed),
    or ``digest`` its SHA-256 (picked from a search). ``offline``: a check-in a door made without
    network and syncs now (``at`` is when it scanned; a miss is stored as a conflict)."""
    now = clock.now()
    door = clean_door(door)
    scan_id = clean_scan_id(scan_id)
    at = clean_scan_time(at, now) if offline else now
    if code is None:
        digest = clean_hash(digest)
        code = _code_for_hash(scope, digest)
        if code is None:
            outcome = Outcome(UNKNOWN, gettext_noop("Not a ticket for this performance."), hash=digest)
            return _report(scope, outcome, door, by, scan_id, at, now) if offline else outcome
    else:
        code = clean_code(code)
        digest = ticket_hash(code)
    record = {"at": at, "door": door, "by": str(by)[:150], "scanId": scan_id, "offline": offline, "recordedOn": now}
    by_ref = _by_ref(code)
    if not by_ref and scope.codes_by_ref:  # not a code of this scope's tickets, nor of an order at all
        outcome = Outcome(UNKNOWN, gettext_noop("Unknown ticket."), hash=digest)
        return _report(scope, outcome, door, by, scan_id, at, now) if offline else outcome
    counted_in = _ticket_sessions(scope, by_ref, code)
    for _attempt in range(3):
        # the whole booking (where the theater allows it): the booking's other unused tickets here,
        # each still unused at the write. An offline phone admitted a booking's tickets from its own
        # list and queued each as its own scan (static/checkin/door.js): its sync admits one each.
        party = _party(scope, by_ref, code) if scope.whole_booking and not offline else []
        codes = [code, *party]
        query: dict = {
            **by_ref,
            "lines": {
                "$elemMatch": {"ticket": code, "sessionId": scope.session_clause(), "checkedIn": {"$exists": False}}
            },
            "state": {"$in": list(ADMITTING_STATES)},
        }
        if party:
            query["$nor"] = [{"lines": {"$elemMatch": {"ticket": {"$in": party}, "checkedIn": {"$exists": True}}}}]
        order = mongo.orders().find_one_and_update(
            query,
            {
                "$set": {"lines.$[l].checkedIn": record},
                "$push": {
                    **marks.push(scope.session_ids if party else counted_in),
                    "webhookEvents": {
                        "$each": [outbox.webhook_event(outbox.TICKET_CHECKED_IN, ticket=c) for c in codes]
                    },
                },
            },
            array_filters=[{"l.ticket": {"$in": codes}, "l.checkedIn": {"$exists": False}}],
            projection=ORDER_FIELDS,
            return_document=ReturnDocument.AFTER,
        )
        if order is not None:
            outbox.queue_webhook_events(outbox.ORDERS, order)
            line = cast(OrderLine, _find_line(order, code))  # the update matched this ticket's line
            ticket = door_ticket(order, line, scope)
            return Outcome(
                ADMITTED, gettext_noop("Valid ticket."), ticket, _used(record), hash=digest, party=len(codes)
            )
        legacy_codes = not scope.codes_by_ref  # a code from before codes began with their reference?
        if by_ref and legacy_codes and mongo.orders().find_one({**by_ref, "lines.ticket": code}, {"_id": 1}) is None:
            by_ref = {}  # it may be one (or none at all): by code alone, every shard
            continue
        why = _why_not(scope, code, digest, scan_id, by_ref)
        if why is not None:
            return _report(scope, why, door, by, scan_id, at, now) if offline and not why.admitted else why
        # Unused, admitting and in scope after all: the order became paid between the two
        # commands. Try the update again.
    raise RuntimeError(f"check-in of a ticket kept changing under us (scope {scope.id})")


def _party(scope: Scope, by_ref: dict, code: str) -> list[str]:
    """The other unused tickets of this ticket's booking for the scope (one read of the order)."""
    order = mongo.orders().find_one({**by_ref, "lines.ticket": code}, {"lines": 1})
    return [
        line["ticket"]
        for line in (order or {}).get("lines", [])
        if line["ticket"] != code and line["sessionId"] in scope.session_ids and not line.get("checkedIn")
    ]


def undo_check_in(scope: Scope, *, by: str, code: str | None = None, digest: str | None = None) -> dict:
    """Staff take a check-in back (the wrong ticket scanned, a guest who left and gives the
    ticket to someone else): one conditional update on the check-in they saw (its
    ``recordedOn``); the line loses ``checkedIn`` and the order keeps what was undone, by whom
    and when, in ``checkinUndos``. Returns the ticket as the door shows it."""
    if code is None:
        code = _code_for_hash(scope, clean_hash(digest))
        if code is None:
            raise NotFound(gettext("Not a ticket for this performance."))
    else:
        code = clean_code(code)
    by_ref = _by_ref(code)
    order = mongo.orders().find_one({**by_ref, "lines.ticket": code}, ORDER_FIELDS)
    if order is None and by_ref:  # a code from before codes began with their reference
        by_ref = {}
        order = mongo.orders().find_one({"lines.ticket": code}, ORDER_FIELDS)
    line = _find_line(order, code) if order is not None else None
    if order is None or line is None or line["sessionId"] not in scope.session_ids:
        raise NotFound(gettext("Not a ticket for this performance."))
    record = line.get("checkedIn")
    if not record:
        raise Conflict(gettext("This ticket is not checked in."))
    undo = {"ticket": code, "at": clock.now(), "by": str(by)[:150], "checkIn": record}
    faults.point("checkin.before_undo")  # tests: the check-in changes between the read and the write
    result = mongo.orders().update_one(
        {
            "_id": order["_id"],
            **by_ref,
            "lines": {"$elemMatch": {"ticket": code, "checkedIn.recordedOn": record["recordedOn"]}},
        },
        {
            "$unset": {"lines.$[l].checkedIn": ""},
            "$push": {"checkinUndos": undo, **marks.push([line["sessionId"]])},
        },
        array_filters=[{"l.ticket": code}],
    )
    if not result.modified_count:
        raise Conflict(gettext("The check-in changed meanwhile; please look again."))
    logger.info("ticket %s of order %s: check-in at %s undone by %s", code[:12], order["ref"], record.get("door"), by)
    return door_ticket(order, line, scope)


def _ticket_sessions(scope: Scope, by_ref: dict, code: str) -> tuple[ObjectId, ...]:
    """The session whose sales report counts this ticket's check-in (its mark: reports/marks.py):
    the scope's one session; at a sectioned performance's gate, the ticket's section, read from its
    order (a ticket code's session never changes: an exchange makes new codes)."""
    if len(scope.session_ids) == 1:
        return scope.session_ids
    order = mongo.orders().find_one({**by_ref, "lines.ticket": code}, {"lines.ticket": 1, "lines.sessionId": 1})
    return tuple(line["sessionId"] for line in (order or {}).get("lines", []) if line["ticket"] == code)


def _by_ref(code: str) -> dict:
    """The order's reference a ticket code starts with, as a filter: orders are sharded on ref, so
    the check-in's commands go to one shard (docs/architecture.md, "Shard keys")."""
    ref = ref_of_ticket(code)
    return {"ref": ref} if ref else {}


def _why_not(scope: Scope, code: str, digest: str, scan_id: str, by_ref: dict) -> Outcome | None:
    """Why the update did not match, read from the order. None: it would match now."""
    order = mongo.orders().find_one(
        {
            "$or": [
                {**by_ref, "lines.ticket": code},
                {**by_ref, "refundedLines.ticket": code},
                {**by_ref, "exchangedLines.ticket": code},  # moved to another seat (sales/exchanges.py)
                {**by_ref, "transferredLines.ticket": code},  # handed to someone else
            ]
        },
        {
            **ORDER_FIELDS,
            "refundedLines": 1,
            "exchangedLines": 1,
            "transferredLines": 1,
            "exchanges.old.ticket": 1,
            "exchanges.new": 1,
        },
    )
    line = _find_line(order, code) if order is not None else None
    refunded = order is not None and line is None  # its ticket was refunded (payments/refunds.py)
    if refunded:
        line = next((x for x in order.get("refundedLines", []) if x.get("ticket") == code), None)
    if refunded and line is None:
        handed = next((x for x in order.get("transferredLines", []) if x.get("ticket") == code), None)
        if handed is not None:
            ticket = door_ticket(order, handed, scope)
            return Outcome(
                NOT_VALID, HANDED_ON, ticket, used=_used(handed.get("checkedIn")), state=TRANSFERRED, hash=digest
            )
        old = next((x for x in order.get("exchangedLines", []) if x.get("ticket") == code), None)
        if old is not None:
            ticket = door_ticket(order, old, scope)
            return Outcome(
                NOT_VALID,
                REPLACED,
                ticket,
                used=_used(old.get("checkedIn")),
                state=EXCHANGED,
                hash=digest,
                replaced_by=replacement_seat(order, code, scope),
            )
    if line is None:
        return Outcome(UNKNOWN, gettext_noop("Unknown ticket."), hash=digest)
    if refunded:
        ticket = door_ticket(order, line, scope)
        used = _used(line.get("checkedIn"))
        return Outcome(
            NOT_VALID, gettext_noop("The ticket was refunded."), ticket, used=used, state=order["state"], hash=digest
        )
    ticket = door_ticket(order, line, scope)
    if line["sessionId"] not in scope.session_ids:
        session: Mapping[str, Any] = next(
            (s for s in order.get("sessions", []) if s.get("_id") == line["sessionId"]), {}
        )
        other = {
            "name": session.get("name", ""),
            "start": session.get("start"),
            "venue": session.get("theaterName", ""),
        }
        return Outcome(
            WRONG_SESSION, gettext_noop("This ticket is for another performance."), ticket, session=other, hash=digest
        )
    if order["state"] not in ADMITTING_STATES:
        message = NOT_ADMITTING.get(order["state"], NOT_VALID_BOOKING)
        return Outcome(NOT_VALID, message, ticket, used=_used(line.get("checkedIn")), state=order["state"], hash=digest)
    checked = line.get("checkedIn")
    if checked:
        if checked.get("scanId") == scan_id:  # this very scan, sent again (a retry, a repeated sync)
            return Outcome(ADMITTED, gettext_noop("Valid ticket."), ticket, _used(checked), hash=digest, replay=True)
        return Outcome(USED, gettext_noop("Already used."), ticket, _used(checked), hash=digest)
    return None


# --- conflicts: a check-in made offline that did not admit ---


def _report(scope: Scope, outcome: Outcome, door: str, by: str, scan_id: str, at: datetime, now: datetime) -> Outcome:
    """Store an offline check-in that missed as a conflict (once per scan: a repeated sync finds
    the same one) and attach it to the outcome."""
    ticket = outcome.ticket or {}
    conflict = {
        "_id": ObjectId(),
        "scopeId": scope.id,
        "scanId": scan_id,
        "kind": outcome.status,
        "reason": outcome.message,
        "hash": outcome.hash,
        "ticket": ticket,
        "offline": {"at": at, "door": door, "by": str(by)[:150]},
        "first": outcome.used,  # the check-in that used the ticket before, if any
        "state": outcome.state,
        "reportedOn": now,
    }
    if outcome.replaced_by is not None:  # exchanged: staff are told which seat replaced it
        conflict["replacedBy"] = outcome.replaced_by
    try:
        mongo.checkin_conflicts().insert_one(conflict)
    except DuplicateKeyError:
        conflict = mongo.checkin_conflicts().find_one({"scanId": scan_id})
    outcome.conflict = conflict
    return outcome


def conflicts(scope: Scope, limit: int = 100) -> list[dict]:
    newest_first = [("reportedOn", -1), ("_id", -1)]
    return list(mongo.checkin_conflicts().find({"scopeId": scope.id}).sort(newest_first).limit(limit))


def acknowledge_conflict(scope: Scope, conflict_id: ObjectId, by: str) -> bool:
    """Staff saw it and dealt with it; it stays stored, marked (once)."""
    result = mongo.checkin_conflicts().update_one(
        {"_id": conflict_id, "scopeId": scope.id, "acknowledged": {"$exists": False}},
        {"$set": {"acknowledged": {"by": str(by)[:150], "at": clock.now()}}},
    )
    return bool(result.modified_count)


# --- what the doors read ---


def counts(scope: Scope) -> dict:
    """Checked in / sold, by door, and the conflicts: one aggregation over the scope's orders
    (index on lines.sessionId) and one count."""
    pipeline = [
        {"$match": {**scope.lines_filter(), "state": {"$in": list(ADMITTING_STATES)}}},
        {"$unwind": "$lines"},
        {"$match": {"lines.sessionId": scope.session_clause()}},
        {"$group": {"_id": "$lines.checkedIn.door", "n": {"$sum": 1}}},
    ]
    sold = checked_in = 0
    doors = []
    for row in mongo.orders().aggregate(pipeline):
        sold += row["n"]
        if row["_id"] is not None:
            checked_in += row["n"]
            doors.append({"door": row["_id"], "count": row["n"]})
    doors.sort(key=lambda d: (-d["count"], d["door"]))
    open_conflicts = mongo.checkin_conflicts().count_documents(
        {"scopeId": scope.id, "acknowledged": {"$exists": False}}
    )
    all_conflicts = mongo.checkin_conflicts().count_documents({"scopeId": scope.id})
    return {
        "sold": sold,
        "checkedIn": checked_in,
        "doors": doors,
        "conflicts": all_conflicts,
        "openConflicts": open_conflicts,
    }


def replacement_seat(order: Order, code: str, scope: Scope | None = None) -> dict | None:
    """The seat that now stands for an exchanged ticket (``{row, seat, section}``): the new line of
    the exchange that replaced it, followed through later exchanges of that one. None if the
    order no longer says (an exchange record without its lines)."""
    by_old = {}
    for record in order.get("exchanges", []):
        for old, new in zip(record.get("old", []), record.get("new", []), strict=False):
            by_old[old.get("ticket")] = new
    line = by_old.get(code)
    seen = {code}
    while line is not None and line["ticket"] in by_old and line["ticket"] not in seen:
        seen.add(line["ticket"])
        line = by_old[line["ticket"]]
    if line is None:
        return None
    section = scope.sections.get(line["sessionId"], "") if scope is not None else ""
    seat = {"row": line["row"], "seat": line["seat"], "section": section}
    if scope is not None and line["sessionId"] not in scope.session_ids:
        # moved to another performance: the door says which, or the holder would look for the
        # new seat tonight
        show: Mapping[str, Any] = next((s for s in order.get("sessions", []) if s.get("_id") == line["sessionId"]), {})
        seat["show"] = {"name": show.get("name", ""), "when": mail_time(show["start"]) if show.get("start") else ""}
    return seat


def door_list(scope: Scope) -> list[dict]:
    """The scope's tickets as an offline door needs them: the code's SHA-256 (never the code),
    seat, category, ticket type, a short name, the booking reference (printed on the ticket, for
    the fallback search; alone it opens nothing), whether the order admits, and the check-in so
    far. Orders that never sold (failed) are left out."""
    tickets = []
    # refunded and exchanged tickets too (they left ``lines``: payments/refunds.py, exchanges.py),
    # so an offline door refuses them saying why, as an online one does
    refunded = {"refundedLines.sessionId": scope.session_clause()}
    exchanged = {"exchangedLines.sessionId": scope.session_clause()}
    handed_on = {"transferredLines.sessionId": scope.session_clause()}
    query = {"$or": [scope.lines_filter(), refunded, exchanged, handed_on], "state": {"$ne": OrderState.FAILED}}
    fields = {
        **ORDER_FIELDS,
        "refundedLines": 1,
        "exchangedLines": 1,
        "transferredLines": 1,
        "exchanges.old.ticket": 1,
        "exchanges.new": 1,
    }
    for order in mongo.orders().find(query, fields).batch_size(1000):
        every = [(line, "") for line in order["lines"]]
        every += [(x, OrderState.REFUNDED) for x in order.get("refundedLines", [])]
        every += [(x, EXCHANGED) for x in order.get("exchangedLines", [])]
        every += [(x, TRANSFERRED) for x in order.get("transferredLines", [])]
        for line, gone in every:
            if line["sessionId"] not in scope.session_ids:
                continue
            entry = {"h": ticket_hash(line["ticket"]), **door_ticket(order, line, scope, full_name=False)}
            entry["ok"] = not gone and order["state"] in ADMITTING_STATES
            if not entry["ok"]:
                entry["state"] = gone or order["state"]
            if gone == EXCHANGED:
                entry["newSeat"] = replacement_seat(order, line["ticket"], scope)
            used = _used(line.get("checkedIn"))
            if used:
                entry["used"] = {"at": used["at"], "door": used["door"]}
            tickets.append(entry)
    return tickets


def search(scope: Scope, text: str, limit: int = 20) -> list[dict]:
    """Tickets of the scope by the buyer's name (part of it, any case) or booking reference (its
    start). Each hit carries the ticket's hash, which a door checks in with."""
    text = re.sub(r"\s+", " ", _text(text)).strip()
    if len(text) < 2 or len(text) > 100:
        raise InvalidRequest(gettext("Type at least two letters of the name or the booking reference."))
    clauses: list[dict] = [{"name": {"$regex": re.escape(text), "$options": "i"}}]
    ref = text.upper().replace(" ", "")
    if re.fullmatch(r"[A-Z0-9]{2,8}", ref):
        clauses.append({"ref": {"$regex": "^" + ref}})
    hits = []
    cursor = mongo.orders().find({**scope.lines_filter(), "$or": clauses}, ORDER_FIELDS).limit(limit)
    for order in cursor:
        for line in order["lines"]:
            if line["sessionId"] not in scope.session_ids:
                continue
            hit = {"h": ticket_hash(line["ticket"]), **door_ticket(order, line, scope)}
            hit["ok"] = order["state"] in ADMITTING_STATES
            hit["state"] = order["state"]
            # why it does not admit, in the door staff's language (never the state's code)
            hit["why"] = "" if hit["ok"] else gettext(NOT_ADMITTING.get(order["state"], NOT_VALID_BOOKING))
            used = _used(line.get("checkedIn"))
            if used:
                hit["used"] = {"at": used["at"], "door": used["door"]}
            hits.append(hit)
    return hits
