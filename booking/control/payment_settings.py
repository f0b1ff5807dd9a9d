"""Payment settings staff change in the admin: "pay at the box office" per session (off unless
turned on, with its own deadline), the VAT rates of a theater (per seat category) and the
donation it asks buyers for at checkout: ``BoxOfficeScreens`` and ``TheaterPaymentScreens``,
under SessionAdmin's and TheaterAdmin's URLs; the forms appear on the change pages
(templates/admin/booking/{session,theater}/_payment_settings.html)."""

from django import forms
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from booking.control.base import attempt, errors_text
from booking.control.forms import form_data
from booking.control.session_screens import SessionScreens
from booking.control.theater_screens import TheaterScreens
from booking.core.domain import Session
from booking.core.errors import InvalidRequest
from booking.payments import donations, invoices, money
from booking.payments import settings as service


class BoxOfficeForm(forms.Form):
    enabled = forms.BooleanField(required=False, label=gettext_lazy("Buyers may reserve and pay at the box office"))
    deadline_minutes = forms.IntegerField(
        min_value=0,
        max_value=7 * 24 * 60,
        label=gettext_lazy("Unpaid seats go back"),
        help_text=gettext_lazy("minutes before the show (the worker releases them then)"),
    )


class VatForm(forms.Form):
    """The theater's ticket rate and, optionally, one per seat category (percent, prices include it)."""

    rate = forms.CharField(max_length=6, label=gettext_lazy("Tickets"), help_text=gettext_lazy("percent, e.g. 7"))

    def __init__(self, *args, categories=(), **kwargs):
        super().__init__(*args, **kwargs)
        for category in categories:
            self.fields[f"cat_{category['code']}"] = forms.CharField(
                max_length=6, required=False, label=category["name"], help_text=gettext_lazy("empty: the ticket rate")
            )

    def _rate(self, value: str) -> str:
        try:
            return money.rate_text(value)
        except ValueError:
            raise forms.ValidationError(gettext("Give a rate in percent from 0 to 99.99, e.g. 7 or 19.")) from None

    def clean(self):
        data = form_data(super().clean())
        for name, value in list(data.items()):
            if value:
                try:
                    data[name] = self._rate(value)
                except forms.ValidationError as exc:
                    self.add_error(name, exc)
        return data

    def rates(self) -> tuple[str, dict]:
        data = self.cleaned_data
        per_category = {name[4:]: value for name, value in data.items() if name.startswith("cat_") and value}
        return data["rate"], per_category


