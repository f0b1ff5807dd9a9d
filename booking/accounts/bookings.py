"""A signed-in buyer's bookings: every order made with their e-mail address (also those from
before the account), the ones with performances still to come first."""

from dataclasses import dataclass
from datetime import datetime

from booking.core import clock, mongo
from booking.core.domain import SEAT_OWNING_ORDER_STATES, Order, OrderState
from booking.core.localized import order_state_label

# the states in which an order still takes the buyer somewhere
COMING_STATES = (*SEAT_OWNING_ORDER_STATES, OrderState.PENDING_PAYMENT)
# more than a person books in a lifetime; keeps one page bounded
MOST_ORDERS_SHOWN = 500
FIELDS = {"ref": 1, "state": 1, "sessions": 1, "lines.sessionId": 1, "total": 1, "currency": 1, "createdOn": 1}


@dataclass(frozen=True)
class BuyerOrder:
    order: Order
    next_start: datetime | None  # the first performance still to come, if the order goes to one

    @property
    def state_label(self) -> str:
        """ "Paid", "Partly refunded", ... in the page's language."""
        return order_state_label(self.order["state"])


@dataclass(frozen=True)
class BuyerBookings:
    upcoming: list[BuyerOrder]  # soonest first
    other: list[BuyerOrder]  # past, canceled, refunded, expired: newest first


def bookings_of(*, email: str) -> BuyerBookings:
    now = clock.now()
    found = mongo.orders().find({"email": email}, FIELDS).sort("createdOn", -1).limit(MOST_ORDERS_SHOWN)
    upcoming, other = [], []
    for order in found:
        with_seats = {line["sessionId"] for line in order.get("lines", [])}
        starts = [
            s["start"]
            for s in order.get("sessions", [])
            if s["_id"] in with_seats and s.get("start") and s["start"] > now
        ]
        if starts and order.get("state") in COMING_STATES:
            upcoming.append(BuyerOrder(order=order, next_start=min(starts)))
        else:
            other.append(BuyerOrder(order=order, next_start=None))
    upcoming.sort(key=lambda entry: entry.next_start or now)
    return BuyerBookings(upcoming=upcoming, other=other)
