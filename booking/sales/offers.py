"""Ticket types and the price table: who pays what for a seat.

A theater lists its ticket types (``ticketTypes: [{code, name, nameDe?, description,
descriptionDe?, companion?}]``: ``description`` is the type's condition, what its holder must be or
show, and ``…De`` the German texts, booking/core/localized.py); "Full price" (code ``full``) is always one
of them and is the session's ``prices`` column, as
before. A session's price table is ``prices`` (full price per category) and ``typePrices: {type:
{cat: cents}}`` for the other types; a missing cell means that type is not offered in that
category. ``priceRev`` is bumped by every change of the table, and the hold's filter names it.

The hold locks the price: each cart item keeps its ``ticketType``, its ``price`` and the row of the
table for its category as it was at hold time (``offers``). Choosing another type later prices it
from that row, never from the table as it is now, so a staff change during a hold never changes
what the buyer was shown. The rules on types in one cart (companion only with a wheelchair space,
at most N of a type) are ``ticket_rule_breach``: it refuses a choice, decides which types the cart
offers (``choosable_offers``) and is run again at checkout.
"""

import re
from collections.abc import Mapping
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext, ngettext
from pymongo import ReturnDocument

from booking.core import clock, mongo
from booking.core.domain import Cart, CartItem, CartState, live_cart_filter
from booking.core.errors import CartExpired, Conflict, InvalidRequest, NotFound
from booking.core.localized import FULL_PRICE_NAME, ticket_type_name, type_texts
from booking.sales import listings, selectors
from booking.sales.session_prices import clean_prices

FULL = "full"
FULL_PRICE = {"code": FULL, "name": FULL_PRICE_NAME, "description": ""}  # shown translated
CODE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,19}$")


def ticket_types(doc: Mapping[str, Any] | None) -> list[dict]:
    """A theater's or session's ticket types; none stored: "Full price" only."""
    return list((doc or {}).get("ticketTypes") or [FULL_PRICE])


def clean_ticket_types(types: list[dict]) -> list[dict]:
    """Staff input -> stored ticket types. Unique codes, a name each, "full" present and first."""
    cleaned, seen = [], set()
    for raw in types:
        code = str(raw.get("code") or "").strip().lower()
        name = " ".join(str(raw.get("name") or "").split())
        name_de = " ".join(str(raw.get("nameDe") or "").split())
        description = " ".join(str(raw.get("description") or "").split())
        description_de = " ".join(str(raw.get("descriptionDe") or "").split())
        if not CODE_RE.match(code):
            raise InvalidRequest(
                f"'{code[:20]}' is not a ticket type code: use up to 20 lowercase letters, digits, - or _.",
                fields={"code": "Use up to 20 lowercase letters, digits, - or _."},
            )
        if code in seen:
            raise InvalidRequest(f"The code '{code}' is used twice.", fields={"code": "Used twice."})
        if not name or len(name) > 60:
            raise InvalidRequest(f"Give '{code}' a name of at most 60 characters.", fields={"name": "1-60 characters."})
        if len(name_de) > 60:
            raise InvalidRequest(f"The German name of '{code}' is too long (at most 60 characters).")
        if len(description) > 300 or len(description_de) > 300:
            raise InvalidRequest(f"The condition of '{code}' is too long (at most 300 characters).")
        seen.add(code)
        entry: dict[str, str | bool] = {"code": code, "name": name}
        if name_de:
            entry["nameDe"] = name_de
        entry["description"] = description
        if description_de:
            entry["descriptionDe"] = description_de
        if raw.get("companion"):
            if code == FULL:
                raise InvalidRequest(gettext("Full price cannot be a companion ticket."))
            entry["companion"] = True
        cleaned.append(entry)
    if FULL not in seen:
        cleaned.insert(0, dict(FULL_PRICE))
    cleaned.sort(key=lambda t: t["code"] != FULL)  # full price first, the rest as given
    if len(cleaned) > 20:
        raise InvalidRequest(gettext("At most 20 ticket types per theater."))
    return cleaned


