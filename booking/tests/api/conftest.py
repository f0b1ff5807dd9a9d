"""Fixtures of the API tests: a theater with one performance, and a client with a token of every
scope for it."""

import pytest

from booking.tests.api.support import Api, make_token
from booking.tests.factories import make_session, make_theater


@pytest.fixture
def theater():
    return make_theater()


@pytest.fixture
def performance(theater):
    return make_session(theater)


@pytest.fixture
def api(theater):
    return Api(make_token(theater))
