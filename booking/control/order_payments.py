"""Payments in the admin's order page: refund tickets (all or some) through the provider, retry a
failed refund, mark a box-office reservation paid at the counter: ``OrderPaymentScreens``, under
OrderAdmin's URLs (booking/control/orders.py)."""

from typing import cast

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseBadRequest
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, gettext_lazy, ngettext
from django.views.decorators.http import require_POST

from booking.control.base import errors_text, staff_name
from booking.control.counter import METHOD_CHOICES, may_sell
from booking.control.order_screens import OrderScreens
from booking.core.domain import Order, OrderState, RefundRecord, RefundStatus
from booking.core.errors import BookingError, InvalidRequest
from booking.core.formatting import seat_label
from booking.payments import counter, receipts
from booking.payments import flow as payment_service
from booking.payments import refunds as refund_service
from booking.payments.money import format_money

PAID_LATER = ("box_office", "invoice")  # staff record the money: at the box office, or an invoice paid


class RefundTicketsForm(forms.Form):
    tickets = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": gettext_lazy("Choose the tickets to refund.")},
    )
    reason = forms.CharField(max_length=200, help_text=gettext_lazy("Kept with the refund, e.g. 'seat broken'."))

    def __init__(self, *args, order: Order, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.MultipleChoiceField, self.fields["tickets"]).choices = [
            (
                line["ticket"],
                f"{seat_label(line['row'], line['seat'])} · {format_money(line['price'], order['currency'])}",
            )
            for line in order.get("lines", [])
        ]


PAID_LATER_MEANS_CHOICES = [
    (counter.CASH, gettext_lazy("Cash")),
    (counter.CARD_TERMINAL, gettext_lazy("Card terminal")),
    (counter.BANK_TRANSFER, gettext_lazy("Bank transfer")),
]


class MarkPaidForm(forms.Form):
    """How the money came (payments.flow.mark_paid_at_counter checks it again)."""

    means = forms.ChoiceField(
        choices=PAID_LATER_MEANS_CHOICES,
        initial=counter.CASH,
        widget=forms.RadioSelect,
        label=gettext_lazy("Paid by"),
        error_messages={"required": gettext_lazy("Please choose how the money was paid.")},
    )
    reference = forms.CharField(
        required=False,
        max_length=counter.PAYMENT_REFERENCE_MAX,
        label=gettext_lazy("Reference (optional)"),
        help_text=gettext_lazy("The terminal slip's or the bank transfer's number."),
    )


class RetryRefundForm(forms.Form):
    refund = forms.RegexField(regex=r"^r[0-9a-f]{12}$")


def refund_summary(order: Order, records: list[RefundRecord]) -> str:
    return format_money(sum(r["amount"] for r in records), order.get("currency", ""))


def may_take_payment(admin, request) -> bool:
    """Records money paid at the counter: staff who change orders, and the box office's sellers."""
    return admin.has_change_permission(request) or may_sell(request.user)


def payment_context(order: Order, *, takes_payment: bool) -> dict:
    """The order page's part: its payment and refunds, and the forms to refund or mark it paid."""
    return {
        "refund_form": RefundTicketsForm(order=order),
        "refunds": [{**r, "id": r["_id"]} for r in order.get("refunds", [])],  # templates cannot read _id
        "can_refund": order["state"] in payment_service.SEAT_OWNING and bool(order.get("paidWith")),
        "can_mark_paid": order.get("method") in PAID_LATER
        and order["state"] in payment_service.PAYABLE
        and takes_payment,
        "payment": order.get("payment") or {},
        "method_label": dict(METHOD_CHOICES).get(order.get("method", ""), order.get("method", "")),
        "paid_with": order.get("paidWith") or {},
        "paid_means_label": dict(PAID_LATER_MEANS_CHOICES).get(
            paid.get("means", "") if (paid := order.get("paidWith")) else "", ""
        ),
        "mark_paid_form": MarkPaidForm(),
        "paid_by": receipts.payment_label(order),
        "money": receipts.paid_and_refunded(order),
    }


