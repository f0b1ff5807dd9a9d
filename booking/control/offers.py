"""Offers in the admin: a theater's ticket types, a session's price table.

``TicketTypeScreens`` and ``PriceTableScreens``, under TheaterAdmin's and SessionAdmin's URLs
(their ``routes`` name these views), so the pages sit under the theater's and the
session's URLs and use their permissions: view to look, change to save.
"""

from decimal import Decimal

from django import forms
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_http_methods

from booking.control import forms as f
from booking.control import selectors
from booking.control.base import bound
from booking.control.session_screens import SessionScreens
from booking.control.theater_screens import TheaterScreens
from booking.core.domain import Layout, Session
from booking.core.errors import InvalidRequest
from booking.core.localized import ticket_type_name
from booking.sales import offers
from booking.venues.layouts import category_codes_used


class TicketTypeForm(forms.Form):
    """One ticket type. The German name and condition are shown on German pages, tickets and mails
    (booking/core/localized.py); empty: the English ones. The condition (``description``) is what its
    holder must be or show: the cart shows it where the type is chosen, the ticket and the door too."""

    code = forms.SlugField(max_length=20, required=False, help_text=gettext_lazy("e.g. reduced"))
    name = forms.CharField(max_length=60, required=False, label=gettext_lazy("Name"))
    name_de = forms.CharField(max_length=60, required=False, label=gettext_lazy("Name in German (optional)"))
    description = forms.CharField(
        max_length=300,
        required=False,
        label=gettext_lazy("Condition"),
        help_text=gettext_lazy("e.g. students and seniors; show ID at the door"),
        widget=forms.TextInput(attrs={"size": 40}),
    )
    description_de = forms.CharField(
        max_length=300,
        required=False,
        label=gettext_lazy("Condition in German (optional)"),
        widget=forms.TextInput(attrs={"size": 40}),
    )
    companion = forms.BooleanField(
        required=False, label=gettext_lazy("Companion"), help_text=gettext_lazy("only beside a wheelchair space")
    )

    # the form's fields -> the stored ticket type's (sales/offers.py)
    STORED = {"name_de": "nameDe", "description_de": "descriptionDe"}

    @classmethod
    def initial_for(cls, ticket_type: dict) -> dict:
        initial = {field: ticket_type.get(cls.STORED.get(field, field), "") for field in cls.base_fields}
        return {**initial, "companion": bool(ticket_type.get("companion"))}

    @classmethod
    def stored(cls, data: dict) -> dict:
        return {cls.STORED.get(field, field): value for field, value in data.items()}


TicketTypeFormSet = forms.formset_factory(TicketTypeForm, extra=3, max_num=20, validate_max=True)


class PriceTableForm(forms.Form):
    """One field per (ticket type, category): ``full_<cat>`` (required) and ``<type>__<cat>``
    (empty: not offered)."""

    def __init__(self, *args, types: list[dict], layout: Layout, **kwargs):
        super().__init__(*args, **kwargs)
        names = {c["code"]: c["name"] for c in layout["categories"]}
        self.cats = category_codes_used(layout)
        self.types = types
        self.rows = []
        for t in types:
            row = []
            shown = {**t, "name": ticket_type_name(t)}  # full price in the staff member's language
            for cat in self.cats:
                name = f"{t['code']}__{cat}"
                field = f.price_field(f"{shown['name']}, {names[cat]}")
                field.required = t["code"] == offers.FULL
                field.help_text = "" if field.required else gettext("empty: not offered")
                self.fields[name] = field
                row.append(self[name])
            self.rows.append((shown, row))
        self.cat_names = [names[c] for c in self.cats]

    @staticmethod
    def initial_for(session: Session) -> dict:
        initial = {f"{offers.FULL}__{cat}": f.from_cents(c) for cat, c in session["prices"].items()}
        for code, row in (session.get("typePrices") or {}).items():
            initial.update({f"{code}__{cat}": f.from_cents(c) for cat, c in row.items()})
        return initial

    def tables(self) -> tuple[dict, dict]:
        full: dict[str, int] = {}
        others: dict[str, dict[str, int]] = {}
        for t in self.types:
            for cat in self.cats:
                value: Decimal | None = self.cleaned_data.get(f"{t['code']}__{cat}")
                if value is None:
                    continue
                if t["code"] == offers.FULL:
                    full[cat] = f.to_cents(value)
                else:
                    others.setdefault(t["code"], {})[cat] = f.to_cents(value)
        return full, others


class TicketTypeScreens(TheaterScreens):
    """``<id>/ticket-types/``: the theater's ticket types."""

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def ticket_types(self, request, object_id):
        theater = self.theater(request, object_id)
        initial = [TicketTypeForm.initial_for(t) for t in offers.ticket_types(theater)]
        formset = TicketTypeFormSet(bound(request), initial=initial, prefix="types")
        status, error = 200, ""
        if request.method == "POST":
            self.require(request, "change")
            status = 400
            if formset.is_valid():
                rows = [
                    TicketTypeForm.stored(d)
                    for d in formset.cleaned_data
                    if d and (d.get("code") or d.get("name")) and not d.get("DELETE")
                ]
                try:
                    updated = offers.set_theater_ticket_types(theater["_id"], rows)
                except InvalidRequest as exc:
                    error = exc.message
                else:
                    return self.theater_saved(
                        request,
                        updated,
                        note=f"Ticket types: {', '.join(t['name'] for t in updated['ticketTypes'])}.",
                        shown=gettext("The ticket types of “%(name)s” were saved.") % {"name": updated["name"]},
                        to=self.url("ticket_types", updated["_id"]),
                    )
            else:
                error = "Please correct the errors below."
        return self.render(
            request,
            "admin/booking/theater/ticket_types.html",
            {
                "title": gettext("Ticket types of “%(name)s”") % {"name": theater["name"]},
                "formset": formset,
                "theater": theater,
                "error": error,
            },
            status=status,
        )


class PriceTableScreens(SessionScreens):
    """``<id>/prices/``: the theater's ticket types x the session's categories."""

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def price_table(self, request, object_id):
        session = self.session(request, object_id)
        theater = selectors.get_theater(session["theaterId"]) or {}
        types = offers.ticket_types(theater)
        form = PriceTableForm(
            bound(request), initial=PriceTableForm.initial_for(session), types=types, layout=session["layout"]
        )
        updated, status = self.posted(request, form, lambda: offers.set_price_table(session["_id"], *form.tables()))
        if updated is not None:
            full, others = form.tables()
            return self.session_saved(
                request,
                updated,
                note=f"Price table: {full} {others}.",
                shown=gettext("The price table of “%(name)s” was saved.") % {"name": updated["name"]},
                to=self.url("price_table", updated["_id"]),
            )
        return self.render(
            request,
            "admin/booking/session/price_table.html",
            {"title": gettext("Prices of “%(name)s”") % {"name": session["name"]}, "form": form, "session": session},
            status=status,
        )
