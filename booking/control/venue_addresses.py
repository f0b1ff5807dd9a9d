"""A theater's address and directions, which buyers see with their booking: a form on the
theater's change page (halls and sectioned venues), saved through ``venues/addresses.py``."""

from django import forms
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_POST

from booking.control.base import attempt, errors_text
from booking.control.theater_screens import TheaterScreens
from booking.venues import addresses
from booking.venues.addresses import DIRECTIONS_LONGEST, LINE_LONGEST


class AddressForm(forms.Form):
    street = forms.CharField(max_length=LINE_LONGEST["street"], required=False, label=gettext_lazy("Street and number"))
    postal_code = forms.CharField(
        max_length=LINE_LONGEST["postalCode"], required=False, label=gettext_lazy("Postal code")
    )
    city = forms.CharField(max_length=LINE_LONGEST["city"], required=False, label=gettext_lazy("City"))
    directions = forms.CharField(
        max_length=DIRECTIONS_LONGEST,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label=gettext_lazy("How to get there (English)"),
        help_text=gettext_lazy(
            "Public transport, parking, the entrance: shown on the booking, the tickets and the mail."
        ),
    )
    directions_de = forms.CharField(
        max_length=DIRECTIONS_LONGEST,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label=gettext_lazy("How to get there (German)"),
        help_text=gettext_lazy("Empty: German pages show the text above."),
    )


def address_form(theater: dict, data=None) -> AddressForm:
    address = theater.get("address") or {}
    initial = {
        "street": address.get("street", ""),
        "postal_code": address.get("postalCode", ""),
        "city": address.get("city", ""),
        "directions": address.get("directions", ""),
        "directions_de": address.get("directionsDe", ""),
    }
    return AddressForm(data, initial=initial, prefix="address")


class VenueAddressScreens(TheaterScreens):
    """``<id>/address/``: the form on the theater's change page."""

    @method_decorator(require_POST)
    def theater_address(self, request, object_id):
        theater = self.theater(request, object_id, "change")
        form = address_form(theater, request.POST)
        back = self.url("change", theater["_id"])
        if not form.is_valid():
            return self.refused(request, errors_text(form), back)
        data = form.cleaned_data
        saved = attempt(
            form,
            lambda: [
                addresses.update_address(
                    theater_id=theater["_id"],
                    street=data["street"],
                    postal_code=data["postal_code"],
                    city=data["city"],
                    directions=data["directions"],
                    directions_de=data["directions_de"],
                )
            ],
        )
        if saved is None:
            return self.refused(request, errors_text(form), back)
        address = saved[0]
        lines = ", ".join(addresses.address_lines(address))
        note = f"Address: {lines}" if address else "Address removed"
        shown = (
            gettext("Address saved: %(lines)s") % {"lines": lines} if address else gettext("The address was removed.")
        )
        return self.theater_saved(request, theater, note=note, shown=shown, to=back)
