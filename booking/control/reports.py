"""Sales reports in the admin: per session and per series (the sessions of one show in
one hall), their CSV / XLSX downloads and chart, and a session's attendee list (CSV, PDF).

Everything here needs ``booking.view_reports`` (the ``Report`` stand-in model carries it); the
figures are read by booking/reports/figures.py, the files made by booking/reports/exports.py.
"""

from django import forms
from django.core.cache import caches
from django.http import Http404, HttpResponse
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from booking.control import selectors
from booking.control.base import OnePermissionAdmin, errors_text
from booking.core import clock
from booking.core.errors import NotFound
from booking.reports import exports, figures, takings

PERMISSION = "booking.view_reports"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
KINDS = ("session", "series")


def _download(body, content_type: str, filename: str, *, inline: bool = False) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'{"inline" if inline else "attachment"}; filename="{filename}"'
    response["Cache-Control"] = "private, no-store"  # customer names, revenue
    return response


class TakingsForm(forms.Form):
    """The local days of a takings report (one day by default: today)."""

    first = forms.DateField(label=gettext_lazy("From"), widget=forms.DateInput(attrs={"type": "date"}))
    last = forms.DateField(label=gettext_lazy("Until"), widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self):
        data = super().clean() or {}
        first, last = data.get("first"), data.get("last")
        if first and last and last < first:
            self.add_error("last", _("The last day must not be before the first."))
        elif first and last and (last - first).days >= takings.MAX_DAYS:
            self.add_error("last", _("At most %(days)d days at once.") % {"days": takings.MAX_DAYS})
        return data


def takings_form(query) -> TakingsForm:
    today = timezone.localdate().isoformat()
    return TakingsForm({"first": query.get("first") or today, "last": query.get("last") or query.get("first") or today})


