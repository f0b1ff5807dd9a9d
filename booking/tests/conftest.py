"""Fixtures shared by the booking app's tests (MongoDB and Redis come from the root conftest)."""

import pytest

from booking.tests.admin_support import every_booking_perm, make_staff


@pytest.fixture
def manager(db):
    """A staff user with every permission on the booking pages (not a superuser)."""
    return make_staff("manager", every_booking_perm())


@pytest.fixture
def manager_client(client, manager):
    """Django's test client logged in as the manager."""
    client.force_login(manager)
    return client
