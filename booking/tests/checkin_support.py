"""Builders for the door check-in tests: paid orders, door staff."""

import secrets

from django.contrib.auth.models import Permission, User

from booking.core.domain import Order
from booking.sales import checkin, holds, offers
from booking.tests.factories import TYPES, make_session, make_theater
from booking.tests.paying import checkout_paid


def sell(session: dict, keys, name: str = "Ada Lovelace", email: str = "ada@example.com") -> Order:
    """A paid order for these seats, through the real hold and checkout."""
    owner = f"s:{secrets.token_hex(6)}"
    cart_id = holds.hold_seats(session["_id"], owner, None, list(keys), allow_orphans=True).cart_id
    return checkout_paid(owner, cart_id, name, email)  # since payments: checkout, then the card payment


def a_reduced_ticket() -> tuple[dict, str]:
    """A paid order of one seat bought at the reduced price (its type has a German name and a
    condition, factories.TYPES)."""
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater, name="Hamlet")
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500}})
    hold = holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    offers.choose_ticket_type("s:ada", hold.cart_id, session["_id"], "0:0", "reduced")
    order = checkout_paid("s:ada", hold.cart_id, "Ada Lovelace", "ada@example.com")
    return session, tickets(order)[0]


def tickets(order: Order) -> list[str]:
    return [line["ticket"] for line in order["lines"]]


def scope_of(session: dict) -> checkin.Scope:
    return checkin.get_scope(session["_id"])


def door_staff(username: str = "door", *, allowed: bool = True, password: str = "a-long-test-password") -> User:
    """A login for the door: not admin staff, only the check-in permission (when allowed)."""
    user = User.objects.create_user(username, f"{username}@theater.example", password)
    if allowed:
        user.user_permissions.add(Permission.objects.get(codename="checkin_tickets", content_type__app_label="booking"))
    return user