class ReportAdmin(OnePermissionAdmin):
    permission = PERMISSION
    routes = [
        ("", "report_index", "changelist"),
        *[(f"{kind}/<str:object_id>/", f"{kind}_report", kind) for kind in KINDS],
        *[(f"{kind}/<str:object_id>/sales.csv", f"{kind}_csv", f"{kind}_csv") for kind in KINDS],
        *[(f"{kind}/<str:object_id>/sales.xlsx", f"{kind}_xlsx", f"{kind}_xlsx") for kind in KINDS],
        *[(f"{kind}/<str:object_id>/chart.svg", f"{kind}_chart", f"{kind}_chart") for kind in KINDS],
        ("session/<str:object_id>/attendees.csv", "attendees_csv", "attendees_csv"),
        ("session/<str:object_id>/attendees.pdf", "attendees_pdf", "attendees_pdf"),
        ("takings/", "takings_page", "takings"),
        ("takings.csv", "takings_csv", "takings_csv"),
        ("takings.xlsx", "takings_xlsx", "takings_xlsx"),
    ]

    # --- helpers ---

    def _report(self, request, kind: str, object_id: str) -> figures.Report:
        self.require(request, "view")
        try:
            return figures.build(kind, self.document_id(object_id))
        except NotFound as exc:
            raise Http404(exc.message) from None

    def _filename(self, report: figures.Report, ext: str) -> str:
        first = report.sessions[0].start if report.sessions else timezone.now()
        day = timezone.localtime(first).strftime("%Y-%m-%d")
        stem = slugify(report.title) or "report"
        return f"{stem}-{report.kind}-{day}.{ext}" if report.kind == "session" else f"{stem}-series.{ext}"

    # --- pages ---

    def report_index(self, request):
        """Sessions to report on: upcoming or past (the staff list's selector and filter)."""
        self.require(request, "view")
        when = request.GET.get("when") or selectors.SessionsShown.ON_SALE
        if when not in set(selectors.SessionsShown):
            return self.render(
                request,
                "admin/booking/report/index.html",
                {"title": _("Sales reports"), "sessions": [], "when": "", "error": _("Unknown choice.")},
                status=400,
            )
        sessions = selectors.staff_sessions(when=when)
        return self.render(
            request,
            "admin/booking/report/index.html",
            {"title": _("Sales reports"), "sessions": sessions, "when": when, "shown": selectors.SessionsShown},
        )

    def _page(self, request, kind: str, object_id: str):
        report = self._report(request, kind, object_id)
        title = _("Series report: %(name)s") if kind == "series" else _("Session report: %(name)s")
        base = f"admin:booking_report_{kind}"
        return self.render(
            request,
            "admin/booking/report/report.html",
            {
                "title": title % {"name": report.title},
                "report": report,
                "object_id": object_id,
                "base": base,
                "max_day_tickets": max((d.tickets for d in report.days), default=0),
            },
        )

    def session_report(self, request, object_id):
        return self._page(request, "session", object_id)

    def series_report(self, request, object_id):
        return self._page(request, "series", object_id)

    # --- files ---

    def _csv(self, request, kind, object_id):
        report = self._report(request, kind, object_id)
        body = exports.to_csv(exports.report_tables(report))
        return _download(body, "text/csv; charset=utf-8", self._filename(report, "csv"))

    def _xlsx(self, request, kind, object_id):
        report = self._report(request, kind, object_id)
        return _download(exports.to_xlsx(exports.report_tables(report)), XLSX, self._filename(report, "xlsx"))

    def _chart(self, request, kind, object_id):
        report = self._report(request, kind, object_id)
        # drawn once per figures (and language, time zone: the cache's key function), per process
        charts = caches["charts"]
        key = exports.chart_key(report)
        svg = charts.get(key)
        if svg is None:
            svg = exports.sales_chart_svg(report)
            charts.set(key, svg)
        response = HttpResponse(svg, content_type="image/svg+xml")
        response["Cache-Control"] = "private, no-store"
        return response

    def session_csv(self, request, object_id):
        return self._csv(request, "session", object_id)

    def series_csv(self, request, object_id):
        return self._csv(request, "series", object_id)

    def session_xlsx(self, request, object_id):
        return self._xlsx(request, "session", object_id)

    def series_xlsx(self, request, object_id):
        return self._xlsx(request, "series", object_id)

    def session_chart(self, request, object_id):
        return self._chart(request, "session", object_id)

    def series_chart(self, request, object_id):
        return self._chart(request, "series", object_id)

    def _attendees(self, request, object_id):
        self.require(request, "view")
        try:
            return figures.attendees(self.document_id(object_id))
        except NotFound as exc:
            raise Http404(exc.message) from None

    def _attendee_filename(self, session: dict, ext: str) -> str:
        day = timezone.localtime(session["start"]).strftime("%Y-%m-%d-%H%M")
        return f"{slugify(session.get('name', '')) or 'session'}-{day}-attendees.{ext}"

    def attendees_csv(self, request, object_id):
        session, people = self._attendees(request, object_id)
        body = exports.attendees_csv(people)
        return _download(body, "text/csv; charset=utf-8", self._attendee_filename(session, "csv"))

    def attendees_pdf(self, request, object_id):
        session, people = self._attendees(request, object_id)
        return _download(
            exports.attendees_pdf(session, people),
            "application/pdf",
            self._attendee_filename(session, "pdf"),
            inline=True,  # opens in the browser's viewer, to print
        )

    # --- takings: money by payment method and seller ---

    def takings_page(self, request):
        """Money taken and given back on some days, by payment method, by seller and by both."""
        self.require(request, "view")
        form = takings_form(request.GET)
        context = {"title": _("Takings by payment method and seller"), "form": form, "takings": None}
        if not form.is_valid():
            return self.render(request, "admin/booking/report/takings.html", context, status=400)
        found = takings.summary(form.cleaned_data["first"], form.cleaned_data["last"], now=clock.now())
        return self.render(request, "admin/booking/report/takings.html", {**context, "takings": found})

    def takings_csv(self, request):
        self.require(request, "view")
        form = takings_form(request.GET)
        if not form.is_valid():
            return HttpResponse(errors_text(form), status=400, content_type="text/plain; charset=utf-8")
        found = takings.build(form.cleaned_data["first"], form.cleaned_data["last"])
        name = f"takings-{found.first.isoformat()}-{found.last.isoformat()}.csv"
        return _download(exports.to_csv(takings.tables(found)), "text/csv; charset=utf-8", name)

    def takings_xlsx(self, request):
        self.require(request, "view")
        form = takings_form(request.GET)
        if not form.is_valid():
            return HttpResponse(errors_text(form), status=400, content_type="text/plain; charset=utf-8")
        found = takings.build(form.cleaned_data["first"], form.cleaned_data["last"])
        name = f"takings-{found.first.isoformat()}-{found.last.isoformat()}.xlsx"
        return _download(exports.to_xlsx(takings.tables(found)), XLSX, name)
