"""Closing the till at the end of the day (booking/reports/tills.py): a seller sees the cash their
till should hold since their last closing (cash taken, cash handed back), enters what they
counted and closes it; the closing's page and the day's Z report (PDF, CSV) follow. A seller
(``booking.sell_at_counter``) sees their own till and closings; ``booking.view_reports`` sees
every seller's day.
"""

from datetime import date
from decimal import Decimal

from django import forms
from django.contrib.admin.models import ADDITION
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_safe

from booking.control.base import OnePermissionAdmin
from booking.control.counter import PERMISSION as COUNTER_PERMISSION
from booking.control.forms import add_field_errors
from booking.control.reports import PERMISSION as REPORTS_PERMISSION
from booking.core.errors import Conflict, InvalidRequest
from booking.reports import tills


class CloseTillForm(forms.Form):
    counted = forms.DecimalField(
        min_value=Decimal(0),
        max_value=Decimal(tills.COUNTED_MAX) / 100,
        max_digits=10,
        decimal_places=2,
        label=gettext_lazy("Cash counted in the drawer"),
        error_messages={"invalid": gettext_lazy("Give the amount as a number, e.g. 250.50.")},
    )
    note = forms.CharField(max_length=tills.NOTE_MAX, required=False, label=gettext_lazy("Note (optional)"))
    seq = forms.IntegerField(min_value=1, max_value=10**9, widget=forms.HiddenInput)  # the closing shown


def _day(raw: str) -> date:
    try:
        return date.fromisoformat(str(raw))
    except ValueError:
        raise Http404(_("No such day.")) from None


class TillAdmin(OnePermissionAdmin):
    permission = COUNTER_PERMISSION
    routes = [
        ("", "till_page", "changelist"),
        ("closing/<str:closing_id>/", "closing_page", "closing"),
        ("day/<str:day>/z.pdf", "z_pdf", "z_pdf"),
        ("day/<str:day>/z.csv", "z_csv", "z_csv"),
    ]

    def has_view_permission(self, request, obj=None):
        user = request.user
        return user.is_active and (user.has_perm(COUNTER_PERMISSION) or user.has_perm(REPORTS_PERMISSION))

    def _till(self, request) -> str:
        return request.user.get_username()

    def _sees_all(self, request) -> bool:
        return request.user.has_perm(REPORTS_PERMISSION)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def till_page(self, request):
        """The seller's open till and the form that closes it."""
        self.require(request, "view")
        till = self._till(request)
        form = CloseTillForm(request.POST if request.method == "POST" else None)
        refused = 400
        if request.method == "POST":
            if not request.user.has_perm(COUNTER_PERMISSION):
                raise PermissionDenied
            if form.is_valid():
                data = form.cleaned_data
                counted = int(data["counted"] * 100)
                closing = None
                try:
                    closing = tills.close(
                        till=till,
                        seller=request.user.get_username(),
                        counted=counted,
                        seq=data["seq"],
                        note=data["note"],
                    )
                except InvalidRequest as exc:
                    add_field_errors(form, exc)
                except Conflict as exc:  # closed meanwhile: a double submit, another screen
                    form.add_error(None, exc.message)
                    refused = 409
                if closing is not None:
                    note = f"Till {till} closed ({closing['seq']}): expected {closing['expected']}, counted {counted}."
                    return self.saved(
                        request,
                        ADDITION,
                        closing["_id"][:24],
                        f"{till} {closing['seq']}",
                        note=note,
                        shown=_("The till is closed."),
                        to=self.url("closing", closing["_id"]),
                    )
        state = tills.open_till(till)
        if not form.is_bound:
            form = CloseTillForm(initial={"seq": state.seq})
        today = timezone.localdate()
        context = {
            "title": _("Close the till: %(seller)s") % {"seller": till},
            "state": state,
            "form": form,
            "last": tills.last_closing(till),
            "today": today.isoformat(),
            "closings_today": [
                {**c, "id": c["_id"]} for c in tills.of_day(today, None if self._sees_all(request) else till)
            ],
        }
        status = refused if request.method == "POST" else 200
        return self.render(request, "admin/booking/tillclosing/till.html", context, status=status)

    @method_decorator(require_safe)
    def closing_page(self, request, closing_id):
        self.require(request, "view")
        closing = tills.get(str(closing_id)[:200])
        if closing is None or not (self._sees_all(request) or closing["till"] == self._till(request)):
            raise Http404(_("No such closing."))
        context = {
            "title": _("Till closing %(seq)s: %(seller)s") % {"seq": closing["seq"], "seller": closing["seller"]},
            "closing": closing,
        }
        return self.render(request, "admin/booking/tillclosing/closing.html", context)

    def _day_closings(self, request, day: str) -> tuple[date, list[dict], str]:
        self.require(request, "view")
        which = _day(day)
        asked = request.GET.get("till") or ""
        if not self._sees_all(request):
            if asked and asked != self._till(request):
                raise PermissionDenied
            asked = self._till(request)
        return which, tills.of_day(which, asked or None), asked

    @method_decorator(require_safe)
    def z_pdf(self, request, day):
        which, found, till = self._day_closings(request, day)
        title = _("Z report %(day)s") % {"day": which.strftime("%d.%m.%Y")} + (f" · {till}" if till else "")
        response = HttpResponse(tills.z_pdf(found, title=title), content_type="application/pdf")
        response["Content-Disposition"] = (
            f'inline; filename="z-report-{which.isoformat()}{"-" + till if till else ""}.pdf"'
        )
        response["Cache-Control"] = "private, no-store"
        return response

    @method_decorator(require_safe)
    def z_csv(self, request, day):
        which, found, till = self._day_closings(request, day)
        response = HttpResponse(tills.z_csv(found), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="z-report-{which.isoformat()}{"-" + till if till else ""}.csv"'
        )
        response["Cache-Control"] = "private, no-store"
        return response
