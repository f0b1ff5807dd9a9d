"""How the door check-in's outcomes and conflicts are shown: JSON for the door page's script,
and the same data for the templates (the door page, the admin's session page)."""

from datetime import datetime

from django.utils.translation import gettext

from booking.core.formatting import clock_time
from booking.sales import checkin


def outcome_data(outcome: checkin.Outcome) -> dict:
    data = {
        "status": outcome.status,
        "message": gettext(outcome.message) if outcome.message else "",  # kept in English, shown translated
        "ticket": outcome.ticket,
        "used": outcome.used,
        "session": outcome.session,
        "state": outcome.state,
        "hash": outcome.hash,
        "replay": outcome.replay,
        "party": outcome.party,
    }
    if outcome.replaced_by is not None:
        data["replacedBy"] = outcome.replaced_by
        data["message"] = replaced_message(outcome.replaced_by)
    if outcome.conflict is not None:
        data["conflict"] = conflict_data(outcome.conflict)
    return data


def seat_text(seat: dict) -> str:
    """ "North 1 · Row B · Seat 5", as the door page's script writes it."""
    text = gettext("Row %(row)s · Seat %(seat)s") % {"row": seat["row"], "seat": seat["seat"]}
    return f"{seat['section']} · {text}" if seat.get("section") else text


def replaced_message(seat: dict) -> str:
    show = seat.get("show")
    if show:  # moved to another performance: which one, or the holder looks for the seat tonight
        return gettext("Replaced by an exchange — new seat: %(seat)s, %(show)s, %(when)s.") % {
            "seat": seat_text(seat),
            "show": show["name"],
            "when": show["when"],
        }
    return gettext("Replaced by an exchange — new seat: %(seat)s.") % {"seat": seat_text(seat)}


def _when(at) -> str:
    return clock_time(at) if isinstance(at, datetime) else ""


def conflict_summary(conflict: dict) -> str:
    """What happened, in a sentence for the door staff (times in the theater's time zone)."""
    mine = conflict["offline"]
    first = conflict.get("first")
    if conflict["kind"] == checkin.USED and first:
        mine_text = gettext("at %(door)s, %(time)s offline (%(by)s)") % {
            "door": mine["door"],
            "time": _when(mine["at"]),
            "by": mine["by"],
        }
        where = {"door": first["door"], "time": _when(first["at"])}
        first_text = (
            gettext("at %(door)s, %(time)s offline") % where
            if first.get("offline")
            else gettext("at %(door)s, %(time)s") % where
        ) + (f" ({first['by']})" if first.get("by") else "")
        both = sorted([(mine["at"], mine_text), (first["at"], first_text)], key=lambda pair: pair[0])
        return gettext("Let in twice: %(first)s and %(second)s.") % {"first": both[0][1], "second": both[1][1]}
    reason = conflict.get("reason", "")
    if conflict.get("replacedBy"):
        reason_text = replaced_message(conflict["replacedBy"])  # exchanged: the seat that replaced it
    else:
        reason_text = gettext(reason) if reason else ""  # kept in English, shown translated
    return gettext("Let in offline at %(door)s, %(time)s (%(by)s), but: %(reason)s") % {
        "door": mine["door"],
        "time": _when(mine["at"]),
        "by": mine["by"],
        "reason": reason_text,
    }


def conflict_data(conflict: dict) -> dict:
    return {
        "id": str(conflict["_id"]),
        "summary": conflict_summary(conflict),
        "kind": conflict["kind"],
        "reason": conflict.get("reason", ""),
        "ticket": conflict.get("ticket") or {},
        "offline": conflict["offline"],
        "first": conflict.get("first"),
        "reportedOn": conflict["reportedOn"],
        "seen": conflict.get("acknowledged"),
    }
