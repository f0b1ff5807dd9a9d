"""The invariants (docs/architecture.md, "Invariants"), checked against the database.

Used by the tests, the chaos harness and ``manage.py check_invariants``. Run it on a quiet
system (after reconcile): an operation in flight can be between its two writes.
"""

from collections import Counter, defaultdict

from bson import ObjectId

from booking.core import clock, mongo
from booking.core.domain import (
    HOLDING_STATES,
    SEAT_OWNING_ORDER_STATES,
    Order,
    OrderState,
    SubscriptionSaleState,
    is_stale,
)
from booking.payments import donations, vouchers
from booking.payments.checks import money_breaches
from booking.reports.summaries import breaches as report_breaches
from booking.sales import client_holds, offers, pricing, promos, quotas
from booking.sales.checkin import ADMITTING_STATES
from booking.venues.seat_grid import FREE, HELD, SOLD, parse_seat_key


def check_invariants() -> list[str]:
    """Every breach found, as a sentence; an empty list means all invariants hold."""
    breaches: list[str] = []
    now = clock.now()
    # Every document, on purpose: hinted on _id_ (an index scan, which MongoDB's notablescan allows;
    # booking/tests/core/test_query_audit.py lists these three as the allowed scans)
    everything = {"hint": [("_id", 1)]}
    cart_fields = {"state": 1, "expiresAt": 1, "items": 1, "promo": 1, client_holds.UNRETURNED: 1}
    carts = {c["_id"]: c for c in mongo.carts().find({}, cart_fields, **everything)}
    orders_by_seat: dict = defaultdict(list)
    pending_orders = set()
    in_flight_seats: set = set()  # seats an open exchange is moving (sales/exchanges.py)
    open_exchanges: set = set()
    order_fields = {"ref": 1, "state": 1, "lines": 1, "cartId": 1, "seatsReleased": 1, "settling": 1}
    order_fields |= {"exchangeOpen": 1, "exchanges": 1}
    for order in mongo.orders().find({}, order_fields, **everything):
        if order["state"] in SEAT_OWNING_ORDER_STATES:  # paid, or partially refunded: its remaining lines
            if order.get("settling"):
                pending_orders.add(order["_id"])  # paid, its seats being sold right now
            for line in order["lines"]:
                orders_by_seat[(line["sessionId"], line["key"])].append(order)
            for seat in _exchange_in_flight(order):
                orders_by_seat[seat].append(order)
                in_flight_seats.add(seat)
            if order.get("exchangeOpen"):
                open_exchanges.add(order["exchangeOpen"])
        elif not order.get("seatsReleased", True):
            breaches.append(f"order {order['ref']} is {order['state']} but its seats were not given back yet")

    session_fields = {"name": 1, "seats": 1, "seatsAvailable": 1, "reservations": 1, "exchangeHolds": 1}
    session_fields |= {"quota": 1, "quotaFloor": 1}
    for session in mongo.sessions().find({}, session_fields, **everything):
        if "seats" not in session:
            continue  # compacted after the show (sales/retention.py): no grid to check
        sid = session["_id"]
        label = f"session {session.get('name')} ({sid})"
        grid = session["seats"]
        free = sum(row.count(FREE) for row in grid)
        if free != session["seatsAvailable"]:
            breaches.append(f"{label}: seatsAvailable is {session['seatsAvailable']} but {free} cells are free")
        breaches.extend(quota_breaches(session, label, free))
        for hold in session.get("exchangeHolds", []):
            if hold["_id"] not in open_exchanges:
                breaches.append(
                    f"{label}: seats {hold['seats']} are kept for exchange {hold['_id']}, which is not open"
                )
        holders: Counter[str] = Counter()
        for res in session.get("reservations", []):
            cart = carts.get(res["_id"])
            if cart is None:
                breaches.append(f"{label}: a hold belongs to cart {res['_id']}, which does not exist")
            elif cart["state"] not in HOLDING_STATES:
                breaches.append(f"{label}: a hold belongs to cart {res['_id']}, which is {cart['state']}")
            elif is_stale(cart, now) and res["seats"]:
                breaches.append(f"{label}: cart {res['_id']} still holds seats after its hold ended (not yet expired)")
            elif cart is not None:
                known = {i["key"] for i in cart["items"] if i["sessionId"] == sid}
                unknown = set(res["seats"]) - known
                if unknown:
                    breaches.append(f"{label}: cart {res['_id']} holds {sorted(unknown)} without knowing it")
            if set(res.get("house", ())) - set(res["seats"]):  # staff's house seats (sales/counter.py)
                breaches.append(f"{label}: cart {res['_id']} lists house seats it does not hold")
            for key in res["seats"]:
                holders[key] += 1
                r, c = parse_seat_key(key)
                if grid[r][c] != HELD:
                    breaches.append(f"{label}: seat {key} is in a hold but its cell is {grid[r][c]}")
        for r, row in enumerate(grid):
            for c, state in enumerate(row):
                key = f"{r}:{c}"
                if state == HELD and holders[key] != 1:
                    breaches.append(f"{label}: held seat {key} belongs to {holders[key]} holds, not exactly one")
                owners = orders_by_seat.get((sid, key), [])
                if len(owners) > 1:
                    breaches.append(
                        f"{label}: seat {key} is in {len(owners)} paid orders: {[o['ref'] for o in owners]}"
                    )
                if state == SOLD and len(owners) != 1:
                    breaches.append(f"{label}: sold seat {key} belongs to {len(owners)} paid orders, not exactly one")
                if (
                    owners
                    and state != SOLD
                    and (sid, key) not in in_flight_seats
                    and not all(o["_id"] in pending_orders for o in owners)
                ):
                    breaches.append(f"{label}: seat {key} is in order {owners[0]['ref']} but its cell is {state}")
    breaches += money_breaches()  # no order paid twice, no money kept without its seats
    breaches += vouchers.breaches()  # a voucher's balance is its value less redemptions plus refunds
    breaches.extend(checkin_breaches())
    breaches.extend(offer_breaches(carts))
    breaches.extend(report_breaches())  # a sales summary without marks is what its orders say
    breaches.extend(subscription_breaches(carts))
    breaches.extend(client_count_breaches(carts, now))
    return breaches


