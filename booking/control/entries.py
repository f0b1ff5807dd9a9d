"""Entries on the admin index for the permissions that have no pages of their own: "Box office"
(``booking.sell_at_counter``) leads to the sessions, where each has "Sell"; "Door check-in"
(``booking.checkin_tickets``) to the door's pages at /checkin/. Someone with nothing but such a
permission sees where to start instead of "You don't have permission to view or edit anything"."""

from django.http import HttpResponseRedirect
from django.urls import reverse

from booking.checkin.views import PERMISSION as CHECKIN_PERMISSION
from booking.control.base import MongoModelAdmin
from booking.control.counter import PERMISSION as COUNTER_PERMISSION


class EntryAdmin(MongoModelAdmin):
    """One page, seen with ``permission``, that sends the visitor on to ``target``."""

    permission = ""
    target = ""  # a URL name
    routes = [("", "entry", "changelist")]

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.has_perm(self.permission)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def entry(self, request):
        self.require(request, "view")
        return HttpResponseRedirect(reverse(self.target))


class BoxOfficeAdmin(EntryAdmin):
    permission = COUNTER_PERMISSION
    target = "admin:booking_session_changelist"


class DoorCheckinAdmin(EntryAdmin):
    permission = CHECKIN_PERMISSION
    target = "checkin:index"
