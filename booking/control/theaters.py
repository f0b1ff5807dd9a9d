"""Theaters in the admin: list, layout editor with live preview, JSON import/export, delete.

``TheaterAdmin.routes`` is every URL under /admin/booking/theater/ with the class and method that
answers it; each group of pages is a ``TheaterScreens`` class (control/theater_screens.py) in the
module of its subject."""

import json

from django.http import HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods, require_POST

from booking.control import forms as f
from booking.control import selectors
from booking.control.base import ADDITION, DELETION, MongoModelAdmin, route
from booking.control.door_settings import DoorSettingsScreens, door_form
from booking.control.offers import TicketTypeScreens
from booking.control.payment_settings import TheaterPaymentScreens, donation_form, vat_form
from booking.control.seat_chart import category_legend, grid_error_context, layout_rows
from booking.control.sectioned_venues import SectionedVenueScreens
from booking.control.self_service_settings import TheaterSelfServiceScreens, theater_form
from booking.control.theater_screens import TheaterScreens
from booking.control.venue_addresses import VenueAddressScreens, address_form
from booking.core.domain import Layout
from booking.core.errors import BookingError
from booking.sales import theater_edits
from booking.venues import theaters as theater_service
from booking.venues.layouts import layout_to_grid, parse_grid, seat_count

EXAMPLE_CATEGORIES = [
    {"code": "s", "name": "Stalls", "color": "#3b82f6"},
    {"code": "p", "name": "Premium", "color": "#a855f7"},
]
EXAMPLE_GRID = "A: ssss.ssss\nB: sspp.ppss\nC: Ssss.sssS\n"


class TheaterEditorScreens(TheaterScreens):
    """The list of theaters, the layout editor (add, change, its live preview), the layout as JSON
    (import, export), delete."""

    def theater_list(self, request):
        self.require(request, "view")
        return self.render(
            request,
            "admin/booking/theater/list.html",
            {"title": gettext("Theaters"), "theaters": selectors.theaters_with_session_counts()},
        )

    @staticmethod
    def _bind(request, initial: dict, categories: list[dict]):
        data = request.POST if request.method == "POST" else None
        form = f.TheaterForm(data, initial=initial)
        formset = f.CategoryFormSet(data, initial=f.category_initial(categories), prefix="cat")
        return form, formset

    @staticmethod
    def _layout(form, formset) -> Layout | None:
        """The layout drawn in the editor, or None with errors on the forms."""
        if not (formset.is_valid() and form.is_valid()):
            return None
        categories = f.categories_from(formset)
        if not categories:
            form.add_error(None, gettext("Give at least one seat category (a letter and a name)."))
            return None
        return form.clean_with(categories)

    def _editor(self, request, form, formset, layout, *, title, theater=None, status=200):
        return self.render(
            request,
            "admin/booking/theater/form.html",
            {
                "title": title,
                "form": form,
                "formset": formset,
                "theater": theater,
                "preview": preview_context(form, layout),
                "sessions": selectors.sessions_of_theater(theater["_id"]) if theater else [],
                "vat_form": vat_form(theater) if theater and "layout" in theater else None,
                "donation_form": donation_form(theater) if theater else None,
                "address_form": address_form(theater) if theater else None,
                "door_form": door_form(theater) if theater else None,
                "self_service_form": theater_form(theater) if theater else None,
            },
            status=status,
        )

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def theater_add(self, request):
        self.require(request, "add")
        form, formset = self._bind(request, {"grid": EXAMPLE_GRID}, EXAMPLE_CATEGORIES)
        if request.method == "POST":
            layout = self._layout(form, formset)
            if layout is not None:
                try:
                    theater = theater_service.create_theater(
                        form.cleaned_data["name"], layout, name_de=form.cleaned_data.get("name_de", "")
                    )
                except BookingError as exc:
                    form.add_error("name", exc.message)
                else:
                    return self.theater_saved(
                        request,
                        theater,
                        flag=ADDITION,
                        note=f"Created theater with {theater['seatCount']} seats.",
                        shown=gettext("Theater “%(name)s” was created with %(seats)s seats.")
                        % {"name": theater["name"], "seats": theater["seatCount"]},
                        to=self.url("change", theater["_id"]),
                    )
            return self._editor(request, form, formset, layout, title=gettext("Add theater"), status=400)
        example = parse_grid(EXAMPLE_GRID, EXAMPLE_CATEGORIES)
        return self._editor(request, form, formset, example, title=gettext("Add theater"))

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def theater_change(self, request, object_id):
        theater = self.theater(request, object_id)
        if "layout" not in theater:  # a sectioned venue (a stadium): its own editor
            return HttpResponseRedirect(self.url("sections", theater["_id"]))
        layout = theater["layout"]
        form, formset = self._bind(
            request,
            {"name": theater["name"], "name_de": theater.get("nameDe", ""), "grid": layout_to_grid(layout)},
            layout["categories"],
        )
        if request.method == "POST":
            self.require(request, "change")
            new_layout = self._layout(form, formset)
            if new_layout is not None:
                try:
                    updated = theater_edits.update_theater(
                        theater["_id"],
                        form.cleaned_data["name"],
                        new_layout,
                        name_de=form.cleaned_data.get("name_de", ""),
                    )
                except BookingError as exc:
                    form.add_error(None, exc.message)
                else:
                    return self.theater_saved(
                        request,
                        updated,
                        note=f"Changed name/layout ({updated['seatCount']} seats).",
                        shown=gettext("Theater “%(name)s” was saved. Sessions already created keep their seat map.")
                        % {"name": updated["name"]},
                        to=self.url("change", updated["_id"]),
                    )
            return self._editor(
                request,
                form,
                formset,
                new_layout,
                title=gettext("Change theater “%(name)s”") % {"name": theater["name"]},
                theater=theater,
                status=400,
            )
        return self._editor(
            request,
            form,
            formset,
            layout,
            title=gettext("Change theater “%(name)s”") % {"name": theater["name"]},
            theater=theater,
        )

    @method_decorator(require_POST)
    def layout_preview(self, request):
        """htmx: the seat map the editor's current text would make (nothing is stored)."""
        if not (self.admin.has_add_permission(request) or self.admin.has_change_permission(request)):
            self.require(request, "change")
        form, formset = self._bind(request, {}, [])
        layout = self._layout(form, formset)
        return TemplateResponse(
            request, "admin/booking/theater/_preview.html", {"preview": preview_context(form, layout)}
        )

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def theater_delete(self, request, object_id):
        theater = self.theater(request, object_id, "delete")
        sessions = selectors.sessions_of_theater(theater["_id"])
        status, error = 200, ""
        if request.method == "POST":
            try:
                theater_service.delete_theater(theater["_id"])
            except BookingError as exc:
                status, error = 409, exc.message
            else:
                return self.theater_saved(
                    request,
                    theater,
                    flag=DELETION,
                    note="Deleted theater.",
                    shown=gettext("Theater “%(name)s” was deleted.") % {"name": theater["name"]},
                    to=self.url("changelist"),
                )
        return self.render(
            request,
            "admin/booking/theater/delete.html",
            {"title": gettext("Delete theater?"), "theater": theater, "sessions": sessions, "error": error},
            status=status,
        )

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def layout_import(self, request):
        self.require(request, "add")
        form = f.LayoutImportForm(*((request.POST, request.FILES) if request.method == "POST" else ()))
        if request.method == "POST" and form.is_valid():
            try:
                if "sections" in form.cleaned_data:  # a sectioned venue (a stadium)
                    sections = form.cleaned_data["sections"]
                    theater = theater_service.create_sectioned_theater(
                        form.cleaned_data["name"], sections, name_de=form.cleaned_data["name_de"]
                    )
                else:
                    theater = theater_service.create_theater(
                        form.cleaned_data["name"], form.cleaned_data["layout"], name_de=form.cleaned_data["name_de"]
                    )
            except BookingError as exc:
                form.add_error("name", exc.message)
            else:
                return self.theater_saved(
                    request,
                    theater,
                    flag=ADDITION,
                    note=f"Imported layout from JSON ({theater['seatCount']} seats).",
                    shown=gettext("Theater “%(name)s” was imported with %(seats)s seats.")
                    % {"name": theater["name"], "seats": theater["seatCount"]},
                    to=self.url("change", theater["_id"]),
                )
        status = 400 if request.method == "POST" else 200
        return self.render(
            request,
            "admin/booking/theater/import.html",
            {"title": gettext("Import a theater layout"), "form": form},
            status=status,
        )

    def layout_export(self, request, object_id):
        theater = self.theater(request, object_id)
        shape = {"layout": theater["layout"]} if "layout" in theater else {"sections": theater.get("sections", [])}
        german = {"nameDe": theater["nameDe"]} if theater.get("nameDe") else {}
        body = json.dumps({"name": theater["name"], **german, **shape}, indent=2, ensure_ascii=False)
        response = HttpResponse(body, content_type="application/json; charset=utf-8")
        slug = "".join(ch if ch.isalnum() else "-" for ch in theater["name"].lower()).strip("-") or "theater"
        response["Content-Disposition"] = f'attachment; filename="{slug}-layout.json"'
        return response


