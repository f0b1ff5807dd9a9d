"""Anti-hoarding at the door: who the client is, and a rate limit on hold requests.

A *client* is an IP address (IPv6 by /64), not a cookie: cookies cost nothing to throw away.
Behind a reverse proxy set ``BOOKING_TRUSTED_PROXIES`` to the number of proxies that append to
X-Forwarded-For; the client is then the address the outermost trusted proxy saw.

Three limits work together (docs/reliability.md):
- per cart: ``BOOKING_MAX_SEATS_PER_CART`` (the engine, atomic);
- per client: ``BOOKING_MAX_HELD_SEATS_PER_CLIENT`` seats in live carts (the engine, told who the
  client is by this middleware) and ``BOOKING_MAX_LIVE_CARTS_PER_OWNER`` carts per cookie owner;
- per client: ``BOOKING_HOLD_RATE`` hold requests (django-ratelimit, counted in Redis), answered
  with 429 and a Retry-After hint.

Booking lookups by reference and e-mail are limited the same way (``BOOKING_LOOKUP_RATE``).

The rate limit fails open: while Redis is down holds keep working (they need only MongoDB), the
rate limit is skipped and a warning is logged. The held-seats limit still applies then.
"""

import ipaddress
import logging

from django.conf import settings
from django.http import HttpResponse
from django.template import TemplateDoesNotExist
from django.template.loader import render_to_string
from django_ratelimit.core import get_usage
from redis.exceptions import RedisError

from .services import holds

logger = logging.getLogger("booking.ratelimits")

# The views that take seats (names in booking/urls.py). Releases are never limited.
HOLD_VIEWS = frozenset({"booking:toggle_seat", "booking:hold", "booking:best_available"})

RATE_LIMITED_MESSAGE = "You are choosing seats very fast. Please wait a moment and try again."


def client_ip(request) -> str:
    """The client's address: REMOTE_ADDR, or the one the outermost trusted proxy recorded."""
    trusted = settings.BOOKING_TRUSTED_PROXIES
    remote = request.META.get("REMOTE_ADDR", "") or "0.0.0.0"  # noqa: S104 - a unix-socket peer
    if trusted <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < trusted:
        return remote  # the header did not come through all our proxies: do not trust it
    candidate = forwarded[-trusted]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


def client_key(request) -> str:
    """A stable key for the client: the IPv4 address, or the IPv6 /64 network (one household)."""
    address = ipaddress.ip_address(client_ip(request))
    if address.version == 6:
        return "ip:" + str(ipaddress.ip_network(f"{address}/64", strict=False).network_address)
    return f"ip:{address}"


def rate_exceeded(request, group: str, rate: str) -> bool:
    """Count this request of the client in ``group``; True when it is over ``rate`` ("30/m";
    empty: no limit). Fails open: while Redis is down nothing is limited and a warning is logged."""
    if not rate:
        return False
    try:
        usage = get_usage(request, group=group, key="ip", rate=rate, method=request.method, increment=True)
    except (RedisError, OSError) as exc:
        logger.warning("rate limit skipped, cache unreachable: %s", exc)
        return False
    return bool(usage and usage["should_limit"])


def hold_rate_exceeded(request) -> bool:
    """Count this hold request; True when the client is over BOOKING_HOLD_RATE."""
    return rate_exceeded(request, "booking.hold", settings.BOOKING_HOLD_RATE)


def lookup_rate_exceeded(request) -> bool:
    """Count this booking lookup by reference and e-mail (Find my booking, the mail's link); True
    when the client is over BOOKING_LOOKUP_RATE: guessing references or e-mails stays slow."""
    return rate_exceeded(request, "booking.lookup", settings.BOOKING_LOOKUP_RATE)


def too_many_requests(request) -> HttpResponse:
    try:
        body = render_to_string(
            "booking/_notice.html", {"notice": RATE_LIMITED_MESSAGE, "notice_level": "error"}, request=request
        )
    except TemplateDoesNotExist:
        body = RATE_LIMITED_MESSAGE
    response = HttpResponse(body, status=429)
    response["Retry-After"] = "10"
    return response


class HoldRateLimitMiddleware:
    """Tells the engine who the client is (per-client held-seats limit) and rate-limits holds."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            client = client_key(request)
        except ValueError:
            client = None  # REMOTE_ADDR is not an address (a test client): no per-client limit
        token = holds.acting_client.set(client)
        try:
            return self.get_response(request)
        finally:
            holds.acting_client.reset(token)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if request.method != "POST" or match is None or match.view_name not in HOLD_VIEWS:
            return None
        if hold_rate_exceeded(request):
            logger.info("hold rate limit hit by %s", holds.acting_client.get())
            return too_many_requests(request)
        return None