def client_count_breaches(carts: dict, now) -> list[str]:
    """The per-address held-seats limit never under-counts (sales/client_holds.py): an address's
    ``held`` is the sum of its entries' seats, and the entry of a cart still holding seats counts
    at least the seats in the cart and those it gave back unreturned. (A cart that held seats
    before the limit was on has no entry: not checked.)"""
    breaches = []
    for doc in mongo.client_holds().find({}, hint=[("_id", 1)]):  # every address, on purpose
        entries = doc.get("carts", {})
        if doc.get("held", 0) != sum(entry["seats"] for entry in entries.values()):
            breaches.append(f"address {doc['_id']}: held {doc.get('held', 0)} is not the sum of its carts' seats")
        for cart_id, entry in entries.items():
            cart = carts.get(ObjectId(cart_id))
            if cart is None or cart["state"] not in HOLDING_STATES or cart["expiresAt"] <= now:
                continue  # ended: its entry no longer counts, pruned at the next refusal
            counted = len(cart["items"]) + cart.get(client_holds.UNRETURNED, 0)
            if entry["seats"] < counted:
                breaches.append(f"address {doc['_id']}: counts {entry['seats']} of cart {cart_id}'s {counted} seats")
    return breaches


def quota_breaches(session: dict, label: str, free: int) -> list[str]:
    """A quota's floor is what setting the quota now would compute (``quotas.set_quota``):
    ``free cells + counted - quota``. Then the writes' clause (``domain.within_quota``) lets no
    seat be taken past the quota. More counted than the quota with a whole floor is what a quota set
    below what was taken leaves (the stored state cannot tell it from an overshoot): not a breach."""
    if "quota" not in session and "quotaFloor" not in session:
        return []
    if "quota" not in session or "quotaFloor" not in session:
        return [f"{label}: a quota without its floor, or a floor without its quota"]
    floor = free + quotas.counted(session) - session["quota"]
    if session["quotaFloor"] != floor:
        return [f"{label}: the quota's floor is {session['quotaFloor']} but its free and counted seats make it {floor}"]
    return []


