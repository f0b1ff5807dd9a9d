"""Waiting rooms in the admin: open one (a session, a series), watch the figures, pause, resume,
change the rate and the times live, end it; Django's permissions decide who may."""

import re
from datetime import timedelta

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, DELETION
from django.test import Client
from django.utils import timezone

from booking.core import clock, mongo
from booking.sales import waiting_room
from booking.tests.admin_support import last_log, make_staff
from booking.tests.factories import make_session, make_theater

pytestmark = pytest.mark.django_db

ROOM_PERMS = [f"{a}_waitingroom" for a in ("view", "add", "change", "delete")]


@pytest.fixture
def staff_client(client):
    client.force_login(make_staff("boxoffice", ROOM_PERMS))
    return client


def local(dt):
    return timezone.localtime(dt).strftime("%Y-%m-%dT%H:%M")


def text(response):
    return re.sub(r"\s+", " ", response.content.decode())


def open_data(target, **overrides):
    now = clock.now()
    data = {
        "target": str(target),
        "opens_at": local(now - timedelta(minutes=5)),
        "on_sale_at": local(now + timedelta(minutes=30)),
        "rate": "120",
    }
    data.update(overrides)
    return data


def test_the_index_lists_waiting_rooms_and_the_add_page_offers_performances(staff_client):
    session = make_session(name="Big Premiere")
    assert "Waiting rooms" in text(staff_client.get("/admin/"))
    page = text(staff_client.get("/admin/booking/waitingroom/add/"))
    assert "Big Premiere" in page and str(session["_id"]) in page


def test_opening_a_room_marks_the_session_and_logs_it(staff_client):
    session = make_session()
    response = staff_client.post("/admin/booking/waitingroom/add/", open_data(session["_id"]))
    assert response.status_code == 302
    assert response["Location"] == f"/admin/booking/waitingroom/{session['_id']}/change/"
    room = mongo.sessions().find_one({"_id": session["_id"]})["waitingRoom"]
    assert room["queueId"] == session["_id"] and room["rate"] == 120 and room["paused"] is False
    log = last_log("waitingroom")
    assert log.action_flag == ADDITION and log.object_id == str(session["_id"])
    assert "120 buyers a minute" in log.change_message
    listing = text(staff_client.get("/admin/booking/waitingroom/"))
    assert "Hamlet" in listing and "waiting for the sale" in listing


def test_a_series_gets_one_room_per_performance(staff_client):
    theater = make_theater()
    first = make_session(theater, name="Hamlet", days=1)
    second = make_session(theater, name="Hamlet", days=2)
    other = make_session(theater, name="Godot", days=3)
    response = staff_client.post("/admin/booking/waitingroom/add/", open_data(first["_id"], series="on"))
    assert response.status_code == 302
    queued = {s["_id"] for s in mongo.sessions().find({"waitingRoom": {"$exists": True}}).hint("_id_")}
    assert queued == {first["_id"], second["_id"]} and other["_id"] not in queued
    assert len(waiting_room.rooms()) == 2


def test_bad_input_is_explained_not_a_500(staff_client):
    session = make_session()
    now = clock.now()
    cases = [
        open_data(session["_id"], rate="0"),
        open_data(session["_id"], rate="lots"),
        open_data(session["_id"], on_sale_at=local(now + timedelta(days=5))),  # after the show starts
        open_data(session["_id"], opens_at=local(now + timedelta(hours=1))),  # after the sale
        open_data("not-an-id"),
        open_data("64b7f0c2a1b2c3d4e5f60718"),
        {},
    ]
    for data in cases:
        response = staff_client.post("/admin/booking/waitingroom/add/", data)
        assert response.status_code in (400, 404), data
    assert "waitingRoom" not in mongo.sessions().find_one({"_id": session["_id"]})
    staff_client.post("/admin/booking/waitingroom/add/", open_data(session["_id"]))
    again = staff_client.post("/admin/booking/waitingroom/add/", open_data(session["_id"]))
    assert again.status_code == 400 and "already" in text(again)


@pytest.mark.parametrize(
    "times",
    [
        {"opens_at": "0001-01-01T00:00"},  # before the first year a time can be moved to UTC in
        {"on_sale_at": "9999-12-31T23:59"},
        {"opens_at": "1899-12-31T23:59"},  # the last minute before the years the field takes
    ],
)
def test_a_time_at_the_end_of_the_calendar_is_a_form_error(staff_client, times):
    session = make_session()
    response = staff_client.post("/admin/booking/waitingroom/add/", open_data(session["_id"], **times))
    assert response.status_code == 400
    [field] = times
    assert response.context["form"].errors[field] == ["Choose a date in the years 1900 to 9998."]
    assert "Choose a date in the years 1900 to 9998." in text(response)
    assert "waitingRoom" not in mongo.sessions().find_one({"_id": session["_id"]})


