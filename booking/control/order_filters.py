"""The staff order list's filters: session, date span, state, sales channel, beside the text search
(reference, e-mail, name). A reference typed alone opens its order.

Every combination is index-backed: the session through ``lines.sessionId``; the state through
``state+createdOn+_id``; the channel through ``channel+createdOn+_id`` (an online order has no
``channel``: it is found as ``null``), complimentary ones (``method``) through the partial
``complimentary_newest``; the days through ``newest`` (``createdOn+_id``), which also
gives the order of the list. The server picks among them; the other filters are checked on what
the index found. Newest first, at most ``STAFF_LIST_LIMIT``.
"""

import re
from datetime import datetime, time, timedelta

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from booking.control.selectors import NEWEST_FIRST, ORDER_LIST_FIELDS, STAFF_LIST_LIMIT, with_ids
from booking.core import mongo
from booking.core.domain import (
    COMPLIMENTARY_METHOD,
    DEFAULT_CHANNEL,
    ORDER_CHANNEL_FIELD,
    OrderState,
    SalesChannel,
    sales_channel,
)
from booking.core.errors import NotFound
from booking.core.ids import object_id
from booking.core.names import name_key
from booking.reports.figures import CHANNEL_LABELS
from booking.web.forms import DayField

REF = re.compile(r"^[A-Za-z0-9]{8}$")  # a booking reference (checkout.new_booking_ref: 8 characters)

STATE_CHOICES = [("", _("Any state"))] + [(s.value, s.value.replace("_", " ")) for s in OrderState]
CHANNEL_CHOICES = [("", _("Any channel"))] + [(c.value, label) for c, label in CHANNEL_LABELS.items()]


class OrderFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=120,
        label=_("Booking reference, e-mail or name"),
        widget=forms.TextInput(attrs={"size": 32, "autofocus": True, "type": "search"}),
    )
    session = forms.CharField(required=False, max_length=24, label=_("Session id"))
    since = DayField(required=False, label=_("From"), widget=forms.DateInput(attrs={"type": "date"}))
    until = DayField(required=False, label=_("To"), widget=forms.DateInput(attrs={"type": "date"}))
    state = forms.ChoiceField(required=False, choices=STATE_CHOICES, label=_("State"))
    channel = forms.ChoiceField(required=False, choices=CHANNEL_CHOICES, label=_("Channel"))

    def clean_session(self):
        raw = self.cleaned_data["session"].strip()
        if not raw:
            return None
        try:
            return object_id(raw, "session")
        except NotFound:
            raise forms.ValidationError(_("That is not a session id.")) from None

    def clean(self):
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", _("The end date is before the start date."))
        return data

    def filtering(self) -> bool:
        """Any filter beside the text?"""
        data = self.cleaned_data
        return any(data.get(k) for k in ("session", "since", "until", "state", "channel"))


def _local_midnight(day) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def _text_clauses(text: str) -> list[dict] | None:
    """The text search's ``$or`` branches (as control.selectors.search_orders); None: no text."""
    text = " ".join((text or "").split())
    if not text:
        return None
    clauses: list[dict] = []
    prefix = name_key(text)
    if prefix:
        clauses.append({"nameKeys": {"$regex": "^" + re.escape(prefix)}})
    if "@" in text:
        clauses.append({"email": text.lower()})
    compact = text.replace(" ", "").replace("-", "")
    if re.fullmatch(r"[A-Za-z0-9]{6,12}", compact):
        clauses.append({"ref": compact.upper()})
    return clauses


def order_query(data: dict) -> dict | None:
    """The MongoDB filter of the form's cleaned data (None: the text can match nothing)."""
    query: dict = {}
    clauses = _text_clauses(data.get("q", ""))
    if clauses is not None:
        if not clauses:
            return None
        query["$or"] = clauses
    if data.get("session"):
        query["lines.sessionId"] = data["session"]
    if data.get("state"):
        query["state"] = data["state"]
    channel = data.get("channel")
    if channel == SalesChannel.COMPLIMENTARY:  # given away (the counter's method), or so marked
        given = [{"method": COMPLIMENTARY_METHOD}, {ORDER_CHANNEL_FIELD: channel}]
        query["$and"] = [*query.get("$and", []), {"$or": given}]
    elif channel:
        query[ORDER_CHANNEL_FIELD] = {"$in": [None, channel]} if channel == DEFAULT_CHANNEL else channel
        query["method"] = {"$ne": COMPLIMENTARY_METHOD}  # those count as complimentary
    span = {}
    if data.get("since"):
        span["$gte"] = _local_midnight(data["since"])
    if data.get("until"):
        span["$lt"] = _local_midnight(data["until"]) + timedelta(days=1)
    if span:
        query["createdOn"] = span
    return query


def filter_orders(data: dict) -> list[dict]:
    """Orders matching the filters, newest first (at most STAFF_LIST_LIMIT)."""
    query = order_query(data)
    if query is None:
        return []
    found = mongo.orders().find(query, {**ORDER_LIST_FIELDS, ORDER_CHANNEL_FIELD: 1, "method": 1})
    return with_ids(found.sort(NEWEST_FIRST).limit(STAFF_LIST_LIMIT))


def order_by_ref(text: str) -> dict | None:
    """The order whose booking reference is exactly this text (spaces, dashes and case aside)."""
    compact = (text or "").replace(" ", "").replace("-", "").upper()
    if not REF.match(compact):
        return None
    return mongo.orders().find_one({"ref": compact}, {"_id": 1, "ref": 1})


def channel_of(order: dict) -> str:
    return sales_channel(order)
