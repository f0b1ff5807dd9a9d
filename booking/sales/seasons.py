"""A season entered at once: one draft session per date of a plan (weekdays, times per weekday,
a date range, dates skipped), each with the same names, price table, sale window and box-office
setting. Every date's session is written in one insert with all of them, under an id derived from
the season's key and its start: a repeated submit, or a rerun after a crash midway, finds the
dates that exist and creates only the missing ones, so what exists is always one coherent series.
"""

import hashlib
import json
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from bson import ObjectId
from django.utils import timezone
from django.utils.translation import gettext
from pymongo.errors import DuplicateKeyError

from booking.core import faults, mongo
from booking.core.errors import BookingError, InvalidRequest, NotFound
from booking.sales import offers, sessions
from booking.sales.self_service import Rules
from booking.sales.session_prices import clean_prices

MAX_DATES = 100  # performances in one season form; more is a typo in the dates more often than a plan
MAX_DAYS = 5 * 366  # a range longer than this is refused before its days are counted


@dataclass
class Plan:
    """What staff picked: weekday (0 = Monday) -> start times, the first and last day, dates skipped."""

    first_day: date
    last_day: date
    times: dict[int, list[time]]
    skip: set[date] = field(default_factory=set)
    duration_minutes: int = 150


def plan_dates(*, plan: Plan) -> list[tuple[datetime, datetime]]:
    """(start, end) of each performance, aware in the site's time zone, by start. InvalidRequest
    with per-field messages: no weekday, a picked weekday without a time, end before start, too many."""
    errors = {}
    if not plan.times:
        errors["weekdays"] = gettext("Choose at least one day of the week.")
    for weekday, starts in plan.times.items():
        if not starts:
            errors[f"times_{weekday}"] = gettext("Give at least one start time for this day.")
    if plan.last_day < plan.first_day:
        errors["last_day"] = gettext("The last day must not be before the first day.")
    elif (plan.last_day - plan.first_day).days + 1 > MAX_DAYS:
        errors["last_day"] = gettext("That is more than %(max)d performances; split it up.") % {"max": MAX_DATES}
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    found = []
    for offset in range((plan.last_day - plan.first_day).days + 1):
        day = plan.first_day + timedelta(days=offset)
        if day in plan.skip:
            continue
        for at in sorted(set(plan.times.get(day.weekday(), []))):
            start = timezone.make_aware(datetime.combine(day, at))
            found.append((start, start + timedelta(minutes=plan.duration_minutes)))
    if len(found) > MAX_DATES:
        message = gettext("That is more than %(max)d performances; split it up.") % {"max": MAX_DATES}
        raise InvalidRequest(message, fields={"last_day": message})
    if not found:
        message = gettext("None of the chosen weekdays falls between the first and last day.")
        raise InvalidRequest(message, fields={"weekdays": message})
    return found


@dataclass
class SeasonResult:
    created: list[dict] = field(default_factory=list)
    existing: list[dict] = field(default_factory=list)  # made by an earlier submit of the same season
    refused: list[dict] = field(default_factory=list)  # {start, reason}


def season_key(*, theater_id: ObjectId, content: dict) -> str:
    """The same form for the same theater gives the same key (a second submit is recognised)."""
    text = json.dumps({"theater": str(theater_id), **content}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def date_id(key: str, start: datetime) -> ObjectId:
    return ObjectId(hashlib.sha256(f"{key}|{start.isoformat()}".encode()).hexdigest()[:24])


def create_season(
    theater_id: ObjectId,
    *,
    key: str,
    name: str,
    name_de: str = "",
    description: str = "",
    performances: list[tuple[datetime, datetime]],
    prices: dict[str, int],
    type_prices: dict[str, dict[str, int]] | None = None,
    sale_opens: datetime | None = None,
    box_office: dict | None = None,
    self_service: Rules | None = None,
) -> SeasonResult:
    """Drafts for every (start, end) not created yet under ``key``. The price table is checked
    once before anything is written; a date the session service refuses is reported, the others
    are still created."""
    theater = mongo.theaters().find_one({"_id": theater_id})
    if theater is None:
        raise NotFound(gettext("No such theater."))
    layout = sessions.price_layout(theater)
    full = clean_prices(prices, layout)
    types = offers.ticket_types(theater)
    others = offers.clean_type_prices(type_prices or {}, types, set(full))
    extra: dict = {"season": {"key": key}, "ticketTypes": types, "typePrices": others}
    if sale_opens is not None:
        extra["saleOpens"] = sale_opens
    if box_office is not None:
        extra["boxOffice"] = {
            "enabled": bool(box_office["enabled"]),
            "deadlineMinutes": int(box_office["deadlineMinutes"]),
        }
    if self_service is not None:
        extra["selfService"] = self_service.as_document()
    existing = (
        {
            doc["start"]: doc
            for doc in mongo.sessions().find(
                {
                    "theaterId": theater_id,
                    "start": {"$gte": min(s for s, _ in performances), "$lte": max(s for s, _ in performances)},
                    "season.key": key,
                },
                {"start": 1, "name": 1, "status": 1},
            )
        }
        if performances
        else {}
    )
    result = SeasonResult()
    for start, end in performances:
        if start in existing:
            result.existing.append(existing[start])
            continue
        if sale_opens is not None and sale_opens >= start:
            result.refused.append({"start": start, "reason": gettext("Sales must open before the performance starts.")})
            continue
        try:
            session = sessions.create_session(
                theater_id,
                name=name,
                name_de=name_de,
                description=description,
                start=start,
                end=end,
                prices=full,
                session_id=None if theater.get("sections") else date_id(key, start),
                extra=extra,
            )
        except DuplicateKeyError:  # a parallel submit of the same season wrote this date first
            result.existing.append({"_id": date_id(key, start), "start": start})
            continue
        except BookingError as exc:
            result.refused.append({"start": start, "reason": exc.message})
            continue
        result.created.append(session)
        faults.point("season.between_dates")
    return result
