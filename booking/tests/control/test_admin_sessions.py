"""Sessions in the admin: create (one, a series), list with sales figures, edit, seat map,
blocking seats, cancel. After every action the booking invariants still hold."""

import re
from datetime import timedelta

import pytest
from django.contrib.admin.models import ADDITION, CHANGE
from django.utils import timezone

from booking.core import mongo
from booking.sales import cancels, holds
from booking.tests.admin_support import assert_consistent, last_log, sell
from booking.tests.factories import make_session, make_theater
from booking.venues.seat_grid import BLOCKED, FREE, SOLD

pytestmark = pytest.mark.django_db


def local(dt):
    return timezone.localtime(dt).strftime("%Y-%m-%dT%H:%M")


def session_data(**overrides):
    start = timezone.now() + timedelta(days=3)
    data = {
        "name": "Hamlet",
        "description": "To be or not to be.",
        "start": local(start),
        "end": local(start + timedelta(hours=3)),
        "price_s": "25.50",
        "price_p": "40",
    }
    data.update(overrides)
    return data


def test_add_asks_for_the_theater_first(manager_client):
    make_theater(name="Main Hall")
    page = manager_client.get("/admin/booking/session/add/").content.decode()
    assert "Which theater is it in?" in page and "Main Hall" in page


def test_creating_a_session_makes_a_draft_with_prices_in_cents(manager_client):
    theater = make_theater()
    response = manager_client.post(f"/admin/booking/session/add/?theater={theater['_id']}", session_data())

    session = mongo.sessions().find_one({"name": "Hamlet"}, hint=[("_id", 1)])  # a test's read: any field
    assert response.status_code == 302
    assert response["Location"] == f"/admin/booking/session/{session['_id']}/seats/"
    assert session["prices"] == {"s": 2550, "p": 4000}
    assert session["status"] == "draft" and session["seatsAvailable"] == 24
    entry = last_log("session")
    assert (entry.object_id, entry.action_flag) == (str(session["_id"]), ADDITION)
    assert entry.object_repr.startswith("Hamlet – ")
    assert_consistent()


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"price_s": "-1"}, "price_s", "A price cannot be below zero."),
        ({"price_p": "250000"}, "price_p", "That is more than any seat costs here (at most 10,000.00)."),
        ({"price_s": "12.345"}, "price_s", "Use at most two decimals (cents)."),
        ({"price_s": "twelve"}, "price_s", "Enter an amount such as 25.50."),
        ({"name": "  "}, "name", "This field is required."),
    ],
)
def test_bad_prices_and_names_are_refused_next_to_the_field(manager_client, overrides, field, message):
    theater = make_theater()
    response = manager_client.post(f"/admin/booking/session/add/?theater={theater['_id']}", session_data(**overrides))
    assert response.status_code == 400
    assert any(e.startswith(message) for e in response.context["form"].errors[field])
    assert mongo.sessions().count_documents({}) == 0


def test_end_before_start_and_a_start_in_the_past_are_refused(manager_client):
    theater = make_theater()
    start = timezone.now() + timedelta(days=2)
    url = f"/admin/booking/session/add/?theater={theater['_id']}"
    response = manager_client.post(url, session_data(start=local(start), end=local(start - timedelta(hours=1))))
    assert response.status_code == 400
    assert response.context["form"].errors["end"] == ["The end must be after the start."]
    past = timezone.now() - timedelta(days=1)
    response = manager_client.post(url, session_data(start=local(past), end=local(past + timedelta(hours=2))))
    assert response.context["form"].errors["start"] == ["The start must be in the future."]
    assert mongo.sessions().count_documents({}) == 0


def test_a_series_creates_one_session_per_chosen_day(manager_client):
    theater = make_theater()
    first = timezone.localdate() + timedelta(days=1)
    last = first + timedelta(days=13)
    data = {
        "name": "Evening Show",
        "description": "",
        "first_day": first.isoformat(),
        "last_day": last.isoformat(),
        "start_time": "19:30",
        "duration": "150",
        "weekdays": ["0", "1", "2", "3", "4", "5", "6"],
        "price_s": "20",
        "price_p": "30",
    }
    response = manager_client.post(f"/admin/booking/session/add-series/?theater={theater['_id']}", data)

    assert response.status_code == 200
    sessions = list(mongo.sessions().find({"name": "Evening Show"}).sort("start", 1))
    assert len(sessions) == 14
    starts = [timezone.localtime(s["start"]) for s in sessions]
    assert all((t.hour, t.minute) == (19, 30) for t in starts)
    assert starts[0].date() == first and starts[-1].date() == last
    assert all(s["end"] - s["start"] == timedelta(minutes=150) for s in sessions)
    assert "14 created" in response.content.decode()
    assert len(response.context["created"]) == 14
    assert_consistent()

    data["weekdays"] = ["5"]  # Saturdays only
    data["name"] = "Matinee"
    manager_client.post(f"/admin/booking/session/add-series/?theater={theater['_id']}", data)
    saturdays = list(mongo.sessions().find({"name": "Matinee"}, hint=[("_id", 1)]))
    assert len(saturdays) == 2 and all(timezone.localtime(s["start"]).weekday() == 5 for s in saturdays)


