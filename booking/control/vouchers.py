"""Gift vouchers in the admin: search them (code or buyer), see one's balance and history, sell
one at the counter (cash or card terminal), print it and its sale's receipt as PDFs in English or
German. Every
write goes through payments/voucher_sales.py; permissions are the ``GiftVoucher`` stand-in
model's (view: search, look and print; add: sell)."""

from decimal import Decimal
from typing import Any

from django import forms
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.utils.decorators import method_decorator
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_safe

from booking.control import forms as f
from booking.control.base import ADDITION, MongoModelAdmin, staff_name
from booking.control.forms import add_field_errors
from booking.core.errors import InvalidRequest
from booking.payments import voucher_pdf, voucher_sales, vouchers
from booking.payments.counter import CARD_TERMINAL, CASH


class VoucherSaleForm(forms.Form):
    value = forms.DecimalField(label=_("Value"), min_value=Decimal("0.01"), max_value=f.MAX_PRICE, decimal_places=2)
    means = forms.ChoiceField(
        label=_("Paid"),
        choices=[(CASH, _("Cash")), (CARD_TERMINAL, _("Card terminal"))],
        initial=CASH,
        widget=forms.RadioSelect,
    )
    buyer = forms.CharField(label=_("Buyer (optional)"), max_length=200, required=False)


class VoucherSearchForm(forms.Form):
    q = forms.CharField(label=_("Code or buyer"), max_length=100, required=False)


class GiftVoucherAdmin(MongoModelAdmin):
    routes = [
        ("", "voucher_list", "changelist"),
        ("add/", "voucher_add", "add"),
        ("<object_id>/change/", "voucher_detail", "change"),
        ("<object_id>/voucher-<language>.pdf", "voucher_file", "pdf"),
        ("<object_id>/receipt-<language>.pdf", "voucher_receipt", "receipt"),
    ]

    @method_decorator(require_safe)
    def voucher_list(self, request):
        self.require(request, "view")
        form = VoucherSearchForm(request.GET)
        text = form.cleaned_data["q"] if form.is_valid() else ""
        found = vouchers.search(text)
        context = {"title": gettext("Gift vouchers"), "form": form, "vouchers": found, "limit": vouchers.SEARCH_MAX}
        return self.render(request, "admin/booking/giftvoucher/list.html", context)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def voucher_add(self, request):
        self.require(request, "add")
        form = VoucherSaleForm(request.POST if request.method == "POST" else None)
        status = 200
        if request.method == "POST":
            status = 400
            if form.is_valid():
                data = form.cleaned_data
                try:
                    voucher = voucher_sales.sell_at_counter(
                        value=f.to_cents(data["value"]),
                        means=data["means"],
                        buyer=data["buyer"],
                        by=staff_name(request.user),
                    )
                except InvalidRequest as exc:
                    add_field_errors(form, exc)
                else:
                    note = f"Sold gift voucher {voucher['code'][:4]}… of {voucher['value']} ({data['means']})."
                    self.log(request, ADDITION, voucher["_id"], vouchers.display_code(voucher["code"]), note)
                    return HttpResponseRedirect(self.url("change", voucher["_id"]))
        context = {"title": gettext("Sell a gift voucher"), "form": form}
        return self.render(request, "admin/booking/giftvoucher/add.html", context, status=status)

    @method_decorator(require_safe)
    def voucher_detail(self, request, object_id):
        self.require(request, "view")
        voucher = self.document(vouchers.find, object_id, gettext("No such voucher."))
        entries: list[dict[str, Any]] = [{**r, "kind": "redemption"} for r in voucher.get("redemptions", [])]
        entries += [{**r, "kind": "refund"} for r in voucher.get("refunds", [])]
        history = sorted(entries, key=lambda entry: entry["at"])
        context = {
            "title": gettext("Gift voucher %(code)s") % {"code": vouchers.display_code(voucher["code"])},
            "voucher": voucher,
            "code": vouchers.display_code(voucher["code"]),
            "last_day": vouchers.last_day(voucher),
            "history": history,
        }
        return self.render(request, "admin/booking/giftvoucher/detail.html", context)

    @method_decorator(require_safe)
    def voucher_file(self, request, object_id, language):
        self.require(request, "view")
        if language not in voucher_pdf.LANGUAGES:
            raise Http404("No such language.")
        voucher = self.document(vouchers.find, object_id, gettext("No such voucher."))
        response = HttpResponse(voucher_pdf.voucher_pdf(voucher, language), content_type="application/pdf")
        response["Content-Disposition"] = f'inline; filename="voucher-{voucher["code"][-4:]}-{language}.pdf"'
        return response

    @method_decorator(require_safe)
    def voucher_receipt(self, request, object_id, language):
        """The receipt of a voucher sold at the counter (numbered now if a crash left it without)."""
        self.require(request, "view")
        if language not in voucher_pdf.LANGUAGES:
            raise Http404("No such language.")
        voucher = self.document(vouchers.find, object_id, gettext("No such voucher."))
        if voucher.get("soldVia") != "counter":
            raise Http404("Only a counter sale has a receipt here.")
        voucher["receiptNo"] = voucher.get("receiptNo") or voucher_sales.number_receipt(voucher["_id"])
        pdf = voucher_pdf.sale_receipt_pdf(voucher, language)
        response = HttpResponse(pdf, content_type="application/pdf")
        response["Content-Disposition"] = f'inline; filename="receipt-{vouchers.sale_label(voucher)}-{language}.pdf"'
        return response
