"""The order a cart becomes at checkout (the flow is ``payments.start``; the counter's sale too):
its booking reference and ticket codes, the buyer's details it carries, its document made from the
cart, and its one insert under the cart's ``orderRef`` (unique ``ref``: a retry finds it; a
reference another cart's order took gives the cart a new one, conditionally, so every finisher
agrees on one order).
"""

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from bson import ObjectId
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils import translation
from django.utils.translation import gettext
from pymongo.errors import DuplicateKeyError

from booking.core import clock, mongo, text_checks
from booking.core.domain import Cart, MailState, Order, OrderState
from booking.core.errors import InvalidRequest
from booking.core.localized import line_ticket_type, order_categories
from booking.core.names import name_keys
from booking.reports import marks
from booking.sales import offers, outbox, pricing
from booking.sales import orders as order_service

REF_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read out over the phone
REF_LENGTH = 8


def new_booking_ref() -> str:
    return "".join(secrets.choice(REF_ALPHABET) for _ in range(REF_LENGTH))


def new_ticket_code(ref: str) -> str:
    """The order's reference, then 16 random url-safe characters (96 bits): a door that scans it
    finds the order by its reference, the orders' shard key (docs/architecture.md, "Shard keys")."""
    return ref + secrets.token_urlsafe(12)


def ref_of_ticket(code: str) -> str | None:
    """The booking reference a ticket code starts with, or None when it cannot have one. Codes
    made before references led them are 24 random characters: one in a few hundred starts with
    eight reference letters by chance, so a lookup by the reference that misses must look again
    by the code alone."""
    prefix = code[:REF_LENGTH] if isinstance(code, str) else ""
    if len(prefix) == REF_LENGTH and all(ch in REF_ALPHABET for ch in prefix):
        return prefix
    return None


# Zero-width non-joiner and joiner: format characters that some scripts (Persian, Indic) and
# emoji sequences need to spell a name right. Every other invisible character is refused.
NAME_JOINERS = frozenset({"\u200c", "\u200d"})


def clean_customer(name: str, email: str) -> tuple[str, str]:
    raw_name = str(name or "")
    name = re.sub(r"\s+", " ", raw_name).strip()
    email = str(email or "").strip().lower()
    errors = {}
    if not name:
        errors["name"] = gettext("Please enter your name.")
    elif len(name) > 100:
        errors["name"] = gettext("Please use at most 100 characters for the name.")
    elif text_checks.has_invisible_characters(raw_name, allowed=NAME_JOINERS):
        errors["name"] = gettext("The name has invisible control or formatting characters; please type it again.")
    try:
        if len(email) > 254:
            raise ValidationError("too long")
        validate_email(email)
        if text_checks.address_problem(email):
            raise ValidationError("no mail can be sent there")
    except ValidationError:
        errors["email"] = gettext("Please enter a valid e-mail address.")
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    return name, email


def buyer_language(language: str | None = None) -> str:
    """The language a buyer's mails are written in: the one given if the site has it, else the
    active one (the request's: LocaleMiddleware), else the site's default."""
    wanted = language or translation.get_language() or settings.LANGUAGE_CODE
    try:
        return translation.get_supported_language_variant(wanted)
    except LookupError:
        return settings.LANGUAGE_CODE


def store_order(cart: Cart, *, make: Callable[[Cart, str], Order], fresh: bool = False) -> Order:
    """The cart's order, stored once: under the cart's ``orderRef`` (one read by the reference,
    one insert). ``make(cart, ref)``: the new order's document (payments: one waiting for its
    payment; the counter: its sale; a checkout begun before payments: ``new_order``, paid).
    ``fresh``: the reference was drawn just now by this request, so the insert goes first without
    the read (the unique indexes on ref and cartId still decide: a clash is read and handled as
    the read would have)."""
    ref = cart.get("orderRef")
    if ref is None:  # a cart from before carts carried their order's reference
        existing = mongo.orders().find_one({"cartId": cart["_id"]})
        if existing is not None:
            return existing
        ref = _next_order_ref(cart, None)
    for attempt in range(5):
        existing = None if fresh and attempt == 0 else mongo.orders().find_one({"ref": ref})
        if existing is not None:
            if existing["cartId"] == cart["_id"]:
                return existing  # stored already (a repeat, or a concurrent finisher)
            ref = _next_order_ref(cart, ref)  # another cart's order has this reference
            continue
        order = make(cart, ref)
        order.update(marks.stored(marks.sessions_of(order)))  # its sessions' sales reports count it
        order["webhookEvents"] = [outbox.webhook_event(outbox.ORDER_PLACED)]  # in the insert: never lost
        try:
            mongo.orders().insert_one(order)
            outbox.queue_webhook_events(outbox.ORDERS, order)
            return order
        except DuplicateKeyError as exc:
            if "ref" in str(exc.details or exc):
                continue  # a concurrent finisher stored it, or another order took the reference: read it
            existing = mongo.orders().find_one({"cartId": cart["_id"]})  # cart_unique (a replica set)
            if existing is not None:
                return existing
            raise
    raise RuntimeError("could not allocate a unique booking reference")


