"""How the door check-in's outcomes and conflicts are shown: JSON for the door page's script,
and the same data for the templates (the door page, the admin's session page)."""

from datetime import datetime

from .formatting import clock_time
from .services import checkin


def outcome_data(outcome: checkin.Outcome) -> dict:
    data = {
        "status": outcome.status,
        "message": outcome.message,
        "ticket": outcome.ticket,
        "used": outcome.used,
        "session": outcome.session,
        "state": outcome.state,
        "hash": outcome.hash,
        "replay": outcome.replay,
    }
    if outcome.conflict is not None:
        data["conflict"] = conflict_data(outcome.conflict)
    return data


def _when(at) -> str:
    return clock_time(at) if isinstance(at, datetime) else ""


def conflict_summary(conflict: dict) -> str:
    """What happened, in a sentence for the door staff (times in the theater's time zone)."""
    mine = conflict["offline"]
    first = conflict.get("first")
    if conflict["kind"] == checkin.USED and first:
        both = sorted(
            [
                (mine["at"], f"at {mine['door']}, {_when(mine['at'])} offline ({mine['by']})"),
                (
                    first["at"],
                    f"at {first['door']}, {_when(first['at'])}{' offline' if first.get('offline') else ''}"
                    f"{' (' + first['by'] + ')' if first.get('by') else ''}",
                ),
            ],
            key=lambda pair: pair[0],
        )
        return f"Let in twice: {both[0][1]} and {both[1][1]}."
    return f"Let in offline at {mine['door']}, {_when(mine['at'])} ({mine['by']}), but: {conflict.get('reason', '')}"


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
