"""What every group of a theater's staff pages shares (``TheaterScreens``): the permission and the
theater the URL names, read in one step (``theater``), and a write ended with the theater named in
the admin log, the staff member told and on to the next page (``theater_saved``). The groups are
in control/theaters.py, offers.py, payment_settings.py, self_service_settings.py,
sectioned_venues.py, venue_addresses.py and door_settings.py; TheaterAdmin lists their URLs."""

from collections.abc import Mapping
from typing import Any

from django.http import HttpResponseRedirect

from booking.control import selectors
from booking.control.base import CHANGE, Screens


class TheaterScreens(Screens):
    """Pages of theaters (``<object_id>/...`` names one)."""

    def theater(self, request, object_id, action: str = "view") -> dict:
        """The theater the URL names, for a staff member allowed to ``action`` (else 403; no such
        theater: 404)."""
        self.require(request, action)
        return self.document(selectors.get_theater, object_id, "That theater does not exist (any more).")

    def theater_saved(
        self, request, theater: Mapping[str, Any], *, note: str, shown: str | None = None, to: str, flag: int = CHANGE
    ) -> HttpResponseRedirect:
        """A write to the theater done: ``note`` in the admin log, ``shown`` (or the note) to the
        staff member, on to ``to``."""
        return self.saved(request, flag, theater["_id"], theater["name"], note=note, shown=shown, to=to)
