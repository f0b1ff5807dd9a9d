"""Staff set what buyers may change online: the theater's default, a performance's own rules or
back to the default, the same for a whole series; out-of-range values are refused."""

import pytest
from django.contrib import messages

from booking.core import mongo
from booking.sales import self_service
from booking.tests.admin_support import make_staff
from booking.tests.factories import make_session, make_theater

pytestmark = pytest.mark.django_db

FORM = {
    "exchange": "on",
    "cancel": "on",
    "hours_before": "48",
    "fee": "1.50",
    "transfer": "on",
    "max_transfers": "2",
    "transfer_hours_before": "3",
}


def rules_of(session):
    return self_service.rules_of_sessions([session["_id"]])[session["_id"]]


def test_the_theater_s_default_reaches_its_performances(manager_client):
    session = make_session()
    page = manager_client.get(f"/admin/booking/theater/{session['theaterId']}/change/").content.decode()
    assert "What buyers may change online: the default" in page
    response = manager_client.post(f"/admin/booking/theater/{session['theaterId']}/self-service/", FORM, follow=True)
    assert "default for online changes was saved" in response.content.decode()
    rules = rules_of(session)
    assert rules.cancel and rules.fee == 150 and rules.max_transfers == 2 and rules.transfer_hours_before == 3


def test_a_performance_s_own_rules_for_its_series_and_back_to_the_default(manager_client):
    theater = make_theater()
    first, second = make_session(theater, days=3), make_session(theater, days=4)
    other_show = make_session(theater, days=5, name="Macbeth")
    page = manager_client.get(f"/admin/booking/session/{first['_id']}/change/").content.decode()
    assert "What buyers may change online" in page and 'name="whole_series"' in page
    post = f"/admin/booking/session/{first['_id']}/self-service/"
    response = manager_client.post(post, {**FORM, "own": "on", "whole_series": "on", "fee": "0"}, follow=True)
    assert "saved for 2 performance(s)" in response.content.decode()
    assert rules_of(first).exchange and rules_of(second).exchange and rules_of(first).fee == 0
    assert rules_of(other_show) == self_service.NOTHING_ONLINE
    manager_client.post(post, {**FORM}, follow=True)  # "own" unticked: the theater's default again
    assert "selfService" not in mongo.sessions().find_one({"_id": first["_id"]})
    assert rules_of(second).exchange  # only this one went back


@pytest.mark.parametrize(
    "field,value",
    [("hours_before", "-1"), ("hours_before", str(self_service.MAX_HOURS + 1)), ("fee", "1000.01"), ("fee", "x"),
     ("max_transfers", str(self_service.MAX_TRANSFERS + 1))],
)  # fmt: skip
def test_out_of_range_values_are_refused_and_change_nothing(manager_client, field, value):
    session = make_session()
    post = f"/admin/booking/theater/{session['theaterId']}/self-service/"
    response = manager_client.post(post, {**FORM, field: value}, follow=True)
    assert [m.level for m in response.context["messages"]] == [messages.ERROR]
    assert "selfService" not in mongo.theaters().find_one({"_id": session["theaterId"]})


def test_the_rules_need_the_change_permission(client):
    session = make_session()
    client.force_login(make_staff("viewer", ["view_session", "view_theater"]))
    assert client.post(f"/admin/booking/session/{session['_id']}/self-service/", FORM).status_code == 403
    assert client.post(f"/admin/booking/theater/{session['theaterId']}/self-service/", FORM).status_code == 403
    assert "selfService" not in mongo.sessions().find_one({"_id": session["_id"]})