def test_the_dashboard_shows_the_figures_and_staff_pause_resume_and_rerate_live(staff_client):
    session = make_session()
    now = clock.now()
    config = waiting_room.enable(session["_id"], opens_at=now, on_sale_at=now + timedelta(minutes=5), rate=60)
    for _ in range(3):
        Client().get(f"/queue/{session['_id']}/")  # three buyers waiting
    base = f"/admin/booking/waitingroom/{session['_id']}"
    page = text(staff_client.get(f"{base}/change/"))
    assert re.search(r"<dt>Waiting</dt><dd>3</dd>", page)
    assert re.search(r"<dt>Admission rate</dt><dd>60 <small>", page)
    for label in ("Admitted", "Buying now", "Done (paid orders)", "Left the queue"):
        assert f"<dt>{label}</dt>" in page
    stats = text(staff_client.get(f"{base}/stats/", HTTP_HX_REQUEST="true"))
    assert stats.lstrip().startswith('<div id="room-stats"') and "<html" not in stats

    assert staff_client.post(f"{base}/pause/").status_code == 302
    assert waiting_room.get_config(config.queue_id, fresh=True).paused
    assert waiting_room.stats(config).paused  # Redis has it at once
    assert "Resume admission" in text(staff_client.get(f"{base}/change/"))
    assert last_log("waitingroom").action_flag == CHANGE
    staff_client.post(f"{base}/resume/")
    assert not waiting_room.stats(config).paused

    assert staff_client.post(f"{base}/change/", {"rate": "300"}).status_code == 302
    assert waiting_room.stats(config).rate == 300
    assert "rate 300/min" in last_log("waitingroom").change_message
    assert staff_client.post(f"{base}/change/", {"rate": "-3"}).status_code == 400
    new_sale = now + timedelta(minutes=20)
    response = staff_client.post(f"{base}/change/", {"opens_at": local(now), "on_sale_at": local(new_sale)})
    assert response.status_code == 302
    assert waiting_room.get_config(config.queue_id, fresh=True).on_sale_at == new_sale.replace(second=0, microsecond=0)


def test_ending_a_room_opens_the_sale_to_everybody(staff_client):
    session = make_session()
    now = clock.now()
    waiting_room.enable(session["_id"], opens_at=now, on_sale_at=now, rate=60)
    base = f"/admin/booking/waitingroom/{session['_id']}"
    assert "End the waiting room" in text(staff_client.get(f"{base}/end/"))
    assert staff_client.post(f"{base}/end/").status_code == 302
    assert "waitingRoom" not in mongo.sessions().find_one({"_id": session["_id"]})
    assert last_log("waitingroom").action_flag == DELETION
    assert Client().get(f"/sessions/{session['_id']}/").status_code == 200


def test_permissions_decide(client):
    session = make_session()
    now = clock.now()
    waiting_room.enable(session["_id"], opens_at=now, on_sale_at=now, rate=60)
    base = f"/admin/booking/waitingroom/{session['_id']}"
    client.force_login(make_staff("viewer", ["view_waitingroom"]))
    assert client.get("/admin/booking/waitingroom/").status_code == 200
    page = text(client.get(f"{base}/change/"))
    assert "Pause admission" not in page and "End the waiting room" not in page
    assert client.post(f"{base}/pause/").status_code == 403
    assert client.post(f"{base}/change/", {"rate": "5"}).status_code == 403
    assert client.post(f"{base}/end/").status_code == 403
    assert client.get("/admin/booking/waitingroom/add/").status_code == 403
    client.force_login(make_staff("clerk"))
    assert client.get("/admin/booking/waitingroom/").status_code == 403
    assert not waiting_room.get_config(session["_id"], fresh=True).paused


def test_unknown_and_malformed_room_ids_are_404(staff_client):
    for path in ("not-an-id/change/", "64b7f0c2a1b2c3d4e5f60718/change/", "64b7f0c2a1b2c3d4e5f60718/stats/"):
        assert staff_client.get(f"/admin/booking/waitingroom/{path}").status_code == 404
