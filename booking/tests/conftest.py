"""Fixtures shared by the booking app's tests (MongoDB and Redis come from the root conftest)."""

import pytest

from booking.core import faults
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


@pytest.fixture
def fault_hook():
    """fault_hook(fn): booking.core.faults.point(name) calls fn(name) until the test ends."""
    yield faults.set_hook
    faults.set_hook(None)


@pytest.fixture
def crash_at(fault_hook):
    """crash_at("hold.after_session"): the process 'dies' there (faults.InjectedCrash is raised)."""

    def arm(point_name):
        def hook(name):
            if name == point_name:
                raise faults.InjectedCrash(name)

        fault_hook(hook)

    return arm


@pytest.fixture
def no_hold_rate_limit(settings):
    """No hold rate limit per buyer: for tests that hold more seats a minute than a person clicks
    (every test client is 127.0.0.1; the limits have their own tests in tests/security/)."""
    settings.BOOKING_HOLD_RATE = ""
