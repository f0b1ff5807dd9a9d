"""The invariants of the design guide, checked against the database.

Used by the tests, the chaos harness and ``manage.py check_invariants``. Run it on a quiet
system (after reconcile): an operation in flight can be between its two writes.
"""

from collections import Counter, defaultdict

from . import clock, mongo
from .domain import HOLDING_STATES, SEAT_OWNING_ORDER_STATES, CartState, OrderState, is_stale
from .payments.checks import money_breaches
from .seat_grid import FREE, HELD, SOLD, parse_seat_key
from .services.checkin import ADMITTING_STATES


def check_invariants() -> list[str]:
    """Every breach found, as a sentence; an empty list means all invariants hold."""
    breaches: list[str] = []
    now = clock.now()
    # Every document, on purpose: hinted on _id_ (an index scan, which MongoDB's notablescan allows;
    # booking/tests/test_query_audit.py lists these three as the allowed scans)
    everything = {"hint": [("_id", 1)]}
    carts = {c["_id"]: c for c in mongo.carts().find({}, {"state": 1, "expiresAt": 1, "items": 1}, **everything)}
    orders_by_seat: dict = defaultdict(list)
    pending_orders = set()
    order_fields = {"ref": 1, "state": 1, "lines": 1, "cartId": 1, "seatsReleased": 1, "settling": 1}
    for order in mongo.orders().find({}, order_fields, **everything):
        cart = carts.get(order["cartId"])
        if order["state"] in SEAT_OWNING_ORDER_STATES:  # paid, or partially refunded: its remaining lines
            if (cart is not None and cart["state"] == CartState.CHECKING_OUT) or order.get("settling"):
                pending_orders.add(order["_id"])  # paid, its seats being sold right now
            for line in order["lines"]:
                orders_by_seat[(line["sessionId"], line["key"])].append(order)
        elif not order.get("seatsReleased", True):
            breaches.append(f"order {order['ref']} is {order['state']} but its seats were not given back yet")

    session_fields = {"name": 1, "seats": 1, "seatsAvailable": 1, "reservations": 1}
    for session in mongo.sessions().find({}, session_fields, **everything):
        if "seats" not in session:
            continue  # compacted after the show (services/retention.py): no grid to check
        sid = session["_id"]
        label = f"session {session.get('name')} ({sid})"
        grid = session["seats"]
        free = sum(row.count(FREE) for row in grid)
        if free != session["seatsAvailable"]:
            breaches.append(f"{label}: seatsAvailable is {session['seatsAvailable']} but {free} cells are free")
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
            if set(res.get("house", ())) - set(res["seats"]):  # staff's house seats (services/counter.py)
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
                if owners and state != SOLD and not all(o["_id"] in pending_orders for o in owners):
                    breaches.append(f"{label}: seat {key} is in order {owners[0]['ref']} but its cell is {state}")
    breaches += money_breaches()  # no order paid twice, no money kept without its seats
    breaches.extend(checkin_breaches())
    breaches.extend(offer_breaches())
    return breaches


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


def offer_breaches() -> list[str]:
    """Issue 16: every paid order's lines carry the prices locked at hold time (the cart's items:
    the price of the item's ticket type in the row of the table it kept), its total is
    ``pricing.totals`` of them, and no promo code is used more than its cap."""
    from .services import offers, pricing

    breaches = []
    fields = {"ref": 1, "cartId": 1, "lines": 1, "total": 1}
    for order in mongo.orders().find({"state": OrderState.PAID}, fields, hint=[("_id", 1)]):  # all, on purpose
        cart = mongo.carts().find_one({"_id": order["cartId"]}, {"items": 1, "promo": 1, "comp": 1})
        if cart is None:
            continue
        items = {(i["sessionId"], i["key"]): i for i in cart["items"]}
        for line in order["lines"]:
            item = items.get((line["sessionId"], line["key"]))
            if item is None:
                continue
            locked = next((o["price"] for o in offers.item_offers(item) if o["code"] == offers.item_type(item)), None)
            if line["price"] != item["price"] or line.get("ticketType", offers.FULL) != offers.item_type(item):
                breaches.append(f"order {order['ref']}: seat {line['key']} is not charged as it was held")
            elif locked is not None and locked != item["price"]:
                breaches.append(f"order {order['ref']}: {line['key']} held at {locked}, charged {item['price']}")
        if order["total"] != pricing.cart_totals(cart).total:
            breaches.append(f"order {order['ref']}: total {order['total']} is not what the cart's items and code make")
    for code in mongo.promo_codes().find({}, {"code": 1, "uses": 1, "cap": 1}, hint=[("_id", 1)]):
        if code.get("uses", 0) > code.get("cap", 0) or code.get("uses", 0) < 0:
            breaches.append(f"promo code {code['code']} is used {code.get('uses')} times, its cap is {code.get('cap')}")
    return breaches
