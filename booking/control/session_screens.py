"""What every group of a session's staff pages shares (``SessionScreens``): the permission and the
session the URL names, read in one step (``session``), and a write ended with the session named in
the admin log, the staff member told and on to the next page (``session_saved``). The groups are
in control/sessions.py, counter.py, offers.py, payment_settings.py, self_service_settings.py,
series_actions.py and waiting_lists.py; SessionAdmin lists their URLs."""

from collections.abc import Mapping
from typing import Any

from django.http import HttpResponseRedirect
from django.utils import timezone
from django.utils.translation import gettext

from booking.control import selectors
from booking.control.base import CHANGE, Screens
from booking.core.domain import Session


def session_label(session: Mapping[str, Any]) -> str:
    """A session in the admin log: its name and start."""
    start = timezone.localtime(session["start"]).strftime("%a %d %b %Y %H:%M")
    return f"{session['name']} – {start}"


class SessionScreens(Screens):
    """Pages of one session (``<object_id>/...``)."""

    def session(self, request, object_id, action: str = "view") -> Session:
        """The session the URL names, for a staff member allowed to ``action`` (else 403; no such
        session: 404)."""
        self.require(request, action)
        return self.session_named(object_id)

    def session_named(self, object_id) -> Session:
        """The session the URL names, or a 404 (the permission asked already, or not needed)."""
        return self.document(selectors.get_session, object_id, gettext("No such session."))

    def session_saved(
        self, request, session: Mapping[str, Any], *, note: str, shown: str, to: str, flag: int = CHANGE
    ) -> HttpResponseRedirect:
        """A write to the session done: ``note`` in the admin log, ``shown`` to the staff member,
        on to ``to``."""
        return self.saved(request, flag, session["_id"], session_label(session), note=note, shown=shown, to=to)