class DonationForm(forms.Form):
    """The donation a buyer may add at checkout; ``donations.set_offer`` holds the rules."""

    enabled = forms.BooleanField(required=False, label=gettext_lazy("Ask buyers for a donation at checkout"))
    suggested = forms.CharField(
        max_length=60,
        required=False,
        label=gettext_lazy("Suggested amounts"),
        help_text=gettext_lazy("in euros, separated by spaces, e.g. 5 10 25 (at most four)"),
    )
    free = forms.BooleanField(required=False, label=gettext_lazy("Buyers may also type their own amount"))
    appeal = forms.CharField(
        max_length=donations.APPEAL_LENGTH,
        required=False,
        label=gettext_lazy("Appeal (English)"),
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    appeal_de = forms.CharField(
        max_length=donations.APPEAL_LENGTH,
        required=False,
        label=gettext_lazy("Appeal (German)"),
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    def clean_suggested(self) -> list[int]:
        try:
            return [donations.parse_amount(part) for part in self.cleaned_data["suggested"].split()]
        except InvalidRequest as exc:
            raise forms.ValidationError(exc.message) from None


def donation_form(theater: dict, data=None) -> DonationForm:
    offer = theater.get("donations") or {}
    amounts = " ".join(donations.amount_text(c) for c in offer.get("suggested", []))
    initial = {
        "enabled": bool(offer.get("enabled")),
        "suggested": amounts,
        "free": bool(offer.get("free")),
        "appeal": offer.get("appeal", ""),
        "appeal_de": offer.get("appealDe", ""),
    }
    return DonationForm(data, initial=initial, prefix="donation")  # its fields' ids apart from the page's other forms


class SellerForm(forms.Form):
    """The seller printed on invoices and credit notes; ``invoices.set_seller`` holds the rules."""

    seller_name = forms.CharField(max_length=300, required=False, label=gettext_lazy("Legal name"))
    seller_address = forms.CharField(
        max_length=1000, required=False, label=gettext_lazy("Address"), widget=forms.Textarea(attrs={"rows": 3})
    )
    vat_id = forms.CharField(max_length=40, required=False, label=gettext_lazy("VAT ID"))
    tax_number = forms.CharField(max_length=60, required=False, label=gettext_lazy("Tax number"))
    bank = forms.CharField(
        max_length=300,
        required=False,
        label=gettext_lazy("Bank account"),
        help_text=gettext_lazy("printed on invoices under the amount due, e.g. IBAN and BIC"),
    )


def seller_form(theater: dict, data=None) -> SellerForm:
    seller = invoices.seller_of(theater)
    initial = {
        "seller_name": seller.name,
        "seller_address": seller.address,
        "vat_id": seller.vat_id,
        "tax_number": seller.tax_number,
        "bank": seller.bank,
    }
    return SellerForm(data, initial=initial)


def box_office_form(session: Session, data=None) -> BoxOfficeForm:
    box = session.get("boxOffice") or {}
    initial = {"enabled": bool(box.get("enabled")), "deadline_minutes": service.deadline_minutes(session)}
    return BoxOfficeForm(data, initial=initial)


def vat_form(theater: dict, data=None) -> VatForm:
    initial = {
        "rate": money.ticket_rate(theater, ""),
        **{f"cat_{k}": v for k, v in (theater.get("vatRates") or {}).items()},
    }
    return VatForm(data, initial=initial, categories=(theater.get("layout") or {}).get("categories", []))


class BoxOfficeScreens(SessionScreens):
    """``<id>/box-office/``: the form on the session's change page."""

    @method_decorator(require_POST)
    def session_box_office(self, request, object_id):
        session = self.session(request, object_id, "change")
        form = box_office_form(session, request.POST)
        back = self.url("change", session["_id"])
        if not form.is_valid():
            return self.refused(request, errors_text(form), back)
        enabled, minutes = form.cleaned_data["enabled"], form.cleaned_data["deadline_minutes"]
        service.set_box_office(session["_id"], enabled=enabled, deadline_minutes=minutes)
        note = f"Box office {'on' if enabled else 'off'} (unpaid seats go back {minutes} minutes before the show)."
        if enabled:
            shown = gettext("Box office on (unpaid seats go back %(minutes)s minutes before the show).")
        else:
            shown = gettext("Box office off (unpaid seats go back %(minutes)s minutes before the show).")
        shown %= {"minutes": minutes}
        return self.session_saved(request, session, note=note, shown=shown, to=back)


class TheaterPaymentScreens(TheaterScreens):
    """``<id>/vat/``, ``<id>/donations/`` (forms on the theater's change page) and ``<id>/seller/``."""

    @method_decorator(require_POST)
    def theater_vat(self, request, object_id):
        theater = self.theater(request, object_id, "change")
        form = vat_form(theater, request.POST)
        back = self.url("change", theater["_id"])
        if not form.is_valid():
            return self.refused(request, errors_text(form), back)
        rate, per_category = form.rates()
        service.set_vat_rates(theater["_id"], rate=rate, per_category=per_category)
        text = f"VAT: tickets {rate} %" + "".join(f", {k}: {v} %" for k, v in sorted(per_category.items()))
        shown = text + ". " + gettext("Orders already made keep their rates.")
        note = text + " (for orders from now on)."
        return self.theater_saved(request, theater, note=note, shown=shown, to=back)

    @method_decorator(require_POST)
    def theater_donations(self, request, object_id):
        """What buyers may donate at checkout (orders already made keep their donation)."""
        theater = self.theater(request, object_id, "change")
        form = donation_form(theater, request.POST)
        back = self.url("change", theater["_id"])
        if not form.is_valid():
            return self.refused_page(request, errors_text(form), back)
        data = form.cleaned_data
        try:
            offer = donations.set_offer(
                theater["_id"],
                enabled=data["enabled"],
                suggested=data["suggested"],
                free=data["free"],
                appeal=data["appeal"],
                appeal_de=data["appeal_de"],
            )
        except InvalidRequest as exc:
            return self.refused_page(request, exc.message, back)
        amounts = ", ".join(money.format_money(c) for c in offer["suggested"]) or "-"
        note = f"Donations {'on' if offer['enabled'] else 'off'}: {amounts}{', any amount' if offer['free'] else ''}."
        shown = gettext("Donations saved. Orders already made keep theirs.")
        return self.theater_saved(request, theater, note=note, shown=shown, to=back)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def theater_seller(self, request, object_id):
        """The theater's seller data for invoices and credit notes (those issued keep theirs)."""
        theater = self.theater(request, object_id, "view" if request.method != "POST" else "change")
        form = seller_form(theater, request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            seller = attempt(
                form,
                lambda: invoices.set_seller(
                    theater["_id"],
                    name=data["seller_name"],
                    address=data["seller_address"],
                    vat_id=data["vat_id"],
                    tax_number=data["tax_number"],
                    bank=data["bank"],
                ),
            )
            if seller is not None:
                note = f"Seller data for invoices: {seller.name}, VAT ID {seller.vat_id or '-'}."
                shown = gettext("Saved. Invoices and credit notes from now on show these data.")
                back = self.url("seller", theater["_id"])
                return self.theater_saved(request, theater, note=note, shown=shown, to=back)
        context = {
            "title": gettext("Seller data for invoices: %(name)s") % {"name": theater["name"]},
            "theater": theater,
            "form": form,
        }
        status = 400 if request.method == "POST" else 200
        return self.render(request, "admin/booking/theater/seller.html", context, status=status)
