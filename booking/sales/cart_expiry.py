"""Ending carts past their hold, whichever kind: an active cart's seats go back here; a paying
cart ends through the payment flow, which expires its order or, when its payment went through
after all, settles it. Above both the carts and the payment flow, so neither imports the other.
"""

from dataclasses import dataclass, field
from datetime import datetime

from booking.core import clock, mongo
from booking.core.domain import Cart, CartState, is_live, is_stale, stale_cart_filter
from booking.payments import flow as payments
from booking.sales import carts


def live_or_expire(cart: Cart | None, now: datetime) -> Cart | None:
    """The cart if it is live (``domain.is_live``), else None. A cart found past its hold but still
    active is expired here and now (the worker's own code), so its seats are free at once rather
    than when the worker comes round."""
    if is_live(cart, now):
        return cart
    if is_stale(cart, now):
        expire_ended(cart, now)
    return None


def expire_ended(cart: Cart, now: datetime) -> carts.CartEnd:
    """Expire a cart whose hold has ended, whichever kind it is (``cart``: its _id, state, owner;
    a paying one's ``orderRef`` and ``items.sessionId`` too, when read: then all by shard key)."""
    if cart["state"] == CartState.PAYING:
        return payments.expire_paying_cart(cart["_id"], now, cart=cart)
    return carts.CartEnd(carts.expire_cart(cart["_id"], now, owner=cart.get("owner")))


@dataclass
class ExpiryReport:
    carts_expired: int = 0
    seats_released: int = 0
    payments_settled: int = 0  # paying carts whose payment had gone through: settled, not expired
    cart_ids: list = field(default_factory=list)


def expire_stale_carts(now: datetime | None = None, batch_size: int = 500) -> ExpiryReport:
    """Expire every active cart whose hold has ended (the worker's job; safe to run in parallel)."""
    now = now or clock.now()
    report = ExpiryReport()
    while True:
        stale = list(
            mongo.carts()
            # (a paying one's order reference and sessions too: its expiry writes by shard key)
            .find(stale_cart_filter(now), {"state": 1, "owner": 1, "orderRef": 1, "items.sessionId": 1})
            # No _id tie-breaker: the state_expires index serves this order (with _id it would be
            # a sort in memory of every stale cart, per batch), and every stale cart is expired
            # whichever of equal ones comes first.
            .sort("expiresAt", 1)
            .limit(batch_size)
        )
        if not stale:
            break
        for doc in stale:
            ended = expire_ended(doc, now)
            report.payments_settled += ended.settled
            if ended.freed is not None:
                report.carts_expired += 1
                report.seats_released += ended.freed
                report.cart_ids.append(doc["_id"])
        if len(stale) < batch_size:
            break
    return report
