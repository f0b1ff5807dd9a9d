"""Staff turn "pay at the box office" on per session (off by default, with its deadline) and set
a theater's VAT rates; both reach the buyer's checkout and the orders made afterwards."""

from datetime import timedelta

import pytest
from django.contrib import messages

from booking.core import mongo
from booking.payments import flow as payments
from booking.payments import settings as payment_settings
from booking.sales import holds
from booking.tests.admin_support import last_log, make_staff
from booking.tests.commands import counting_commands
from booking.tests.factories import make_session

pytestmark = pytest.mark.django_db


def test_box_office_is_off_by_default_and_staff_turn_it_on_with_a_deadline(manager_client):
    session = make_session()
    url = f"/admin/booking/session/{session['_id']}/change/"
    page = manager_client.get(url).content.decode()
    assert "Pay at the box office" in page and 'name="enabled"' in page
    assert "checked" not in page.split('class="module box-office"')[1].split("</form>")[0]  # off by default
    cart = holds.hold_seats(session["_id"], "s:b", None, ["0:0"])
    assert payments.methods_for(mongo.carts().find_one({"_id": cart.cart_id}))["box_office"] is None
    post = f"/admin/booking/session/{session['_id']}/box-office/"
    response = manager_client.post(post, {"enabled": "on", "deadline_minutes": "45"}, follow=True)
    assert "Box office on (unpaid seats go back 45 minutes before the show)." in response.content.decode()
    assert mongo.sessions().find_one({"_id": session["_id"]})["boxOffice"] == {"enabled": True, "deadlineMinutes": 45}
    assert last_log("session").change_message.startswith("Box office on")
    order = payments.start("s:b", cart.cart_id, "Bea", "bea@example.com", "box_office")
    assert mongo.carts().find_one({"_id": order["cartId"]})["expiresAt"] == session["start"] - timedelta(minutes=45)
    bad = manager_client.post(post, {"enabled": "on", "deadline_minutes": "-1"}, follow=True)
    assert [m.level for m in bad.context["messages"]] == [messages.ERROR]


def test_box_office_setting_needs_the_change_permission(client):
    session = make_session()
    client.force_login(make_staff("viewer", ["view_session"]))
    post = f"/admin/booking/session/{session['_id']}/box-office/"
    assert client.post(post, {"enabled": "on", "deadline_minutes": "30"}).status_code == 403
    assert "boxOffice" not in mongo.sessions().find_one({"_id": session["_id"]})


def test_staff_set_vat_rates_per_theater_and_category_for_new_orders(manager_client):
    session = make_session()
    url = f"/admin/booking/theater/{session['theaterId']}/change/"
    page = manager_client.get(url).content.decode()
    assert "VAT rates" in page and 'name="cat_p"' in page
    post = f"/admin/booking/theater/{session['theaterId']}/vat/"
    response = manager_client.post(post, {"rate": "7", "cat_p": "19", "cat_s": ""}, follow=True)
    assert "VAT: tickets 7 %, p: 19 %" in response.content.decode()
    cart = holds.hold_seats(session["_id"], "s:v", None, ["1:2", "1:3", "0:0"])
    order = payments.start("s:v", cart.cart_id, "Vera", "vera@example.com")
    assert sorted(line["vat"] for line in order["lines"]) == ["19", "19", "7"]
    refused = manager_client.post(post, {"rate": "120"}, follow=True)
    assert "Give a rate in percent" in refused.content.decode()
    assert mongo.theaters().find_one({"_id": session["theaterId"]})["vatRate"] == "7"


def test_a_vat_change_made_in_another_process_reaches_orders_within_the_cache_lifetime(settings, monkeypatch):
    """Checkout keeps a theater's VAT settings per process for BOOKING_VAT_CACHE_SECONDS
    instead of reading theaters for every order. Another process's change (written straight to
    the theater here, as its set_vat_rates does) is taken once the lifetime has passed; the
    process that changes them forgets its copy at once."""
    settings.BOOKING_VAT_CACHE_SECONDS = 10
    clock = [1000.0]
    monkeypatch.setattr(payment_settings, "monotonic", lambda: clock[0])
    session = make_session()
    payment_settings.set_box_office(session["_id"], enabled=True, deadline_minutes=30)  # no provider

    def order_for(owner: str, keys: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
        cart = holds.hold_seats(session["_id"], owner, None, keys)
        with counting_commands() as counter:
            order = payments.start(owner, cart.cart_id, "Vera", "vera@example.com", "box_office")
        return sorted(line["vat"] for line in order["lines"]), counter.commands

    vat, commands = order_for("s:v1", ["0:0"])
    assert vat == ["7"] and ("find", "theaters") in commands  # the default rate, read once
    mongo.theaters().update_one({"_id": session["theaterId"]}, {"$set": {"vatRate": "19"}})
    clock[0] += 9.9
    vat, commands = order_for("s:v2", ["1:2", "1:3"])
    assert vat == ["7", "7"] and ("find", "theaters") not in commands  # kept: no round trip
    clock[0] += 0.1  # the lifetime has passed
    vat, commands = order_for("s:v3", ["2:0"])
    assert vat == ["19"] and ("find", "theaters") in commands
    payment_settings.set_vat_rates(session["theaterId"], rate="10", per_category={})  # in this process
    vat, _commands = order_for("s:v4", ["2:1"])
    assert vat == ["10"]
