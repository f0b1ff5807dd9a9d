"""Checkout and pay in one step, for tests that need a paid order (the card payment itself is
tested in test_payments.py): the real flow, through localstripe."""

from booking.core.domain import Order
from booking.payments import flow as payments
from booking.sales import holds
from booking.tests.localstripe import VISA, card

__all__ = ["card", "checkout_paid", "checkout_paid_setup", "intent_of", "pay"]


def pay(order: Order, number: str = VISA, means: str | None = None) -> Order:
    outcome = payments.pay_with_card(order["ref"], order["owner"], means or card(number))
    assert outcome.status == "paid", (outcome.status, outcome.message)
    return outcome.order


def intent_of(order: Order) -> str:
    """The id of the order's card payment at the provider (checkout made it)."""
    intent = order["payment"]["intent"]
    assert intent is not None, order["payment"]
    return intent


def checkout_paid(owner: str, cart_id, name: str, email: str) -> Order:
    """Checkout and pay by card: the order, paid, its seats sold."""
    return pay(payments.start(owner, cart_id, name, email))


def checkout_paid_setup(session: dict, owner: str, keys=("2:0",)) -> Order:
    """A pending order of ``owner`` for these seats (checkout done, not paid yet)."""
    cart = holds.hold_seats(session["_id"], owner, None, list(keys))
    return payments.start(owner, cart.cart_id, "Someone", "someone@example.com")
