"""A performance's waiting list for staff: who waits, in which place, for how many seats, and the
offers made (seats, until when, answered or lapsed). ``WaitingListScreens``, under SessionAdmin's
URLs; linked from the session's page."""

from django.utils.translation import gettext, gettext_noop

from booking.control.session_screens import SessionScreens
from booking.core.localized import waiting_list_state_label
from booking.sales import waiting_list

MAIL_WORDS = {
    waiting_list.MAIL_PENDING: gettext_noop("pending"),
    waiting_list.MAIL_SENT: gettext_noop("sent"),
    waiting_list.MAIL_FAILED: gettext_noop("failed"),
}


class WaitingListScreens(SessionScreens):
    """``<id>/waiting-list/``: who waits for seats of the session."""

    def waiting_list(self, request, object_id):
        session = self.session(request, object_id)
        entries = waiting_list.entries_of(session["_id"])
        for entry in entries:
            entry["state_words"] = waiting_list_state_label(entry["state"])
            if entry.get("mail"):
                entry["mail_words"] = gettext(MAIL_WORDS.get(entry["mail"], entry["mail"]))
            if entry.get("offer"):
                entry["offer_words"] = waiting_list.seat_words(session, entry)
        counts = {state: sum(1 for e in entries if e["state"] == state) for state in waiting_list.ALL_STATES}
        return self.render(
            request,
            "admin/booking/session/waiting_list.html",
            {
                "title": gettext("Waiting list"),
                "session": session,
                "entries": entries,
                "counts": counts,
                "offers_made": sum(e.get("offers", 0) for e in entries),
            },
        )
