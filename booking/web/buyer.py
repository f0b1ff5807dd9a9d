"""Who is buying: the buyer's owner token and cart id, in a signed cookie of their own.

Kept out of Django's session so that a buyer's request reads no database row: a seat click spent
a fifth of its time loading the session. Django's database-backed session stays for staff logins
(which must be revocable) and is loaded only where it is still used.

The cookie is signed with SECRET_KEY (``django.core.signing``, salted for this use), HttpOnly,
SameSite=Lax and Secure whenever the session cookie is. It holds the buyer's random owner token
and their cart's id, nothing else; forging one needs SECRET_KEY, and a stolen one is worth what a
stolen session cookie is. A cart id alone opens nothing: every cart query also names the owner.
"""

import secrets
from dataclasses import dataclass

from bson import ObjectId
from django.conf import settings
from django.utils.cache import patch_vary_headers

COOKIE_NAME = "buyer"
SALT = "booking.web.buyer"
SEPARATOR = "|"  # owner tokens are "s:" + URL-safe base64; cart ids are hex
KEY_SEPARATOR = ","  # presale keys are URL-safe base64
MAX_PRESALE_KEYS = 8  # the newest are kept


@dataclass
class Buyer:
    owner: str | None = None
    cart_id: str | None = None
    changed: bool = False
    presale_keys: tuple[str, ...] = ()  # presales this buyer unlocked with an access code


def get(request) -> Buyer:
    buyer = getattr(request, "_buyer", None)
    if buyer is None:
        raw = request.get_signed_cookie(COOKIE_NAME, default="", salt=SALT, max_age=settings.SESSION_COOKIE_AGE)
        owner, _, rest = raw.partition(SEPARATOR)
        cart, _, keys = rest.partition(SEPARATOR)
        presales = tuple(filter(None, keys.split(KEY_SEPARATOR)))
        buyer = request._buyer = Buyer(owner or None, cart or None, presale_keys=presales)
    return buyer


def owner(request, *, create: bool = False) -> str | None:
    buyer = get(request)
    if buyer.owner is None and create:
        buyer.owner, buyer.changed = "s:" + secrets.token_urlsafe(18), True
    return buyer.owner


def cart_id(request) -> ObjectId | None:
    raw = get(request).cart_id
    return ObjectId(raw) if raw and ObjectId.is_valid(raw) else None


def set_cart(request, new_cart_id: ObjectId) -> None:
    buyer = get(request)
    if buyer.cart_id != str(new_cart_id):
        buyer.cart_id, buyer.changed = str(new_cart_id), True


def forget_cart(request) -> None:
    buyer = get(request)
    if buyer.cart_id is not None:
        buyer.cart_id, buyer.changed = None, True


def adopt(request, new_owner: str, new_cart_id: ObjectId) -> None:
    """The buyer takes over a cart made for them (a waiting-list offer's: sales/waiting_list.py):
    its owner token becomes theirs. A cart they had under their old token ends with its hold."""
    buyer = get(request)
    buyer.owner, buyer.cart_id, buyer.changed = new_owner, str(new_cart_id), True


def presale_keys(request) -> frozenset[str]:
    return frozenset(get(request).presale_keys)


def add_presale_key(request, key: str) -> None:
    """Remember a presale this buyer unlocked (an owner token is made if there is none yet)."""
    owner(request, create=True)
    buyer = get(request)
    if key not in buyer.presale_keys:
        buyer.presale_keys, buyer.changed = (*buyer.presale_keys, key)[-MAX_PRESALE_KEYS:], True


class BuyerCookieMiddleware:
    """Writes the buyer cookie when a view changed it (a first hold, a new cart, a cart ended)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        buyer = getattr(request, "_buyer", None)
        if buyer is not None and buyer.changed and buyer.owner:
            response.set_signed_cookie(
                COOKIE_NAME,
                f"{buyer.owner}{SEPARATOR}{buyer.cart_id or ''}"
                + (SEPARATOR + KEY_SEPARATOR.join(buyer.presale_keys) if buyer.presale_keys else ""),
                salt=SALT,
                max_age=settings.SESSION_COOKIE_AGE,
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        if buyer is not None:
            patch_vary_headers(response, ["Cookie"])  # the answer depended on who asked
        return response
