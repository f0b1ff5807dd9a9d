"""A sectioned venue's performance in the admin: one performance with its sections
(sales per section and in total, each section's live map and "Sell"), house seats blocked or
released for whole sections at once, and the whole performance canceled at once:
``PerformanceScreens``, under SessionAdmin's URLs; the writes are ``sales.performances`` and
``sales.performance_details``."""

from django import forms
from django.http import Http404
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from booking.control import forms as f
from booking.control import selectors
from booking.control.base import CHANGE, Screens, bound
from booking.sales import performance_details, performances
from booking.sales.selectors import session_counts

FIELDS = {"name": 1, "theaterName": 1, "venueName": 1, "start": 1, "status": 1, "section": 1, "seats": 1}


class SectionsActionForm(forms.Form):
    action = forms.ChoiceField(choices=[("block", "block"), ("unblock", "unblock")])
    sections = forms.MultipleChoiceField(
        choices=(), error_messages={"required": gettext_lazy("Tick at least one section.")}
    )

    def __init__(self, *args, section_ids=(), **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["sections"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = [(i, i) for i in section_ids]


class CancelPerformanceForm(forms.Form):
    cancel_orders = forms.BooleanField(required=False, label=gettext_lazy("Also cancel and refund the paid orders"))


class PerformanceScreens(Screens):
    """A sectioned venue's performance (``performance/<performance_id>/...``): its sections as one."""

    def _sections(self, performance_id: str) -> tuple:
        pid = self.document_id(performance_id)
        performance_details.finish_details(pid)  # a details change a crash left half written: finished first
        sections = performance_details.sections_of(pid, FIELDS)
        if not sections:
            raise Http404(_("No such performance."))
        for section in sections:
            section["counts"] = session_counts(section)
            section.pop("seats", None)
        total = {k: sum(s["counts"][k] for s in sections) for k in ("sold", "held", "blocked", "free", "total")}
        total["occupancy"] = round(100 * total["sold"] / total["total"]) if total["total"] else 0
        return pid, selectors.with_ids(sections), total

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def performance_page(self, request, performance_id):
        self.require(request, "view")
        pid, sections, total = self._sections(performance_id)
        form = SectionsActionForm(bound(request), section_ids=[s["id"] for s in sections])

        def block_sections():
            chosen = [self.document_id(i) for i in form.cleaned_data["sections"]]
            block = form.cleaned_data["action"] == "block"
            return chosen, block, performances.set_sections_blocked(pid, chosen, block)

        done, status = self.posted(request, form, block_sections)
        if done is not None:
            chosen, block, changed = done
            what = _("Blocked") if block else _("Released")
            note = f"{what} {changed} seats in {len(chosen)} sections."
            to = self.url("performance", pid)
            return self.saved(request, CHANGE, chosen[0], sections[0]["venueName"], note=note, to=to)
        first = sections[0]
        return self.render(
            request,
            "admin/booking/session/performance.html",
            {
                "title": f"{first['name']} – {first.get('venueName', '')}",
                "performance_id": str(pid),
                "first": first,
                "sections": sections,
                "total": total,
                "form": form,
                "can_sell": request.user.has_perm("booking.sell_at_counter"),
            },
            status=status,
        )

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def performance_cancel(self, request, performance_id):
        self.require(request, "delete")
        pid, sections, total = self._sections(performance_id)
        form = CancelPerformanceForm(bound(request))
        canceled, status = self.posted(
            request,
            form,
            lambda: performances.cancel_performance(
                pid, cancel_orders=form.cleaned_data["cancel_orders"], by=request.user.get_username()
            ),
            action="delete",
            conflict_field="cancel_orders",
        )
        if canceled is not None:
            note = f"Canceled the performance ({len(sections)} sections) and {canceled} paid orders."
            to = self.url("performance", pid)
            return self.saved(request, CHANGE, sections[0]["_id"], sections[0]["venueName"], note=note, to=to)
        return self.render(
            request,
            "admin/booking/session/performance_cancel.html",
            {
                "title": _("Cancel the whole performance?"),
                "performance_id": str(pid),
                "first": sections[0],
                "sections": sections,
                "paid": performances.paid_orders(pid),
                "form": form,
            },
            status=status,
        )

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def performance_change(self, request, performance_id):
        """Name, description, times and prices of every section at once."""
        self.require(request, "view")
        pid = self.document_id(performance_id)
        performance_details.finish_details(pid)  # the form shows the change as every section has it
        sections = performance_details.sections_of(
            pid,
            {
                "name": 1,
                "description": 1,
                "nameDe": 1,
                "descriptionDe": 1,
                "start": 1,
                "end": 1,
                "prices": 1,
                "layout": 1,
                "venueName": 1,
                "status": 1,
            },
        )
        if not sections:
            raise Http404(_("No such performance."))
        first = sections[0]
        prices: dict = {}
        categories: dict = {}
        rows: list = []
        for section in sections:
            prices.update(section["prices"])
            for cat in section["layout"]["categories"]:
                categories.setdefault(cat["code"], cat)
            rows.extend(section["layout"]["rows"])
        initial = {
            "name": first["name"],
            "description": first.get("description", ""),
            "name_de": first.get("nameDe", ""),
            "description_de": first.get("descriptionDe", ""),
            "start": timezone.localtime(first["start"]),
            "end": timezone.localtime(first["end"]),
            **f.PricedForm.price_initial(prices),
        }
        form = f.SessionForm(
            bound(request), initial=initial, layout={"categories": list(categories.values()), "rows": rows}
        )
        count, status = self.posted(request, form, lambda: performances.update_details(pid, **form.session_details()))
        if count is not None:
            return self.saved(
                request,
                CHANGE,
                first["_id"],
                first.get("venueName", ""),
                note=f"Changed {', '.join(form.changed_data) or 'nothing'} of {count} sections.",
                shown=_("Saved for all %(count)d sections.") % {"count": count},
                to=self.url("performance", pid),
            )
        return self.render(
            request,
            "admin/booking/session/performance_form.html",
            {"title": _("Change the whole performance"), "performance_id": str(pid), "first": first, "form": form},
            status=status,
        )
