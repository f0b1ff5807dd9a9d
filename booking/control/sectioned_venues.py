"""Sectioned venues (stadiums) created and edited in the admin, not only imported or
made in code: name, seat categories (shared by the sections) and every section as text
(``booking/venues/sections_text.py``: ``[North 1]`` then its rows in the layout editor's grid format).
``SectionedVenueScreens``, under TheaterAdmin's URLs."""

from django import forms
from django.http import Http404
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from booking.control import forms as f
from booking.control import selectors
from booking.control.base import ADDITION, bound
from booking.control.door_settings import door_form
from booking.control.theater_screens import TheaterScreens
from booking.control.venue_addresses import address_form
from booking.core.domain import Section
from booking.core.errors import BookingError, InvalidLayout
from booking.sales import theater_edits
from booking.venues import theaters as theater_service
from booking.venues.sections_text import parse_sections, sections_to_text

EXAMPLE = "[North 1]\nA: ssss.ssss\nB: ssss.ssss\n\n[North 2]\nA: pppp.pppp\nB: ssss.ssss\n"


class SectionedVenueForm(forms.Form):
    name = forms.CharField(max_length=100, label=gettext_lazy("Name"), widget=forms.TextInput(attrs={"size": 40}))
    name_de = f.theater_name_de_field()
    sections = forms.CharField(
        label=gettext_lazy("Sections"),
        widget=forms.Textarea(attrs={"rows": 18, "cols": 60, "class": "layout-grid", "spellcheck": "false"}),
        help_text=gettext_lazy(
            "Each section starts with its name in brackets, e.g. [North 1], followed by its rows as in "
            "the layout editor: one line per row, a category letter per seat, a dot for a gap. "
            "A German name may follow the name after a bar: [North 1 | Nord 1]."
        ),
    )

    def sections_with(self, categories: list[dict]) -> list[Section] | None:
        if not self.is_valid():
            return None
        try:
            return parse_sections(self.cleaned_data["sections"], categories)
        except InvalidLayout as exc:
            self.add_error("sections", exc.message)
            return None


class SectionedVenueScreens(TheaterScreens):
    """``add-sectioned/`` and ``<id>/sections/``: a stadium's name, categories and sections."""

    def _sectioned_form(self, request, initial: dict, categories: list[dict]):
        data = bound(request)
        form = SectionedVenueForm(data, initial=initial)
        formset = f.CategoryFormSet(data, initial=f.category_initial(categories), prefix="cat")
        return form, formset

    @staticmethod
    def _parsed(form, formset) -> list[dict] | None:
        if not (formset.is_valid() and form.is_valid()):
            return None
        categories = f.categories_from(formset)
        if not categories:
            form.add_error(None, _("Give at least one seat category (a letter and a name)."))
            return None
        return form.sections_with(categories)

    def _sectioned_page(self, request, form, formset, *, title, theater=None, status=200):
        context = {
            "title": title,
            "form": form,
            "formset": formset,
            "theater": theater,
            "address_form": address_form(theater) if theater else None,
            "door_form": door_form(theater) if theater else None,
        }
        return self.render(request, "admin/booking/theater/sectioned_form.html", context, status=status)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def sectioned_add(self, request):
        self.require(request, "add")
        form, formset = self._sectioned_form(request, {"sections": EXAMPLE}, [])
        if request.method == "POST":
            sections = self._parsed(form, formset)
            if sections is not None:
                try:
                    theater = theater_service.create_sectioned_theater(
                        form.cleaned_data["name"], sections, name_de=form.cleaned_data.get("name_de", "")
                    )
                except BookingError as exc:
                    form.add_error("sections", exc.message)
                else:
                    note = f"Created sectioned venue: {len(sections)} sections, {theater['seatCount']} seats."
                    to = self.url("sections", theater["_id"])
                    return self.theater_saved(request, theater, flag=ADDITION, note=note, to=to)
            return self._sectioned_page(request, form, formset, title=_("Add a sectioned venue"), status=400)
        return self._sectioned_page(request, form, formset, title=_("Add a sectioned venue"))

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def sectioned_change(self, request, object_id):
        self.require(request, "view")
        theater = selectors.get_theater(self.document_id(object_id))
        if theater is None or not theater.get("sections"):
            raise Http404(_("No such sectioned venue."))
        categories: dict = {}
        for section in theater["sections"]:
            for cat in section["layout"]["categories"]:
                categories.setdefault(cat["code"], cat)
        initial = {
            "name": theater["name"],
            "name_de": theater.get("nameDe", ""),
            "sections": sections_to_text(theater["sections"]),
        }
        form, formset = self._sectioned_form(request, initial, list(categories.values()))
        title = _("Change sectioned venue “%(name)s”") % {"name": theater["name"]}
        if request.method == "POST":
            self.require(request, "change")
            sections = self._parsed(form, formset)
            if sections is not None:
                try:
                    updated = theater_edits.update_sectioned_theater(
                        theater["_id"],
                        form.cleaned_data["name"],
                        sections,
                        name_de=form.cleaned_data.get("name_de", ""),
                    )
                except BookingError as exc:
                    form.add_error("sections", exc.message)
                else:
                    note = f"Changed sections: {len(sections)} sections, {updated['seatCount']} seats."
                    return self.theater_saved(
                        request,
                        updated,
                        note=note,
                        shown=note + " " + _("Performances already created keep their seat maps."),
                        to=self.url("sections", updated["_id"]),
                    )
            return self._sectioned_page(request, form, formset, title=title, theater=theater, status=400)
        return self._sectioned_page(request, form, formset, title=title, theater=theater)
