"""The theater's rules for buyers changing their own bookings: exchange and cancel online until
some hours before the performance, for a fee per ticket, and hand a ticket to a friend a limited
number of times per order until a cut-off. A theater sets a default (``theaters.selfService``); a
performance may set its own (``sessions.selfService``), which then wins as a whole. Absent
everywhere: nothing is allowed online (the box office does it).

Services (``set_theater_rules``, ``set_session_rules``, ``set_series_rules``) take every value as
a keyword and refuse what is out of range; ``effective_rules`` is the selector the buyer's
services and pages read, ``refusal`` says why a change is not possible now.
"""

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from django.utils.translation import gettext, ngettext

from booking.core import mongo
from booking.core.errors import InvalidRequest, NotFound

MAX_HOURS = 24 * 60  # the cut-off is at most 60 days before the performance
MAX_FEE = 100_000  # cents per ticket
MAX_TRANSFERS = 50  # per order

EXCHANGE = "exchange"
CANCEL = "cancel"
TRANSFER = "transfer"


@dataclass(frozen=True)
class Rules:
    exchange: bool = False
    cancel: bool = False
    hours_before: int = 48  # exchange and cancel online until this many hours before the start
    fee: int = 0  # cents per ticket exchanged or canceled
    transfer: bool = False
    max_transfers: int = 2  # per order
    transfer_hours_before: int = 2

    def as_document(self) -> dict:
        return {
            "exchange": self.exchange,
            "cancel": self.cancel,
            "hoursBefore": self.hours_before,
            "fee": self.fee,
            "transfer": self.transfer,
            "maxTransfers": self.max_transfers,
            "transferHoursBefore": self.transfer_hours_before,
        }

    @property
    def anything(self) -> bool:
        return self.exchange or self.cancel or self.transfer

    def deadline(self, start: datetime, action: str) -> datetime:
        hours = self.transfer_hours_before if action == TRANSFER else self.hours_before
        return start - timedelta(hours=hours)


NOTHING_ONLINE = Rules()


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidRequest(
            gettext("%(field)s must be a whole number from %(low)d to %(high)d.")
            % {"field": name, "low": low, "high": high},
            fields={name: gettext("From %(low)d to %(high)d.") % {"low": low, "high": high}},
        )
    return value


def clean_rules(
    *,
    exchange: bool,
    cancel: bool,
    hours_before: int,
    fee: int,
    transfer: bool,
    max_transfers: int,
    transfer_hours_before: int,
) -> Rules:
    """The rules as given, or InvalidRequest naming the value out of range."""
    for flag in (exchange, cancel, transfer):
        if not isinstance(flag, bool):
            raise InvalidRequest(gettext("Say yes or no for each change buyers may make."))
    return Rules(
        exchange=exchange,
        cancel=cancel,
        hours_before=_whole(hours_before, "hours_before", 0, MAX_HOURS),
        fee=_whole(fee, "fee", 0, MAX_FEE),
        transfer=transfer,
        max_transfers=_whole(max_transfers, "max_transfers", 0, MAX_TRANSFERS),
        transfer_hours_before=_whole(transfer_hours_before, "transfer_hours_before", 0, MAX_HOURS),
    )


def rules_from(document: Mapping[str, Any] | None) -> Rules | None:
    """The rules stored on a theater or session, None when it sets none."""
    stored = (document or {}).get("selfService")
    if not stored:
        return None
    default = NOTHING_ONLINE
    return Rules(
        exchange=bool(stored.get("exchange", default.exchange)),
        cancel=bool(stored.get("cancel", default.cancel)),
        hours_before=int(stored.get("hoursBefore", default.hours_before)),
        fee=int(stored.get("fee", default.fee)),
        transfer=bool(stored.get("transfer", default.transfer)),
        max_transfers=int(stored.get("maxTransfers", default.max_transfers)),
        transfer_hours_before=int(stored.get("transferHoursBefore", default.transfer_hours_before)),
    )


# --- services: staff set the rules ---


def set_theater_rules(*, theater_id: ObjectId, rules: Rules) -> None:
    """The theater's default for its performances that set none of their own."""
    done = mongo.theaters().update_one({"_id": theater_id}, {"$set": {"selfService": rules.as_document()}})
    if not done.matched_count:
        raise NotFound(gettext("No such theater."))


def set_session_rules(*, session_id: ObjectId, rules: Rules | None) -> None:
    """A performance's own rules; None: it follows its theater's default again. A sectioned
    performance's sections get the same rules (they are one performance to the buyer)."""
    session = mongo.sessions().find_one({"_id": session_id}, {"performanceId": 1})
    if session is None:
        raise NotFound(gettext("No such session."))
    ids = [session_id]
    if session.get("performanceId") is not None:
        ids = [s["_id"] for s in mongo.sessions().find({"performanceId": session["performanceId"]}, {"_id": 1})]
    _set_on_sessions(ids, rules)


def set_series_rules(*, session_ids: Iterable[ObjectId], rules: Rules | None) -> int:
    """The same rules (or the theater's default) for every performance of a series. Returns how
    many performances were changed."""
    return _set_on_sessions(list(session_ids), rules)


def _set_on_sessions(ids: list[ObjectId], rules: Rules | None) -> int:
    update = {"$set": {"selfService": rules.as_document()}} if rules else {"$unset": {"selfService": ""}}
    return mongo.sessions().update_many({"_id": {"$in": ids}}, update).matched_count


# --- selectors ---


def effective_rules(*, session: Mapping[str, Any] | None, theater: Mapping[str, Any] | None) -> Rules:
    """The performance's own rules, else its theater's default, else nothing online."""
    return rules_from(session) or rules_from(theater) or NOTHING_ONLINE


def rules_of_sessions(session_ids: Iterable[ObjectId]) -> dict[ObjectId, Rules]:
    """Each performance's effective rules: two reads (sessions, then their theaters)."""
    sessions = list(mongo.sessions().find({"_id": {"$in": list(set(session_ids))}}, {"theaterId": 1, "selfService": 1}))
    theater_ids = {s.get("theaterId") for s in sessions}
    theaters = {t["_id"]: t for t in mongo.theaters().find({"_id": {"$in": list(theater_ids)}}, {"selfService": 1})}
    return {s["_id"]: effective_rules(session=s, theater=theaters.get(s.get("theaterId"))) for s in sessions}


def refusal(*, rules: Rules, action: str, start: datetime, now: datetime) -> str:
    """Why the buyer may not make this change to a ticket of a performance starting at ``start``
    now; "" when they may. The cut-off is exact: at the deadline itself it is refused."""
    allowed = {EXCHANGE: rules.exchange, CANCEL: rules.cancel, TRANSFER: rules.transfer}[action]
    if not allowed:
        return {
            EXCHANGE: gettext("This performance's tickets cannot be exchanged online; please ask the box office."),
            CANCEL: gettext("This performance's tickets cannot be canceled online; please ask the box office."),
            TRANSFER: gettext("This performance's tickets cannot be handed to someone else online."),
        }[action]
    if now >= rules.deadline(start, action):
        hours = rules.transfer_hours_before if action == TRANSFER else rules.hours_before
        return ngettext(
            "Online changes end %(hours)d hour before the performance; please ask the box office.",
            "Online changes end %(hours)d hours before the performance; please ask the box office.",
            hours,
        ) % {"hours": hours}
    return ""


def as_dict(rules: Rules) -> dict:
    return asdict(rules)