class TheaterAdmin(MongoModelAdmin):
    """/admin/booking/theater/: each URL, the class and method that answer it, and its name (the
    URL names are ``admin:booking_theater_<name>``)."""

    routes = [
        route("<str:object_id>/ticket-types/", TicketTypeScreens.ticket_types, "ticket_types"),
        route("", TheaterEditorScreens.theater_list, "changelist"),
        route("add/", TheaterEditorScreens.theater_add, "add"),
        route("preview/", TheaterEditorScreens.layout_preview, "preview"),
        route("import/", TheaterEditorScreens.layout_import, "import"),
        route("<str:object_id>/change/", TheaterEditorScreens.theater_change, "change"),
        route("<str:object_id>/delete/", TheaterEditorScreens.theater_delete, "delete"),
        route("<str:object_id>/export/", TheaterEditorScreens.layout_export, "export"),
        route("<str:object_id>/vat/", TheaterPaymentScreens.theater_vat, "vat"),
        route("<str:object_id>/seller/", TheaterPaymentScreens.theater_seller, "seller"),
        route("<str:object_id>/donations/", TheaterPaymentScreens.theater_donations, "donations"),
        route("<str:object_id>/self-service/", TheaterSelfServiceScreens.theater_self_service, "self_service"),
        route("add-sectioned/", SectionedVenueScreens.sectioned_add, "add_sectioned"),
        route("<str:object_id>/sections/", SectionedVenueScreens.sectioned_change, "sections"),
        route("<str:object_id>/address/", VenueAddressScreens.theater_address, "address"),
        route("<str:object_id>/door/", DoorSettingsScreens.theater_door, "door"),
    ]


def preview_context(form, layout: Layout | None) -> dict:
    """What the preview beside the editor shows: the seat map, or what is wrong and where."""
    if layout is not None:
        return {"rows": layout_rows(layout), "legend": category_legend(layout), "seats": seat_count(layout)}
    exc = getattr(form, "layout_error", None)
    where = grid_error_context(form.data.get("grid", ""), exc.details["row"], exc.details["column"]) if exc else None
    errors = [e for errs in form.errors.values() for e in errs]
    return {"rows": [], "errors": errors or [gettext("Check the categories on the left.")], "where": where}
