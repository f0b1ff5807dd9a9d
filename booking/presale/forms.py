"""Input parsing for the buyer's pages. Rules about bookings stay in the engine; these only turn
request data into typed values and say clearly what is wrong with it."""

from typing import cast

from django import forms
from django.utils.translation import gettext, gettext_lazy

from booking.core.localized import localized
from booking.web.forms import DayField, KeptDateInput, KeptSelect


class WhatsOnFilterForm(forms.Form):
    date = DayField(required=False, widget=KeptDateInput(attrs={"type": "date"}))
    theater = forms.ChoiceField(required=False, choices=[("", gettext_lazy("All theaters"))], widget=KeptSelect)

    def __init__(self, *args, theaters=(), **kwargs):
        super().__init__(*args, **kwargs)
        field = cast(forms.ChoiceField, self.fields["theater"])
        field.choices = [("", gettext("All theaters"))] + [(str(t["_id"]), localized(t, "name")) for t in theaters]


class CheckoutForm(forms.Form):
    """Only shapes the fields; the engine's checkout validates name and e-mail (one set of rules)."""

    name = forms.CharField(
        max_length=200,
        required=False,
        widget=forms.TextInput(attrs={"autocomplete": "name"}),
        label=gettext_lazy("Name"),
    )
    email = forms.CharField(
        max_length=300,
        required=False,
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
        label=gettext_lazy("E-mail"),
    )


class FindBookingForm(forms.Form):
    ref = forms.CharField(
        max_length=20,
        label=gettext_lazy("Booking reference"),
        error_messages={"required": gettext_lazy("Enter the booking reference from your confirmation.")},
    )
    email = forms.CharField(
        max_length=300,
        label=gettext_lazy("E-mail"),
        error_messages={"required": gettext_lazy("Enter the e-mail address you booked with.")},
    )
