"""Checkout: a cart becomes an order. Since payments, ``checkout`` starts the payment
(services/payments.py: the order waits for its money and the seats stay held until it comes);
what follows here is the flow from before payments, kept to finish carts it began
(``checking_out``) and for its helpers (customer details, references, ticket codes):

1. cart active -> checking_out (only while its hold has not ended), with the customer's details
   and the booking reference its order will have (``orderRef``)
2. the order is stored under that reference (unique: a retry finds the same order; a reference
   another cart's order took already gives the cart a new one, conditionally, so all finishers
   agree)
3. per session: the cart's held seats become sold (the filter proves the hold is still the cart's)
4. cart -> done

The order is written before the seats are sold, so a sold seat always has its order. A crash
anywhere after step 1 is finished by ``finish_checkout`` (reconcile calls it), never left half
done: it repeats the missing steps, each of which is safe to repeat.
"""

import logging
import re
import secrets

from bson import ObjectId
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils import translation
from django.utils.translation import gettext, gettext_noop
from pymongo.errors import DuplicateKeyError

from .. import clock, faults, mongo
from ..domain import SEAT_OWNING_ORDER_STATES, CartState, MailState, OrderState
from ..errors import CheckoutFailed, InvalidRequest, NotFound
from ..localized import line_ticket_type, order_categories
from ..names import name_keys
from ..reports import marks
from ..seat_grid import SOLD, parse_seat_key
from . import carts as cart_service
from . import notifications, offers, pricing, promos, reservations
from . import orders as order_service

logger = logging.getLogger("booking.checkout")

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
    elif notifications.has_invisible_characters(raw_name, allowed=NAME_JOINERS):
        errors["name"] = gettext("The name has invisible control or formatting characters; please type it again.")
    try:
        if len(email) > 254:
            raise ValidationError("too long")
        validate_email(email)
        if notifications.address_problem(email):
            raise ValidationError("no mail can be sent there")
    except ValidationError:
        errors["email"] = gettext("Please enter a valid e-mail address.")
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    return name, email


# Stored on a failed order in English (the source language) and translated when shown.
FAILED_TO_BOOK = gettext_noop("Your seats could not be booked.")
HOLD_ENDED_BEFORE_PAYMENT = gettext_noop("Your hold on some seats ended before payment completed; nothing was charged.")


def buyer_language(language: str | None = None) -> str:
    """The language a buyer's mails are written in: the one given if the site has it, else the
    active one (the request's: LocaleMiddleware), else the site's default."""
    wanted = language or translation.get_language() or settings.LANGUAGE_CODE
    try:
        return translation.get_supported_language_variant(wanted)
    except LookupError:
        return settings.LANGUAGE_CODE


def checkout(owner: str, cart_id: ObjectId | None, name: str, email: str, method: str = "card") -> dict:
    """Buy everything in the owner's cart: the order waits for its payment (``method``: "card" or
    "box_office"; services/payments.py). Submitting twice returns the same order."""
    from . import payments

    return payments.start(owner, cart_id, name, email, method)


def finish_checkout(cart_id: ObjectId, owner: str | None = None) -> dict:
    """Steps 2-4 for a cart in checking_out; each is safe to repeat. Returns the order.
    ``owner``: the cart's, when known (carts are sharded on it: the reads and writes of the cart
    go to one shard)."""
    cart = mongo.carts().find_one({"_id": cart_id, **({"owner": owner} if owner else {})})
    if cart is None:
        raise NotFound(gettext("No such cart."))
    order = _store_order(cart)
    if cart["state"] == CartState.DONE:
        return order
    if cart["state"] != CartState.CHECKING_OUT:
        raise CheckoutFailed(gettext("This booking was not completed."))
    if order["state"] == OrderState.FAILED:
        _end_cart(cart, CartState.CANCELED, order)
        raise CheckoutFailed(gettext(order.get("failure") or FAILED_TO_BOOK))
    faults.point("checkout.after_order")
    by_session: dict[ObjectId, set[str]] = {}
    for item in cart["items"]:
        by_session.setdefault(item["sessionId"], set()).add(item["key"])
    try:
        for session_id, keys in by_session.items():
            _sell(session_id, cart_id, keys, order)
            faults.point("checkout.after_sell")
    except reservations.HoldLost:
        order = _fail_order(order, HOLD_ENDED_BEFORE_PAYMENT)
        order_service.release_order_seats(order)  # seats already sold in another session go back
        reservations.release_all(cart_id, session_ids=cart_service.session_ids_of(cart))
        _end_cart(cart, CartState.CANCELED, order)
        promos.release_for_cart(cart_id, owner=cart["owner"])
        raise CheckoutFailed(gettext(order["failure"])) from None
    if _end_cart(cart, CartState.DONE, order):
        logger.info("checkout cart=%s order=%s seats=%d", cart_id, order["ref"], len(cart["items"]))
        notifications.order_confirmed(order["_id"])  # only now that the order is stored and sold
    return order


