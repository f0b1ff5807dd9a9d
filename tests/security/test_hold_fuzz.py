"""Hypothesis-generated request bodies for the hold endpoint: never a 500; a refusal (400)
changes nothing; whatever happens, the invariants hold."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.upkeep import invariants

from .support import assert_unchanged, buyer_client, csrf, snapshot

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # hypothesis: 120 request bodies


coordinate = st.one_of(
    st.integers(min_value=-3, max_value=12),
    st.integers(min_value=-(10**30), max_value=10**30),
)
seat_like = st.builds(lambda r, c: f"{r}:{c}", coordinate, coordinate)
junk = st.text(max_size=40)
seat_value = st.one_of(seat_like, junk, st.builds(lambda xs: ",".join(xs), st.lists(seat_like, max_size=14)))
body = st.dictionaries(
    keys=st.one_of(st.just("seats"), st.sampled_from(["seat", "count", "seats[]", "cart_id", "$where"]), junk),
    values=st.one_of(seat_value, st.lists(seat_value, max_size=12)),
    max_size=4,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=body)
def test_any_hold_body_is_answered_without_a_server_error(data, settings_override):
    session = make_session()
    client = buyer_client()
    before = snapshot()
    response = client.post(f"/sessions/{session['_id']}/hold", data, **HTMX, **csrf(client))
    assert response.status_code in (200, 400), (data, response.status_code, response.content[:300])
    if response.status_code == 400:
        assert 'class="msg msg-error"' in response.content.decode()
        assert_unchanged(before, snapshot())
    assert invariants.check_invariants() == []


@pytest.fixture
def settings_override(settings):
    settings.BOOKING_MAX_HELD_SEATS_PER_CLIENT = 0
    settings.BOOKING_HOLD_RATE = ""
