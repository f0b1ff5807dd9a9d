"""Builders for the door check-in tests: paid orders, door staff."""

import secrets

from django.contrib.auth.models import Permission, User

from booking.services import checkin, holds
from booking.tests.paying import checkout_paid


def sell(session: dict, keys, name: str = "Ada Lovelace", email: str = "ada@example.com") -> dict:
    """A paid order for these seats, through the real hold and checkout."""
    owner = f"s:{secrets.token_hex(6)}"
    cart_id = holds.hold_seats(session["_id"], owner, None, list(keys), allow_orphans=True).cart_id
    return checkout_paid(owner, cart_id, name, email)  # since payments: checkout, then the card payment


def tickets(order: dict) -> list[str]:
    return [line["ticket"] for line in order["lines"]]


def scope_of(session: dict) -> checkin.Scope:
    return checkin.get_scope(session["_id"])


def door_staff(username: str = "door", *, allowed: bool = True, password: str = "a-long-test-password") -> User:
    """A login for the door: not admin staff, only the check-in permission (when allowed)."""
    user = User.objects.create_user(username, f"{username}@theater.example", password)
    if allowed:
        user.user_permissions.add(Permission.objects.get(codename="checkin_tickets", content_type__app_label="booking"))
    return user
