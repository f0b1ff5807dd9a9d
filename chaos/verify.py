"""The final checks, run on a quiet system after one reconcile pass.

They compare what the buyers saw (``Stats``) with what the database says. Django must be set up
(the harness points it at the run's MongoDB before importing this).
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from booking.core import clock, mongo
from booking.core.domain import HOLDING_STATES, OrderState
from booking.payments import refunds
from booking.upkeep import invariants, reconcile
from booking.venues.seat_grid import HELD, SOLD, parse_seat_key

from .buyers import Stats


@dataclass
class Verdict:
    breaches: list[str] = field(default_factory=list)
    invariant_breaches: list[str] = field(default_factory=list)
    double_sold_seats: int = 0
    double_held_seats: int = 0
    orders: int = 0
    seats_sold: int = 0
    carts_by_state: dict = field(default_factory=dict)
    reconcile_report: str = ""
    paid_without_seats: int = 0
    money_kept_unsold: int = 0  # minor units kept at Stripe beyond what sold seats are worth
    orders_keeping_money: int = 0
    stripe_taken: int = 0
    stripe_refunded: int = 0

    @property
    def ok(self) -> bool:
        return not self.breaches and not self.invariant_breaches


def final_checks(stats: Stats, web_log: str, stripe_url: str | None = None) -> Verdict:
    verdict = Verdict()
    try:
        # as reconcile runs once the claims of killed workers ran out (a refund claimed by a worker
        # killed mid-call stays claimed for CLAIM_SECONDS; production's next round finishes it)
        after_claims = clock.now() + timedelta(seconds=refunds.CLAIM_SECONDS)
        verdict.reconcile_report = str(reconcile.reconcile(now=after_claims, grace=timedelta(0)))
    except Exception as exc:  # a corrupt state can make reconcile itself fail: that is a finding
        verdict.reconcile_report = f"FAILED: {exc!r}"
        verdict.breaches.append(f"the reconcile pass failed: {exc!r}")
    verdict.invariant_breaches = invariants.check_invariants()

    sessions = {s["_id"]: s for s in mongo.sessions().find({}, {"seats": 1, "reservations": 1, "name": 1})}
    carts = {c["_id"]: c for c in mongo.carts().find({}, {"state": 1, "expiresAt": 1})}
    paid = list(mongo.orders().find({"state": OrderState.PAID}, hint=[("_id", 1)]))  # every order, on purpose
    verdict.orders = len(paid)

    # No seat is in two orders.
    owners = defaultdict(list)
    for order in paid:
        for line in order["lines"]:
            owners[(line["sessionId"], line["key"])].append(order["ref"])
    doubles = {seat: refs for seat, refs in owners.items() if len(refs) > 1}
    verdict.double_sold_seats = len(doubles)
    for (sid, key), refs in sorted(doubles.items(), key=str)[:20]:
        verdict.breaches.append(f"seat {key} of session {sid} is in {len(refs)} paid orders: {refs}")

    # Every order's seats are sold.
    for order in paid:
        unsold = 0 if order["lines"] else 1
        for line in order["lines"]:
            session = sessions.get(line["sessionId"])
            r, c = parse_seat_key(line["key"])
            if session is None or session["seats"][r][c] != SOLD:
                verdict.breaches.append(f"order {order['ref']}: seat {line['key']} is not sold")
                unsold += 1
        verdict.paid_without_seats += bool(unsold)
    if stripe_url:
        _money_at_stripe(verdict, stripe_url)
    verdict.seats_sold = sum(len(o["lines"]) for o in paid)

    # Every checkout a buyer saw succeed has its order, with the seats the buyer saw, sold.
    by_ref = {o["ref"]: o for o in paid}
    for ref, seats in stats.orders_seen.items():
        order = by_ref.get(ref)
        if order is None:
            verdict.breaches.append(f"a buyer saw order {ref} succeed, but no paid order {ref} exists")
        elif seats == 0:
            verdict.breaches.append(f"a replayed checkout created a second order {ref}")
        elif len(order["lines"]) != seats:
            verdict.breaches.append(f"order {ref}: the buyer saw {seats} seats, the order has {len(order['lines'])}")

    # No seat is held by a cart that is not live; no seat is held twice.
    held_by = defaultdict(int)
    for sid, session in sessions.items():
        for hold in session.get("reservations", []):
            cart = carts.get(hold["_id"])
            live = cart is not None and cart["state"] in HOLDING_STATES
            for key in hold["seats"]:
                held_by[(sid, key)] += 1
                if not live:
                    verdict.breaches.append(f"seat {key} is held by cart {hold['_id']}, which is not live")
                r, c = parse_seat_key(key)
                if session["seats"][r][c] != HELD:
                    verdict.breaches.append(f"seat {key} is in a hold but its cell is {session['seats'][r][c]}")
    verdict.double_held_seats = sum(1 for n in held_by.values() if n > 1)
    if verdict.double_held_seats:
        verdict.breaches.append(f"{verdict.double_held_seats} seats are held by two carts at once")

    # Zero HTTP 500s (503 while MongoDB is down is fine, with its retry hint).
    if stats.server_errors:
        sample = ", ".join(f"{m} {p} -> {s}" for m, p, s in stats.server_errors[:5])
        verdict.breaches.append(f"{len(stats.server_errors)} server errors: {sample}")
    if stats.retry_after_missing:
        verdict.breaches.append(f"{stats.retry_after_missing} answers of 503 came without Retry-After")
    logged = web_log.count("Internal Server Error:")  # Django logs every 500 (DEBUG is on in the run)
    if logged:
        verdict.breaches.append(f"the web log has {logged} internal server errors")

    states = defaultdict(int)
    for cart in carts.values():
        states[cart["state"]] += 1
    verdict.carts_by_state = dict(states)
    verdict.breaches = _dedupe(verdict.breaches)
    return verdict


def _dedupe(lines: list[str]) -> list[str]:
    seen = set()
    return [x for x in lines if not (x in seen or seen.add(x))]


def _money_at_stripe(verdict: Verdict, stripe_url: str) -> None:
    """What Stripe (localstripe) says was taken and given back, per order, against what the order
    still sells: no money kept for seats not sold, none for an order that is not paid."""
    import httpx

    headers = {"Authorization": "Bearer sk_test_chaos"}
    intents = httpx.get(f"{stripe_url}/v1/payment_intents", params={"limit": 1000000}, headers=headers, timeout=60)
    refunds = httpx.get(f"{stripe_url}/v1/refunds", params={"limit": 1000000}, headers=headers, timeout=60)
    refunded_by_intent = defaultdict(int)
    charge_intent = {}
    taken_by_order = defaultdict(int)
    for intent in intents.json()["data"]:
        if intent["status"] == "succeeded":
            taken_by_order[intent["metadata"].get("order", "")] += intent["amount"]
            verdict.stripe_taken += intent["amount"]
            if intent.get("latest_charge"):
                charge = intent["latest_charge"]
                charge_intent[charge["id"] if isinstance(charge, dict) else charge] = intent
    by_id = {i["id"]: i for i in intents.json()["data"]}
    for refund in refunds.json()["data"]:
        intent = by_id.get(refund.get("payment_intent") or "") or charge_intent.get(refund.get("charge"))
        if intent is not None:
            refunded_by_intent[intent["metadata"].get("order", "")] += refund["amount"]
            verdict.stripe_refunded += refund["amount"]
    orders = {str(o["_id"]): o for o in mongo.orders().find({}, {"ref": 1, "state": 1, "lines": 1, "fee": 1})}
    for order_id, taken in taken_by_order.items():
        order = orders.get(order_id)
        kept = taken - refunded_by_intent[order_id]
        worth = 0
        if order is not None and order["state"] in ("paid", "partially_refunded") and order["lines"]:
            worth = sum(line["price"] - line.get("discount", 0) for line in order["lines"])
            worth += (order.get("fee") or {}).get("amount", 0)
        if kept != worth:
            verdict.money_kept_unsold += max(kept - worth, 0)
            verdict.orders_keeping_money += 1
            ref = order["ref"] if order else order_id
            state = order["state"] if order else "unknown"
            verdict.breaches.append(
                f"Stripe kept {kept / 100:.2f} for order {ref} ({state}), whose seats are worth {worth / 100:.2f}"
            )
