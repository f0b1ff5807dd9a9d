"""Fixtures of the hostile-input suites; their helpers (buyers with CSRF enforced, database
snapshots) are in support.py."""

import pytest

from booking.tests.factories import make_session

from .support import buyer_client


@pytest.fixture(autouse=True)
def _hostile_settings(settings):
    settings.BOOKING_HOLD_RATE = ""  # the rate limit has its own tests (test_limits.py)


@pytest.fixture
def session():
    return make_session()


@pytest.fixture
def buyer():
    return buyer_client()