def _next_order_ref(cart: Cart, taken: str | None) -> str:
    """Give the cart a new order reference in place of ``taken`` (None: it has none yet); if
    another finisher changed it first, theirs is the one. Returns the cart's reference now."""
    mine = {"_id": cart["_id"], "owner": cart["owner"]}
    current = {"orderRef": taken} if taken else {"orderRef": {"$exists": False}}
    mongo.carts().update_one({**mine, **current}, {"$set": {"orderRef": new_booking_ref()}})
    return mongo.carts().find_one(mine, {"orderRef": 1})["orderRef"]


def new_order(cart: Cart, ref: str, sessions_read: Sequence[Mapping[str, Any]] | None = None) -> Order:
    """The order's document made from the cart: its lines (locked prices, promo shares, ticket
    types, ticket codes), its sessions, totals, the buyer's details, search keys and retention;
    paid, its confirmation mail pending (payments and the counter change what differs for them).
    ``sessions_read``: the cart's sessions with name, start, theaterName and layout.categories,
    when the caller has them already (payments.start does): no second read."""
    customer: Mapping[str, Any] = cart.get("customer") or {}
    amounts = pricing.cart_totals(cart)
    lines = [
        {
            "sessionId": item["sessionId"],
            "key": item["key"],
            "row": item["row"],
            "seat": item["seat"],
            "cat": item["cat"],
            "price": item["price"],  # locked at hold time
            **({"discount": off} if off else {}),  # the promo code's share of this line
            **line_ticket_type(offers.item_offer(item)),  # its code, name and condition as sold
            "ticket": new_ticket_code(ref),
            **({"house": True} if item.get("house") else {}),  # a house seat staff sold: blocked again when given back
            **({"wheelchair": True} if item.get("wheelchair") else {}),  # a wheelchair space: said on the ticket
            **({"subscription": item["subscription"]} if item.get("subscription") else {}),  # reported apart
        }
        for item, off in zip(cart["items"], amounts.line_discounts, strict=True)
    ]
    if sessions_read is None:
        sessions_read = list(
            mongo.sessions().find(
                {"_id": {"$in": list({i["sessionId"] for i in cart["items"]})}},
                {"name": 1, "nameDe": 1, "start": 1, "theaterName": 1, "theaterNameDe": 1, "layout.categories": 1},
            )
        )
    sessions = {s["_id"]: s for s in sessions_read}
    order: dict[str, Any] = {
        "_id": ObjectId(),
        "ref": ref,
        "cartId": cart["_id"],
        "owner": cart["owner"],
        "name": customer.get("name", ""),
        "email": customer.get("email", ""),
        "language": customer.get("language") or settings.LANGUAGE_CODE,  # its mails are written in it
        "lines": lines,
        "sessions": [
            {
                "_id": sid,
                "name": s.get("name"),
                **({"nameDe": s["nameDe"]} if s.get("nameDe") else {}),  # the staff's German title
                "start": s.get("start"),
                "theaterName": s.get("theaterName"),
                **({"theaterNameDe": s["theaterNameDe"]} if s.get("theaterNameDe") else {}),  # in German
                **order_categories(s.get("layout", {}).get("categories")),  # and their German names
            }
            for sid, s in sessions.items()
        ],
        "total": amounts.total,
        **({"subtotal": amounts.subtotal, "discount": amounts.discount} if amounts.discount else {}),
        # the code's terms as redeemed (a complimentary counter sale has a discount and no code)
        **({"promo": order_promo(cart["promo"])} if amounts.discount and cart.get("promo") else {}),
        "currency": settings.BOOKING_CURRENCY,
        "state": OrderState.PAID,
        "mail": MailState.PENDING,  # the confirmation e-mail task sets it sent; reconcile re-queues stragglers
        "createdOn": clock.now(),
        "nameKeys": name_keys(customer.get("name", "")),  # the staff search by name (booking/core/names.py)
    }
    if cart.get("subscription"):
        order["subscription"] = cart["subscription"]  # a subscription's order: its holders renew it
    order["purgeAt"] = order_service.purge_at(order["createdOn"])  # retention: the purge_ttl index
    # Its optional parts are spread in (``**``), which mypy cannot check against the TypedDict: the
    # one place an Order is made from parts, named once here.
    return cast(Order, order)


def order_promo(promo: dict) -> dict:
    """What an order keeps of its cart's promo code: the code and its terms as redeemed (so the
    receipt names it and check_invariants can work its discount out again after the cart is gone)."""
    return {k: v for k, v in promo.items() if k != "released"}
