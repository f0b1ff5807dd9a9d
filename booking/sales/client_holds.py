"""The per-client held-seats limit (BOOKING_MAX_HELD_SEATS_PER_CLIENT) and the per-client limit
of unpaid box-office reservations (BOOKING_MAX_OPEN_RESERVATIONS) as one document per client
address, so that every command of a hold names the address's document by ``_id`` (its shard key):
one shard, where counting the address's carts asked every shard (carts are sharded by owner).

The document (collection ``client_holds``, ``_id`` = the client key such as "ip:203.0.113.7")::

    {_id, held: <seats reserved in total>, reservations: <entries that are box-office reservations>,
     rev: <bumped by every change>, until: <the latest entry's>,
     carts: {<cart id>: {seats: <reserved for this cart>, until: <the cart's hold end, at least>,
                         since: <when the entry was made>, owner: <the cart's owner>,
                         reservation: <true: unpaid at the box office>}}}

A TTL index on the top-level ``until`` deletes an address's document once every hold in it has
ended (nothing in it counts any more), so the collection holds the addresses holding seats now.

A cart's seats count as long as the cart holds them: while it is active, and while it is paying
(its card payment's window, or a box-office reservation until its deadline), until they are sold
or given back. Seats a release gave back count on, as the cart's ``unreturned`` seats, until the
cart's next hold takes them again or a refusal folds them back. Never an under-count, so the
limits can never be exceeded, whatever crashes:

- a hold reserves its seats here (one conditional update: ``held + n <= limit``) BEFORE it takes
  them in the session, the entry lasting to the cart's hold cap (``carts.hold_cap``: no change of
  an active cart extends its hold past it, so a release or a hold need not raise it again). Or,
  when its cart has that many unreturned seats, it takes them from there instead, in the
  conditional write that is also its read of the cart (``read_cart_taking_unreturned``), also
  BEFORE the session write;
- checkout raises the entry's ``until`` to the payment window or the box-office deadline (and
  counts a reservation, one conditional update: ``reservations < limit``) BEFORE the cart's write;
- a release adds its seats to the cart's ``unreturned`` in the cart's own write, AFTER the session
  write that freed them: the address still counts them, and one write fewer per click. A hold
  that failed gives its seats back here at once; a canceled cart ends its entry (``until`` = now)
  after its own state change.

A crash between those writes leaves seats counted that nobody holds, until the entry ends: an
over-count, never an under-count. An entry stops counting once its ``until`` has passed, or its
cart has ended (paid, expired, canceled, past its hold; read by ``_id`` and owner), or, for a cart
never written (a crash inside its first hold), a hold's length after the entry was made. Ended
entries are pruned, and their seats taken off ``held``, when a reservation would be refused
otherwise (a compare-and-set on ``rev``), and the live carts' unreturned seats folded back (the
cart's count first, by compare-and-set, then the address's). So the limits count exactly the live
holds when it matters, and neither the expiry worker nor payment writes anything here.
"""

from datetime import datetime, timedelta

from bson import ObjectId
from django.conf import settings
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from booking.core import faults, mongo
from booking.core.domain import HOLDING_STATES, Cart

PRUNE_TRIES = 3
# The cart's count of seats a release gave back that its address still counts (the release's cart
# write adds them; read_cart_taking_unreturned takes them again; a refusal folds them back).
UNRETURNED = "unreturned"


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
        "$min": {f"{entry}.since": now},
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


def give_back(client: str, cart_id: ObjectId, seats: int) -> None:
    """Seats a hold reserved and never took (or a sale gave up): off the address's count. Only
    while the entry has them (an entry pruned meanwhile, or a cart that held seats before the
    limit was on, is left alone: an over-count at worst)."""
    entry = f"carts.{cart_id}"
    mongo.client_holds().update_one(
        {"_id": client, f"{entry}.seats": {"$gte": seats}},
        {"$inc": {"held": -seats, f"{entry}.seats": -seats, "rev": 1}},
    )


