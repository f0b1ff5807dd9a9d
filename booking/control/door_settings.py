"""A theater's door setting, on its change page: whether one scan lets a whole booking in
(``venues/theaters.set_admit_whole_booking``; the door reads it, sales/checkin.py)."""

from django import forms
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_POST

from booking.control.base import errors_text
from booking.control.theater_screens import TheaterScreens
from booking.venues import theaters as theater_service


class DoorSettingsForm(forms.Form):
    admit_whole_booking = forms.BooleanField(
        required=False,
        label=gettext_lazy("One scan lets the whole booking in"),
        help_text=gettext_lazy(
            "At the door, scanning any ticket of a booking checks in every unused ticket of that booking "
            "for the performance (online; a phone without network admits the ticket it scanned)."
        ),
    )


def door_form(theater: dict, data=None) -> DoorSettingsForm:
    return DoorSettingsForm(
        data, initial={"admit_whole_booking": bool(theater.get("admitWholeBooking"))}, prefix="door"
    )


class DoorSettingsScreens(TheaterScreens):
    """``<id>/door/``: the form on the theater's change page."""

    @method_decorator(require_POST)
    def theater_door(self, request, object_id):
        theater = self.theater(request, object_id, "change")
        form = door_form(theater, request.POST)
        back = self.url("change", theater["_id"])
        if not form.is_valid():
            return self.refused(request, errors_text(form), back)
        allowed = form.cleaned_data["admit_whole_booking"]
        theater_service.set_admit_whole_booking(theater["_id"], allowed=allowed)
        shown = (
            gettext("At the door, one scan now lets the whole booking in.")
            if allowed
            else gettext("At the door, each ticket is scanned on its own.")
        )
        note = f"Door: whole booking on one scan {'on' if allowed else 'off'}."
        return self.theater_saved(request, theater, note=note, shown=shown, to=back)