def test_a_series_refuses_a_reversed_or_past_range(manager_client):
    theater = make_theater()
    today = timezone.localdate()
    data = {
        "name": "X",
        "first_day": (today + timedelta(days=5)).isoformat(),
        "last_day": (today + timedelta(days=1)).isoformat(),
        "start_time": "19:30",
        "duration": "120",
        "weekdays": ["0"],
        "price_s": "1",
        "price_p": "1",
    }
    url = f"/admin/booking/session/add-series/?theater={theater['_id']}"
    response = manager_client.post(url, data)
    assert response.status_code == 400
    assert response.context["form"].errors["last_day"] == ["The last day must not be before the first day."]
    data.update(first_day=(today - timedelta(days=3)).isoformat(), last_day=today.isoformat())
    assert manager_client.post(url, data).context["form"].errors["first_day"] == ["The first day is in the past."]
    assert mongo.sessions().count_documents({}) == 0


def test_the_series_form_ticks_no_weekday_and_refuses_a_series_without_one(manager_client):
    theater = make_theater()
    url = f"/admin/booking/session/add-series/?theater={theater['_id']}"
    page = manager_client.get(url)
    boxes = re.findall(r'<input type="checkbox" name="weekdays"[^>]*>', page.content.decode())
    assert len(boxes) == 7 and not any("checked" in box for box in boxes)

    first = timezone.localdate() + timedelta(days=1)
    data = {
        "name": "Weekly Show",
        "description": "",
        "first_day": first.isoformat(),
        "last_day": (first + timedelta(days=20)).isoformat(),
        "start_time": "19:30",
        "duration": "150",
        "price_s": "20",
        "price_p": "30",
    }
    response = manager_client.post(url, data)  # no weekday ticked
    assert response.status_code == 400
    assert response.context["form"].errors["weekdays"] == ["Choose at least one day of the week."]
    assert "Choose at least one day of the week." in response.content.decode()
    assert mongo.sessions().count_documents({}) == 0


def test_the_list_shows_sold_held_free_and_occupancy_with_filters(manager_client):
    hall = make_theater(name="Hall One")
    other = make_theater(name="Hall Two")
    session = make_session(hall, name="Selling Show")
    make_session(other, name="Other Show")
    sell(session["_id"], ["0:0", "0:1"])
    holds.hold_seats(session["_id"], "s:someone", None, ["2:0", "2:1"])

    response = manager_client.get("/admin/booking/session/", {"theater": str(hall["_id"])})
    [row] = response.context["sessions"]
    assert row["name"] == "Selling Show"
    assert row["counts"] == {"sold": 2, "held": 2, "blocked": 0, "free": 20, "total": 24, "occupancy": 8}
    page = response.content.decode()
    assert "Other Show" not in page and "8%" in page

    tomorrow = timezone.localtime(session["start"]).date()
    response = manager_client.get("/admin/booking/session/", {"day": tomorrow.isoformat(), "when": "all"})
    assert {s["name"] for s in response.context["sessions"]} == {"Selling Show", "Other Show"}
    response = manager_client.get("/admin/booking/session/", {"when": "past"})
    assert response.context["sessions"] == []
    assert manager_client.get("/admin/booking/session/", {"day": "yesterday"}).status_code == 400


def test_editing_details_keeps_the_seat_map_and_logs_the_change(manager_client):
    session = make_session()
    sell(session["_id"], ["1:0"])
    url = f"/admin/booking/session/{session['_id']}/change/"
    page = manager_client.get(url).content.decode()
    assert 'value="20.00"' in page  # 2000 cents shown as currency
    response = manager_client.post(url, session_data(name="Hamlet (new cast)", price_s="22.00", price_p="35.00"))
    assert response.status_code == 302
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert stored["name"] == "Hamlet (new cast)" and stored["prices"] == {"s": 2200, "p": 3500}
    assert stored["seats"][1][0] == SOLD
    assert last_log("session").action_flag == CHANGE
    assert_consistent()


