"""Anti-hoarding at the door: who the client is, and a rate limit on hold requests.

A *client* is an IP address (IPv6 by /64), not a cookie: cookies cost nothing to throw away.
Behind a reverse proxy set ``BOOKING_TRUSTED_PROXIES`` to the number of proxies that append to
X-Forwarded-For; the client is then the address the outermost trusted proxy saw.

Three limits work together (docs/reliability.md):
- per cart: ``BOOKING_MAX_SEATS_PER_CART`` (the engine, atomic);
- per client: ``BOOKING_MAX_HELD_SEATS_PER_CLIENT`` seats held, in live carts and in carts being
  paid for (the engine, told who the client is by the buyer's views: ``acting_client``),
  ``BOOKING_MAX_OPEN_RESERVATIONS`` unpaid box-office reservations, and
  ``BOOKING_MAX_LIVE_CARTS_PER_OWNER`` carts per cookie owner;
- per buyer: ``BOOKING_HOLD_RATE`` hold requests (a fixed-window counter in Redis) for each buyer
  cookie's owner token (booking/web/buyer.py; signed, so not forgeable; a first request gets its token
  here), and a higher ceiling per
  client address, ``BOOKING_HOLD_RATE_PER_ADDRESS``: one browser clicking fast does not lock out
  another on the same address (families, offices). Requests without a buyer cookie share one
  bucket per address at ``BOOKING_HOLD_RATE``, so throwing cookies away gains nothing. Answered
  with 429 and a Retry-After hint.

Booking lookups by reference and e-mail are limited the same way (``BOOKING_LOOKUP_RATE``), and
box-office reservations, each of which mails an address nobody has confirmed, per client address
and per e-mail address (``BOOKING_RESERVATION_MAIL_RATE``, ``..._PER_EMAIL``).

While Redis cannot be reached the rate limits are counted in this process instead (the same
rates, keys and windows, in memory: ``LocalCounts``), and a warning is logged now and then. Holds
keep working (they need only MongoDB) and reference guessing stays slow: with N web processes a
client gets at most N times its rate then, not an unlimited one. The held-seats limit applies as
always.

The counter is INCR + EXPIRE on a key per (group, client, window), and a hold's counters (the
buyer's, the address's) are counted by one Lua script: one round trip to Redis on one client kept
per process. django-ratelimit did the same counting through Django's
cache API in three round trips, each building a new redis-py client (about half a millisecond of a
seat click that is otherwise a few hundred microseconds of work).
"""

import functools
import hashlib
import ipaddress
import logging
import threading
import time
from collections import OrderedDict

import redis
from django.conf import settings
from django.core import checks
from django.http import HttpResponse
from django.template import TemplateDoesNotExist
from django.template.loader import render_to_string
from django.utils.translation import gettext, gettext_noop
from redis.exceptions import NoScriptError, RedisError

from booking.web import buyer

logger = logging.getLogger("booking.ratelimits")

# The views that take seats (names in booking/presale/urls.py). Releases are never limited.
HOLD_VIEWS = frozenset({"booking:toggle_seat", "booking:hold", "booking:best_available", "booking:subscription_buy"})

RATE_LIMITED_MESSAGE = gettext_noop("You are choosing seats very fast. Please wait a moment and try again.")


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


def client_address(request) -> str:
    """The client as one address: the IPv4 address, or its IPv6 /64 network's (one household)."""
    address = ipaddress.ip_address(client_ip(request))
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False).network_address)
    return str(address)


def client_key(request) -> str:
    """A stable key for the client (``client_address``)."""
    return f"ip:{client_address(request)}"


def acting_client(request) -> str | None:
    """The client key this request acts for: its seats count towards that address's limit and its
    requests towards that address's rates. None when REMOTE_ADDR is not an address (a test client).
    Worked out once per request (a hold asks for it in the rate limit and again in the view)."""
    if not hasattr(request, "_acting_client"):
        try:
            request._acting_client = client_key(request)
        except ValueError:
            request._acting_client = None
    return request._acting_client


PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@functools.lru_cache(maxsize=64)
def parse_rate(rate: str) -> tuple[int, int]:
    """A rate as (requests, seconds): "30/m" is (30, 60), "10/5m" 10 per 5 minutes."""
    count, _, period = rate.partition("/")
    multiple, unit = period[:-1] or "1", period[-1:]
    if not count.isdigit() or not multiple.isdigit() or unit not in PERIODS:
        raise ValueError(f"not a rate: {rate!r} (use e.g. 30/m)")
    return int(count), int(multiple) * PERIODS[unit]