class OrderPaymentScreens(OrderScreens):
    """``<id>/refund/``, ``<id>/retry-refund/``, ``<id>/mark-paid/``: forms on the order's page."""

    @method_decorator(require_POST)
    def order_refund(self, request, object_id):
        """Refund some tickets (or all of them) through the provider; their seats become free."""
        order = self.order(request, object_id, "change")
        form = RefundTicketsForm(request.POST, order=order)
        back = self.url("change", order["_id"])
        if not form.is_valid():
            return self.refused(request, errors_text(form), back)
        tickets = form.cleaned_data["tickets"]
        try:
            done = refund_service.refund_tickets(
                order["_id"], tickets=tickets, reason=form.cleaned_data["reason"], by=staff_name(request.user)
            )
        except BookingError as exc:
            return self.refused(request, exc.message, back)
        # one record per payment the money goes back through: the card, and cash at the counter
        records = refund_service.records_of_tickets(done, tickets)
        summary = refund_summary(done, records)
        count = f"{len(tickets)} ticket{'s' if len(tickets) != 1 else ''}"
        note = f"Refunded {count} ({summary}): {form.cleaned_data['reason']}"
        shown = ngettext(
            "Refunded %(count)d ticket (%(summary)s): %(reason)s.",
            "Refunded %(count)d tickets (%(summary)s): %(reason)s.",
            len(tickets),
        ) % {
            "count": len(tickets),
            "summary": summary,
            "reason": form.cleaned_data["reason"],
        }
        at_counter = refund_service.paid_out_at_counter(records)
        if at_counter:
            shown += " " + gettext("Pay out %(amount)s at the counter.") % {
                "amount": format_money(at_counter, done.get("currency", ""))
            }
        refund = next((r for r in records if r["status"] != RefundStatus.SUCCEEDED), None)
        if refund is None:
            shown += " " + gettext("The seats are free again.")
            return self.order_saved(request, order, note=note, shown=shown, to=back)
        why = refund.get("failure") or gettext("the provider is still working on it")
        shown += " " + gettext("The seats are free again; the refund is %(status)s: %(why)s.") % {
            "status": refund["status"],
            "why": why,
        }
        return self.order_saved(request, order, note=note, shown=shown, to=back, level=messages.warning)

    @method_decorator(require_POST)
    def order_retry_refund(self, request, object_id):
        order = self.order(request, object_id, "change")
        form = RetryRefundForm(request.POST)
        if not form.is_valid() or form.cleaned_data["refund"] not in {r["_id"] for r in order.get("refunds", [])}:
            return HttpResponseBadRequest(gettext("No such refund; reload the order page."))
        status = refund_service.retry(order["_id"], form.cleaned_data["refund"])
        said = {
            "succeeded": gettext("The refund went through."),
            "failed": gettext("The refund failed again; see below."),
        }
        return self.order_saved(
            request,
            order,
            note=f"Refund retried: {status}.",
            shown=said.get(status, gettext("The provider is still working on the refund.")),
            to=self.url("change", order["_id"]),
            level=messages.success if status == RefundStatus.SUCCEEDED else messages.warning,
        )

    @method_decorator(require_POST)
    def order_mark_paid(self, request, object_id):
        """The buyer paid at the box office: the reservation becomes a sale."""
        if not may_take_payment(self.admin, request):
            raise PermissionDenied
        order = self.order_named(object_id)
        back = self.url("change", order["_id"])
        form = MarkPaidForm(request.POST)
        if not form.is_valid():
            return self.refused_page(request, errors_text(form), back)
        means, reference = form.cleaned_data["means"], form.cleaned_data["reference"]
        try:
            paid = payment_service.mark_paid_at_counter(
                order["_id"], by=staff_name(request.user), means=means, reference=reference
            )
        except InvalidRequest as exc:
            return self.refused_page(request, exc.message, back)
        except BookingError as exc:
            return self.refused_page(request, exc.message, back, status=409)
        if paid["state"] != OrderState.PAID:
            reason = gettext("Order %(ref)s could not be paid: %(state)s.") % {
                "ref": order["ref"],
                "state": paid.get("failure") or paid["state"],
            }
            return self.refused(request, reason, back)
        total = format_money(paid["total"], paid["currency"])
        return self.order_saved(
            request,
            order,
            note=f"Paid at the box office ({total}, {means}{': ' + reference if reference else ''}).",
            shown=gettext("Order %(ref)s is paid (%(total)s); its tickets are valid.")
            % {"ref": order["ref"], "total": total},
            to=back,
        )
