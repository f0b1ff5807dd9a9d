"""The admin's sale window page: draft/published, on-sale and off-sale times, bad input (a form
error, never a 500) and permissions."""

from datetime import timedelta

import pytest
from django.utils import timezone

from booking.core import mongo
from booking.core.domain import SessionStatus
from booking.sales import holds
from booking.tests.admin_support import make_staff
from booking.tests.factories import make_session

pytestmark = pytest.mark.django_db


def local(dt):
    return timezone.localtime(dt).strftime("%Y-%m-%dT%H:%M:%S")


def url(session):
    return f"/admin/booking/session/{session['_id']}/sale-window/"


def test_staff_set_a_draft_and_a_window_to_the_second(manager_client):
    session = make_session()
    opens = (timezone.now() + timedelta(hours=1)).replace(microsecond=0, second=7)
    closes = session["start"] - timedelta(hours=1)
    data = {"published": "0", "sale_opens": local(opens), "sale_closes": local(closes)}
    response = manager_client.post(url(session), data)
    assert response.status_code == 302
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert stored["status"] == SessionStatus.DRAFT
    assert stored["saleOpens"] == opens and stored["saleCloses"] == closes.replace(microsecond=0)
    assert manager_client.get(f"/sessions/{session['_id']}/").status_code == 404  # staff or not: buyers' page
    assert "draft" in manager_client.get("/admin/booking/session/").content.decode()
    manager_client.post(url(session), {**data, "published": "1"})
    assert mongo.sessions().find_one({"_id": session["_id"]})["status"] == SessionStatus.ON_SALE


@pytest.mark.parametrize(
    "change, field_message",
    [
        ({"sale_opens": +2, "sale_closes": +1}, "The off-sale time must be after the on-sale time."),
        ({"sale_opens": +1, "sale_closes": +24 * 5}, "Sales cannot close after the performance starts."),
        ({"sale_opens": "next tuesday"}, "Enter a valid date/time."),
        ({"sale_opens": "0001-01-01T00:00:00"}, "Choose a date in the years 1900 to 9998."),
        ({"sale_closes": "0001-01-01T00:00"}, "Choose a date in the years 1900 to 9998."),
        ({"published": "maybe"}, "Select a valid choice."),
        ({"presale_opens": +3, "sale_opens": +2}, "The presale must open before the public on-sale time."),
        ({"presale_opens": +1, "sale_opens": +2}, "A presale needs an access code."),
    ],
)
def test_bad_input_is_a_form_error_and_changes_nothing(manager_client, change, field_message):
    session = make_session()
    now = timezone.now()
    data = {"published": "1"}
    for field, value in change.items():
        data[field] = local(now + timedelta(hours=value)) if isinstance(value, int) else value
    response = manager_client.post(url(session), data)
    assert response.status_code == 400
    assert field_message in response.content.decode()
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert "saleOpens" not in stored and "presale" not in stored and stored["status"] == SessionStatus.ON_SALE


def test_back_to_draft_with_seats_held_is_refused_with_a_message(manager_client):
    session = make_session()
    holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    response = manager_client.post(url(session), {"published": "0"})
    assert response.status_code == 409
    assert "can no longer go back to draft" in response.content.decode()


def test_permissions(client):
    session = make_session()
    client.force_login(make_staff("clerk"))
    assert client.get(url(session)).status_code == 403
    client.force_login(make_staff("viewer", ["view_session"]))
    assert client.get(url(session)).status_code == 200
    assert client.post(url(session), {"published": "0"}).status_code == 403
    assert mongo.sessions().find_one({"_id": session["_id"]})["status"] == SessionStatus.ON_SALE
    client.logout()
    assert client.get(url(session)).status_code == 302  # to the login page