@checks.register(checks.Tags.security)
def check_rates(app_configs=None, **kwargs) -> list[checks.Error]:
    """A malformed rate in the settings is refused at start, not on the first hold."""
    errors = []
    for name in (
        "BOOKING_HOLD_RATE",
        "BOOKING_HOLD_RATE_PER_ADDRESS",
        "BOOKING_LOOKUP_RATE",
        "BOOKING_API_RATE",
        "BOOKING_RESERVATION_MAIL_RATE",
        "BOOKING_RESERVATION_MAIL_RATE_PER_EMAIL",
        "BOOKING_SIGN_IN_RATE",
        "BOOKING_SIGN_IN_RATE_PER_EMAIL",
    ):
        rate = getattr(settings, name, "")
        try:
            if rate:
                parse_rate(rate)
        except ValueError as exc:
            errors.append(checks.Error(f"{name}: {exc}", id="booking.E001"))
    return errors


@functools.lru_cache(maxsize=8)
def _redis_for(location: str, connect_timeout: float | None, timeout: float | None) -> redis.Redis:
    return redis.Redis.from_url(location, socket_connect_timeout=connect_timeout, socket_timeout=timeout)


def counter_store() -> redis.Redis:
    """The Redis of the default cache (CACHES), one client (and connection pool) per process."""
    cache = settings.CACHES["default"]
    options = cache.get("OPTIONS", {})
    return _redis_for(cache["LOCATION"], options.get("socket_connect_timeout"), options.get("socket_timeout"))


def window_seconds() -> float:
    """The clock the fixed windows are cut from (a test moves it instead of sleeping)."""
    return time.time()


# The counters a request is checked against, in order, in one round trip: each is counted, and
# the first over its limit stops the rest (so a request refused for the buyer is not counted for
# the address). KEYS: the counters; ARGV: limit and expiry of each in turn. Returns the 1-based
# position of the counter over its limit, or 0.
COUNT_SCRIPT = """
for i, key in ipairs(KEYS) do
    local count = redis.call('INCR', key)
    redis.call('EXPIRE', key, ARGV[2 * i])
    if count > tonumber(ARGV[2 * i - 1]) then
        return i
    end
end
return 0
"""
COUNT_SCRIPT_SHA = hashlib.sha1(COUNT_SCRIPT.encode(), usedforsecurity=False).hexdigest()  # EVALSHA's name for it


def count_requests(counters: list[tuple[str, int, int]]) -> int | None:
    """Count one request under each ``(key, limit, seconds)`` in turn, in Redis, stopping at the
    first over its limit: its index, or None. One round trip (EVALSHA; the script is loaded once
    per server), where a pipeline per counter was one each."""
    args: list[str | int] = [key for key, _limit, _seconds in counters]
    for _key, limit, seconds in counters:
        args += [limit, seconds + 1]
    store = counter_store()
    # EVALSHA sent as it is: redis-py's Script object added a quarter of the round trip's CPU
    try:
        over = int(store.execute_command("EVALSHA", COUNT_SCRIPT_SHA, len(counters), *args))
    except NoScriptError:  # a server that has not seen it yet (or flushed its scripts): load, then again
        store.script_load(COUNT_SCRIPT)
        over = int(store.execute_command("EVALSHA", COUNT_SCRIPT_SHA, len(counters), *args))
    return over - 1 if over else None


class LocalCounts:
    """Fixed-window counters in this process: the rate limits' fallback while Redis cannot be
    reached. At most ``size`` keys, the least recently counted going first, so a flood of
    addresses cannot grow it; a key names its window, so a new window starts from zero."""

    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()  # gunicorn's threads count concurrently

    def incr(self, key: str) -> int:
        with self._lock:
            count = self._counts.pop(key, 0) + 1
            self._counts[key] = count
            while len(self._counts) > self.size:
                self._counts.popitem(last=False)
            return count

    def __len__(self) -> int:
        return len(self._counts)


local_counts = LocalCounts()
FALLBACK_WARNING_SECONDS = 10.0
_last_fallback_warning = [float("-inf")]


def counter(group: str, rate: str, who: str | None) -> tuple[str, int, int] | None:
    """The counter of ``who`` (a client key, ``acting_client``, or another key) in ``group`` for
    this window, as (key, limit, seconds); None when ``rate`` is empty (no limit)."""
    if not rate:
        return None
    limit, seconds = parse_rate(rate)
    client = who or "unknown"
    return f"rl:{group}:{client}:{seconds}:{int(window_seconds() // seconds)}", limit, seconds


def first_exceeded(counters: list[tuple[str, int, int] | None]) -> int | None:
    """Count this request under each counter in turn (None: no limit), stopping at the first over
    its limit: its index in ``counters``, or None. While Redis is unreachable the counts are kept
    in this process."""
    present = [(i, c) for i, c in enumerate(counters) if c is not None]
    if not present:
        return None
    try:
        over = count_requests([c for _i, c in present])
    except (RedisError, OSError) as exc:
        over = next((n for n, (_i, (key, limit, _s)) in enumerate(present) if local_counts.incr(key) > limit), None)
        now = time.monotonic()
        if now - _last_fallback_warning[0] >= FALLBACK_WARNING_SECONDS:  # not one line per request
            _last_fallback_warning[0] = now
            logger.warning("rate limits counted in this process only, cache unreachable: %s", exc)
    return None if over is None else present[over][0]


