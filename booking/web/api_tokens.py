"""API tokens: per theater, each with scopes, created and revoked by staff (control/api_tokens.py),
presented by the theater's other systems as ``Authorization: Bearer <token>`` (booking/api/).

A token is ``tk_`` and 43 random URL-safe characters (256 bits). Only the SHA-256 of it is stored
(collection ``api_tokens``, unique index on ``hash``): the token itself is shown once, when it is
made, and a copy of the database lets nobody call the API. A random secret of that size needs no
slow hash (nothing to guess), so one indexed read by the hash authenticates a call. Revoking sets
``revokedOn``: the document stays for the call log's names, and its hash no longer authenticates.
"""

import hashlib
import re
import secrets
from dataclasses import dataclass

from bson import ObjectId
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from pymongo import ReturnDocument

from booking.core import clock, mongo
from booking.core.errors import InvalidRequest, NotFound

PREFIX = "tk_"
TOKEN_RE = re.compile(r"^tk_[A-Za-z0-9_-]{43}$")
NAME_MAX_LENGTH = 80

# The scopes a token may carry; each endpoint asks for one (booking/api/auth.py).
READ_PERFORMANCES = "performances:read"  # theaters, performances, free seats and the seat map
READ_ORDERS = "orders:read"  # orders (without the customer's name and e-mail)
WRITE_ORDERS = "orders:write"  # reservations, complimentary orders, cancel, refund, paid at the box office
CHECK_IN = "tickets:checkin"  # check tickets in, as a door does
READ_REPORTS = "reports:read"  # sales per performance
READ_CUSTOMERS = "customers:read"  # the customer's name, e-mail and phone on orders
SCOPES = {
    READ_PERFORMANCES: _("Read performances and free seats"),
    READ_ORDERS: _("Read orders"),
    WRITE_ORDERS: _("Create, cancel and refund orders"),
    CHECK_IN: _("Check in tickets"),
    READ_REPORTS: _("Read sales reports"),
    READ_CUSTOMERS: _("Read customers' names and e-mail addresses"),
}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class NewToken:
    document: dict
    token: str  # the secret: shown once, never stored


def create_token(*, theater_id: ObjectId, name: str, scopes: list[str], by: str) -> NewToken:
    """A new token for the theater with these scopes; the secret is in the answer only."""
    errors: dict[str, str] = {}
    name = " ".join(str(name or "").split())
    if not name or len(name) > NAME_MAX_LENGTH or "\x00" in name:
        errors["name"] = gettext("Give the token a name of at most %(max)d characters.") % {"max": NAME_MAX_LENGTH}
    wanted = sorted(set(scopes or ()))
    if not wanted or any(scope not in SCOPES for scope in wanted):
        errors["scopes"] = gettext("Choose at least one of the scopes listed.")
    if mongo.theaters().find_one({"_id": theater_id}, {"_id": 1}) is None:
        errors["theater"] = gettext("No such theater.")
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    token = PREFIX + secrets.token_urlsafe(32)
    document = {
        "_id": ObjectId(),
        "theaterId": theater_id,
        "name": name,
        "scopes": wanted,
        "hash": token_hash(token),
        "hint": token[:7],  # enough for staff to tell two tokens apart, nothing to guess with
        "createdOn": clock.now(),
        "createdBy": str(by)[:150],
    }
    mongo.api_tokens().insert_one(document)
    return NewToken(document, token)


def revoke_token(*, token_id: ObjectId, by: str) -> dict:
    """The token stops working at once (its next call answers 401). Revoking twice is harmless."""
    found = mongo.api_tokens().find_one_and_update(
        {"_id": token_id, "revokedOn": {"$exists": False}},
        {"$set": {"revokedOn": clock.now(), "revokedBy": str(by)[:150]}},
        return_document=ReturnDocument.AFTER,
    )
    if found is None:
        found = mongo.api_tokens().find_one({"_id": token_id})
    if found is None:
        raise NotFound(gettext("No such API token."))
    return found


def authenticate(token: str | None) -> dict | None:
    """The live token this secret is, or None (malformed, unknown or revoked): one indexed read."""
    if not isinstance(token, str) or not TOKEN_RE.match(token):
        return None
    return mongo.api_tokens().find_one({"hash": token_hash(token), "revokedOn": {"$exists": False}})


def tokens(limit: int = 200) -> list[dict]:
    """The staff list: every token, newest first (revoked ones too, marked)."""
    return list(mongo.api_tokens().find({}, {"hash": 0}).sort([("createdOn", -1), ("_id", -1)]).limit(limit))


def get_token(token_id: ObjectId) -> dict | None:
    return mongo.api_tokens().find_one({"_id": token_id}, {"hash": 0})


def log_call(*, token: dict, method: str, path: str, status: int, millis: float) -> None:
    """One call in the call log (``api_calls``, kept 30 days by a TTL index)."""
    mongo.api_calls().insert_one(
        {
            "tokenId": token["_id"],
            "tokenName": token["name"],
            "theaterId": token["theaterId"],
            "method": method,
            "path": path[:300],
            "status": status,
            "ms": round(millis, 2),
            "at": clock.now(),
        }
    )


def recent_calls(token_id: ObjectId, limit: int = 50) -> list[dict]:
    return list(mongo.api_calls().find({"tokenId": token_id}).sort("at", -1).limit(limit))
