"""Forms the buyer's pages and the staff counter share: seat clicks on the map, best available,
and a calendar day for filters. They turn request data into typed values and say clearly what is
wrong with it; the rules about bookings stay in the services."""

import re
from datetime import date
from typing import TYPE_CHECKING

from django import forms
from django.conf import settings
from django.utils.translation import get_language, gettext, gettext_lazy
from django.utils.translation import gettext_lazy as _

from booking.core.lru import LRUCache
from booking.venues.seat_grid import parse_seat_key

if TYPE_CHECKING:
    _WidgetBase = forms.Widget  # KeptHtml is mixed into widgets (below)
else:
    _WidgetBase = object


class KeptHtml(_WidgetBase):
    """Widget mixin: the HTML is built once per (widget, name, value, attributes, choices, renderer,
    language), everything it is made from, and kept. The what's on filter renders the same two
    widgets on nearly every request, and Django's template-based widget rendering was a third of
    that page's render time. A value that cannot be a key (a list) is rendered as usual."""

    _kept: LRUCache[tuple, str] = LRUCache(256)

    def render(self, name, value, attrs=None, renderer=None):
        try:
            key = (
                type(self),
                name,
                value,
                tuple(sorted({**self.attrs, **(attrs or {})}.items())),
                tuple(getattr(self, "choices", ())),
                type(renderer),
                get_language(),
            )
            html = self._kept.get(key)
        except TypeError:  # unhashable
            return super().render(name, value, attrs, renderer)
        if html is None:
            html = self._kept.put(key, super().render(name, value, attrs, renderer))
        return html


class KeptDateInput(KeptHtml, forms.DateInput):
    pass


class KeptSelect(KeptHtml, forms.Select):
    pass


class DayField(forms.DateField):
    """A calendar day that a filter turns into a span of time: midnight to midnight in the site's
    time zone, stored in UTC. Python's dates end at year 1 and 9999, so the days near either end
    have no such span (adding a day or moving to UTC overflowed: a 500); nothing is on sale
    there, and the field refuses them with a message instead."""

    FIRST = date(1900, 1, 1)
    LAST = date(9998, 12, 31)
    OUT_OF_RANGE = gettext_lazy("Choose a date in the years 1900 to 9998.")

    def validate(self, value):
        super().validate(value)
        if value is not None:
            self.check_in_range(value)

    @classmethod
    def check_in_range(cls, day: date) -> None:
        if not cls.FIRST <= day <= cls.LAST:
            raise forms.ValidationError(cls.OUT_OF_RANGE, code="out_of_range")


class SeatForm(forms.Form):
    """One seat key "row:col" (the map's buttons post ``seat``)."""

    seat = forms.CharField(
        max_length=12,
        error_messages={
            "required": gettext_lazy("Choose a seat."),
            "max_length": gettext_lazy("That is not a seat on this map."),
        },
    )
    # the buyer said they need the wheelchair space (the seat's sheet asks; sales/holds.py)
    wheelchair = forms.BooleanField(required=False)

    def clean_seat(self):
        raw = self.cleaned_data["seat"]
        try:
            parse_seat_key(raw)
        except ValueError:
            raise forms.ValidationError(gettext("That is not a seat on this map.")) from None
        return raw


class SeatsForm(forms.Form):
    """Several seat keys (``seats`` repeated, or one comma-separated value)."""

    def __init__(self, data, *args, **kwargs):
        super().__init__(data, *args, **kwargs)
        raw = data.getlist("seats") if hasattr(data, "getlist") else data.get("seats", [])
        self.raw_seats = [part.strip() for value in raw for part in str(value).split(",") if part.strip()]

    # the buyer said they need the wheelchair spaces among them (sales/holds.py)
    wheelchair = forms.BooleanField(required=False)

    def clean(self):
        super().clean()
        if not self.raw_seats:
            raise forms.ValidationError(gettext("Choose at least one seat."))
        if len(self.raw_seats) > settings.BOOKING_MAX_SEATS_PER_CART:
            raise forms.ValidationError(
                gettext("Choose at most %(max)d seats.") % {"max": settings.BOOKING_MAX_SEATS_PER_CART}
            )
        for raw in self.raw_seats:
            try:
                parse_seat_key(raw)
            except ValueError:
                raise forms.ValidationError(gettext("That is not a seat on this map.")) from None
        self.cleaned_data["seats"] = self.raw_seats
        return self.cleaned_data


KIND_CODE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,29}$")  # a ticket type's code in a kind_<code> field


class BestAvailableForm(forms.Form):
    count = forms.IntegerField(
        error_messages={
            "required": gettext_lazy("Say how many seats you need."),
            "invalid": gettext_lazy("Give the number of seats as a whole number."),
        },
    )

    # optional: one category code ("" is any category); the engine refuses codes the session has not
    category = forms.RegexField(
        regex=r"^[a-z]?$", required=False, error_messages={"invalid": _("Choose a category from the list.")}
    )
    max_price = forms.IntegerField(required=False, min_value=0)  # minor units: only categories up to this price
    wheelchair = forms.BooleanField(required=False)  # count wheelchair spaces, each with a companion seat
    accept = forms.CharField(required=False, max_length=400)  # the split suggestion the buyer takes

    def clean(self):
        """``kind_<ticket type>=N`` fields: how many of the seats are of which kind (the rest full
        price), as ``kinds``; together at most the seats asked for."""
        data = super().clean() or {}
        kinds: dict[str, int] = {}
        for name in self.data:
            if not name.startswith("kind_"):
                continue
            code, raw = name[5:], self.data.get(name, "")
            if raw in ("", "0"):
                continue
            if not KIND_CODE.fullmatch(code) or not str(raw).isdigit():
                raise forms.ValidationError(gettext("Choose how many tickets of each kind from the lists."))
            kinds[code] = int(raw)
        count = data.get("count")
        if kinds and count is not None and sum(kinds.values()) > count:
            raise forms.ValidationError(
                gettext("You chose %(kinds)d tickets of other kinds but only %(count)d seats.")
                % {"kinds": sum(kinds.values()), "count": count}
            )
        data["kinds"] = kinds
        return data

    def clean_count(self):
        count = self.cleaned_data["count"]
        maximum = settings.BOOKING_MAX_SEATS_PER_CART
        if not 1 <= count <= maximum:
            raise forms.ValidationError(gettext("Choose between 1 and %(max)d seats.") % {"max": maximum})
        return count

    def clean_accept(self):
        raw = self.cleaned_data["accept"]
        keys = [part.strip() for part in raw.split(",") if part.strip()]
        for key in keys:
            try:
                parse_seat_key(key)
            except ValueError:
                raise forms.ValidationError(_("That is not a seat on this map.")) from None
        return keys or None


class RemoveSeatForm(SeatForm):
    session = forms.CharField(max_length=40, error_messages={"required": gettext_lazy("Which performance?")})
