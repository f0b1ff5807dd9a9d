"""The REST API's tokens in the admin: list, create (the secret shown once, on the answer to the
form, never again), look at one with its latest calls, revoke. The service is
booking/web/api_tokens.py; the permissions are the ``ApiToken`` stand-in model's (view, add,
change = revoke)."""

from typing import cast

from django import forms
from django.http import Http404
from django.utils.decorators import method_decorator
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST

from booking.control import selectors
from booking.control.base import ADDITION, CHANGE, MongoModelAdmin, attempt, bound, staff_name
from booking.core.errors import NotFound
from booking.core.ids import object_id
from booking.web import api_tokens


class TokenForm(forms.Form):
    theater = forms.ChoiceField(label=_("Theater"))
    name = forms.CharField(
        label=_("Name"),
        max_length=api_tokens.NAME_MAX_LENGTH,
        help_text=_("Who uses it, e.g. 'CRM' or 'Website calendar'. Every call is logged with it."),
    )
    scopes = forms.MultipleChoiceField(
        label=_("Scopes"),
        widget=forms.CheckboxSelectMultiple,
        choices=list(api_tokens.SCOPES.items()),
        help_text=_("Give only what the system needs."),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["theater"]).choices = selectors.theater_choices()


class ApiTokenAdmin(MongoModelAdmin):
    routes = [
        ("", "token_list", "changelist"),
        ("add/", "token_add", "add"),
        ("<str:object_id>/change/", "token_detail", "change"),
        ("<str:object_id>/revoke/", "token_revoke", "revoke"),
    ]

    def token_list(self, request):
        self.require(request, "view")
        theaters = dict(selectors.theater_choices())
        found = [
            {
                **t,
                "id": str(t["_id"]),
                "theater": theaters.get(str(t["theaterId"]), str(t["theaterId"])),
                "scope_labels": [str(api_tokens.SCOPES.get(s, s)) for s in t["scopes"]],
            }
            for t in api_tokens.tokens()
        ]
        context = {"title": gettext("API tokens"), "tokens": found}
        return self.render(request, "admin/booking/apitoken/list.html", context)

    @method_decorator(require_http_methods(["GET", "HEAD", "POST"]))
    def token_add(self, request):
        self.require(request, "add")
        form = TokenForm(bound(request))
        status = 200
        if request.method == "POST":
            status = 400
            made = None
            if form.is_valid():
                data = form.cleaned_data
                made = attempt(
                    form,
                    lambda: api_tokens.create_token(
                        theater_id=object_id(data["theater"], "theater"),
                        name=data["name"],
                        scopes=data["scopes"],
                        by=staff_name(request.user),
                    ),
                )
            if made is not None:
                doc = made.document
                self.log(request, ADDITION, doc["_id"], doc["name"], f"Created API token {doc['name']}.")
                response = self.render(
                    request,
                    "admin/booking/apitoken/created.html",
                    {
                        "title": gettext("API token %(name)s") % {"name": doc["name"]},
                        "token": made.token,
                        "doc": {**doc, "id": str(doc["_id"])},
                    },
                )
                response["Cache-Control"] = "no-store"  # the secret must not stay in a cache
                return response
        context = {"title": gettext("Add an API token"), "form": form}
        return self.render(request, "admin/booking/apitoken/form.html", context, status=status)

    def _token(self, object_id) -> dict:
        return self.document(api_tokens.get_token, object_id, "No such API token.")

    def token_detail(self, request, object_id):
        self.require(request, "view")
        token = self._token(object_id)
        theaters = dict(selectors.theater_choices())
        context = {
            "title": gettext("API token %(name)s") % {"name": token["name"]},
            "token": {**token, "id": str(token["_id"])},
            "theater": theaters.get(str(token["theaterId"]), str(token["theaterId"])),
            "scope_labels": [str(api_tokens.SCOPES.get(s, s)) for s in token["scopes"]],
            "calls": api_tokens.recent_calls(token["_id"]),
        }
        return self.render(request, "admin/booking/apitoken/detail.html", context)

    @method_decorator(require_POST)
    def token_revoke(self, request, object_id):
        self.require(request, "change")
        token = self._token(object_id)
        try:
            api_tokens.revoke_token(token_id=token["_id"], by=staff_name(request.user))
        except NotFound:
            raise Http404("No such API token.") from None
        return self.saved(
            request,
            CHANGE,
            token["_id"],
            token["name"],
            note=f"Revoked API token {token['name']}.",
            shown=gettext("The token %(name)s was revoked; it no longer works.") % {"name": token["name"]},
            to=self.url("change", token["_id"]),
        )
