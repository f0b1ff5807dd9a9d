"""What buyers may change online (sales/self_service.py): the theater's default on its change
page, a performance's own rules (or back to the default) on the session's, for one performance
or its whole series: ``SessionSelfServiceScreens`` and ``TheaterSelfServiceScreens``, under
SessionAdmin's and TheaterAdmin's URLs; the forms appear on the change pages
(templates/admin/booking/{session,theater}/_self_service.html)."""

from decimal import Decimal

from django import forms
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_POST

from booking.control.base import errors_text
from booking.control.forms import from_cents, to_cents
from booking.control.session_screens import SessionScreens
from booking.control.theater_screens import TheaterScreens
from booking.core.domain import Session
from booking.core.errors import InvalidRequest
from booking.sales import self_service, series
from booking.sales.self_service import Rules


class SelfServiceForm(forms.Form):
    exchange = forms.BooleanField(required=False, label=gettext_lazy("Buyers may exchange tickets online"))
    cancel = forms.BooleanField(required=False, label=gettext_lazy("Buyers may cancel tickets online"))
    hours_before = forms.IntegerField(
        min_value=0,
        max_value=self_service.MAX_HOURS,
        label=gettext_lazy("Exchange and cancel until"),
        help_text=gettext_lazy("hours before the performance"),
    )
    fee = forms.DecimalField(
        min_value=Decimal(0),
        max_value=from_cents(self_service.MAX_FEE),
        decimal_places=2,
        label=gettext_lazy("Fee per ticket"),
        help_text=gettext_lazy("kept from a refund, added to an exchange"),
    )
    transfer = forms.BooleanField(required=False, label=gettext_lazy("Buyers may hand tickets to someone else"))
    max_transfers = forms.IntegerField(
        min_value=0, max_value=self_service.MAX_TRANSFERS, label=gettext_lazy("Tickets handed on per booking, at most")
    )
    transfer_hours_before = forms.IntegerField(
        min_value=0,
        max_value=self_service.MAX_HOURS,
        label=gettext_lazy("Hand on until"),
        help_text=gettext_lazy("hours before the performance"),
    )

    def rules(self) -> Rules:
        data = self.cleaned_data
        return self_service.clean_rules(
            exchange=data["exchange"],
            cancel=data["cancel"],
            hours_before=data["hours_before"],
            fee=to_cents(data["fee"]),
            transfer=data["transfer"],
            max_transfers=data["max_transfers"],
            transfer_hours_before=data["transfer_hours_before"],
        )


class SessionSelfServiceForm(SelfServiceForm):
    own = forms.BooleanField(
        required=False, label=gettext_lazy("This performance has its own rules (else the theater's default)")
    )
    whole_series = forms.BooleanField(
        required=False, label=gettext_lazy("The same for every upcoming performance of this show in this hall")
    )


class SeasonSelfServiceForm(SelfServiceForm):
    """On the add-series form: the new performances' own rules, or the theater's default."""

    field_order = ["own"]

    own = forms.BooleanField(
        required=False, label=gettext_lazy("These performances have their own rules (else the theater's default)")
    )

    def own_rules(self) -> Rules | None:
        return self.rules() if self.cleaned_data.get("own") else None


def season_form(theater: dict, data=None) -> SeasonSelfServiceForm:
    """Validated only when "own rules" is ticked: untouched, the theater's default applies."""
    if data is not None and not data.get("ss-own"):
        data = None
    initial = _initial(self_service.rules_from(theater) or self_service.NOTHING_ONLINE)
    return SeasonSelfServiceForm(data, prefix="ss", initial=initial)


def _initial(rules: Rules) -> dict:
    return {**self_service.as_dict(rules), "fee": from_cents(rules.fee)}


def theater_form(theater: dict, data=None) -> SelfServiceForm:
    return SelfServiceForm(data, initial=_initial(self_service.rules_from(theater) or self_service.NOTHING_ONLINE))


def session_form(session: Session, theater: dict | None, data=None) -> SessionSelfServiceForm:
    rules = self_service.effective_rules(session=session, theater=theater)
    own = self_service.rules_from(session) is not None
    return SessionSelfServiceForm(data, initial={**_initial(rules), "own": own})


def _summary(rules: Rules | None) -> str:
    if rules is None:
        return "the theater's default"
    return ", ".join(f"{k}={v}" for k, v in self_service.as_dict(rules).items())


class SessionSelfServiceScreens(SessionScreens):
    """``<id>/self-service/``: the form on the session's change page."""

    @method_decorator(require_POST)
    def session_self_service(self, request, object_id):
        session = self.session(request, object_id, "change")
        form = SessionSelfServiceForm(request.POST)
        back = self.url("change", session["_id"])
        if not form.is_valid():
            return self.refused(request, errors_text(form), back)
        try:
            rules = form.rules() if form.cleaned_data["own"] else None
        except InvalidRequest as exc:
            return self.refused(request, exc.message, back)
        if form.cleaned_data["whole_series"]:
            ids = [s["_id"] for s in series.series_of(session["_id"])]
            count = self_service.set_series_rules(session_ids=ids, rules=rules)
        else:
            self_service.set_session_rules(session_id=session["_id"], rules=rules)
            count = 1
        note = f"Online changes for {count} performance(s): {_summary(rules)}."
        shown = gettext("What buyers may change online was saved for %(count)d performance(s).") % {"count": count}
        return self.session_saved(request, session, note=note, shown=shown, to=back)


class TheaterSelfServiceScreens(TheaterScreens):
    """``<id>/self-service/``: the theater's default, a form on its change page."""

    @method_decorator(require_POST)
    def theater_self_service(self, request, object_id):
        theater = self.theater(request, object_id, "change")
        form = SelfServiceForm(request.POST)
        back = self.url("change", theater["_id"])
        if not form.is_valid():
            return self.refused(request, errors_text(form), back)
        try:
            rules = form.rules()
        except InvalidRequest as exc:
            return self.refused(request, exc.message, back)
        self_service.set_theater_rules(theater_id=theater["_id"], rules=rules)
        note = f"Default online changes: {_summary(rules)}."
        shown = gettext("The theater's default for online changes was saved.")
        return self.theater_saved(request, theater, note=note, shown=shown, to=back)
