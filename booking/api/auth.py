"""Who calls: a token per theater (booking/web/api_tokens.py), its scopes, its rate limit.

``Authorization: Bearer tk_...``. A missing, malformed, unknown or revoked token answers 401; a
token over ``BOOKING_API_RATE`` (per token, counted in Redis in fixed windows: web/ratelimits.py)
answers 429 with Retry-After, the seconds until its window ends. Each endpoint names the scope it
needs (``needs``): without it, 403. The token is kept on the request (``request.api_token``)
for the call log (``booking/api/middleware.py``).
"""

import math

from django.conf import settings
from django.utils.translation import gettext
from ninja.security import HttpBearer

from booking.web import api_tokens, ratelimits


class RateLimited(Exception):
    def __init__(self, retry_after: int):
        super().__init__("rate limited")
        self.retry_after = retry_after


class MissingScope(Exception):
    def __init__(self, scope: str):
        super().__init__(scope)
        self.scope = scope


class TokenAuth(HttpBearer):
    """The token, then its rate limit, then the scope the endpoint needs: all before the request's
    input is read, so a token without the scope hears 403 whatever it sent."""

    def __init__(self, scope: str | None = None):
        super().__init__()
        self.scope = scope

    def authenticate(self, request, token: str) -> dict | None:
        found = api_tokens.authenticate(token)
        if found is None:
            return None
        request.api_token = found
        rate = settings.BOOKING_API_RATE
        limit = ratelimits.counter("booking.api", rate, who=f"token:{found['_id']}")
        if limit is not None and ratelimits.first_exceeded([limit]) is not None:
            _key, _limit, seconds = limit
            raise RateLimited(max(1, math.ceil(seconds - ratelimits.window_seconds() % seconds)))
        if self.scope is not None and self.scope not in found.get("scopes", ()):
            raise MissingScope(self.scope)
        return found


def needs(scope: str) -> dict:
    """An operation's keyword arguments: its token check with ``scope``, and the scope named in
    the OpenAPI schema (``x-scope``)."""
    return {"auth": TokenAuth(scope), "openapi_extra": {"x-scope": scope}}


def token_of(request) -> dict:
    return request.auth


def may(request, scope: str) -> bool:
    return scope in request.auth.get("scopes", ())


def missing_scope_message(scope: str) -> str:
    return gettext("This token does not have the scope %(scope)s.") % {"scope": scope}
