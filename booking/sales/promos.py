"""Promo codes and vouchers.

A code is a document in ``promo_codes``::

    {_id, code (unique, upper case), kind: "percent" | "amount" | "price", value,
     sessionId? | series?: {name, theaterId}, ticketTypes?: [...], categories?: [...],
     validFrom?, validUntil?, cap, uses, perOrder?, batch?, createdOn, modifiedOn?}

Scope: every session (neither), one session (``sessionId``) or a series: every session of the
same show (name) in the same theater (``series``; resolved when the code is redeemed, into the
``sessionIds`` the cart records, so seats held later in another performance of the show count).

``percent``: value % off each eligible ticket; ``amount``: value cents off each eligible ticket
(never below zero); ``price``: each eligible ticket costs value cents. ``perOrder``: at most that
many tickets of one order are discounted. A voucher batch is N codes with cap 1 and one ``batch``.

Redeeming is the same discipline as seats: one conditional update on the code's document
(``uses < cap`` and still valid) takes a use, then the cart records the code (conditional: live,
no code yet); if the cart write misses, the use is given back at once. A use is given back again
when the cart expires or is canceled, when its checkout fails and when its order is canceled,
each exactly once, in three writes a crash can stop anywhere:

1. the cart's ``promo.released`` goes from false (set when the code was redeemed) to ``"giving"``,
   conditionally: one caller wins, the others stop;
2. the code's ``uses`` goes down by one, conditional on the cart not being in the code's
   ``returnedFor`` (its last ``RETURNED_KEPT`` carts, pushed in the same write): done again, it
   changes nothing;
3. ``promo.released`` becomes true.

Reconcile (``finish_give_backs``) finishes carts left at ``"giving"`` and gives the use back for
ended carts that can never be paid (expired or canceled, no order) still at false: a crash right
after a cart's end write, before its give-back began. A code that no longer applies to anything in the cart when it is
checked out (its seats were removed) gives its use back the same way, step 1 in the checkout's
cart write (``give_back_unused``). A code is never used more than its cap, and
no use is lost to a crash after the redeem. (Left: a crash between the redeem's ``$inc`` and the
cart's write, and between ``remove_code``'s two writes, still loses that use.)
"""

import csv
import io
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId
from django.utils.translation import gettext, gettext_noop
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from booking.core import clock, faults, mongo
from booking.core.domain import Cart, CartState, live_cart_filter
from booking.core.errors import CartExpired, InvalidRequest, NotFound
from booking.sales import offers

KINDS = ("percent", "amount", "price")
CODE_RE = re.compile(r"^[A-Z0-9-]{4,32}$")
VOUCHER_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
# Unknown and used-up codes get the same answer (codes are not enumerable).
NOT_VALID = gettext_noop("This code is not valid or has been used up.")
GIVING = "giving"  # promo.released while its use is being given back
RETURNED_KEPT = 1000  # carts a code remembers having given a use back for (the give-back's idempotency)
FINISH_BATCH = 200  # carts reconcile finishes per pass
TERMS = ("kind", "value", "sessionId", "series", "ticketTypes", "categories", "perOrder")
# The optional terms a staff edit may clear again ($unset)
OPTIONAL_TERMS = ("sessionId", "series", "ticketTypes", "categories", "validFrom", "validUntil", "perOrder")


def normalize(text) -> str:
    return re.sub(r"\s+", "", str(text or "")).upper()[:40]


def clean_terms(
    kind: str,
    value: int,
    *,
    session_id: ObjectId | None = None,
    series: dict | None = None,
    ticket_types=None,
    categories=None,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    cap: int = 1,
    per_order: int | None = None,
) -> dict:
    if kind not in KINDS:
        raise InvalidRequest(
            gettext("Choose percent off, amount off or a fixed price."), fields={"kind": gettext("Unknown kind.")}
        )
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRequest(
            gettext("The value must be a whole number, zero or more."), fields={"value": gettext("Zero or more.")}
        )
    if kind == "percent" and not 0 < value <= 100:
        raise InvalidRequest(gettext("A percentage must be between 1 and 100."), fields={"value": gettext("1 to 100.")})
    if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= 1_000_000:
        raise InvalidRequest(
            gettext("The uses cap must be between 1 and 1,000,000."), fields={"cap": gettext("1 to 1,000,000.")}
        )
    if per_order is not None and (not isinstance(per_order, int) or per_order < 1):
        raise InvalidRequest(
            gettext("The per-order cap must be 1 or more (or empty)."), fields={"per_order": gettext("1 or more.")}
        )
    if session_id is not None and series is not None:
        raise InvalidRequest(
            gettext("Choose one session or a series, not both."), fields={"scope": gettext("One session or a series.")}
        )
    if series is not None and not (series.get("name") and series.get("theaterId")):
        raise InvalidRequest(
            gettext("A series needs its show and theater."), fields={"scope": gettext("Choose a session of the show.")}
        )
    if valid_from and valid_until and valid_until <= valid_from:
        raise InvalidRequest(
            gettext("“Valid until” must be after “valid from”."), fields={"valid_until": gettext("After valid from.")}
        )
    terms: dict = {"kind": kind, "value": value, "cap": cap, "uses": 0}
    optional = {
        "sessionId": session_id,
        "series": {"name": series["name"], "theaterId": series["theaterId"]} if series else None,
        "ticketTypes": sorted(set(ticket_types)) if ticket_types else None,
        "categories": sorted(set(categories)) if categories else None,
        "validFrom": valid_from,
        "validUntil": valid_until,
        "perOrder": per_order,
    }
    terms.update({k: v for k, v in optional.items() if v is not None})
    return terms


