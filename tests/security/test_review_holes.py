"""The holes the hostile-input review found (issue 20), one test (or a few) each. Every test here
failed against the code before its fix; the commit that fixed the hole says how it failed.

Limits with their own suite (the rate limits, Redis down) are in test_limits.py.
"""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from booking.tests.factories import make_theater

from .conftest import assert_unchanged, snapshot

HTMX = {"HTTP_HX_REQUEST": "true"}

pytestmark = pytest.mark.django_db


def staff_client() -> Client:
    boss = get_user_model().objects.create_user("boss", "boss@example.org", None, is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(boss)
    return client


# --- 1. what's on, a day at either end of the calendar ---


@pytest.mark.parametrize("day", ["9999-12-31", "9999-12-30", "0001-01-01"])
@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_whats_on_for_a_day_at_the_end_of_the_calendar_is_a_clear_400(day, htmx, session):
    before = snapshot()
    response = Client().get(f"/?date={day}", **(HTMX if htmx else {}))
    assert response.status_code == 400
    assert "Choose a date in the years 1900 to 9998." in response.content.decode()
    assert_unchanged(before, snapshot())


def test_whats_on_still_shows_the_days_inside_the_range(session):
    day = session["start"].date().isoformat()  # tomorrow, in UTC; the site is a few hours off at most
    response = Client().get(f"/?date={day}", **HTMX)
    assert response.status_code == 200


# --- 2. the staff's session list, a day at either end of the calendar ---


@pytest.mark.parametrize(
    "query",
    ["day=9999-12-31", "day=9999-12-31&when=all", "day=0001-01-01&when=past", "day=0001-01-01", "day=0001-01-02"],
)
def test_staff_session_list_for_a_day_at_the_end_of_the_calendar_is_a_clear_400(query, session):
    client = staff_client()
    before = snapshot()
    response = client.get(f"/admin/booking/session/?{query}")
    assert response.status_code == 400
    assert "Choose a date in the years 1900 to 9998." in response.content.decode()
    assert_unchanged(before, snapshot())


def test_staff_session_list_still_filters_by_a_day(session):
    day = session["start"].date().isoformat()
    response = staff_client().get(f"/admin/booking/session/?day={day}&when=all")
    assert response.status_code == 200


def test_a_series_ending_at_the_end_of_the_calendar_is_refused_not_a_500():
    theater = make_theater()
    client = staff_client()
    before = snapshot()
    form = {
        "name": "Hamlet",
        "first_day": "9999-12-31",
        "last_day": "9999-12-31",
        "start_time": "23:30",
        "duration": "150",  # ends in the year 10000
        "weekdays": [str(d) for d in range(7)],
        "price_s": "10",
        "price_p": "20",
    }
    response = client.post(f"/admin/booking/session/add-series/?theater={theater['_id']}", form)
    assert response.status_code == 400
    assert "Choose a date in the years 1900 to 9998." in response.content.decode()
    assert_unchanged(before, snapshot())
