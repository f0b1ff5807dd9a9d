"""Webhook endpoints in the admin: a theater's URLs, the events each wants, its signing secret
(shown, rotatable), and its deliveries with every attempt, each of which can be sent again. Every
write goes through booking/webhooks/; the permissions are the ``WebhookEndpoint`` stand-in
model's (view: look; add: register; change: edit, rotate the secret, send again; delete)."""

from typing import cast

from django import forms
from django.http import Http404
from django.utils.decorators import method_decorator
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST

from booking.control.base import ADDITION, CHANGE, DELETION, MongoModelAdmin, attempt, bound, staff_name
from booking.control.selectors import theater_choices
from booking.core.errors import BookingError, NotFound
from booking.core.ids import object_id
from booking.sales import outbox
from booking.webhooks import addresses, deliveries, endpoints, selectors

EVENT_CHOICES = [
    (outbox.ORDER_PLACED, _("Order placed")),
    (outbox.ORDER_PAID, _("Order paid")),
    (outbox.ORDER_CHANGED, _("Order changed (tickets exchanged)")),
    (outbox.ORDER_CANCELED, _("Order canceled")),
    (outbox.ORDER_REFUNDED, _("Order refunded (all or some tickets)")),
    (outbox.TICKET_CHECKED_IN, _("Ticket checked in")),
    (outbox.PERFORMANCE_CANCELED, _("Performance canceled")),
]
STATE_LABELS = {
    deliveries.PENDING: _("pending"),
    deliveries.DELIVERED: _("delivered"),
    deliveries.FAILED: _("failed"),
    deliveries.CANCELED: _("not sent"),
}