def clean_type_prices(type_prices: dict, types: list[dict], categories: set[str]) -> dict[str, dict[str, int]]:
    """The price table's other columns: known types and categories, whole cents >= 0."""
    known = {t["code"] for t in types} - {FULL}
    cleaned: dict[str, dict[str, int]] = {}
    for code, row in (type_prices or {}).items():
        if code not in known:
            raise InvalidRequest(f"Unknown ticket type '{str(code)[:20]}'.")
        for cat, cents in (row or {}).items():
            if cat not in categories:
                raise InvalidRequest(f"Unknown seat category '{str(cat)[:5]}'.")
            if cents is None:
                continue  # not offered
            if not isinstance(cents, int) or isinstance(cents, bool) or not 0 <= cents <= 10_000_000:
                raise InvalidRequest(f"The price of {code} in category {cat} must be between 0 and 100,000.")
            cleaned.setdefault(code, {})[cat] = cents
    return cleaned


def offers_for(session: Mapping[str, Any], cat: str) -> list[dict]:
    """The row of the price table for one category: [{code, name, nameDe?, description?,
    descriptionDe?, price, companion?}] of the types offered there, full price first. This is what
    a cart item keeps (``offers``)."""
    row = []
    type_prices = session.get("typePrices") or {}
    for t in ticket_types(session):
        price = session["prices"].get(cat) if t["code"] == FULL else (type_prices.get(t["code"]) or {}).get(cat)
        if price is None:
            continue
        offer = {"code": t["code"], **type_texts(t), "price": price}
        if t.get("companion"):
            offer["companion"] = True
        row.append(offer)
    return row


def item_offers(item: CartItem) -> list[dict]:
    """The offers an item was held with (an item held before ticket types: full price only)."""
    return item.get("offers") or [{"code": FULL, "name": FULL_PRICE["name"], "price": item["price"]}]


def item_type(item: Mapping[str, Any]) -> str:  # a CartItem, or an order line
    return item.get("ticketType") or FULL


def item_offer(item: CartItem) -> dict:
    """The offer of the item's ticket type, as kept at hold time."""
    code = item_type(item)
    return next((o for o in item_offers(item) if o["code"] == code), {"code": code, "name": code})


def _is_companion(item: CartItem) -> bool:
    return bool(item_offer(item).get("companion"))


def max_per_type() -> dict[str, int]:
    """BOOKING_MAX_PER_TICKET_TYPE: {type code: at most that many per order} (optional)."""
    return dict(getattr(settings, "BOOKING_MAX_PER_TICKET_TYPE", {}) or {})


def ticket_rule_breach(items: list[CartItem]) -> InvalidRequest | None:
    """What is wrong with the ticket types of one cart (an InvalidRequest with the buyer's message),
    or None. A companion ticket is for someone accompanying a wheelchair user: not on the
    wheelchair space itself, and at most one per wheelchair space in the same booking; at most
    ``BOOKING_MAX_PER_TICKET_TYPE[code]`` tickets of a type. Choosing a type, the types the cart
    offers (``choosable_offers``) and checkout all ask this one function."""
    if any(i.get("wheelchair") and _is_companion(i) for i in items):
        return InvalidRequest(
            gettext("A wheelchair space cannot be a companion ticket; the companion sits beside it."),
            fields={"ticket_type": gettext("Not for a wheelchair space.")},
        )
    companions = sum(1 for i in items if _is_companion(i))
    spaces = sum(1 for i in items if i.get("wheelchair"))
    if companions > spaces:
        return InvalidRequest(
            ngettext(
                "A companion ticket is only available together with a wheelchair space in the same booking "
                "(one companion per space; you have %(spaces)d wheelchair space).",
                "A companion ticket is only available together with a wheelchair space in the same booking "
                "(one companion per space; you have %(spaces)d wheelchair spaces).",
                spaces,
            )
            % {"spaces": spaces},
            fields={"ticket_type": gettext("Companion tickets need a wheelchair space in the same booking.")},
        )
    counts: dict[str, int] = {}
    for item in items:
        counts[item_type(item)] = counts.get(item_type(item), 0) + 1
    for code, limit in max_per_type().items():
        if counts.get(code, 0) > limit:
            name = next((ticket_type_name(item_offer(i)) for i in items if item_type(i) == code), code)
            return InvalidRequest(
                gettext("At most %(limit)d “%(name)s” tickets per booking.") % {"limit": limit, "name": name}
            )
    return None


def check_ticket_rules(items: list[CartItem]) -> None:
    """Raise ``ticket_rule_breach``'s InvalidRequest if the cart's ticket types break a rule."""
    breach = ticket_rule_breach(items)
    if breach is not None:
        raise breach


