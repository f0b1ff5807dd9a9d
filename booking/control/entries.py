"""Entries on the admin index for the permissions that have no pages of their own: "Box office"
(``booking.sell_at_counter``) leads to the sessions, where each has "Sell"; "Door check-in"
(``booking.checkin_tickets``) to the door's pages at /checkin/. Someone with nothing but such a
permission sees where to start instead of "You don't have permission to view or edit anything"."""

from django.http import HttpResponseRedirect
from django.urls import reverse

from booking.control.base import OnePermissionAdmin
from booking.control.counter import PERMISSION as COUNTER_PERMISSION
from booking.models import CHECKIN_PERMISSION


class EntryAdmin(OnePermissionAdmin):
    """One page, seen with ``permission``, that sends the visitor on to ``target``."""

    target = ""  # a URL name
    routes = [("", "entry", "changelist")]

    def entry(self, request):
        self.require(request, "view")
        return HttpResponseRedirect(reverse(self.target))


class BoxOfficeAdmin(EntryAdmin):
    permission = COUNTER_PERMISSION
    target = "admin:booking_session_changelist"


class DoorCheckinAdmin(EntryAdmin):
    permission = CHECKIN_PERMISSION
    target = "checkin:index"