def subscription_breaches(carts: dict) -> list[str]:
    """A subscription is all its performances or none (sales/subscriptions.py):

    - no sale is left between its performances' writes (``holding``: reconcile finishes or undoes it);
    - a live subscription cart holds each of its seats in every performance of the subscription;
    - a paid subscription order has each of its seats in every performance (less tickets refunded
      or exchanged since).
    (No seat in two live carts, orders or subscriptions: the held and sold cells above.)"""
    breaches = []
    everything = {"hint": [("_id", 1)]}  # every subscription, on purpose (a few dozen a season)
    subs = {s["_id"]: set(s["sessionIds"]) for s in mongo.subscriptions().find({}, {"sessionIds": 1}, **everything)}
    held_since = {
        "state": SubscriptionSaleState.HOLDING,
        "createdOn": {"$lte": clock.now()},
    }  # the holding index (partial)
    for sale in mongo.subscription_sales().find(held_since, {"cartId": 1}):
        breaches.append(f"subscription sale of cart {sale['cartId']} is still between its performances' writes")
    for cart_id, cart in carts.items():
        if cart["state"] not in HOLDING_STATES:
            continue
        by_seat: dict = defaultdict(set)
        for item in cart["items"]:
            if item.get("subscription") in subs:
                by_seat[(item["subscription"], item["key"])].add(item["sessionId"])
        for (sub_id, key), sessions in by_seat.items():
            if sessions != subs[sub_id]:
                breaches.append(f"cart {cart_id} holds subscription seat {key} in only {len(sessions)} performances")
    any_subscription = {"$gte": ObjectId("0" * 24)}  # a range on the subscription index: its orders only
    query = {"subscription._id": any_subscription, "state": {"$in": list(SEAT_OWNING_ORDER_STATES)}}
    fields = {"ref": 1, "lines": 1, "refundedLines": 1, "exchanges": 1}
    for order in mongo.orders().find(query, fields):
        if order.get("refundedLines") or order.get("exchanges"):
            continue  # a ticket given back or moved since: the rest stands
        by_seat = defaultdict(set)
        for line in order["lines"]:
            if line.get("subscription") in subs:
                by_seat[(line["subscription"], line["key"])].add(line["sessionId"])
        for (sub_id, key), sessions in by_seat.items():
            if sessions != subs[sub_id]:
                breaches.append(
                    f"order {order['ref']} has subscription seat {key} in only {len(sessions)} performances"
                )
    return breaches


def _exchange_in_flight(order: Order) -> list[tuple]:
    """Seats an open exchange of the order is moving: before the switch the new ones (taken, or
    about to be), after it the old ones until they are freed. The order owns them meanwhile."""
    xid = order.get("exchangeOpen")
    record = next((x for x in order.get("exchanges", []) if x["_id"] == xid), None) if xid else None
    if record is None:
        return []
    lines = record["new"] if record["state"] in ("started", "awaiting_payment", "taken") else record["old"]
    if record["state"] not in ("started", "awaiting_payment", "taken", "switched"):
        return []
    return [(line["sessionId"], line["key"]) for line in lines]


def checkin_breaches() -> list[str]:
    """A checked-in ticket belongs to a paid order: one that admits now, or that left the
    admitting state (``<state>On``, e.g. canceledOn) only after the ticket was checked in."""
    breaches = []
    query = {"state": {"$nin": list(ADMITTING_STATES)}, "lines.checkedIn": {"$exists": True}}
    for order in mongo.orders().find(query, hint=[("_id", 1)]):  # every order, on purpose (see check_invariants)
        left_on = order.get(f"{order['state']}On")
        for line in order["lines"]:
            checked = line.get("checkedIn")
            if checked and (left_on is None or left_on < checked["recordedOn"]):
                breaches.append(
                    f"order {order['ref']} is {order['state']} but ticket {line['row']}{line['seat']} "
                    f"was checked in at {checked.get('door')} while it was"
                )
    return breaches


