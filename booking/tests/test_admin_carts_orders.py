"""Carts and orders in the admin: find them, force-expire a cart, cancel an order, re-send its mail."""

import pytest
from django.contrib.admin.models import CHANGE
from django.core import mail

from booking import mongo
from booking.seat_grid import FREE, HELD
from booking.services import holds, notifications
from booking.tests.admin_support import assert_consistent, last_log, make_staff, sell
from booking.tests.factories import make_session
from theater_site.celery import app as celery_app

pytestmark = pytest.mark.django_db


def test_carts_are_listed_by_state_with_age_and_expiry(manager_client):
    session = make_session()
    active = holds.hold_seats(session["_id"], "s:one", None, ["0:0", "0:1"])
    order = sell(session["_id"], ["2:0", "2:1"], owner="s:two")

    response = manager_client.get("/admin/booking/cart/")
    assert [c["_id"] for c in response.context["carts"]] == [active.cart_id]
    page = response.content.decode()
    assert "active (1)" in page and "done (1)" in page
    assert "in 14\xa0minutes" in page or "in 15\xa0minutes" in page
    done = manager_client.get("/admin/booking/cart/", {"state": "done"}).context["carts"]
    assert [c["_id"] for c in done] == [order["cartId"]]
    assert manager_client.get("/admin/booking/cart/", {"state": "bogus"}).status_code == 200


def test_cart_detail_lists_its_seats(manager_client):
    session = make_session(name="Faust")
    hold = holds.hold_seats(session["_id"], "s:one", None, ["0:0", "0:1"])
    page = manager_client.get(f"/admin/booking/cart/{hold.cart_id}/change/").content.decode()
    assert "Faust" in page and "Seats (2)" in page and "Expire this cart now" in page


def test_force_expire_frees_the_seats_now_and_is_logged(manager_client, manager):
    session = make_session()
    hold = holds.hold_seats(session["_id"], "s:one", None, ["0:0", "0:1"])
    response = manager_client.post(f"/admin/booking/cart/{hold.cart_id}/expire/", follow=True)

    assert "The cart was expired and 2 seats released." in response.content.decode()
    assert mongo.carts().find_one({"_id": hold.cart_id})["state"] == "expired"
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert stored["seats"][0][:2] == [FREE, FREE] and stored["seatsAvailable"] == 24
    entry = last_log("cart")
    assert (entry.object_id, entry.action_flag, entry.user_id) == (str(hold.cart_id), CHANGE, manager.pk)
    assert entry.change_message == "Force-expired; 2 seats released."
    assert_consistent()


