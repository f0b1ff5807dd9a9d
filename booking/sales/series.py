"""Bulk actions on a series: the upcoming performances of the same show in the same hall. Staff put
them on sale, change a category's price, set when sales open or close, set or remove the members'
presale, set the quota, or cancel them all at once, after a preview of what each would change
(``preview``); applying does exactly what was previewed (the sessions listed then, and each price
only if it is still what the preview showed), one conditional update per session (the presale and
the quota through the single performance's services, ``sessions.set_sale_window`` and
``quotas.set_quota``).
"""

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bson import ObjectId
from django.utils.formats import date_format
from django.utils.timezone import localtime
from django.utils.translation import gettext as _

from booking.core import clock, mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, Session, SessionStatus
from booking.core.errors import BookingError, InvalidRequest, NotFound
from booking.core.formatting import format_money
from booking.sales import listings, quotas, session_cancel, sessions
from booking.sales.session_prices import MAX_PRICE

PUBLISH = "publish"
PRICES = "prices"
SALE_OPENS = "sale_opens"
SALE_CLOSES = "sale_closes"
CANCEL = "cancel"
PRESALE = "presale"
NO_PRESALE = "no_presale"
QUOTA = "quota"
ACTIONS = (PUBLISH, PRICES, SALE_OPENS, SALE_CLOSES, PRESALE, NO_PRESALE, QUOTA, CANCEL)
MAX_CLOSE_BEFORE_MINUTES = 7 * 24 * 60  # online sales end at most a week before a performance
MAX_PRESALE_BEFORE_MINUTES = 90 * 24 * 60  # a members' presale opens at most 90 days before the public
FULL = "full"
FIELDS = {
    "name": 1,
    "start": 1,
    "status": 1,
    "prices": 1,
    "typePrices": 1,
    "ticketTypes": 1,
    "saleOpens": 1,
    "saleCloses": 1,
    "presale.opens": 1,  # never its code's hash
    "quota": 1,
    "quotaFloor": 1,
    "seatsAvailable": 1,
    "seatsTotal": 1,
    "performanceId": 1,
    "currency": 1,
    "theaterId": 1,
    "theaterName": 1,
    "layout.categories": 1,
}


TYPE_CODE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,19}$")  # as offers.CODE_RE: never a dotted path
CATEGORY_CODE = re.compile(r"^[A-Za-z0-9_-]{1,20}$")


def series_of(session_id: ObjectId) -> list[Session]:
    """The performances of this one's show in its hall that have not started and are not canceled
    (itself included), by start. Served by the theater_start_id index."""
    doc = mongo.sessions().find_one({"_id": session_id}, {"name": 1, "theaterId": 1})
    if doc is None:
        raise NotFound(_("No such session."))
    query = {
        "theaterId": doc["theaterId"],
        "start": {"$gt": clock.now()},
        "name": doc["name"],
        "status": {"$in": [SessionStatus.DRAFT, SessionStatus.ON_SALE]},
    }
    return list(mongo.sessions().find(query, FIELDS).sort([("start", 1), ("_id", 1)]).limit(500))


@dataclass
class Change:
    """One performance in a preview: what the action would do to it (``changes``), or why it
    leaves it as it is (``skip``)."""

    session: Session
    changes: list[str] = field(default_factory=list)
    skip: str = ""
    old_price: int | None = None  # prices: the price the preview saw (applying requires it still)
    orders: int = 0  # cancel: paid orders that would be refunded

    @property
    def id(self) -> str:
        return str(self.session["_id"])


def price_path(ticket_type: str, category: str) -> str:
    """Where a cell of the price table is stored: full price in ``prices``, the others in ``typePrices``."""
    return f"prices.{category}" if ticket_type in ("", FULL) else f"typePrices.{ticket_type}.{category}"


def price_cell(session: Session, ticket_type: str, category: str) -> int | None:
    if ticket_type in ("", FULL):
        return (session.get("prices") or {}).get(category)
    return ((session.get("typePrices") or {}).get(ticket_type) or {}).get(category)


