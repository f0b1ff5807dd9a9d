"""Bulk actions on a series in the admin (sales/series.py): put every draft on sale, change a
category's price, set when sales open or close, set or remove the members' presale, set the quota,
or cancel them all; first a preview of what each performance would change, then "Apply" does
exactly that. ``SeriesActionScreens``, under SessionAdmin's URLs (booking/control/sessions.py)."""

from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponseRedirect
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from booking.control.base import CHANGE
from booking.control.forms import (
    SALE_TIME_FORMATS,
    CancelSessionForm,
    LocalDateTimeField,
    SecondsDateTimeInput,
    add_field_errors,
)
from booking.control.session_screens import SessionScreens
from booking.core.domain import Session
from booking.core.errors import BookingError, InvalidRequest
from booking.core.ids import object_id
from booking.core.localized import ticket_type_name
from booking.sales import offers, quotas, series


class SeriesActionForm(forms.Form):
    action = forms.ChoiceField(
        label=gettext_lazy("Action"),
        choices=[
            (series.PUBLISH, gettext_lazy("Put the drafts on sale")),
            (series.PRICES, gettext_lazy("Change a category's price")),
            (series.SALE_OPENS, gettext_lazy("Set when sales open")),
            (series.SALE_CLOSES, gettext_lazy("Close online sales a time before each start")),
            (series.PRESALE, gettext_lazy("Set the members' presale")),
            (series.NO_PRESALE, gettext_lazy("Remove the members' presale")),
            (series.QUOTA, gettext_lazy("Set the quota")),
            (series.CANCEL, gettext_lazy("Cancel every performance (orders refunded, customers mailed)")),
        ],
        widget=forms.RadioSelect,
    )
    ticket_type = forms.ChoiceField(label=gettext_lazy("Ticket type"), required=False)
    category = forms.ChoiceField(label=gettext_lazy("Category"), required=False)
    price = forms.DecimalField(
        label=gettext_lazy("New price"), required=False, min_value=0, max_value=10_000, decimal_places=2
    )

    sale_opens = LocalDateTimeField(
        label=gettext_lazy("On sale from"),
        required=False,
        widget=SecondsDateTimeInput(),
        input_formats=SALE_TIME_FORMATS,
    )

    closes_before = forms.IntegerField(
        label=gettext_lazy("Minutes before the start"),
        required=False,
        min_value=0,
        max_value=series.MAX_CLOSE_BEFORE_MINUTES,
    )

    presale_before = forms.IntegerField(
        label=gettext_lazy("Presale: minutes before each public on-sale"),
        required=False,
        min_value=1,
        max_value=series.MAX_PRESALE_BEFORE_MINUTES,
        help_text=gettext_lazy("Or give one time for all below."),
    )
    presale_opens = LocalDateTimeField(
        label=gettext_lazy("Presale: from this time for all"),
        required=False,
        widget=SecondsDateTimeInput(),
        input_formats=SALE_TIME_FORMATS,
    )
    presale_code = forms.CharField(
        label=gettext_lazy("Members' access code"),
        required=False,
        max_length=64,
        widget=forms.PasswordInput(render_value=True, attrs={"autocomplete": "off"}),
        help_text=gettext_lazy("One code for every performance. Empty: each keeps its current code."),
    )
    quota = forms.IntegerField(
        label=gettext_lazy("Quota (seats)"),
        required=False,
        help_text=gettext_lazy(
            "At most this many seats held or sold per performance, house seats aside. Empty: no quota."
        ),
    )

    def __init__(self, *args, categories: Sequence[Mapping[str, Any]], ticket_types: list[dict], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["category"].choices = [("", "—")] + [(c["code"], c["name"]) for c in categories]  # type: ignore[attr-defined]
        self.fields["ticket_type"].choices = [(t["code"], ticket_type_name(t)) for t in ticket_types]  # type: ignore[attr-defined]

    def clean(self):
        data = super().clean() or {}
        if data.get("action") == series.PRICES:
            if not data.get("category"):
                self.add_error("category", _("Choose the category."))
            if data.get("price") is None:
                self.add_error("price", _("Give the new price."))
        if data.get("action") == series.SALE_OPENS and data.get("sale_opens") is None:
            self.add_error("sale_opens", _("Give the on-sale time."))
        if (
            data.get("action") == series.SALE_CLOSES
            and data.get("closes_before") is None
            and "closes_before" not in self.errors
        ):
            self.add_error("closes_before", _("Give the minutes before each start."))
        if (
            data.get("action") == series.PRESALE
            and data.get("presale_before") is None
            and data.get("presale_opens") is None
            and not {"presale_before", "presale_opens"} & set(self.errors)
        ):
            self.add_error("presale_before", _("Give the minutes before each public on-sale or one time for all."))
        return data

    @property
    def cents(self) -> int | None:
        price = self.cleaned_data.get("price")
        return None if price is None else int(price * 100)


class SeriesActionScreens(SessionScreens):
    """``<id>/series-actions/``: the series of the session's show."""

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def series_actions(self, request, object_id):
        session = self.session(request, object_id, "change")
        categories = session.get("layout", {}).get("categories", [])
        data = request.POST if request.method == "POST" else None
        form = SeriesActionForm(data, categories=categories, ticket_types=offers.ticket_types(session))
        cancel_form = CancelSessionForm(data)
        status, changes, error = 200, None, ""
        if request.method == "POST" and not (form.is_valid() and cancel_form.is_valid()):
            status = 400
        elif request.method == "POST":
            action = form.cleaned_data["action"]
            if action == series.CANCEL:
                self.require(request, "delete")  # as canceling one session: it ends them for good
            category, cents = form.cleaned_data.get("category") or "", form.cents
            choice: dict[str, Any] = {
                "ticket_type": form.cleaned_data.get("ticket_type") or series.FULL,
                "sale_opens": form.cleaned_data.get("sale_opens"),
                "closes_before": form.cleaned_data.get("closes_before"),
                "presale_before": form.cleaned_data.get("presale_before"),
                "presale_opens": form.cleaned_data.get("presale_opens"),
                "presale_code": form.cleaned_data.get("presale_code") or "",
                "quota": form.cleaned_data.get("quota"),
            }
            try:
                if request.POST.get("apply") == "yes":
                    return self._apply(request, session, action, category, cents, choice, cancel_form.terms())
                changes = series.preview(session["_id"], action, category=category, price=cents, **choice)
            except InvalidRequest as exc:
                add_field_errors(form, exc)
                error, status = exc.message, 400
            except BookingError as exc:
                error, status = exc.message, 400
        listing = [  # templates cannot read _id
            {**s, "id": str(s["_id"]), "quota_line": quotas.quota_line(s)} for s in series.series_of(session["_id"])
        ]
        return self.render(
            request,
            "admin/booking/session/series_actions.html",
            {
                "title": _("The series of “%(name)s”") % {"name": session["name"]},
                "session": session,
                "series": listing,
                "form": form,
                "cancel_form": cancel_form,
                "changes": changes,
                "error": error,
            },
            status=status,
        )

    def _apply(self, request, session: Session, action: str, category: str, cents: int | None, choice, terms):
        chosen, seen = [], {}
        for raw in request.POST.getlist("sessions"):
            try:
                sid = object_id(raw, "session")
            except BookingError:
                continue
            chosen.append(sid)
            old = request.POST.get(f"old_{raw}", "")
            if old.isdigit():
                seen[raw] = int(old)
        by = request.user.get_username()
        done = series.apply(
            session["_id"],
            action,
            chosen,
            category=category,
            price=cents,
            seen_prices=seen,
            cancel_terms=terms,
            by=by,
            **choice,
        )
        note = _("%(action)s: %(n)d performances changed") % {"action": action, "n": len(done.done)}
        what = {
            series.PRICES: f"{action} {choice['ticket_type']} {category} {cents}",
            series.QUOTA: f"{action} {choice['quota']}",
            series.PRESALE: f"{action} {choice['presale_before'] or choice['presale_opens']}",  # never the code
        }.get(action, action)
        for changed in done.done:
            self.log(request, CHANGE, changed, f"Session {changed}", f"Series action: {what}")
        if done.changed_meanwhile:
            messages.warning(
                request,
                note
                + "; "
                + _("%(n)d had changed since the preview and were left as they are.")
                % {"n": len(done.changed_meanwhile)},
            )
        else:
            messages.success(request, note + ".")
        return HttpResponseRedirect(self.url("series_actions", session["_id"]))
