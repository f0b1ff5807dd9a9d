"""Helpers for the staff-site tests: users with given permissions and a few shortcuts to put the
booking data into a known state. The fixtures built on them (manager, manager_client) are in
booking/tests/conftest.py."""

import re
from collections.abc import Sequence

from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType

from booking.core.domain import Order
from booking.sales import holds
from booking.tests.paying import checkout_paid
from booking.upkeep.invariants import check_invariants

ALL_BOOKING = ["theater", "session", "cart", "order", "promocode", "giftvoucher"]


def make_staff(username: str, perms: Sequence[str] = ()) -> User:
    """A staff user with these permissions, e.g. ["view_theater", "add_session"]."""
    user = User.objects.create_user(username, f"{username}@theater.example", "pw-for-tests-only", is_staff=True)
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(content_type__app_label="booking", codename=codename))
    return user


def every_booking_perm() -> list[str]:
    models = [f"{action}_{model}" for model in ALL_BOOKING for action in ("view", "add", "change", "delete")]
    return [*models, "view_reports"]  # the sales reports (booking/control/reports.py)


def sell(session_id, seats, *, owner="s:buyer", name="Ada Lovelace", email="ada@example.com") -> Order:
    hold = holds.hold_seats(session_id, owner, None, seats)
    return checkout_paid(owner, hold.cart_id, name, email)


def last_log(model: str) -> LogEntry | None:
    ct = ContentType.objects.get(app_label="booking", model=model)
    return LogEntry.objects.filter(content_type=ct).order_by("-id").first()


def assert_consistent():
    assert check_invariants() == []


def cancel_page(order) -> str:
    return f"/admin/booking/order/{order['_id']}/cancel/"


def confirmation_token(client, order) -> str:
    """The token of the order's cancel confirmation page, as staff open it."""
    page = client.get(cancel_page(order)).content.decode()
    found = re.search(r'name="confirmation" value="([^"]+)"', page)
    assert found is not None, "no confirmation on the page"
    return found.group(1)


def cancel_confirmed(client, order, reason: str):
    """Cancel the order as staff do: open its confirmation page, then confirm it."""
    token = confirmation_token(client, order)
    return client.post(cancel_page(order), {"reason": reason, "confirmation": token})
