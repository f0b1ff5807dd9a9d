"""Promo codes and voucher batches in the admin.

A code: percent off, an amount off or a fixed price per ticket; for every session, a series (every
performance of the same show in the same theater) or one session; for some ticket types and seat
categories; valid from/until; a total uses cap and a per-order cap. A voucher batch: N single-use
codes with the same terms, exported as CSV. Every write goes through sales/promos.py; the
permissions are the ``PromoCode`` stand-in model's (view: look and export; add: create codes and
batches; change: edit a code's terms).
"""

from decimal import Decimal
from typing import cast

from django import forms
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.utils.decorators import method_decorator
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from booking.control import forms as f
from booking.control import promo_selectors as selectors
from booking.control.base import ADDITION, CHANGE, MongoModelAdmin, bound
from booking.control.forms import LocalDateTimeField, add_field_errors, form_data
from booking.core.errors import InvalidRequest, NotFound
from booking.core.ids import object_id
from booking.sales import promos

SCOPES = [
    ("all", _("Every session")),
    ("series", _("A series: every performance of the chosen session's show in its theater")),
    ("session", _("Only the chosen session")),
]


class TermsForm(forms.Form):
    """The terms a code or a voucher batch has (sales.promos.clean_terms checks them again)."""

    kind = forms.ChoiceField(
        label=_("Discount"),
        choices=[
            ("percent", _("Percentage off")),
            ("amount", _("Fixed amount off")),
            ("price", _("Fixed price")),
        ],
        widget=forms.RadioSelect,
    )
    value = forms.DecimalField(
        label=_("Value"),
        min_value=Decimal("0"),
        max_value=f.MAX_PRICE,
        decimal_places=2,
        help_text=_("Percentage off: 1 to 100. Amount off or fixed price: per ticket, e.g. 5.00."),
    )
    scope = forms.ChoiceField(label=_("For"), choices=SCOPES, initial="all", widget=forms.RadioSelect)
    session = forms.ChoiceField(label=_("Session"), required=False, help_text=_("For a series or one session."))
    ticket_types = forms.MultipleChoiceField(
        label=_("Ticket types"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("None ticked: every ticket type."),
    )
    categories = forms.MultipleChoiceField(
        label=_("Seat categories"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("None ticked: every category."),
    )
    valid_from = LocalDateTimeField(label=_("Valid from"), required=False)
    valid_until = LocalDateTimeField(label=_("Valid until"), required=False)
    per_order = forms.IntegerField(
        label=_("Tickets per booking"),
        required=False,
        min_value=1,
        max_value=1000,
        help_text=_("At most this many tickets of one booking are discounted. Empty: all of them."),
    )

    def __init__(self, *args, session_also=None, **kwargs):
        super().__init__(*args, **kwargs)
        session_field = cast(forms.ChoiceField, self.fields["session"])
        session_field.choices = [("", _("— choose —")), *selectors.session_choices(session_also)]
        cast(forms.MultipleChoiceField, self.fields["ticket_types"]).choices = selectors.ticket_type_choices()
        cast(forms.MultipleChoiceField, self.fields["categories"]).choices = selectors.category_choices()

    def clean(self):
        data = form_data(super().clean())
        value = data.get("value")
        if (
            data.get("kind") == "percent"
            and value is not None
            and (value != value.to_integral() or not 1 <= value <= 100)
        ):
            self.add_error("value", _("A percentage is a whole number from 1 to 100."))
        if data.get("scope") in ("series", "session") and not data.get("session"):
            self.add_error("session", _("Choose the session (for a series: any performance of the show)."))
        return data

    def terms(self) -> dict:
        """The service's keyword arguments (kind and value first)."""
        data = self.cleaned_data
        value = int(data["value"]) if data["kind"] == "percent" else f.to_cents(data["value"])
        terms: dict = {
            "kind": data["kind"],
            "value": value,
            "ticket_types": data["ticket_types"] or None,
            "categories": data["categories"] or None,
            "valid_from": data["valid_from"],
            "valid_until": data["valid_until"],
            "per_order": data["per_order"],
        }
        if data["scope"] in ("series", "session"):
            session_id = object_id(data["session"], "session")
            if data["scope"] == "session":
                terms["session_id"] = session_id
            else:
                terms["series"] = promos.series_of(session_id)
        return terms

    @staticmethod
    def initial_for(doc: dict) -> dict:
        value = doc["value"] if doc["kind"] == "percent" else f.from_cents(doc["value"])
        scope, session = "all", ""
        if doc.get("sessionId"):
            scope, session = "session", str(doc["sessionId"])
        elif doc.get("series"):
            scope = "series"
        return {
            "kind": doc["kind"],
            "value": value,
            "scope": scope,
            "session": session,
            "ticket_types": doc.get("ticketTypes", []),
            "categories": doc.get("categories", []),
            "valid_from": doc.get("validFrom"),
            "valid_until": doc.get("validUntil"),
            "per_order": doc.get("perOrder"),
            "cap": doc.get("cap"),
        }


class CodeForm(TermsForm):
    code = forms.CharField(
        label=_("Code"),
        max_length=32,
        help_text=_("4 to 32 letters, digits or dashes; buyers type it in any case."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "size": 24}),
    )
    cap = forms.IntegerField(
        label=_("Uses in total"),
        min_value=1,
        max_value=1_000_000,
        initial=100,
        help_text=_("Bookings that can use it."),
    )
    field_order = ["code", "kind", "value", "scope", "session", "ticket_types", "categories"]


class EditCodeForm(CodeForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["code"]  # a code's text is what buyers were given: it never changes


class BatchForm(TermsForm):
    count = forms.IntegerField(label=_("Number of vouchers"), min_value=1, max_value=10_000, initial=50)
    voucher_prefix = forms.CharField(
        label=_("Prefix"),
        required=False,
        max_length=8,
        help_text=_("Up to 8 letters or digits in front of each voucher's 12 random characters."),
    )
    field_order = ["count", "voucher_prefix", "kind", "value", "scope", "session", "ticket_types", "categories"]

    def clean_voucher_prefix(self):
        prefix = promos.normalize(self.cleaned_data.get("voucher_prefix"))
        if prefix and not prefix.isalnum():
            raise forms.ValidationError(_("Letters and digits only."))
        return prefix


class PromoCodeAdmin(MongoModelAdmin):
    routes = [
        ("", "code_list", "changelist"),
        ("add/", "code_add", "add"),
        ("batch/add/", "batch_add", "batch_add"),
        ("batch/<str:batch_id>/", "batch_detail", "batch"),
        ("batch/<str:batch_id>/csv/", "batch_export", "batch_csv"),
        ("<str:object_id>/change/", "code_change", "change"),
    ]

    def code_list(self, request):
        self.require(request, "view")
        context = {
            "title": _("Promo codes and vouchers"),
            "codes": selectors.codes(),
            "batches": selectors.batches(),
            "limit": selectors.LIST_LIMIT,
        }
        return self.render(request, "admin/booking/promocode/list.html", context)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def code_add(self, request):
        self.require(request, "add")
        form = CodeForm(bound(request))
        status = 200
        if request.method == "POST":
            status = 400
            if form.is_valid():
                try:
                    doc = promos.create_code(
                        form.cleaned_data["code"], cap=form.cleaned_data["cap"], **self._terms(form)
                    )
                except InvalidRequest as exc:
                    add_field_errors(form, exc)
                else:
                    return self.saved(
                        request,
                        ADDITION,
                        doc["_id"],
                        doc["code"],
                        note=f"Created promo code {doc['code']}.",
                        shown=_("The code %(code)s was created.") % {"code": doc["code"]},
                        to=self.url("changelist"),
                    )
        context = {"title": _("Add a promo code"), "form": form}
        return self.render(request, "admin/booking/promocode/form.html", context, status=status)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def code_change(self, request, object_id):
        self.require(request, "view")
        doc = self.document(selectors.get_code, object_id, "No such promo code.")
        if doc.get("batch"):
            return HttpResponseRedirect(self.url("batch", doc["batch"]))
        form = EditCodeForm(bound(request), initial=TermsForm.initial_for(doc), session_also=doc.get("sessionId"))
        status = 200
        if request.method == "POST":
            self.require(request, "change")
            status = 400
            if form.is_valid():
                try:
                    updated = promos.update_code(doc["_id"], cap=form.cleaned_data["cap"], **self._terms(form))
                except InvalidRequest as exc:
                    add_field_errors(form, exc)
                except NotFound as exc:
                    raise Http404(exc.message) from None
                else:
                    return self.saved(
                        request,
                        CHANGE,
                        updated["_id"],
                        updated["code"],
                        note=f"Changed promo code {updated['code']}.",
                        shown=_("The code %(code)s was saved.") % {"code": updated["code"]},
                        to=self.url("change", updated["_id"]),
                    )
        context = {
            "title": _("Promo code %(code)s") % {"code": doc["code"]},
            "form": form,
            "code": doc,
            "series": selectors.series_label(doc.get("series")),
        }
        return self.render(request, "admin/booking/promocode/form.html", context, status=status)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def batch_add(self, request):
        self.require(request, "add")
        form = BatchForm(bound(request))
        status = 200
        if request.method == "POST":
            status = 400
            if form.is_valid():
                data = form.cleaned_data
                try:
                    batch_id = promos.generate_batch(data["count"], prefix=data["voucher_prefix"], **self._terms(form))
                except InvalidRequest as exc:
                    add_field_errors(form, exc)
                else:
                    return self.saved(
                        request,
                        ADDITION,
                        batch_id,
                        f"Voucher batch {batch_id}",
                        note=f"Generated {data['count']} vouchers (batch {batch_id}).",
                        shown=_("%(count)s vouchers were generated.") % {"count": data["count"]},
                        to=self.url("batch", batch_id),
                    )
        context = {"title": _("Generate single-use vouchers"), "form": form, "batch_form": True}
        return self.render(request, "admin/booking/promocode/form.html", context, status=status)

    def batch_detail(self, request, batch_id):
        self.require(request, "view")
        found = selectors.batch(batch_id)
        if found is None:
            raise Http404("No such voucher batch.")
        context = {
            "title": _("Voucher batch %(batch)s") % {"batch": batch_id},
            "batch": found,
            "series": selectors.series_label(found.get("series")),
        }
        return self.render(request, "admin/booking/promocode/batch.html", context)

    def batch_export(self, request, batch_id):
        self.require(request, "view")
        if selectors.batch(batch_id) is None:
            raise Http404("No such voucher batch.")
        response = HttpResponse(promos.batch_csv(batch_id), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="vouchers-{batch_id}.csv"'
        return response

    def _terms(self, form: TermsForm) -> dict:
        """The form's terms; a session gone meanwhile is a form error (InvalidRequest, field session)."""
        try:
            return form.terms()
        except NotFound as exc:
            raise InvalidRequest(exc.message, fields={"session": exc.message}) from None