def _store_order(cart: dict, make=None, fresh: bool = False) -> dict:
    """The cart's order, stored once: under the cart's ``orderRef`` (one read by the reference,
    one insert). ``make(cart, ref)``: the new order's document (payments: one waiting for its
    payment; default: this module's, paid at once). ``fresh``: the reference was drawn just now
    by this request, so the insert goes first without the read (the unique indexes on ref and
    cartId still decide: a clash is read and handled as the read would have)."""
    make = make or _new_order
    ref = cart.get("orderRef")
    if ref is None:  # began checking out before carts carried their order's reference
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
        try:
            mongo.orders().insert_one(order)
            return order
        except DuplicateKeyError as exc:
            if "ref" in str(exc.details or exc):
                continue  # a concurrent finisher stored it, or another order took the reference: read it
            existing = mongo.orders().find_one({"cartId": cart["_id"]})  # cart_unique (a replica set)
            if existing is not None:
                return existing
            raise
    raise RuntimeError("could not allocate a unique booking reference")


def _next_order_ref(cart: dict, taken: str | None) -> str:
    """Give the cart a new order reference in place of ``taken`` (None: it has none yet); if
    another finisher changed it first, theirs is the one. Returns the cart's reference now."""
    mine = {"_id": cart["_id"], "owner": cart["owner"]}
    current = {"orderRef": taken} if taken else {"orderRef": {"$exists": False}}
    mongo.carts().update_one({**mine, **current}, {"$set": {"orderRef": new_booking_ref()}})
    return mongo.carts().find_one(mine, {"orderRef": 1})["orderRef"]


def _new_order(cart: dict, ref: str, sessions_read: list[dict] | None = None) -> dict:
    """``sessions_read``: the cart's sessions with name, start, theaterName and layout.categories,
    when the caller has them already (payments.start does): no second read."""
    customer = cart.get("customer") or {}
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
    order = {
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
        "nameKeys": name_keys(customer.get("name", "")),  # the staff search by name (booking/names.py)
    }
    order["purgeAt"] = order_service.purge_at(order["createdOn"])  # retention: the purge_ttl index
    return order


def order_promo(promo: dict) -> dict:
    """What an order keeps of its cart's promo code: the code and its terms as redeemed (so the
    receipt names it and check_invariants can work its discount out again after the cart is gone)."""
    return {k: v for k, v in promo.items() if k != "released"}


def _sell(session_id: ObjectId, cart_id: ObjectId, keys: set[str], order: dict) -> None:
    settled = reservations.settle(session_id, cart_id, sell=keys)
    if settled.found:
        return
    # No hold left: either this checkout already sold the seats (a repeat after a crash), or the
    # hold is gone. The seats are ours iff they are sold and no other paid order has them.
    session = mongo.sessions().find_one({"_id": session_id}, {"seats": 1})
    sold = session is not None and all(session["seats"][r][c] == SOLD for r, c in (parse_seat_key(k) for k in keys))
    if sold:
        others = mongo.orders().count_documents(
            {
                "_id": {"$ne": order["_id"]},
                "state": {"$in": list(SEAT_OWNING_ORDER_STATES)},
                "lines": {"$elemMatch": {"sessionId": session_id, "key": {"$in": sorted(keys)}}},
            }
        )
        if not others:
            return
    raise reservations.HoldLost(sorted(keys))


def _fail_order(order: dict, reason: str) -> dict:
    mongo.orders().update_one(
        {"_id": order["_id"], "ref": order["ref"], "state": OrderState.PAID},
        {
            "$set": {"state": OrderState.FAILED, "failure": reason, "seatsReleased": False},
            "$push": marks.push(marks.sessions_of(order)),
        },
    )
    return {**order, "state": OrderState.FAILED, "failure": reason, "seatsReleased": False}


def _end_cart(cart: dict, state: CartState, order: dict) -> bool:
    """Returns True for the one call that moved the cart (so follow-ups happen once)."""
    result = mongo.carts().update_one(
        {"_id": cart["_id"], "owner": cart["owner"], "state": CartState.CHECKING_OUT},
        {"$set": {"state": state, "orderId": order["_id"], "endedOn": clock.now()}},
    )
    return bool(result.modified_count)
