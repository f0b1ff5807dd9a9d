"""Staff turn "pay at the box office" on per session (off by default, with its deadline) and set
a theater's VAT rates; both reach the buyer's checkout and the orders made afterwards."""

from datetime import timedelta

import pytest
from django.contrib import messages

from booking import mongo
from booking.services import checkout, holds, payments
from booking.tests.admin_support import last_log, make_staff
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
    order = checkout.checkout("s:b", cart.cart_id, "Bea", "bea@example.com", "box_office")
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
    order = checkout.checkout("s:v", cart.cart_id, "Vera", "vera@example.com")
    assert sorted(line["vat"] for line in order["lines"]) == ["19", "19", "7"]
    refused = manager_client.post(post, {"rate": "120"}, follow=True)
    assert "Give a rate in percent" in refused.content.decode()
    assert mongo.theaters().find_one({"_id": session["theaterId"]})["vatRate"] == "7"