def test_the_seat_map_cannot_be_copied_again_once_seats_are_sold(manager_client):
    session = make_session()
    sell(session["_id"], ["0:0"])
    response = manager_client.post(f"/admin/booking/session/{session['_id']}/refresh-map/", follow=True)
    assert "cannot be changed once seats are held or sold" in response.content.decode()
    assert mongo.sessions().find_one({"_id": session["_id"]})["seats"][0][0] == SOLD
    assert_consistent()


def test_the_seat_map_shows_who_holds_or_bought_each_seat(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    hold = holds.hold_seats(session["_id"], "s:other", None, ["2:5"])
    page = manager_client.get(f"/admin/booking/session/{session['_id']}/seats/").content.decode()
    assert page.count(f"/admin/booking/order/{order['_id']}/change/") == 3  # each seat, and the list under the map
    assert f'<code class="ref">{order["ref"]}</code>' in page and "Row A, seat 1, Row A, seat 2" in page
    assert f"/admin/booking/order/{order['_id']}/change/" in page
    assert f"/admin/booking/cart/{hold.cart_id}/change/" in page
    assert f"held in cart {hold.cart_id}" in page
    partial = manager_client.get(f"/admin/booking/session/{session['_id']}/seats/map/", {"seats": ["1:1"]})
    assert 'value="1:1" checked' in partial.content.decode()  # the poll keeps ticked seats ticked


def test_staff_block_and_unblock_house_seats(manager_client):
    session = make_session()
    url = f"/admin/booking/session/{session['_id']}/seats/"
    response = manager_client.post(url, {"action": "block", "seats": ["1:0", "1:1"]})
    assert response.status_code == 302
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert stored["seats"][1][0] == BLOCKED and stored["seatsAvailable"] == 22
    assert last_log("session").change_message == "Blocked 2 seats (1:0, 1:1)."
    assert_consistent()

    response = manager_client.post(url, {"action": "unblock", "seats": ["1:0"]})
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert stored["seats"][1][0] == FREE and stored["seatsAvailable"] == 23
    assert_consistent()


def test_blocking_a_sold_seat_or_a_gap_is_refused_and_changes_nothing(manager_client):
    session = make_session()
    sell(session["_id"], ["0:0"])
    url = f"/admin/booking/session/{session['_id']}/seats/"
    response = manager_client.post(url, {"action": "block", "seats": ["0:0", "0:1"]})
    assert response.status_code == 409
    assert "Only free seats can be blocked: Row A, seat 1." in response.content.decode()
    response = manager_client.post(url, {"action": "block", "seats": ["0:4"]})  # the aisle
    assert response.status_code == 400
    assert manager_client.post(url, {"action": "block"}).status_code == 400
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert stored["seats"][0][1] == FREE and stored["seatsAvailable"] == 23
    assert_consistent()


def test_cancel_is_refused_while_orders_exist_unless_confirmed(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    holds.hold_seats(session["_id"], "s:other", None, ["2:0"])
    url = f"/admin/booking/session/{session['_id']}/cancel/"
    assert "This session has 1 paid order." in manager_client.get(url).content.decode()

    response = manager_client.post(url, {})
    assert response.status_code == 409
    assert "Confirm that they should be canceled too" in response.context["form"].errors["cancel_orders"][0]
    assert mongo.sessions().find_one({"_id": session["_id"]})["status"] == "on_sale"

    response = manager_client.post(url, {"cancel_orders": "on"})
    assert response.status_code == 302
    cancels.cancel_session_orders(session["_id"])  # the worker's task (booking/tests/sales/test_session_cancel.py)
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert stored["status"] == "canceled" and stored["seatsAvailable"] == 24
    canceled = mongo.orders().find_one({"_id": order["_id"]})
    assert canceled["state"] == "refunded"  # was "canceled": the money goes back through its payment
    assert canceled["refunds"][0]["status"] == "succeeded" and canceled["amountRefunded"] == canceled["total"]
    assert last_log("session").change_message == "Canceled the session and canceled 1 paid order."
    assert_consistent()


def test_cancel_without_orders_needs_no_confirmation(manager_client):
    session = make_session()
    response = manager_client.post(f"/admin/booking/session/{session['_id']}/cancel/", {})
    assert response.status_code == 302
    assert mongo.sessions().find_one({"_id": session["_id"]})["status"] == "canceled"
    assert_consistent()
