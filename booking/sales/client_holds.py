"""The per-client held-seats limit (BOOKING_MAX_HELD_SEATS_PER_CLIENT) and the per-client limit
of unpaid box-office reservations (BOOKING_MAX_OPEN_RESERVATIONS) as one document per client
address, so that every command of a hold names the address's document by ``_id`` (its shard key):
one shard, where counting the address's carts asked every shard (carts are sharded by owner).

The document (collection ``client_holds``, ``_id`` = the client key such as "ip:203.0.113.7")::

    {_id, held: <seats reserved in total>, reservations: <entries that are box-office reservations>,
     rev: <bumped by every change>, until: <the latest entry's>,
     carts: {<cart id>: {seats: <reserved for this cart>, until: <the cart's hold end, at least>,
                         owner: <the cart's owner>, reservation: <true: unpaid at the box office>}}}

A TTL index on the top-level ``until`` deletes an address's document once every hold in it has
ended (nothing in it counts any more), so the collection holds the addresses holding seats now.

A cart's seats count as long as the cart holds them: while it is active, and while it is paying
(its card payment's window, or a box-office reservation until its deadline), until they are sold
or given back. Never an under-count, so the limits can never be exceeded, whatever crashes:

- a hold reserves its seats here (one conditional update: ``held + n <= limit``) BEFORE it takes
  them in the session, and raises the entry's ``until`` to the hold's new end before the cart's;
- checkout raises the entry's ``until`` to the payment window or the box-office deadline (and
  counts a reservation, one conditional update: ``reservations < limit``) BEFORE the cart's write;
- seats are given back here only AFTER the session write that freed them (a release, a hold that
  failed after reserving), and a canceled cart ends its entry (``until`` = now) only after its
  own state change.

A crash between those writes leaves a reservation that counts until its ``until``, or until its
cart is seen ended: an over-count, never an under-count. An entry stops counting once its
``until`` has passed or its cart has ended (paid, expired, canceled; read by ``_id`` and owner):
it is pruned, and its seats taken off ``held``, when a reservation would be refused otherwise (a
compare-and-set on ``rev``), so the limits count exactly the live holds when it matters, and
neither the expiry worker nor payment writes anything here.
"""

from datetime import datetime

from bson import ObjectId
from django.conf import settings
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from booking.core import mongo
from booking.core.domain import HOLDING_STATES

PRUNE_TRIES = 3


def limit() -> int:
    return int(getattr(settings, "BOOKING_MAX_HELD_SEATS_PER_CLIENT", 0) or 0)


def reservations_limit() -> int:
    return int(getattr(settings, "BOOKING_MAX_OPEN_RESERVATIONS", 0) or 0)


def reserve(
    client: str, cart_id: ObjectId, seats: int, until: datetime, now: datetime, *, owner: str = ""
) -> int | None:
    """Reserve ``seats`` for this cart within the address's limit, its entry lasting at least to
    ``until``. Returns None when reserved, else the seats the address holds now (refused).
    ``owner``: the cart's, kept in the entry (its cart is read by shard key when pruning)."""
    cap = limit()
    if seats > cap:
        return live_seats(client, now)
    entry = f"carts.{cart_id}"
    update: dict = {
        "$inc": {"held": seats, f"{entry}.seats": seats, "rev": 1},
        "$max": {f"{entry}.until": until, "until": until},
    }
    if owner:
        update["$set"] = {f"{entry}.owner": owner}
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


def extend(client: str, cart_id: ObjectId, until: datetime) -> None:
    """Checkout: the cart's seats stay held while they are paid for, to ``until`` (the payment
    window, or the box-office deadline), and keep counting as long. Called BEFORE the cart's write
    (a cart held while the limit was off has no entry: nothing)."""
    entry = f"carts.{cart_id}"
    mongo.client_holds().update_one(
        {"_id": client, entry: {"$exists": True}},
        {"$max": {f"{entry}.until": until, "until": until}, "$inc": {"rev": 1}},
    )