def create_code(code: str, kind: str, value: int, **terms) -> dict:
    text = normalize(code)
    if not CODE_RE.match(text):
        raise InvalidRequest(
            gettext("A code has 4 to 32 letters, digits or dashes."), fields={"code": gettext("4-32 A-Z, 0-9, -.")}
        )
    doc = {"_id": ObjectId(), "code": text, **clean_terms(kind, value, **terms), "createdOn": clock.now()}
    try:
        mongo.promo_codes().insert_one(doc)
    except DuplicateKeyError:
        raise InvalidRequest(
            gettext("That code exists already."), fields={"code": gettext("Exists already.")}
        ) from None
    return doc


def generate_batch(count: int, kind: str, value: int, *, prefix: str = "", **terms) -> str:
    """N single-use voucher codes sharing their terms; returns the batch id (``batch_csv``)."""
    if not isinstance(count, int) or not 1 <= count <= 10_000:
        raise InvalidRequest(gettext("Generate between 1 and 10,000 vouchers."), fields={"count": "1 to 10,000."})
    prefix = normalize(prefix)[:8]
    terms = clean_terms(kind, value, **{**terms, "cap": 1})
    batch = secrets.token_hex(6)
    now = clock.now()
    docs = [
        {
            "_id": ObjectId(),
            "code": prefix + "".join(secrets.choice(VOUCHER_ALPHABET) for _ in range(12)),
            **terms,
            "batch": batch,
            "createdOn": now,
        }
        for _ in range(count)
    ]
    mongo.promo_codes().insert_many(docs)  # 31^12 codes: a clash is not worth a retry loop
    return batch


def batch_csv(batch: str) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["code", "kind", "value", "valid_from", "valid_until", "used"])
    for doc in mongo.promo_codes().find({"batch": batch}).sort("code", 1):
        writer.writerow(
            [
                doc["code"],
                doc["kind"],
                doc["value"],
                doc.get("validFrom", ""),
                doc.get("validUntil", ""),
                "yes" if doc.get("uses") else "no",
            ]
        )
    return out.getvalue()


def series_of(session_id: ObjectId) -> dict:
    """The series a session belongs to: every session of its show (name) in its theater."""
    session = mongo.sessions().find_one({"_id": session_id}, {"name": 1, "theaterId": 1})
    if session is None:
        raise InvalidRequest(gettext("No such session."), fields={"session": gettext("No such session.")})
    return {"name": session["name"], "theaterId": session["theaterId"]}


def series_session_ids(series: dict, now: datetime) -> list[ObjectId]:
    """The sessions of a series that can still be sold (not started: a cart holds no other)."""
    query = {"theaterId": series["theaterId"], "start": {"$gt": now}, "name": series["name"]}
    return [s["_id"] for s in mongo.sessions().find(query, {"_id": 1}).sort([("start", 1), ("_id", 1)]).limit(1000)]


def update_code(code_id: ObjectId, kind: str, value: int, **terms) -> dict:
    """Staff change a code's terms. Carts that redeemed it keep the terms they recorded. One
    conditional update: the cap never goes below the uses taken (``uses <= cap`` in the filter).
    Vouchers of a batch stay single-use and are not edited one by one."""
    cleaned = clean_terms(kind, value, **terms)
    cleaned.pop("uses")
    unset = {k: "" for k in OPTIONAL_TERMS if k not in cleaned}
    update: dict = {"$set": {**cleaned, "modifiedOn": clock.now()}}
    if unset:
        update["$unset"] = unset
    updated = mongo.promo_codes().find_one_and_update(
        {"_id": code_id, "batch": {"$exists": False}, "uses": {"$lte": cleaned["cap"]}},
        update,
        return_document=ReturnDocument.AFTER,
    )
    if updated is not None:
        return updated
    current = mongo.promo_codes().find_one({"_id": code_id}, {"uses": 1, "batch": 1})
    if current is None:
        raise NotFound(gettext("No such promo code."))
    if current.get("batch"):
        raise InvalidRequest(gettext("A voucher of a batch cannot be edited on its own."))
    message = gettext("The code was used %(uses)s times already: the cap cannot be lower.") % {"uses": current["uses"]}
    raise InvalidRequest(message, fields={"cap": message})