def rate_exceeded(request, group: str, rate: str, who: str | None = None) -> bool:
    """Count this request of ``who`` (default: the client address) in ``group``; True when it is
    over ``rate`` ("30/m"; empty: no limit). While Redis is unreachable the count is kept in this
    process."""
    return first_exceeded([counter(group, rate, who or acting_client(request))]) is not None


def hold_rate_exceeded(request) -> bool:
    """Count this hold request; True when the buyer is over BOOKING_HOLD_RATE or, after that, the
    client address over BOOKING_HOLD_RATE_PER_ADDRESS. A request the buyer's own rate refuses is
    not counted for the address, so one fast browser cannot use up a household's ceiling. All in
    one round trip to Redis."""
    rate = settings.BOOKING_HOLD_RATE
    address = acting_client(request)
    counters = []
    if buyer.get(request).owner is None:  # no (valid) buyer cookie: all such requests of an address
        anonymous = f"anon:{address or 'unknown'}"  # share one bucket, so throwing cookies
        counters.append(counter("booking.hold", rate, who=anonymous))  # away gains nothing
    owner = buyer.owner(request, create=True)  # signed: forging one needs SECRET_KEY
    counters.append(counter("booking.hold", rate, who=f"buyer:{owner}"))
    counters.append(counter("booking.hold.address", getattr(settings, "BOOKING_HOLD_RATE_PER_ADDRESS", ""), address))
    return first_exceeded(counters) is not None


def lookup_rate_exceeded(request) -> bool:
    """Count this booking lookup by reference and e-mail (Find my booking, the mail's link); True
    when the client is over BOOKING_LOOKUP_RATE: guessing references or e-mails stays slow."""
    return rate_exceeded(request, "booking.lookup", settings.BOOKING_LOOKUP_RATE)


# Which of a reservation's two counters refused it (reservation_mail_refused).
BY_ADDRESS, BY_EMAIL = "address", "email"


def reservation_mail_refused(request, email: str) -> tuple[str, int] | None:
    """Count this box-office reservation, which mails ``email`` at once (an address nobody has
    confirmed), under BOOKING_RESERVATION_MAIL_RATE and ..._PER_EMAIL (``mail_refused``)."""
    return mail_refused(
        request,
        group="booking.reservation_mail",
        rate=getattr(settings, "BOOKING_RESERVATION_MAIL_RATE", ""),
        rate_per_email=getattr(settings, "BOOKING_RESERVATION_MAIL_RATE_PER_EMAIL", ""),
        email=email,
    )


def sign_in_mail_refused(request, email: str) -> tuple[str, int] | None:
    """Count this request for a sign-in link under BOOKING_SIGN_IN_RATE and ..._PER_EMAIL."""
    return mail_refused(
        request,
        group="booking.sign_in",
        rate=getattr(settings, "BOOKING_SIGN_IN_RATE", ""),
        rate_per_email=getattr(settings, "BOOKING_SIGN_IN_RATE_PER_EMAIL", ""),
        email=email,
    )


def mail_refused(request, *, group: str, rate: str, rate_per_email: str, email: str) -> tuple[str, int] | None:
    """Count a request that mails ``email`` at once: None when within ``rate`` for the client
    address and, after that, ``rate_per_email`` for the e-mail address (from any client; its key
    is a hash, so Redis keeps no e-mail address), else which one refused it and the seconds of its
    window (the Retry-After). One round trip."""
    normalized = str(email or "").strip().lower()
    digest = hashlib.sha256(normalized.encode()).hexdigest()[:32]
    by_address = counter(group, rate, acting_client(request))
    by_email = counter(f"{group}.email", rate_per_email, who=f"email:{digest}")
    over = first_exceeded([by_address, by_email])
    if over is None:
        return None
    _key, _limit, seconds = (by_address, by_email)[over] or ("", 0, 0)
    return (BY_ADDRESS, BY_EMAIL)[over], seconds


def too_many_requests(request) -> HttpResponse:
    try:
        body: str = render_to_string(
            "booking/session.html#notice",
            {"notice": gettext(RATE_LIMITED_MESSAGE), "notice_level": "error"},
            request=request,
        )
    except TemplateDoesNotExist:
        body = gettext(RATE_LIMITED_MESSAGE)
    response = HttpResponse(body, status=429)
    response["Retry-After"] = "10"
    return response


class HoldRateLimitMiddleware:
    """Rate-limits holds (the per-client held-seats limit is the engine's: ``acting_client``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if request.method != "POST" or match is None or match.view_name not in HOLD_VIEWS:
            return None
        if hold_rate_exceeded(request):
            logger.info("hold rate limit hit by %s", acting_client(request))
            return too_many_requests(request)
        return None
