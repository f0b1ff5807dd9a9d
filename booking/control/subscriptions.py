"""Season subscriptions for staff: the list, define one, and sell one at the box office.

The rules are ``sales/subscriptions.py``; the counter's sale is ``sales/counter.py`` (selling needs
``booking.sell_at_counter``, like every counter sale). Opening last season's holders' renewal
reserves their seats (the change permission).
"""

from datetime import datetime

from bson import ObjectId
from django import forms
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST, require_safe

from booking.control.base import ADDITION, CHANGE, MongoModelAdmin, attempt, bound
from booking.control.counter import CounterSaleForm, may_sell
from booking.core import clock
from booking.core.errors import BookingError, InvalidRequest
from booking.sales import counter, selectors, subscriptions
from booking.web import presenters, seatmap_html

ROUTES = [
    ("", "subscription_list", "changelist"),
    ("add/", "subscription_add", "add"),
    ("<str:object_id>/change/", "subscription_detail", "change"),
    ("<str:object_id>/sell/", "subscription_sell", "sell"),
    ("<str:object_id>/renewal/", "subscription_renewal", "renewal"),
]


LOCAL_TIME = forms.DateTimeInput(attrs={"type": "datetime-local"})


class SubscriptionForm(forms.Form):
    name = forms.CharField(max_length=120, label=gettext_lazy("Name"))
    name_de = forms.CharField(max_length=120, required=False, label=gettext_lazy("Name in German"))
    sessions = forms.MultipleChoiceField(label=gettext_lazy("Performances"), widget=forms.CheckboxSelectMultiple)
    prices = forms.CharField(
        label=gettext_lazy("Price per category (whole series)"),
        help_text=gettext_lazy("One line per category: its code, a colon, the price in cents (s: 12000)."),
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
    )
    sale_opens = forms.DateTimeField(
        label=gettext_lazy("Sale opens"), widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    sale_closes = forms.DateTimeField(
        label=gettext_lazy("Sale closes"), widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    renews = forms.ChoiceField(required=False, label=gettext_lazy("Renews last season's"))
    renewal_closes = forms.DateTimeField(
        required=False,
        label=gettext_lazy("Renewal window closes"),
        widget=LOCAL_TIME,
    )

    def __init__(self, *args, sessions=(), earlier=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["sessions"].choices = [  # type: ignore[attr-defined]
            (str(s["_id"]), f"{s['start']:%Y-%m-%d %H:%M} · {s['name']} · {s.get('theaterName', '')}") for s in sessions
        ]
        renews = [("", "—")] + [(str(s["_id"]), s["name"]) for s in earlier]
        self.fields["renews"].choices = renews  # type: ignore[attr-defined]

    def clean_prices(self) -> dict[str, int]:
        prices: dict[str, int] = {}
        for line in self.cleaned_data["prices"].splitlines():
            if not line.strip():
                continue
            code, _sep, cents = line.partition(":")
            try:
                prices[code.strip()[:5]] = int(cents.strip())
            except ValueError:
                raise forms.ValidationError(_("Write each line as code: cents, e.g. s: 12000.")) from None
        return prices


class SubscriptionSellForm(CounterSaleForm):
    seat = forms.RegexField(regex=r"^\d{1,4}:\d{1,4}$", max_length=9, label=gettext_lazy("Seat"))
    ticket_type = forms.SlugField(max_length=20, initial="full", label=gettext_lazy("Ticket type"))


class SubscriptionAdmin(MongoModelAdmin):
    routes = ROUTES

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or may_sell(request.user)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    @method_decorator(require_safe)
    def subscription_list(self, request):
        self.require(request, "view")
        rows = [
            {
                "id": str(s["_id"]),
                "name": s["name"],
                "count": len(s["sessionIds"]),
                "opens": s["saleOpens"],
                "closes": s["saleCloses"],
                "renewal": s.get("renewalCloses"),
            }
            for s in subscriptions.all_subscriptions()
        ]
        return self.render(request, "admin/booking/subscription/list.html", {"rows": rows, "title": _("Subscriptions")})

    def subscription_add(self, request):
        self.require(request, "add")
        form = SubscriptionForm(
            bound(request), sessions=selectors.upcoming_sessions(), earlier=subscriptions.all_subscriptions()
        )
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            created = attempt(
                form,
                lambda: subscriptions.create_subscription(
                    name=data["name"],
                    name_de=data["name_de"],
                    session_ids=[ObjectId(i) for i in data["sessions"]],
                    prices=data["prices"],
                    sale_opens=_aware(data["sale_opens"]),
                    sale_closes=_aware(data["sale_closes"]),
                    renews=ObjectId(data["renews"]) if data["renews"] else None,
                    renewal_closes=_aware(data["renewal_closes"]) if data["renewal_closes"] else None,
                ),
            )
            if created is not None:
                note = f"Added the subscription {created['name']}."
                if created.get("renews"):  # the holders' seats kept from now, not from the sale's opening
                    opened = subscriptions.open_renewal(created["_id"])
                    note += f" Renewal opened: {opened.reserved} reserved, {len(opened.lost or [])} lost."
                return self.saved(
                    request,
                    ADDITION,
                    created["_id"],
                    created["name"],
                    note=note,
                    to=self.url("change", str(created["_id"])),
                )
        status = 400 if request.method == "POST" else 200
        return self.render(
            request, "admin/booking/subscription/form.html", {"form": form, "title": _("Add a subscription")}, status
        )

    def _detail(self, request, object_id, *, form=None, status=200):
        subscription = self.document(subscriptions.get_subscription, object_id, _("No such subscription."))
        sessions = subscriptions.performances(subscription)
        common = subscriptions.common_map(subscription, sessions)
        shared = seatmap_html.seat_map_html(common)
        now = clock.now()
        context = {
            "title": subscription["name"],
            "subscription": subscription,
            "subscription_id": str(subscription["_id"]),
            "performances": [presenters.session_card(s) for s in sessions],
            "map_html": shared.for_viewer(),
            "map_width": shared.width,
            "category_css": seatmap_html.category_css(common),
            "legend": seatmap_html.legend(common),
            "free": common["seatsAvailable"],
            "ticket_types": subscriptions.ticket_type_choices(subscription),
            "may_sell": may_sell(request.user),
            "form": form or SubscriptionSellForm(),
            "renewable": bool(subscription.get("renews")) and subscription.get("renewalCloses", now) > now,
        }
        return self.render(request, "admin/booking/subscription/detail.html", context, status)

    @method_decorator(require_safe)
    def subscription_detail(self, request, object_id):
        self.require(request, "view")
        return self._detail(request, object_id)

    @method_decorator(require_POST)
    def subscription_sell(self, request, object_id):
        if not may_sell(request.user):
            raise PermissionDenied
        subscription = self.document(subscriptions.get_subscription, object_id, _("No such subscription."))
        form = SubscriptionSellForm(request.POST)
        if not form.is_valid():
            return self._detail(request, object_id, form=form, status=400)
        data = form.cleaned_data
        sale = counter.CounterSale(
            name=data["name"],
            method=data["method"],
            channel=data["channel"],
            email=data["email"],
            phone=data["phone"],
            due=data["due"],
            reason=data["reason"],
            by=request.user.get_username(),
            by_id=request.user.pk,
        )
        try:
            order = subscriptions.sell_at_counter(
                subscription_id=subscription["_id"],
                seat_keys=[data["seat"]],
                ticket_type=data["ticket_type"],
                sale=sale,
                owner=counter.staff_owner(request.user.pk),
            )
        except InvalidRequest as exc:
            for field, message in exc.details.get("fields", {}).items():
                form.add_error(field if field in form.fields else None, message)
            if not exc.details.get("fields"):
                form.add_error(None, exc.message)
            return self._detail(request, object_id, form=form, status=400)
        except BookingError as exc:
            form.add_error(None, exc.message)
            return self._detail(request, object_id, form=form, status=409)
        self.log(request, ADDITION, subscription["_id"], subscription["name"], f"Sold order {order['ref']}.")
        return HttpResponseRedirect(reverse("admin:booking_session_sold", args=[order["ref"]]))

    @method_decorator(require_POST)
    def subscription_renewal(self, request, object_id):
        self.require(request, "change")
        subscription = self.document(subscriptions.get_subscription, object_id, _("No such subscription."))
        try:
            opened = subscriptions.open_renewal(subscription["_id"])
        except BookingError as exc:
            return self.refused(request, exc.message, self.url("change", object_id))
        note = f"Renewal opened: {opened.reserved} reserved, {opened.already} already, {len(opened.lost or [])} lost."
        return self.saved(
            request, CHANGE, subscription["_id"], subscription["name"], note=note, to=self.url("change", object_id)
        )


def _aware(moment: datetime) -> datetime:
    """A datetime from the form in the site's time zone (Django makes it aware), at MongoDB's precision."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)
