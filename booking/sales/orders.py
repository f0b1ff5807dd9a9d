"""Orders after checkout: staff cancelation and giving a dead order's seats back.

Cancel is the order first (state canceled, seatsReleased false), then its sold seats become free,
then seatsReleased true. Freeing seats before canceling could sell a seat twice after a crash;
this order of writes can only leave seats sold a little longer, and reconcile finishes it.
"""

import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from bson import ObjectId
from django.utils.translation import gettext

from booking.core import clock, mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, CartState, Order, OrderState
from booking.core.errors import Conflict
from booking.core.localized import order_state_label
from booking.core.order_retention import purge_at as purge_at  # in core, for venues too; sales names it here
from booking.reports import marks
from booking.sales import outbox, promos, seats_returned
from booking.venues.seat_grid import BLOCKED, FREE, SOLD, cell_path, parse_seat_key

logger = logging.getLogger("booking.orders")


# What staff may cancel: a sale (its money goes back) or a reservation not paid yet.
CANCELABLE = (OrderState.PAID, OrderState.PARTIALLY_REFUNDED, OrderState.PENDING_PAYMENT)


def require_cancelable(order: Mapping[str, Any]) -> None:  # an Order
    if order["state"] not in CANCELABLE:
        raise Conflict(
            gettext("Order %(ref)s is %(state)s; there is nothing to cancel.")
            % {"ref": order["ref"], "state": order_state_label(order["state"]).lower()}
        )


def cancel_fingerprint(order: Mapping[str, Any]) -> str:  # an Order
    """What canceling the order depends on, in short: its state, tickets, payments and refunds,
    and whom the mail goes to. Staff confirm a cancellation they saw; any change since (a ticket
    refunded or moved, a payment) gives another fingerprint."""
    facts = [
        order["state"],
        order.get("total"),
        order.get("email"),
        order.get("exchangeOpen"),
        (order.get("paidWith") or {}).get("id"),
        [line["ticket"] for line in order.get("lines", [])],
        [refund["_id"] for refund in order.get("refunds") or []],
        [top_up.get("id") for top_up in order.get("topUps") or []],
    ]
    return hashlib.sha256(repr(facts).encode()).hexdigest()[:24]


def cancel_house_paid_order(order: Order, *, by: str, reason: str) -> Order:
    """Cancel a paid order whose money no provider holds (paid at the counter, complimentary):
    the order first, then its seats, then its promo code's use (``sales/cancels.py`` decides
    which way an order is canceled)."""
    if order["state"] != OrderState.PAID:
        raise Conflict(f"Order {order['ref']} is {order['state']}, not paid; there is nothing to cancel.")
    order_id = order["_id"]
    result = mongo.orders().update_one(
        {"_id": order_id, "state": OrderState.PAID},
        {
            "$set": {
                "state": OrderState.CANCELED,
                "canceledOn": clock.now(),
                "canceledBy": by,
                "cancelReason": reason,
                "seatsReleased": False,
            },
            "$push": {
                **marks.push(marks.sessions_of(order)),
                "webhookEvents": outbox.webhook_event(outbox.ORDER_CANCELED),
            },
        },
    )
    if not result.modified_count:
        raise Conflict(gettext("The order changed meanwhile; please look again."))
    outbox.queue_webhook_events(outbox.ORDERS, order)
    order = mongo.orders().find_one({"_id": order_id})
    release_order_seats(order)
    promos.release_for_cart(order["cartId"], states=(CartState.DONE,))  # its promo code's use goes back
    logger.info("order %s canceled by %s: %d seats free again", order["ref"], by or "?", len(order["lines"]))
    return mongo.orders().find_one({"_id": order_id})


def give_back(key: str, *, house: bool) -> dict:
    """The update that ends a sold seat's sale: a house seat (staff blocked it, then sold it at the
    counter) is blocked again and not counted available; any other seat is free (on sale) again.
    The caller's filter requires the cell sold, so this is one conditional update per seat."""
    path = cell_path(*parse_seat_key(key))
    if house:
        return {"$set": {path: BLOCKED}, "$inc": {"version": 1}}
    return {"$set": {path: FREE}, "$inc": {"seatsAvailable": 1, "version": 1}}


def release_order_seats(order: Mapping[str, Any]) -> int:  # _id and the lines to free
    """Free the sold seats of a canceled or failed order (safe to repeat); house seats go back to
    blocked. Returns seats given back."""
    freed = 0
    by_session: dict[ObjectId, list[str]] = {}
    for line in order["lines"]:
        by_session.setdefault(line["sessionId"], []).append(line["key"])
    for session_id, keys in by_session.items():
        # Never free a seat another paid order holds (possible only if this order never sold it).
        others = mongo.orders().find(
            {
                "_id": {"$ne": order["_id"]},
                "state": {"$in": list(SEAT_OWNING_ORDER_STATES)},  # their lines own their seats
                "lines": {"$elemMatch": {"sessionId": session_id, "key": {"$in": keys}}},
            },
            {"lines": 1},
        )
        taken = {line["key"] for o in others for line in o["lines"] if line["sessionId"] == session_id}
        mine = [k for k in keys if k not in taken]
        on_sale_again = 0
        house = {line["key"] for line in order["lines"] if line["sessionId"] == session_id and line.get("house")}
        for key in mine:
            # One seat at a time: a seat this order never sold must not stop the others.
            result = mongo.sessions().update_one(
                {"_id": session_id, cell_path(*parse_seat_key(key)): SOLD}, give_back(key, house=key in house)
            )
            freed += result.modified_count
            if result.modified_count and key not in house:
                on_sale_again += 1
        if on_sale_again:
            seats_returned.offer_to_waiting_list(session_id)
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"seatsReleased": True}})
    return freed