def read_cart_taking_unreturned(
    owner: str, cart_id: ObjectId, seats: int, *, unless_key: str | None = None
) -> tuple[Cart | None, bool]:
    """A hold's read of its cart that also takes ``seats`` of the cart's unreturned seats, when it
    has that many: one conditional write (a pipeline update) instead of a read and a reservation
    on the address's document. ``unless_key``: a click on one seat takes nothing when that seat is
    in the cart (the click is a release). Returns the cart as it was before the write (None: no
    such cart of this owner) and whether the seats were taken."""
    enough: dict = {"$gte": [f"${UNRETURNED}", seats]}  # a missing count is less than any number
    if unless_key is not None:
        # ($literal: a key is a value, never a field path, whatever the caller passes)
        in_cart = {"$in": [{"$literal": unless_key}, {"$ifNull": ["$items.key", []]}]}
        enough = {"$and": [enough, {"$not": [in_cart]}]}
    # (where nothing is taken the count is set to itself: no change, and no field made)
    count = {"$cond": [enough, {"$subtract": [f"${UNRETURNED}", seats]}, f"${UNRETURNED}"]}
    # (acknowledged by the majority like every write: were a take lost in a failover while the
    # hold's own writes stayed, the cart would count the seats as held and as unreturned, more
    # than its address counts)
    before = mongo.carts().find_one_and_update({"_id": cart_id, "owner": owner}, [{"$set": {UNRETURNED: count}}])
    if before is None:
        return None, False
    taken = before.get(UNRETURNED, 0) >= seats and (
        unless_key is None or all(item["key"] != unless_key for item in before["items"])
    )
    return before, taken


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
    running = {cart: e for cart, e in entries.items() if cart not in ended}
    ended_carts, unreturned = _read_carts_of(running, now)
    ended |= ended_carts
    if ended:
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
    folded = _fold_unreturned(client, {cart: n for cart, n in unreturned.items() if cart not in ended}, entries)
    return bool(ended) or folded  # removed, or lost to a change the caller's next try sees


def _read_carts_of(running: dict, now: datetime) -> tuple[set[str], dict[str, int]]:
    """Of the entries ``running``: those whose cart no longer holds seats (sold, expired,
    canceled, or past its hold; a cart not found, a hold's length after its entry was made, as its
    first hold may be writing it now), and the unreturned seats of the others. Read by ``_id`` and
    owner (the shard key) when every entry names its owner."""
    if not running:
        return set(), {}
    which: dict = {"_id": {"$in": [ObjectId(cart) for cart in running]}}
    owners = [e.get("owner") for e in running.values()]
    if all(owners):
        which["owner"] = {"$in": sorted(set(owners))}
    ended, unreturned, found = set(), {}, set()
    for cart in mongo.carts().find(which, {"state": 1, "expiresAt": 1, UNRETURNED: 1}):
        key = str(cart["_id"])
        found.add(key)
        if cart["state"] not in HOLDING_STATES or cart["expiresAt"] <= now:
            ended.add(key)
        elif cart.get(UNRETURNED):
            unreturned[key] = cart[UNRETURNED]
    hold = timedelta(seconds=settings.BOOKING_HOLD_SECONDS)
    for key, entry in running.items():
        if key not in found and "since" in entry and entry["since"] + hold <= now:
            ended.add(key)  # its first hold died before writing it: counted as long as that hold
    return ended, unreturned


def _fold_unreturned(client: str, unreturned: dict[str, int], entries: dict) -> bool:
    """Live carts' unreturned seats off the address's count: each cart's count first (a
    compare-and-set, so a hold taking them meanwhile keeps them), then the address's. A crash
    between the two leaves them counted: an over-count. Returns whether any were folded."""
    folded = False
    for cart, count in unreturned.items():
        faults.point("client_holds.before_fold")
        which: dict = {"_id": ObjectId(cart), UNRETURNED: count}
        if entries[cart].get("owner"):
            which["owner"] = entries[cart]["owner"]
        if mongo.carts().update_one(which, {"$inc": {UNRETURNED: -count}}).modified_count:
            faults.point("client_holds.after_fold")
            give_back(client, ObjectId(cart), count)
            folded = True
    return folded
