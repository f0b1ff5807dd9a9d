"""Whole pages kept for a moment, per process: the what's-on page, the busiest page of the site.

The page shows every performance's seats left, and those change with every hold. A version of the
listing would change as often during a sale (so the cache would miss exactly when it is busiest),
and reading it would cost a MongoDB round trip per request. So the page is kept for
``settings.BOOKING_WHATS_ON_CACHE_SECONDS`` (1 s) instead: everything it shows (names, times,
prices, seats left, a performance canceled or started meanwhile) is at most that old, and each
process builds a page at most once per interval per key, however many buyers ask. The seat map,
where seats are chosen and held, is never served from here: what's on only links to it. 0 turns
the cache off (the tests do, so a test sees its own writes at once; ``test_whats_on_cache.py``
turns it on).

A kept page carries ``CSRF_MARKER`` where each viewer's CSRF token goes (the header's language
switch posts a form), so one copy serves every viewer without a message to show.
"""

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH, get_token

from booking.core.lru import LRUCache
from booking.web.seatmap_html import CSRF_MARKER

# keys are (template, language, time zone, the request's path and query): a few dozen in practice;
# a flood of made-up queries only pushes pages out, each rebuilt on its next request
_pages: LRUCache[tuple, "KeptPage"] = LRUCache(128)


def monotonic() -> float:  # a function of its own: the tests move it forward
    return time.monotonic()


@dataclass(frozen=True)
class KeptPage:
    html: str  # with CSRF_MARKER for the viewer's token
    tag: str  # the page's digest: with the viewer's CSRF secret, its ETag
    built_at: float


def kept_page(key: tuple, build: Callable[[], str | None]) -> KeptPage | None:
    """The page for ``key``, built by ``build()`` (HTML with CSRF_MARKER, or None: not to be kept,
    e.g. an error) when this process has none younger than the cache's lifetime."""
    lifetime = settings.BOOKING_WHATS_ON_CACHE_SECONDS
    now = monotonic()
    page = _pages.get(key) if lifetime > 0 else None
    if page is not None and now - page.built_at < lifetime:
        return page
    html = build()
    if html is None:
        return None
    page = KeptPage(html, hashlib.blake2b(html.encode(), digest_size=12).hexdigest(), now)
    if lifetime > 0:
        _pages.put(key, page)
    return page


def etag(request, page: KeptPage) -> str:
    """Weak (each answer carries the viewer's own masked token), and tied to the viewer's CSRF
    secret: a browser whose cookie changed gets the page again, with a token that matches it."""
    secret = request.META.get("CSRF_COOKIE", "")
    return f'W/"{page.tag}-{hashlib.blake2b(secret.encode(), digest_size=6).hexdigest()}"'


def is_fresh(request, page: KeptPage) -> bool:
    """The browser's copy is this page (If-None-Match), with the CSRF cookie it still has."""
    if not request.META.get("CSRF_COOKIE"):
        return False
    asked = request.META.get("HTTP_IF_NONE_MATCH", "")
    return etag(request, page) in {tag.strip() for tag in asked.split(",")}


def for_viewer(request, page: KeptPage) -> str:
    return page.html.replace(CSRF_MARKER, viewer_token(request))


_CHAR_INDEX = {char: i for i, char in enumerate(CSRF_ALLOWED_CHARS)}
_UNBIASED = 256 - 256 % len(CSRF_ALLOWED_CHARS)  # bytes below this map evenly onto the characters


def viewer_token(request) -> str:
    """The viewer's CSRF token, as ``get_token`` makes it: their secret under a new random mask
    (no two answers carry the same token), but the mask drawn from one ``os.urandom`` call where
    Django draws each of its 32 characters with ``secrets.choice``: that was a fifth of a kept
    page's CPU. A viewer without a CSRF cookie yet gets ``get_token``'s, which sets the cookie; a
    viewer with one is not sent it again (it lasts CSRF_COOKIE_AGE; other pages renew it)."""
    secret = request.META.get("CSRF_COOKIE", "")
    if len(secret) != CSRF_SECRET_LENGTH or request.META.get("CSRF_COOKIE_NEEDS_UPDATE"):
        return get_token(request)
    mask = _random_chars(CSRF_SECRET_LENGTH)
    count = len(CSRF_ALLOWED_CHARS)
    return mask + "".join(
        CSRF_ALLOWED_CHARS[(_CHAR_INDEX[s] + _CHAR_INDEX[m]) % count] for s, m in zip(secret, mask, strict=True)
    )


def _random_chars(length: int) -> str:
    chars: list[str] = []
    while len(chars) < length:
        chars += [CSRF_ALLOWED_CHARS[b % len(CSRF_ALLOWED_CHARS)] for b in os.urandom(2 * length) if b < _UNBIASED]
    return "".join(chars[:length])


def clear() -> None:
    _pages.clear()