def preview(
    session_id: ObjectId,
    action: str,
    *,
    category: str = "",
    price: int | None = None,
    ticket_type: str = FULL,
    sale_opens: datetime | None = None,
    closes_before: int | None = None,
    presale_before: int | None = None,
    presale_opens: datetime | None = None,
    presale_code: str = "",
    quota: int | None = None,
) -> list[Change]:
    if action not in ACTIONS:
        raise InvalidRequest(_("Choose what to do with the series."))
    bad_price = price is None or isinstance(price, bool) or not 0 <= price <= MAX_PRICE
    if action == PRICES and (not category or bad_price):
        raise InvalidRequest(_("Give a category and a price between 0 and %(max)s.") % {"max": MAX_PRICE // 100})
    if action == PRICES and not (TYPE_CODE.match(ticket_type or FULL) and CATEGORY_CODE.match(category)):
        raise InvalidRequest(_("Choose a ticket type."))
    if action == SALE_OPENS and (not isinstance(sale_opens, datetime) or sale_opens.tzinfo is None):
        raise InvalidRequest(_("Give the on-sale time."), fields={"sale_opens": _("Give the on-sale time.")})
    if action == SALE_CLOSES:
        clean_closes_before(closes_before)
    code = clean_presale(presale_before, presale_opens, presale_code) if action == PRESALE else ""
    series = series_of(session_id)
    if action == QUOTA:
        quotas.clean_quota(quota, seats_total=max((s["seatsTotal"] for s in series), default=0))
    found = []
    for session in series:
        change = Change(session)
        if action == PUBLISH:
            if session["status"] == SessionStatus.DRAFT:
                change.changes.append(_("draft → on sale"))
            else:
                change.skip = _("on sale already")
        elif action == SALE_OPENS:
            assert sale_opens is not None
            if sale_opens >= session["start"]:
                change.skip = _("starts before that")
            elif session.get("saleOpens") == sale_opens:
                change.skip = _("opens then already")
            else:
                change.changes.append(_("on sale from %(when)s") % {"when": _when(sale_opens)})
        elif action == SALE_CLOSES:
            assert closes_before is not None
            closes = session["start"] - timedelta(minutes=closes_before)
            if session.get("saleOpens") is not None and closes <= session["saleOpens"]:
                change.skip = _("would close before its sale opens")
            elif session.get("saleCloses") == closes:
                change.skip = _("closes then already")
            else:
                change.changes.append(_("online sales close %(when)s") % {"when": _when(closes)})
        elif action == PRESALE:
            opens = presale_time(session, presale_before, presale_opens)
            change.skip = _presale_refused(session, opens, code)
            if not change.skip:
                assert opens is not None
                change.changes.append(_("members' presale from %(when)s") % {"when": _when(opens)})
                if code:
                    change.changes.append(_("new access code"))
        elif action == NO_PRESALE:
            if session.get("presale"):
                change.changes.append(_("members' presale removed"))
            else:
                change.skip = _("has no presale")
        elif action == QUOTA:
            _preview_quota(change, quota)
        elif action == PRICES:
            old = price_cell(session, ticket_type, category)
            if old is None:
                change.skip = (
                    _("has no such category") if ticket_type in ("", FULL) else _("not offered in this category")
                )
            elif old == price:
                change.skip = _("has this price already")
            else:
                change.old_price = old
                currency = session.get("currency", "")
                change.changes.append(f"{format_money(old, currency)} → {format_money(price, currency)}")
        else:
            change.orders = mongo.orders().count_documents(
                {"lines.sessionId": session["_id"], "state": {"$in": list(SEAT_OWNING_ORDER_STATES)}}
            )
            change.changes.append(_("canceled; %(n)d paid orders refunded and mailed") % {"n": change.orders})
        found.append(change)
    return found


def clean_closes_before(minutes) -> None:
    """Minutes before each start that online sales close: 0 (at the start) up to a week."""
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 <= minutes <= MAX_CLOSE_BEFORE_MINUTES:
        message = _("Give the minutes before each start, from 0 to %(max)d.") % {"max": MAX_CLOSE_BEFORE_MINUTES}
        raise InvalidRequest(message, fields={"closes_before": message})


def clean_presale(before, at, code) -> str:
    """The members' presale as staff gave it for the series: opening either ``before`` minutes
    before each public on-sale or ``at`` one moment; the code (none: each keeps its own) as
    ``sessions.set_sale_window`` takes it."""
    if (before is None) == (at is None):
        message = _("Give either the minutes before each public on-sale or one time for all.")
        raise InvalidRequest(message, fields={"presale_before": message})
    if before is not None and (
        isinstance(before, bool) or not isinstance(before, int) or not 1 <= before <= MAX_PRESALE_BEFORE_MINUTES
    ):
        message = _("Give the minutes before each public on-sale, from 1 to %(max)d.") % {
            "max": MAX_PRESALE_BEFORE_MINUTES
        }
        raise InvalidRequest(message, fields={"presale_before": message})
    if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
        message = _("Give a date and time.")
        raise InvalidRequest(message, fields={"presale_opens": message})
    return sessions.clean_access_code(code)


def presale_time(session: Session, before: int | None, at: datetime | None) -> datetime | None:
    """When this performance's presale opens: the fixed time, or the minutes before its public
    on-sale (None: it has no public on-sale time to count from)."""
    if at is not None:
        return at
    opens = session.get("saleOpens")
    return None if opens is None or before is None else opens - timedelta(minutes=before)


def _presale_refused(session: Session, opens: datetime | None, code: str) -> str:
    """Why this performance keeps its presale as it is ("" when it would change): the single
    sale window's own rules (``sessions.clean_sale_window``)."""
    if opens is None:
        return _("has no public on-sale time")
    presale = session.get("presale")
    try:
        sessions.clean_sale_window(
            session["start"],
            session.get("saleOpens"),
            session.get("saleCloses"),
            opens,
            has_code=bool(code or presale),
        )
    except InvalidRequest as exc:
        return exc.message
    if presale and presale.get("opens") == opens and not code:
        return _("opens then already")
    return ""


def _preview_quota(change: Change, quota: int | None) -> None:
    session = change.session
    if session.get("performanceId") is not None:
        change.skip = _("a stadium's section: no quota")
        return
    if session.get("quota") == quota:
        change.skip = _("has this quota already") if quota is not None else _("has no quota")
        return
    if quota is None:
        change.changes.append(_("no quota (was %(quota)d)") % {"quota": session["quota"]})
        return
    doc = mongo.sessions().find_one({"_id": session["_id"]}, quotas.FIELDS)
    taken = quotas.counted(doc) if doc is not None else 0
    change.changes.append(_("quota %(quota)d seats (%(taken)d taken now)") % {"quota": quota, "taken": taken})
    if taken > quota:
        change.changes.append(_("more taken already: no sales until some are given back"))


def _when(moment: datetime) -> str:
    return date_format(localtime(moment), "DATETIME_FORMAT")


@dataclass
class Applied:
    done: list[str] = field(default_factory=list)  # session ids changed
    changed_meanwhile: list[str] = field(default_factory=list)  # not as previewed: left alone


def apply(
    session_id: ObjectId,
    action: str,
    chosen: list[ObjectId],
    *,
    category: str = "",
    price: int | None = None,
    seen_prices: dict | None = None,
    ticket_type: str = FULL,
    sale_opens: datetime | None = None,
    closes_before: int | None = None,
    presale_before: int | None = None,
    presale_opens: datetime | None = None,
    presale_code: str = "",
    quota: int | None = None,
    cancel_terms: dict | None = None,
    by: str = "",
) -> Applied:
    """Apply ``action`` to the ``chosen`` performances of the series (those the preview listed).
    ``seen_prices``: {session id: the price the preview showed}; a price changed since is left.
    Orders keep the prices they were sold at: a price change reaches only later sales.
    ``cancel_terms``: the buyers' message and kept fee, as session_cancel.start takes them."""
    if action == PRICES and not (TYPE_CODE.match(ticket_type or FULL) and CATEGORY_CODE.match(category)):
        raise InvalidRequest(_("Choose a ticket type."))
    terms = {"message": "", "message_de": "", "kept_per_ticket": 0, **(cancel_terms or {})}
    if action == CANCEL:
        session_cancel.clean_terms(**terms)  # bad terms: nothing is canceled
    if action == SALE_CLOSES:
        clean_closes_before(closes_before)
    code = clean_presale(presale_before, presale_opens, presale_code) if action == PRESALE else ""
    series = {s["_id"]: s for s in series_of(session_id)}
    if action == QUOTA:  # bad input: nothing changes
        quotas.clean_quota(quota, seats_total=max((s["seatsTotal"] for s in series.values()), default=0))
    result = Applied()
    for sid in chosen:
        if sid not in series:
            result.changed_meanwhile.append(str(sid))  # started, canceled or not of this series
            continue
        if action == PUBLISH:
            done = mongo.sessions().update_one(
                {"_id": sid, "status": SessionStatus.DRAFT},
                listings.due({"$set": {"status": SessionStatus.ON_SALE}, "$inc": {"version": 1}}),
            )
            ok = bool(done.modified_count)
        elif action == PRICES:
            seen = (seen_prices or {}).get(str(sid))
            path = price_path(ticket_type, category)
            done = mongo.sessions().update_one(
                {"_id": sid, path: seen},
                # priceRev: holds priced from the old table miss and price again (sales/offers.py)
                listings.due({"$set": {path: price}, "$inc": {"version": 1, "priceRev": 1}}),
            )
            ok = seen is not None and bool(done.modified_count)
        elif action == SALE_OPENS:
            ok = isinstance(sale_opens, datetime) and sale_opens.tzinfo is not None
            if ok:
                done = mongo.sessions().update_one(
                    {
                        "_id": sid,
                        "status": {"$in": [SessionStatus.DRAFT, SessionStatus.ON_SALE]},
                        "start": {"$gt": sale_opens},
                    },
                    listings.due({"$set": {"saleOpens": sale_opens}, "$inc": {"version": 1}}),
                )
                ok = bool(done.matched_count)
        elif action == SALE_CLOSES:
            assert closes_before is not None
            start = series[sid]["start"]
            closes = start - timedelta(minutes=closes_before)
            done = mongo.sessions().update_one(
                {
                    "_id": sid,
                    "start": start,  # moved since: left alone
                    "status": {"$in": [SessionStatus.DRAFT, SessionStatus.ON_SALE]},
                    "$or": [{"saleOpens": None}, {"saleOpens": {"$lt": closes}}],
                },
                listings.due({"$set": {"saleCloses": closes}, "$inc": {"version": 1}}),
            )
            ok = bool(done.matched_count)
        elif action in (PRESALE, NO_PRESALE):
            opens = presale_time(series[sid], presale_before, presale_opens) if action == PRESALE else None
            ok = bool(series[sid].get("presale")) if action == NO_PRESALE else opens is not None
            if ok:
                ok = _set_presale(series[sid], opens, code)
        elif action == QUOTA:
            try:
                quotas.set_quota(sid, quota=quota)
                ok = True
            except BookingError:  # canceled meanwhile, a section, or a quota above its seats
                ok = False
        elif action == CANCEL:
            session_cancel.start(sid, by=by, **terms)
            ok = True
        else:
            raise InvalidRequest(_("Choose what to do with the series."))
        (result.done if ok else result.changed_meanwhile).append(str(sid))
    listings.refresh(sid for sid in chosen if str(sid) in result.done)
    return result


def _set_presale(session: Session, opens: datetime | None, code: str) -> bool:
    """One performance's presale set (``opens``) or removed (None) through the single sale
    window's service, its public on-sale and off-sale times kept; False when refused."""
    try:
        sessions.set_sale_window(
            session["_id"],
            published=session["status"] == SessionStatus.ON_SALE,
            sale_opens=session.get("saleOpens"),
            sale_closes=session.get("saleCloses"),
            presale_opens=opens,
            presale_code=code,
        )
    except BookingError:  # its window no longer allows it (moved, canceled meanwhile)
        return False
    return True