def offer_breaches(carts: dict | None = None) -> list[str]:
    """Every paid order is charged as its seats were held and its code redeemed, and no
    promo code is used more than its cap.

    - each line's ticket type and price are its cart item's, and the item's price is its type's
      in the row of the price table the item kept at hold time (while the cart is kept);
    - each line's discount is what the code's terms as redeemed (the order's ``promo``, else the
      cart's) take off, and the total is the lines less the discount plus the fee and the
      donation (what the card is asked for is that total less a gift voucher's part);
    - a code's ``uses`` is between 0 and its cap, and the bookings holding it (carts whose use was
      not given back) are no more than its cap.

    ``carts``: every cart by id, with items and promo (check_invariants has read them)."""
    if carts is None:
        fields = {"state": 1, "items": 1, "promo": 1}
        carts = {c["_id"]: c for c in mongo.carts().find({}, fields, hint=[("_id", 1)])}  # all, on purpose
    breaches = []
    fields = {"ref": 1, "cartId": 1, "lines": 1, "total": 1, "fee": 1, "promo": 1, "discount": 1}
    fields.update({"exchanges": 1, "compReason": 1, "donation": 1})
    for order in mongo.orders().find({"state": OrderState.PAID}, fields, hint=[("_id", 1)]):  # all, on purpose
        if order.get("exchanges"):
            continue  # priced again by an exchange (sales/exchanges.py), not by its cart any more
        cart = carts.get(order["cartId"])
        lines = order["lines"]
        if cart is not None:
            items = {(i["sessionId"], i["key"]): i for i in cart["items"]}
            for line in lines:
                item = items.get((line["sessionId"], line["key"]))
                if item is None:
                    continue
                kept = offers.item_offers(item)
                locked = next((o["price"] for o in kept if o["code"] == offers.item_type(item)), None)
                if line["price"] != item["price"] or line.get("ticketType", offers.FULL) != offers.item_type(item):
                    breaches.append(f"order {order['ref']}: seat {line['key']} is not charged as it was held")
                elif locked != item["price"]:
                    breaches.append(
                        f"order {order['ref']}: seat {line['key']} costs {item['price']} as "
                        f"{offers.item_type(item)}, the price table said {locked} when it was held"
                    )
        promo = order.get("promo") or (cart or {}).get("promo")
        if promo is None and order.get("compReason"):  # complimentary at the counter (sales/counter.py)
            promo = pricing.COMPLIMENTARY
        if promo is None and (order.get("discount") or any(line.get("discount") for line in lines)):
            breaches.append(f"order {order['ref']}: a discount without a promo code")
        wanted = promos.line_discounts(lines, promo) if promo else [0] * len(lines)
        if [line.get("discount", 0) for line in lines] != wanted:
            breaches.append(
                f"order {order['ref']}: its discounts are not what code {(promo or {}).get('code')} takes off"
            )
        fee = (order.get("fee") or {}).get("amount", 0)
        charged = sum(line["price"] - line.get("discount", 0) for line in lines) + fee
        charged += donations.amount_of(order)
        if order["total"] != charged:
            breaches.append(
                f"order {order['ref']}: total {order['total']}, its tickets less the code, fee and donation {charged}"
            )
    holding: Counter = Counter()
    for cart in carts.values():
        promo = cart.get("promo")
        if promo and not promo.get("released"):
            holding[promo["codeId"]] += 1
    for code in mongo.promo_codes().find({}, {"code": 1, "uses": 1, "cap": 1}, hint=[("_id", 1)]):
        uses, cap = code.get("uses", 0), code.get("cap", 0)
        if uses > cap or uses < 0:
            breaches.append(f"promo code {code['code']} is used {uses} times, its cap is {cap}")
        if holding[code["_id"]] > cap:
            breaches.append(f"promo code {code['code']} is in {holding[code['_id']]} bookings, its cap is {cap}")
    return breaches