def _with_type(items: list[CartItem], item: CartItem, offer: dict) -> list[CartItem]:
    """The cart's items as they would be with ``item`` of ``offer``'s type."""
    changed: CartItem = {**item, "ticketType": offer["code"], "price": offer["price"]}
    return [changed if i is item else i for i in items]


def choosable_offers(items: list[CartItem], item: CartItem) -> list[dict]:
    """The offers of one of the cart's items that the buyer may choose now: its own type, and each
    other one ``ticket_rule_breach`` lets through with the rest of the cart as it is (no companion
    ticket without a wheelchair space, none past a type's limit)."""
    own = item_type(item)
    return [o for o in item_offers(item) if o["code"] == own or ticket_rule_breach(_with_type(items, item, o)) is None]


def choose_ticket_type(owner: str, cart_id: ObjectId | None, session_id: ObjectId, key: str, code: str) -> Cart:
    """The buyer picks a ticket type for one held seat: priced from the row kept at hold time.
    One conditional update (cart live, the item still of the type and price read). Returns the cart."""
    now = clock.now()
    cart = selectors.get_cart(owner, cart_id) if cart_id else None
    if cart is None or cart["owner"] != owner:
        raise NotFound(gettext("You have no seats on hold."))
    if cart["state"] != CartState.ACTIVE or cart["expiresAt"] <= now:
        raise CartExpired(gettext("Your hold has ended. Please choose your seats again."))
    item = next((i for i in cart["items"] if i["sessionId"] == session_id and i["key"] == key), None)
    if item is None:
        raise InvalidRequest(gettext("That seat is not in your cart."))
    offer = next((o for o in item_offers(item) if o["code"] == code), None)
    if offer is None:
        raise InvalidRequest(
            gettext("That ticket type is not offered for this seat."), fields={"ticket_type": gettext("Not offered.")}
        )
    if item_type(item) == code:
        return cart
    check_ticket_rules(_with_type(cart["items"], item, offer))
    updated = mongo.carts().find_one_and_update(
        {
            "_id": cart["_id"],
            "owner": owner,
            **live_cart_filter(now),
            "items": {
                "$elemMatch": {
                    "sessionId": session_id,
                    "key": key,
                    "ticketType": item.get("ticketType"),  # None matches an item held before types
                    "price": item["price"],
                }
            },
        },
        {
            "$set": {"items.$[i].ticketType": code, "items.$[i].price": offer["price"], "modifiedOn": now},
            "$inc": {"total": offer["price"] - item["price"]},
        },
        array_filters=[{"i.sessionId": session_id, "i.key": key}],
        return_document=ReturnDocument.AFTER,
    )
    if updated is None:
        raise Conflict(gettext("Your cart changed meanwhile; please look again."))
    return updated


# --- staff: a theater's ticket types, a session's price table ---


def set_theater_ticket_types(theater_id: ObjectId, types: list[dict]) -> dict:
    """Staff edit a theater's ticket types. Sessions keep theirs until their price table is saved."""
    cleaned = clean_ticket_types(types)
    theater = mongo.theaters().find_one_and_update(
        {"_id": theater_id},
        {"$set": {"ticketTypes": cleaned, "modifiedOn": clock.now()}},
        return_document=ReturnDocument.AFTER,
    )
    if theater is None:
        raise NotFound(gettext("No such theater."))
    return theater


def set_price_table(session_id: ObjectId, prices: dict, type_prices: dict) -> dict:
    """Staff save a session's price table: the full-price column (``prices``) and the other types'
    columns; the session takes the theater's ticket types as they are now. Bumps ``priceRev``, so
    a hold priced by the old table misses and prices again; items already held keep their prices."""
    session = mongo.sessions().find_one({"_id": session_id}, {"layout": 1, "theaterId": 1, "status": 1})
    if session is None:
        raise NotFound(gettext("No such session."))
    theater = mongo.theaters().find_one({"_id": session.get("theaterId")}, {"ticketTypes": 1})
    types = ticket_types(theater)
    full = clean_prices(prices, session["layout"])
    others = clean_type_prices(type_prices, types, set(full))
    updated = mongo.sessions().find_one_and_update(
        {"_id": session_id},
        listings.due(
            {
                "$set": {"prices": full, "typePrices": others, "ticketTypes": types},
                "$inc": {"priceRev": 1, "version": 1},
            }
        ),
        projection={"seats": 0, "reservations": 0},
        return_document=ReturnDocument.AFTER,
    )
    if updated is None:
        raise NotFound(gettext("No such session."))
    listings.refresh([session_id])
    return updated
