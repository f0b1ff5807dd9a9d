"""The per-client held-seats limit (BOOKING_MAX_HELD_SEATS_PER_CLIENT) as one document per client
address, so that every command of a hold names the address's document by ``_id`` (its shard key):
one shard, where counting the address's carts asked every shard (carts are sharded by owner).

The document (collection ``client_holds``, ``_id`` = the client key such as "ip:203.0.113.7")::

    {_id, held: <seats reserved in total>, rev: <bumped by every change>, until: <the latest entry's>,
     carts: {<cart id>: {seats: <reserved for this cart>, until: <the cart's hold end, at least>}}}

A TTL index on the top-level ``until`` deletes an address's document once every hold in it has
ended (nothing in it counts any more), so the collection holds the addresses holding seats now.

Never an under-count, so the limit can never be exceeded, whatever crashes:

- a hold reserves its seats here (one conditional update: ``held + n <= limit``) BEFORE it takes
  them in the session, and raises the entry's ``until`` to the hold's new end before the cart's;
- seats are given back here only AFTER the session write that freed them (a release, a hold that
  failed after reserving), and a cart that stops being live (canceled, checkout) ends its entry
  (``until`` = now) only after its own state change.

A crash between those writes leaves a reservation that counts until its ``until`` (the hold's own
end): an over-count, never an under-count. An entry whose ``until`` has passed (its cart's hold
ended, or the cart ended) is pruned, and its seats taken off ``held``, when a reservation would be
refused otherwise (a compare-and-set on ``rev``), so the limit counts exactly the live holds when
it matters and the expiry worker writes nothing here.
"""

from datetime import datetime

from bson import ObjectId
from django.conf import settings
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from .. import mongo

PRUNE_TRIES = 3


def limit() -> int:
    return int(getattr(settings, "BOOKING_MAX_HELD_SEATS_PER_CLIENT", 0) or 0)


def reserve(client: str, cart_id: ObjectId, seats: int, until: datetime, now: datetime) -> int | None:
    """Reserve ``seats`` for this cart within the address's limit, its entry lasting at least to
    ``until``. Returns None when reserved, else the seats the address holds now (refused)."""
    cap = limit()
    if seats > cap:
        return live_seats(client, now)
    entry = f"carts.{cart_id}"
    update = {
        "$inc": {"held": seats, f"{entry}.seats": seats, "rev": 1},
        "$max": {f"{entry}.until": until, "until": until},
    }
    query = {"_id": client, "held": {"$lte": cap - seats}}
    retry = True
    for attempt in range(PRUNE_TRIES + 1):
        if not retry:
            break
        try:  # the address's first reservation creates its document (upsert)
            if mongo.client_holds().find_one_and_update(
                query, update, upsert=attempt == 0, projection={"_id": 1}, return_document=ReturnDocument.AFTER
            ):
                return None
            first_insert_raced = False
        except DuplicateKeyError:  # the document is there: over the limit, or another request made it
            first_insert_raced = attempt == 0
        retry = _prune_ended(client, now) or first_insert_raced
    return live_seats(client, now)


def give_back(client: str, cart_id: ObjectId, seats: int, until: datetime | None = None) -> None:
    """Seats a session write has freed (or a hold never took): off the address's count. Only
    while the entry has them (an entry pruned meanwhile, or a cart that held seats before the
    limit was on, is left alone: an over-count at worst). ``until``: the cart's new hold end (a
    release extends the hold), raised here before the cart's write."""
    entry = f"carts.{cart_id}"
    update: dict = {"$inc": {"held": -seats, f"{entry}.seats": -seats, "rev": 1}}
    if until is not None:
        update["$max"] = {f"{entry}.until": until, "until": until}
    mongo.client_holds().update_one({"_id": client, f"{entry}.seats": {"$gte": seats}}, update)


def end_cart(client: str, cart_id: ObjectId, now: datetime) -> None:
    """The cart stopped being live (canceled, checkout began): its seats stop counting now (pruned
    at the next refusal). Called after the cart's own state change."""
    entry = f"carts.{cart_id}"
    mongo.client_holds().update_one(
        {"_id": client, entry: {"$exists": True}}, {"$min": {f"{entry}.until": now}, "$inc": {"rev": 1}}
    )


def live_seats(client: str, now: datetime) -> int:
    """Seats the address holds in entries still running (the refusal's message)."""
    doc = mongo.client_holds().find_one({"_id": client}) or {}
    return sum(e["seats"] for e in doc.get("carts", {}).values() if e["until"] > now)


def _prune_ended(client: str, now: datetime) -> bool:
    """Drop the entries whose hold has ended and take their seats off ``held``, if nothing changed
    the document meanwhile (``rev``). Returns whether there were any (worth trying again)."""
    doc = mongo.client_holds().find_one({"_id": client})
    if doc is None:
        return False
    ended = {cart: e["seats"] for cart, e in doc.get("carts", {}).items() if e["until"] <= now}
    if not ended:
        return False
    mongo.client_holds().update_one(
        {"_id": client, "rev": doc.get("rev", 0)},
        {
            "$unset": {f"carts.{cart}": "" for cart in ended},
            "$inc": {"held": -sum(ended.values()), "rev": 1},
        },
    )
    return True  # removed, or lost to a change the caller's next try sees
