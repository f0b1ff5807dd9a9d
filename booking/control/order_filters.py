"""The staff order list's filter form: what staff type and pick, turned into the selector's
``OrderFilters`` (booking/sales/order_search.py does the finding). A booking reference typed alone
opens its order."""

import re
from collections.abc import Mapping
from datetime import datetime, time, timedelta
from typing import Any

from django import forms
from django.utils import formats, timezone
from django.utils.translation import gettext_lazy as _

from booking.control import selectors
from booking.core import mongo
from booking.core.domain import Order, OrderState, SalesChannel, sales_channel
from booking.core.errors import NotFound
from booking.core.ids import object_id
from booking.core.localized import ORDER_STATE_LABELS
from booking.reports.figures import CHANNEL_LABELS
from booking.reports.order_exports import PAYMENT_METHOD_LABELS
from booking.sales.order_search import TEXT_MAX, OrderFilters
from booking.web.forms import DayField

REF = re.compile(r"^[A-Za-z0-9]{8}$")  # a booking reference (checkout.new_booking_ref: 8 characters)

STATE_CHOICES = [("", _("Any state"))] + [(s.value, ORDER_STATE_LABELS.get(s, s.value)) for s in OrderState]
CHANNEL_CHOICES = [("", _("Any channel"))] + [(c.value, label) for c, label in CHANNEL_LABELS.items()]
PAYMENT_METHOD_CHOICES = [("", _("Any payment method")), *PAYMENT_METHOD_LABELS.items()]


def performance_label(session: dict) -> str:
    """How a performance is picked: its title, its date and time, its hall (or section)."""
    start = timezone.localtime(session["start"]) if session.get("start") else None
    when = formats.date_format(start, "SHORT_DATETIME_FORMAT") if start else ""
    where = session.get("venueName") or session.get("theaterName") or ""
    section = (session.get("section") or {}).get("name")
    place = f"{where} / {section}" if section else where
    return " · ".join(part for part in (session.get("name") or "", when, place) if part)


class PerformanceField(forms.CharField):
    """A performance picked from a list (by title and date): the value is its session's id; an id
    the list does not show (an older performance, a link from its page) is taken all the same."""

    widget = forms.Select

    def to_python(self, value):
        raw = (super().to_python(value) or "").strip()
        if not raw:
            return None
        try:
            return object_id(raw, "session")
        except NotFound:
            raise forms.ValidationError(_("Please pick a performance from the list.")) from None


class OrderFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=TEXT_MAX,
        label=_("Booking reference, e-mail or name"),
        widget=forms.TextInput(attrs={"size": 28, "type": "search"}),
    )
    session = PerformanceField(required=False, label=_("Performance"))
    since = DayField(required=False, label=_("From"), widget=forms.DateInput(attrs={"type": "date"}))
    until = DayField(required=False, label=_("To"), widget=forms.DateInput(attrs={"type": "date"}))
    state = forms.ChoiceField(required=False, choices=STATE_CHOICES, label=_("State"))
    channel = forms.ChoiceField(required=False, choices=CHANNEL_CHOICES, label=_("Channel"))
    method = forms.ChoiceField(required=False, choices=PAYMENT_METHOD_CHOICES, label=_("Payment method"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        performances = selectors.performances_to_pick()
        chosen = self._chosen_session()
        if chosen is not None and all(s["_id"] != chosen for s in performances):
            found = mongo.sessions().find_one(
                {"_id": chosen}, {"name": 1, "start": 1, "theaterName": 1, "venueName": 1, "section": 1}
            )
            if found is not None:
                performances = [found, *performances]
        choices = [("", _("Any performance"))] + [(str(s["_id"]), performance_label(s)) for s in performances]
        self.fields["session"].widget.choices = choices

    def _chosen_session(self):
        raw = (self.data.get("session") or "").strip() if self.is_bound else ""
        try:
            return object_id(raw, "session") if raw else None
        except NotFound:
            return None

    def clean(self):
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", _("The end date is before the start date."))
        return data

    def filtering(self) -> bool:
        """Any filter beside the text?"""
        data = self.cleaned_data
        return any(data.get(k) for k in ("session", "since", "until", "state", "channel", "method"))

    def filters(self) -> OrderFilters:
        """The valid form's choices as the selector's filters."""
        data = self.cleaned_data
        return OrderFilters(
            text=data.get("q") or "",
            session_ids=(data["session"],) if data.get("session") else (),
            placed_from=local_midnight(data["since"]) if data.get("since") else None,
            placed_until=local_midnight(data["until"]) + timedelta(days=1) if data.get("until") else None,
            states=(OrderState(data["state"]),) if data.get("state") else (),
            channels=(SalesChannel(data["channel"]),) if data.get("channel") else (),
            payment_methods=(data["method"],) if data.get("method") else (),
        )


def local_midnight(day) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def order_by_ref(text: str) -> Order | None:
    """The order whose booking reference is exactly this text (spaces, dashes and case aside)."""
    compact = (text or "").replace(" ", "").replace("-", "").upper()
    if not REF.match(compact):
        return None
    return mongo.orders().find_one({"ref": compact}, {"_id": 1, "ref": 1})


def channel_of(order: Mapping[str, Any]) -> str:  # an Order or its projection
    return sales_channel(order)