def open_reservation(client: str, cart_id: ObjectId, until: datetime, now: datetime, *, owner: str) -> int | None:
    """Count this cart as one of the address's unpaid box-office reservations, at most
    ``reservations_limit()`` at once, its entry lasting to ``until`` (the deadline); BEFORE the
    cart's write. The same cart is counted once (a second submit). Returns None when counted, else
    the address's open reservations now (refused)."""
    cap = reservations_limit()
    entry = f"carts.{cart_id}"
    query = {"_id": client, "reservations": {"$not": {"$gte": cap}}, f"{entry}.reservation": {"$ne": True}}
    update = {
        "$inc": {"reservations": 1, "held": 0, f"{entry}.seats": 0, "rev": 1},  # (the entry made when the
        "$max": {f"{entry}.until": until, "until": until},  # held-seats limit is off)
        "$set": {f"{entry}.reservation": True, f"{entry}.owner": owner},
    }
    retry = True
    for attempt in range(PRUNE_TRIES + 1):
        if not retry:
            break
        try:
            if mongo.client_holds().find_one_and_update(
                query, update, upsert=attempt == 0, projection={"_id": 1}, return_document=ReturnDocument.AFTER
            ):
                return None
            first_insert_raced = False
        except DuplicateKeyError:  # the document is there: over the limit, counted already, or just made
            first_insert_raced = attempt == 0
        if _is_open_reservation(client, cart_id):
            return None
        retry = _prune_ended(client, now) or first_insert_raced
    return open_reservations(client, now)


def end_cart(client: str, cart_id: ObjectId, now: datetime) -> None:
    """The cart stopped being live (canceled): its seats stop counting now (pruned at the next
    refusal). Called after the cart's own state change."""
    entry = f"carts.{cart_id}"
    mongo.client_holds().update_one(
        {"_id": client, entry: {"$exists": True}}, {"$min": {f"{entry}.until": now}, "$inc": {"rev": 1}}
    )


def live_seats(client: str, now: datetime) -> int:
    """Seats the address holds in entries still running (the refusal's message)."""
    doc = mongo.client_holds().find_one({"_id": client}) or {}
    return sum(e["seats"] for e in doc.get("carts", {}).values() if e["until"] > now)


def open_reservations(client: str, now: datetime) -> int:
    """The address's box-office reservations still running (the refusal's message)."""
    doc = mongo.client_holds().find_one({"_id": client}) or {}
    return sum(1 for e in doc.get("carts", {}).values() if e.get("reservation") and e["until"] > now)


def _is_open_reservation(client: str, cart_id: ObjectId) -> bool:
    found = mongo.client_holds().find_one({"_id": client, f"carts.{cart_id}.reservation": True}, {"_id": 1})
    return found is not None


def _prune_ended(client: str, now: datetime) -> bool:
    """Drop the entries whose hold has ended (their ``until`` passed, or their cart was paid,
    expired or canceled) and take their seats off ``held`` (and their reservation off
    ``reservations``), if nothing changed the document meanwhile (``rev``). Returns whether there
    were any (worth trying again)."""
    doc = mongo.client_holds().find_one({"_id": client})
    if doc is None:
        return False
    entries = doc.get("carts", {})
    ended = {cart for cart, e in entries.items() if e["until"] <= now}
    ended |= _of_ended_carts({cart: e for cart, e in entries.items() if cart not in ended}, now)
    if not ended:
        return False
    mongo.client_holds().update_one(
        {"_id": client, "rev": doc.get("rev", 0)},
        {
            "$unset": {f"carts.{cart}": "" for cart in ended},
            "$inc": {
                "held": -sum(entries[cart]["seats"] for cart in ended),
                "reservations": -sum(1 for cart in ended if entries[cart].get("reservation")),
                "rev": 1,
            },
        },
    )
    return True  # removed, or lost to a change the caller's next try sees


def _of_ended_carts(running: dict, now: datetime) -> set[str]:
    """The entries among ``running`` whose cart no longer holds seats: sold (done), expired,
    canceled, or past its hold. A cart not found (its first hold may be writing it now) still
    counts. Read by ``_id`` and owner (the shard key) when every entry names its owner."""
    if not running:
        return set()
    which: dict = {"_id": {"$in": [ObjectId(cart) for cart in running]}}
    owners = [e.get("owner") for e in running.values()]
    if all(owners):
        which["owner"] = {"$in": sorted(set(owners))}
    ended = set()
    for cart in mongo.carts().find(which, {"state": 1, "expiresAt": 1}):
        if cart["state"] not in HOLDING_STATES or cart["expiresAt"] <= now:
            ended.add(str(cart["_id"]))
    return ended