# --- what a code takes off (pricing.totals calls this) ---


def _eligible(item: Mapping[str, Any], promo: dict) -> bool:
    if promo.get("sessionId") and item["sessionId"] != promo["sessionId"]:
        return False
    if "sessionIds" in promo and item["sessionId"] not in promo["sessionIds"]:
        return False  # a series, as resolved when the code was redeemed
    if promo.get("ticketTypes") and offers.item_type(item) not in promo["ticketTypes"]:
        return False
    return not (promo.get("categories") and item["cat"] not in promo["categories"])


def line_discounts(items: Sequence[Mapping[str, Any]], promo: dict) -> list[int]:
    """Per item, what the code takes off it (the code's terms as the cart recorded them)."""
    discounts = [0] * len(items)
    left = promo.get("perOrder") or len(items)
    for n, item in enumerate(items):
        if left <= 0:
            break
        if not _eligible(item, promo):
            continue
        price = item["price"]
        if promo["kind"] == "percent":
            off = price * promo["value"] // 100
        elif promo["kind"] == "amount":
            off = min(promo["value"], price)
        else:
            off = max(price - promo["value"], 0)
        discounts[n] = off
        left -= 1
    return discounts


# --- redeem and release ---


def _valid_now(now: datetime) -> dict:
    return {
        "$and": [
            {"$or": [{"validFrom": None}, {"validFrom": {"$lte": now}}]},
            {"$or": [{"validUntil": None}, {"validUntil": {"$gt": now}}]},
        ]
    }


def apply_code(owner: str, cart_id: ObjectId | None, text: str) -> Cart:
    """Redeem a code for the owner's live cart; returns the cart. InvalidRequest (field ``code``)
    when the code is unknown, used up, not valid now or for nothing in the cart; nothing changes then."""
    now = clock.now()
    cart = mongo.carts().find_one({"_id": cart_id, "owner": owner}) if cart_id else None
    if cart is None or not cart.get("items"):
        raise NotFound(gettext("You have no seats on hold."))
    if cart["state"] != CartState.ACTIVE or cart["expiresAt"] <= now:
        raise CartExpired(gettext("Your hold has ended. Please choose your seats again."))
    if cart.get("promo"):
        raise InvalidRequest(
            gettext("A code is applied already; remove it first."), fields={"code": gettext("One code per booking.")}
        )
    if cart.get("subscription"):  # a subscription has its own price (sales/subscriptions.py)
        message = gettext("Codes do not apply to subscriptions.")
        raise InvalidRequest(message, fields={"code": message})
    code = normalize(text)
    doc = mongo.promo_codes().find_one({"code": code}) if CODE_RE.match(code) else None
    if doc is None or doc["uses"] >= doc["cap"]:
        raise InvalidRequest(gettext(NOT_VALID), fields={"code": gettext(NOT_VALID)})
    if (doc.get("validFrom") and doc["validFrom"] > now) or (doc.get("validUntil") and doc["validUntil"] <= now):
        raise InvalidRequest(
            gettext("This code is not valid at this time."), fields={"code": gettext("Not valid at this time.")}
        )
    promo = {"codeId": doc["_id"], "code": doc["code"], "released": False, **{k: doc[k] for k in TERMS if k in doc}}
    if doc.get("series"):
        promo["sessionIds"] = series_session_ids(doc["series"], now)
    if not any(line_discounts(cart["items"], promo)):
        message = "This code does not apply to the seats in your cart (another performance or ticket type)."
        raise InvalidRequest(message, fields={"code": message})
    faults.point("promo.before_redeem")  # tests: a staff edit between the read and the redeem
    taken = mongo.promo_codes().update_one(
        {
            "_id": doc["_id"],
            "cap": doc["cap"],
            "uses": {"$lt": doc["cap"]},
            "modifiedOn": doc.get("modifiedOn"),  # the terms read above (None: never edited)
            **_valid_now(now),
        },
        {"$inc": {"uses": 1}},
    )
    if not taken.modified_count:
        raise InvalidRequest(gettext(NOT_VALID), fields={"code": gettext(NOT_VALID)})  # used up meanwhile
    updated = mongo.carts().find_one_and_update(
        {"_id": cart["_id"], "owner": owner, **live_cart_filter(now), "promo": {"$exists": False}},
        {"$set": {"promo": promo, "modifiedOn": now}},
        return_document=ReturnDocument.AFTER,
    )
    if updated is None:
        _give_back(doc["_id"])  # the cart ended or got a code meanwhile: the use goes back at once
        raise CartExpired(gettext("Your cart changed meanwhile; please look again."))
    return updated