def test_force_expire_leaves_a_done_cart_alone(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0"])
    response = manager_client.post(f"/admin/booking/cart/{order['cartId']}/expire/", follow=True)
    assert "This cart is done, not active; nothing was changed." in response.content.decode()
    assert mongo.carts().find_one({"_id": order["cartId"]})["state"] == "done"
    assert_consistent()


def test_orders_are_found_by_reference_email_or_name(manager_client):
    session = make_session()
    ada = sell(session["_id"], ["0:0", "0:1"], name="Ada Lovelace", email="ada@example.com", owner="s:a")
    grace = sell(session["_id"], ["2:0", "2:1"], name="Grace Hopper", email="grace@example.com", owner="s:g")

    def found(q):
        return [o["ref"] for o in manager_client.get("/admin/booking/order/", {"q": q}).context["orders"]]

    # a whole reference opens its order; a part of one is only a search
    opened = manager_client.get("/admin/booking/order/", {"q": ada["ref"].lower()})
    assert opened.status_code == 302 and opened["Location"].endswith(f"/order/{ada['_id']}/change/")
    assert found("GRACE@example.com") == [grace["ref"]]
    assert found("lovel") == [ada["ref"]]
    assert found("nobody") == []
    assert found(".*") == []  # typed text is matched literally, never as a pattern
    assert set(found("")) == {ada["ref"], grace["ref"]}


def test_order_detail_shows_seats_and_tickets(manager_client):
    session = make_session(name="Carmen")
    order = sell(session["_id"], ["0:0", "0:1"])
    page = manager_client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert order["ref"] in page and "Carmen" in page and "ada@example.com" in page
    for line in order["lines"]:
        assert line["ticket"] in page
    assert "<td>Stalls</td>" in page and "€20<" in page


def test_canceling_an_order_frees_its_seats_and_records_who_and_why(manager_client, manager):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    url = f"/admin/booking/order/{order['_id']}/change/"
    assert manager_client.post(url, {"reason": ""}).status_code == 400
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"

    response = manager_client.post(url, {"reason": "Customer called, cannot come"})
    assert response.status_code == 302
    stored = mongo.orders().find_one({"_id": order["_id"]})
    # was "canceled": a paid order's money goes back through its payment now
    assert stored["state"] == "refunded" and stored["seatsReleased"] is True
    assert stored["refunds"][0]["status"] == "succeeded" and stored["amountRefunded"] == order["total"]
    assert stored["canceledBy"] == "manager <manager@theater.example>"
    assert stored["cancelReason"] == "Customer called, cannot come"
    seats = mongo.sessions().find_one({"_id": session["_id"]})
    assert seats["seats"][0][:2] == [FREE, FREE] and seats["seatsAvailable"] == 24
    entry = last_log("order")
    assert entry.object_id == str(order["_id"]) and entry.object_repr == f"Order {order['ref']}"
    assert entry.change_message == "Canceled and refunded (2 seats free again): Customer called, cannot come"
    assert_consistent()

    again = manager_client.post(url, {"reason": "twice"})
    assert again.status_code == 409
    assert "is refunded; there is nothing to refund" in again.content.decode()
    assert_consistent()


def test_a_held_seat_is_not_touched_by_canceling_another_order(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    holds.hold_seats(session["_id"], "s:other", None, ["0:2", "0:3"])
    manager_client.post(f"/admin/booking/order/{order['_id']}/change/", {"reason": "refund"})
    assert mongo.sessions().find_one({"_id": session["_id"]})["seats"][0][2] == HELD
    assert_consistent()


def test_staff_re_send_a_failed_confirmation_mail_once(manager_client, manager):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    notifications.give_up(order["_id"], "refused for good: 550 mailbox full", permanent=True)
    url = f"/admin/booking/order/{order['_id']}/change/"
    page = manager_client.get(url).content.decode()
    assert "refused for good: 550 mailbox full" in page and "given up; not retried automatically" in page
    assert "Re-send the confirmation mail" in page and 'name="round" value="0"' in page

    resend = f"/admin/booking/order/{order['_id']}/resend-mail/"
    assert manager_client.get(resend).status_code == 405
    assert manager_client.post(resend, {"round": "x"}).status_code == 400
    assert mongo.orders().find_one({"_id": order["_id"]})["mail"] == "failed"

    celery_app.control.purge()
    response = manager_client.post(resend, {"round": "0"}, follow=True)
    assert "The confirmation mail of" in response.content.decode() and "is on its way to ada@example.com" in (
        response.content.decode()
    )
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert (stored["mail"], stored["mailRound"], stored["mailFailures"]) == ("pending", 1, 0)
    entry = last_log("order")
    assert (entry.object_id, entry.action_flag, entry.user_id) == (str(order["_id"]), CHANGE, manager.pk)
    assert entry.change_message == "Confirmation mail re-sent to ada@example.com."
    assert "Re-send the confirmation mail" not in response.content.decode()  # pending: nothing to click

    again = manager_client.post(resend, {"round": "0"}, follow=True)  # a second click of the old page
    assert "The mail changed since this page was shown" in again.content.decode()
    assert mongo.orders().find_one({"_id": order["_id"]})["mailRound"] == 1
    assert notifications.send_confirmation(order["_id"]) == "sent"  # what the queued task does
    assert notifications.send_confirmation(order["_id"]) == "already sent"
    assert len(mail.outbox) == 1
    celery_app.control.purge()


def test_re_send_needs_the_change_permission(client):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    client.force_login(make_staff("viewer", ["view_order"]))
    page = client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert "Re-send the confirmation mail" not in page
    assert client.post(f"/admin/booking/order/{order['_id']}/resend-mail/", {"round": "0"}).status_code == 403
    assert mongo.orders().find_one({"_id": order["_id"]}).get("mailRound") is None


def test_staff_refund_some_tickets_and_see_the_refund(manager_client, manager):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    url = f"/admin/booking/order/{order['_id']}/change/"
    page = manager_client.get(url).content.decode()
    assert "Refund tickets" in page and order["paidWith"]["id"] in page
    refund = f"/admin/booking/order/{order['_id']}/refund/"
    assert manager_client.post(refund, {"reason": "x"}, follow=True).status_code == 200  # no ticket chosen
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"
    ticket = order["lines"][0]["ticket"]
    response = manager_client.post(refund, {"tickets": [ticket], "reason": "seat broken"}, follow=True)
    assert "Refunded 1 ticket" in response.content.decode()
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert stored["state"] == "partially_refunded" and stored["refunds"][0]["status"] == "succeeded"
    assert mongo.sessions().find_one({"_id": session["_id"]})["seats"][0][:2] == [FREE, 2]
    page = response.content.decode()
    assert "Refunds (1)" in page and "seat broken" in page and "succeeded" in page
    assert last_log("order").change_message.startswith("Refunded 1 ticket (20.00 EUR): seat broken")
    assert_consistent()


def test_staff_see_a_failed_refund_and_retry_it(manager_client, settings):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    reachable = settings.STRIPE_API_BASE
    settings.STRIPE_API_BASE = "http://127.0.0.1:9"  # Stripe unreachable
    url = f"/admin/booking/order/{order['_id']}/change/"
    manager_client.post(url, {"reason": "sick"})
    page = manager_client.get(url).content.decode()
    assert "failed" in page and "APIConnectionError" in page and "Retry refund" in page
    settings.STRIPE_API_BASE = reachable
    [refund] = mongo.orders().find_one({"_id": order["_id"]})["refunds"]
    retry = f"/admin/booking/order/{order['_id']}/retry-refund/"
    assert manager_client.post(retry, {"refund": "rnothing"}).status_code == 400
    response = manager_client.post(retry, {"refund": refund["_id"]}, follow=True)
    assert "The refund went through." in response.content.decode()
    assert mongo.orders().find_one({"_id": order["_id"]})["refunds"][0]["status"] == "succeeded"
    assert_consistent()


def test_staff_mark_a_box_office_reservation_paid_at_the_counter(manager_client):
    from booking.services import payments

    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    cart = holds.hold_seats(session["_id"], "s:guest", None, ["0:0", "0:1"])
    order = payments.start("s:guest", cart.cart_id, "Gus", "gus@example.com", "box_office")
    url = f"/admin/booking/order/{order['_id']}/change/"
    page = manager_client.get(url).content.decode()
    assert "Pay at the box office" in page and "Mark paid at the box office" in page
    response = manager_client.post(f"/admin/booking/order/{order['_id']}/mark-paid/", follow=True)
    assert f"Order {order['ref']} is paid (40.00 EUR)" in response.content.decode()
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert stored["state"] == "paid" and stored["paidWith"]["by"] == "manager <manager@theater.example>"
    assert "Mark paid at the box office" not in response.content.decode()
    assert_consistent()