class EndpointForm(forms.Form):
    theater = forms.ChoiceField(label=_("Theater"))
    url = forms.CharField(
        label=_("URL"),
        max_length=addresses.MAX_URL_LENGTH,
        help_text=_("Where the events are POSTed, e.g. https://crm.example.org/hooks/tickets."),
        widget=forms.TextInput(attrs={"size": 60, "autocomplete": "off"}),
    )
    events = forms.MultipleChoiceField(label=_("Events"), choices=EVENT_CHOICES, widget=forms.CheckboxSelectMultiple)
    description = forms.CharField(label=_("Description"), required=False, max_length=endpoints.MAX_DESCRIPTION)
    active = forms.BooleanField(label=_("Active"), required=False, initial=True, help_text=_("Off: nothing is sent."))

    def __init__(self, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if editing:
            del self.fields["theater"]  # an endpoint belongs to its theater for good
        else:
            cast(forms.ChoiceField, self.fields["theater"]).choices = [("", _("— choose —")), *theater_choices()]


def _endpoint_view(endpoint: dict, theater_names: dict) -> dict:
    labels = dict(EVENT_CHOICES)
    return {
        **endpoint,
        "id": str(endpoint["_id"]),
        "theaterName": theater_names.get(str(endpoint["theaterId"]), "?"),
        "eventLabels": [labels.get(e, e) for e in endpoint.get("events", [])],
    }


def _delivery_view(delivery: dict) -> dict:
    return {**delivery, "id": delivery["_id"], "stateLabel": STATE_LABELS.get(delivery["state"], delivery["state"])}


class WebhookEndpointAdmin(MongoModelAdmin):
    routes = [
        ("", "endpoint_list", "changelist"),
        ("add/", "endpoint_add", "add"),
        ("<str:object_id>/change/", "endpoint_change", "change"),
        ("<str:object_id>/rotate-secret/", "endpoint_rotate", "rotate"),
        ("<str:object_id>/delete/", "endpoint_delete", "delete"),
        ("<str:object_id>/deliveries/<str:delivery_id>/", "delivery_detail", "delivery"),
        ("<str:object_id>/deliveries/<str:delivery_id>/resend/", "delivery_resend", "resend"),
    ]

    def endpoint_list(self, request):
        self.require(request, "view")
        names = dict(theater_choices())
        context = {
            "title": _("Webhook endpoints"),
            "endpoints": [_endpoint_view(e, names) for e in selectors.endpoints()],
        }
        return self.render(request, "admin/booking/webhookendpoint/list.html", context)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def endpoint_add(self, request):
        self.require(request, "add")
        form = EndpointForm(bound(request))
        status = 200
        if request.method == "POST":
            status = 400
            if form.is_valid():
                data = form.cleaned_data
                created = attempt(
                    form,
                    lambda: endpoints.create_endpoint(
                        theater_id=object_id(data["theater"], "theater"),
                        url=data["url"],
                        events=data["events"],
                        description=data["description"],
                        active=data["active"],
                        by=staff_name(request.user),
                    ),
                )
                if created is not None:
                    return self.saved(
                        request,
                        ADDITION,
                        created["_id"],
                        created["url"][:200],
                        note=f"Registered webhook endpoint {created['url'][:200]}.",
                        shown=str(_("The endpoint was registered. Give its secret to the receiving system.")),
                        to=self.url("change", created["_id"]),
                    )
        context = {"title": _("Register a webhook endpoint"), "form": form}
        return self.render(request, "admin/booking/webhookendpoint/form.html", context, status=status)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def endpoint_change(self, request, object_id):
        self.require(request, "view")
        endpoint = self.document(selectors.get_endpoint, object_id, "No such webhook endpoint.")
        initial = {k: endpoint.get(k) for k in ("url", "events", "description", "active")}
        form = EndpointForm(bound(request), initial=initial, editing=True)
        status = 200
        if request.method == "POST":
            self.require(request, "change")
            status = 400
            if form.is_valid():
                data = form.cleaned_data
                try:
                    updated = attempt(
                        form,
                        lambda: endpoints.update_endpoint(
                            endpoint["_id"],
                            url=data["url"],
                            events=data["events"],
                            description=data["description"],
                            active=data["active"],
                        ),
                    )
                except NotFound as exc:
                    raise Http404(exc.message) from None
                if updated is not None:
                    return self.saved(
                        request,
                        CHANGE,
                        updated["_id"],
                        updated["url"][:200],
                        note=f"Changed webhook endpoint {updated['url'][:200]}.",
                        shown=str(_("The endpoint was saved.")),
                        to=self.url("change", updated["_id"]),
                    )
        context = {
            "title": _("Webhook endpoint"),
            "form": form,
            "endpoint": _endpoint_view(endpoint, dict(theater_choices())),
            "deliveries": [_delivery_view(d) for d in selectors.deliveries(endpoint["_id"])],
            "limit": selectors.DELIVERY_LIST_LIMIT,
        }
        return self.render(request, "admin/booking/webhookendpoint/form.html", context, status=status)

    @method_decorator(require_POST)
    def endpoint_rotate(self, request, object_id):
        self.require(request, "change")
        endpoint = self.document(selectors.get_endpoint, object_id, "No such webhook endpoint.")
        endpoints.rotate_secret(endpoint["_id"])
        return self.saved(
            request,
            CHANGE,
            endpoint["_id"],
            endpoint["url"][:200],
            note="Rotated the webhook endpoint's secret.",
            shown=str(_("A new secret was made; deliveries are signed with it from now on.")),
            to=self.url("change", endpoint["_id"]),
        )

    @method_decorator(require_POST)
    def endpoint_delete(self, request, object_id):
        self.require(request, "delete")
        endpoint = self.document(selectors.get_endpoint, object_id, "No such webhook endpoint.")
        try:
            endpoints.delete_endpoint(endpoint["_id"])
        except NotFound as exc:
            raise Http404(exc.message) from None
        return self.saved(
            request,
            DELETION,
            endpoint["_id"],
            endpoint["url"][:200],
            note=f"Deleted webhook endpoint {endpoint['url'][:200]}.",
            shown=str(_("The endpoint was deleted.")),
            to=self.url("changelist"),
        )

    def _delivery(self, object_id: str, delivery_id: str) -> tuple[dict, dict]:
        endpoint = self.document(selectors.get_endpoint, object_id, "No such webhook endpoint.")
        delivery = selectors.get_delivery(delivery_id[:200])
        if delivery is None or delivery["endpointId"] != endpoint["_id"]:
            raise Http404("No such delivery.")
        return endpoint, delivery

    def delivery_detail(self, request, object_id, delivery_id):
        self.require(request, "view")
        endpoint, delivery = self._delivery(object_id, delivery_id)
        context = {
            "title": _("Webhook delivery"),
            "endpoint": _endpoint_view(endpoint, dict(theater_choices())),
            "delivery": _delivery_view(delivery),
        }
        return self.render(request, "admin/booking/webhookendpoint/delivery.html", context)

    @method_decorator(require_POST)
    def delivery_resend(self, request, object_id, delivery_id):
        self.require(request, "change")
        endpoint, delivery = self._delivery(object_id, delivery_id)
        to = self.url("delivery", endpoint["_id"], delivery["_id"])
        try:
            deliveries.resend(delivery["_id"])
        except BookingError as exc:
            return self.refused(request, exc.message, to)
        return self.saved(
            request,
            CHANGE,
            endpoint["_id"],
            endpoint["url"][:200],
            note=f"Sent webhook delivery {delivery['_id']} again.",
            shown=str(_("The delivery is being sent again.")),
            to=to,
        )