def remove_code(owner: str, cart_id: ObjectId | None) -> Cart | None:
    """The buyer takes the code off their live cart; the use goes back."""
    now = clock.now()
    cart = mongo.carts().find_one_and_update(
        {"_id": cart_id, "owner": owner, **live_cart_filter(now), "promo.codeId": {"$exists": True}},
        {"$unset": {"promo": ""}, "$set": {"modifiedOn": now}},
        return_document=ReturnDocument.BEFORE,
    )
    if cart is None:
        return None
    _give_back(cart["promo"]["codeId"])
    return mongo.carts().find_one({"_id": cart_id})


def release_for_cart(
    cart_id: ObjectId, states=(CartState.EXPIRED, CartState.CANCELED), *, owner: str | None = None
) -> bool:
    """Give the code's use back once the cart ended without a sale (or, with ``states=(done,)``,
    once its order was canceled). Exactly once, in the three writes the module says.
    ``owner``: the cart's, when known (carts are sharded on it)."""
    cart = mongo.carts().find_one_and_update(
        {
            "_id": cart_id,
            **({"owner": owner} if owner else {}),
            "state": {"$in": list(states)},
            "promo.codeId": {"$exists": True},
            "promo.released": {"$nin": [True, GIVING]},
        },
        {"$set": {"promo.released": GIVING}},
        projection={"promo": 1, "owner": 1},
    )
    if cart is None:
        return False
    faults.point("promo.after_giving")
    finish_give_back(cart)
    return True


def give_back_unused(cart: Mapping[str, Any]) -> dict:  # a Cart, or one being moved on
    """For the write that checks a cart out: step 1 of giving its code's use back
    (``{"promo.released": "giving"}``) when the code takes nothing off the seats the cart holds now
    (the ones it applied to were removed, or their ticket type changed). No order carries such a
    code, so its use is free again; ``finish_give_back`` makes the rest of the give-back, reconcile
    if a crash comes first. ``{}`` when the code still applies (or none is applied).

    Until checkout the code stays on the cart: a seat it applies to, held again, is discounted on
    the same use."""
    promo = cart.get("promo")
    if not promo or promo.get("released") is not False or any(line_discounts(cart.get("items", []), promo)):
        return {}
    return {"promo.released": GIVING}


def finish_give_back(cart: Mapping[str, Any]) -> None:
    """Steps 2 and 3 for a cart at ``"giving"`` (``cart``: its _id, owner, promo); safe to repeat."""
    mongo.promo_codes().update_one(
        {"_id": cart["promo"]["codeId"], "uses": {"$gt": 0}, "returnedFor": {"$ne": cart["_id"]}},
        {"$inc": {"uses": -1}, "$push": {"returnedFor": {"$each": [cart["_id"]], "$slice": -RETURNED_KEPT}}},
    )
    faults.point("promo.after_give_back")
    mongo.carts().update_one(
        {"_id": cart["_id"], "owner": cart["owner"], "promo.released": GIVING}, {"$set": {"promo.released": True}}
    )


def finish_give_backs() -> int:
    """Reconcile: carts a crash left at ``"giving"``, and ended carts that can never be paid whose
    give-back never began (a crash right after their end write). Returns the carts finished."""
    finished = 0
    for cart in (
        mongo.carts()
        .find({"promo.released": GIVING, "promo.codeId": {"$exists": True}}, {"promo": 1, "owner": 1})
        .limit(FINISH_BATCH)
    ):
        finish_give_back(cart)
        finished += 1
    never_begun = {
        "promo.released": False,
        "promo.codeId": {"$exists": True},
        "state": {"$in": [CartState.EXPIRED, CartState.CANCELED]},
        # never checked out: a cart with an order (it may still be paid late) is payments' to settle
        "orderRef": {"$exists": False},
        "orderId": {"$exists": False},
    }
    for cart in mongo.carts().find(never_begun, {"owner": 1}).limit(FINISH_BATCH):
        finished += release_for_cart(cart["_id"], owner=cart["owner"])
    return finished


def _give_back(code_id: ObjectId) -> None:
    mongo.promo_codes().update_one({"_id": code_id, "uses": {"$gt": 0}}, {"$inc": {"uses": -1}})
