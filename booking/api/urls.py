"""The API at /api/v1/ (theater_site/urls.py): one NinjaAPI, its routers, and how every error
answers: ``{"error": <code>, "message": <for people>, "fields": {<field>: <what is wrong>}}``
with 400 (bad input, per field), 401 (no or a revoked token), 403 (a scope missing), 404
(unknown or malformed id, or another theater's), 409 (the domain refused: seats taken, changed
meanwhile), 422 (an Idempotency-Key reused for another request), 429 (rate limit, Retry-After).

The schema is at /api/v1/schema/ (public: it is in the repository too, docs/api/openapi.json);
the interactive docs at /api/v1/docs/ are for signed-in staff only."""

from functools import wraps

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404
from django.utils.translation import gettext
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from booking.api import orders, performances, reports, tickets
from booking.api.auth import MissingScope, RateLimited, TokenAuth, missing_scope_message
from booking.api.common import booking_error_answer, error_body, json_response
from booking.core.errors import BookingError

LOCATIONS = ("body", "query", "path", "header", "cookie")
PARAMETER_NAMES = ("body", "filters")  # the views' names of their body and query schemas


def staff_only_docs(view):
    """The interactive docs need a signed-in staff member; the schema itself is public."""
    protected = staff_member_required(view)

    @wraps(view)
    def choose(request, *args, **kwargs):
        match = request.resolver_match
        if match is not None and match.url_name == "openapi-view":
            return protected(request, *args, **kwargs)
        return view(request, *args, **kwargs)

    return choose


api = NinjaAPI(
    title="Theater booking API",
    version="1",
    description="Per-theater tokens with scopes; see docs/api.md.",
    urls_namespace="api-v1",
    openapi_url="/schema/",
    docs_url="/docs/",
    docs_decorator=staff_only_docs,
    auth=TokenAuth(),
)
api.add_router("", performances.router)
api.add_router("", orders.router)
api.add_router("", tickets.router)
api.add_router("", reports.router)


def field_name(location: tuple | list) -> str:
    parts = [str(p) for p in location]
    if parts and parts[0] in LOCATIONS:
        parts = parts[1:]
    if parts and parts[0] in PARAMETER_NAMES:
        parts = parts[1:]
    return ".".join(parts) or "body"


@api.exception_handler(ValidationError)
def invalid_input(request, exc: ValidationError):
    fields: dict[str, str] = {}
    for error in exc.errors:
        fields.setdefault(field_name(error.get("loc", ())), str(error.get("msg", "invalid")))
    return json_response(400, error_body(400, gettext("The request has invalid fields."), fields))


@api.exception_handler(AuthenticationError)
def unauthorized(request, exc):
    response = json_response(401, error_body(401, gettext("A valid API token is needed.")))
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(RateLimited)
def rate_limited(request, exc: RateLimited):
    response = json_response(429, error_body(429, gettext("Too many requests for this token; slow down.")))
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(MissingScope)
def forbidden(request, exc: MissingScope):
    return json_response(403, error_body(403, missing_scope_message(exc.scope)))


@api.exception_handler(BookingError)
def refused(request, exc: BookingError):
    status, body = booking_error_answer(exc)
    return json_response(status, body)


@api.exception_handler(HttpError)
def http_error(request, exc: HttpError):
    return json_response(exc.status_code, error_body(exc.status_code, str(exc)))


@api.exception_handler(Http404)
def not_found(request, exc):
    return json_response(404, error_body(404, gettext("Not found.")))


urlpatterns = [*api.urls[0]]
app_name = "api-v1"
