"""Carts and orders in the admin: find them, force-expire a cart, cancel an order, re-send its mail."""

import re

import pytest
from django.contrib.admin.models import CHANGE
from django.core import mail

from booking.core import faults, mongo
from booking.core.domain import Order
from booking.notifications import confirmations as notifications
from booking.payments import flow as payments
from booking.payments import refunds
from booking.sales import cancels, counter, holds
from booking.tests.admin_support import (
    assert_consistent,
    cancel_confirmed,
    cancel_page,
    confirmation_token,
    last_log,
    make_staff,
    sell,
)
from booking.tests.factories import make_session
from booking.tests.pdfs import page_count, pdf_text
from booking.venues.seat_grid import FREE, HELD, SOLD
from theater_site.celery import app as celery_app

pytestmark = pytest.mark.django_db


def test_carts_are_listed_by_state_with_age_and_expiry(manager_client):
    session = make_session()
    active = holds.hold_seats(session["_id"], "s:one", None, ["0:0", "0:1"])
    order = sell(session["_id"], ["2:0", "2:1"], owner="s:two")

    response = manager_client.get("/admin/booking/cart/")
    assert [c["_id"] for c in response.context["carts"]] == [active.cart_id]
    page = response.content.decode()
    assert "active (1)" in page and "bought (1)" in page
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
    url = cancel_page(order)
    token = confirmation_token(manager_client, order)
    assert manager_client.post(url, {"reason": "", "confirmation": token}).status_code == 400
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"

    response = manager_client.post(url, {"reason": "Customer called, cannot come", "confirmation": token})
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

    again = manager_client.post(url, {"reason": "twice", "confirmation": token})
    assert again.status_code == 409
    assert "is refunded; there is nothing to cancel" in again.content.decode()
    assert manager_client.get(url).status_code == 409
    assert_consistent()


def test_a_held_seat_is_not_touched_by_canceling_another_order(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    holds.hold_seats(session["_id"], "s:other", None, ["0:2", "0:3"])
    cancel_confirmed(manager_client, order, "refund")
    assert mongo.sessions().find_one({"_id": session["_id"]})["seats"][0][2] == HELD
    assert_consistent()


def test_canceling_asks_first_and_says_which_seats_are_freed_what_is_refunded_where_and_who_is_mailed(
    manager_client,
):
    session = make_session(name="The Seagull")
    order = sell(session["_id"], ["1:2", "1:3"])  # B3, B4: 35.00 each, paid by card
    detail = f"/admin/booking/order/{order['_id']}/change/"
    page = manager_client.get(detail).content.decode()
    assert f'href="{cancel_page(order)}"' in page  # the order page only links to the confirmation
    assert all('action="/admin/booking/order/' in form for form in re.findall(r"<form method=\"post\"[^>]*>", page))
    assert not any(f'action="{detail}"' in form for form in re.findall(r"<form[^>]*>", page))

    confirm = manager_client.get(cancel_page(order))
    text = confirm.content.decode()
    assert confirm.status_code == 200
    assert "Row B, seat 3" in text and "Row B, seat 4" in text and "The Seagull" in text
    assert "70.00 EUR" in text and "back to the card it was paid with (stripe)" in text
    assert "An e-mail about the cancellation goes to ada@example.com" in text

    def unchanged():
        stored = mongo.orders().find_one({"_id": order["_id"]})
        assert stored["state"] == "paid" and stored["lines"] == order["lines"] and not stored.get("refunds")
        assert mongo.sessions().find_one({"_id": session["_id"]})["seats"][1][2:4] == [SOLD, SOLD]

    # one click on the order page, a post without the confirmation, or with a made-up one: nothing
    assert manager_client.post(detail, {"reason": "one click"}).status_code == 405
    assert manager_client.post(cancel_page(order), {"reason": "no confirmation"}).status_code == 400
    forged = {"reason": "forged", "confirmation": f"{order['_id']}:made-up"}
    answer = manager_client.post(cancel_page(order), forged)
    assert answer.status_code == 400 and "Open the cancellation" in answer.content.decode()
    unchanged()
    assert mail.outbox == []

    token = re.search(r'name="confirmation" value="([^"]+)"', text).group(1)
    done = manager_client.post(cancel_page(order), {"reason": "Customer ill", "confirmation": token})
    assert done.status_code == 302 and done["Location"] == detail
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "refunded"
    assert_consistent()


def test_a_confirmation_of_an_order_that_changed_since_is_refused_and_shown_anew(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    token = confirmation_token(manager_client, order)
    refunds.refund_tickets(order["_id"], tickets=[order["lines"][0]["ticket"]], reason="seat broken", by="anna")
    answer = manager_client.post(cancel_page(order), {"reason": "late", "confirmation": token})
    text = answer.content.decode()
    assert answer.status_code == 409 and "The order changed since" in text
    assert "Row A, seat 2" in text and "Row A, seat 1" not in text and "20.00 EUR" in text  # what it would do now
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert stored["state"] == "partially_refunded" and len(stored["refunds"]) == 1
    assert_consistent()


def test_the_confirmation_tells_a_reservation_ends_and_a_counter_sale_is_paid_back_in_cash(manager_client, manager):
    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    cart = holds.hold_seats(session["_id"], "s:guest", None, ["2:0", "2:1"])
    reserved = payments.start("s:guest", cart.cart_id, "Gus", "gus@example.com", "box_office")
    text = manager_client.get(cancel_page(reserved)).content.decode()
    assert "Nothing was paid yet; the reservation ends." in text and "gus@example.com" in text

    staff = counter.staff_owner(manager.pk)
    hold = holds.hold_seats(session["_id"], staff, None, ["1:2", "1:3"])
    sale = counter.CounterSale(name="Grace Hopper", method=counter.CASH, by="manager", by_id=manager.pk)
    sold = counter.sell(staff, hold.cart_id, sale)
    text = manager_client.get(cancel_page(sold)).content.decode()
    assert "70.00 EUR" in text and "in cash at the counter" in text
    assert "No e-mail is sent: the order has no e-mail address." in text
    answer = cancel_confirmed(manager_client, sold, "changed plans")
    assert answer.status_code == 302 and mongo.orders().find_one({"_id": sold["_id"]})["state"] == "refunded"
    assert_consistent()


def test_canceling_needs_the_change_permission(client, db):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    client.force_login(make_staff("boss", ["view_order", "change_order"]))
    token = confirmation_token(client, order)
    client.force_login(make_staff("reader", ["view_order"]))
    assert client.get(cancel_page(order)).status_code == 403
    assert client.post(cancel_page(order), {"reason": "x", "confirmation": token}).status_code == 403
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"
    client.force_login(make_staff("clerk", ["view_order", "change_order"]))
    assert client.get("/admin/booking/order/not-an-id/cancel/").status_code == 404


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
    cancel_confirmed(manager_client, order, "sick")
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
    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    cart = holds.hold_seats(session["_id"], "s:guest", None, ["0:0", "0:1"])
    order = payments.start("s:guest", cart.cart_id, "Gus", "gus@example.com", "box_office")
    url = f"/admin/booking/order/{order['_id']}/change/"
    page = manager_client.get(url).content.decode()
    assert "Pay at the box office" in page and "Mark paid at the box office" in page
    response = manager_client.post(f"/admin/booking/order/{order['_id']}/mark-paid/", {"means": "cash"}, follow=True)
    assert f"Order {order['ref']} is paid (40.00 EUR)" in response.content.decode()
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert stored["state"] == "paid" and stored["paidWith"]["by"] == "manager <manager@theater.example>"
    assert "Mark paid at the box office" not in response.content.decode()
    assert stored["paidWith"]["means"] == "cash" and stored["paidWith"]["reference"] == ""
    assert_consistent()


def box_office_reservation(owner="s:guest"):
    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    cart = holds.hold_seats(session["_id"], owner, None, ["0:0"])
    return payments.start(owner, cart.cart_id, "Gus", "gus@example.com", "box_office")


def test_mark_paid_records_the_card_terminal_or_bank_transfer_and_its_reference(manager_client):
    order = box_office_reservation()
    page = manager_client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert 'value="bank_transfer"' in page and 'name="reference"' in page
    url = f"/admin/booking/order/{order['_id']}/mark-paid/"
    response = manager_client.post(url, {"means": "card_terminal", "reference": "  Slip 0042 "}, follow=True)
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert stored["state"] == "paid"
    assert stored["paidWith"]["means"] == "card_terminal" and stored["paidWith"]["reference"] == "Slip 0042"
    assert "Card terminal · reference Slip 0042" in response.content.decode()
    assert "card_terminal: Slip 0042" in last_log("order").change_message
    assert_consistent()


@pytest.mark.parametrize(
    ("posted", "said"),
    [
        ({}, "Please choose how the money was paid."),
        ({"means": "bitcoin"}, "Select a valid choice."),
        ({"means": "invoice"}, "Select a valid choice."),
        ({"means": "cash", "reference": "x" * 101}, "at most 100 characters"),
    ],
)
def test_mark_paid_without_a_valid_method_or_with_a_long_reference_changes_nothing(manager_client, posted, said):
    order = box_office_reservation()
    before = mongo.orders().find_one({"_id": order["_id"]})
    response = manager_client.post(f"/admin/booking/order/{order['_id']}/mark-paid/", posted)
    assert response.status_code == 400
    assert said in response.content.decode()
    assert mongo.orders().find_one({"_id": order["_id"]}) == before


def test_a_reference_of_exactly_the_limit_is_kept(manager_client):
    order = box_office_reservation()
    manager_client.post(
        f"/admin/booking/order/{order['_id']}/mark-paid/", {"means": "bank_transfer", "reference": "R" * 100}
    )
    assert mongo.orders().find_one({"_id": order["_id"]})["paidWith"]["reference"] == "R" * 100


def print_links(page: str) -> dict[str, str]:
    """The order page's print links by what they print: tickets-page, tickets-thermal, receipt."""
    links = {}
    for href in re.findall(r'href="([^"]+\.pdf[^"]*)"', page):
        href = href.replace("&amp;", "&")
        if "receipt" in href:
            links["receipt"] = href
        elif "tickets" in href:
            links["tickets-" + href.rsplit("layout=", 1)[-1]] = href
    return links


def assert_prints(client, order: Order, *, receipt: bool = True) -> None:
    """Every print link of the order page answers its PDF, naming the order and its seats."""
    links = print_links(client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode())
    expected = {"tickets-page", "tickets-thermal", *(["receipt"] if receipt else [])}
    assert set(links) == expected, links
    seats = [f"Row {line['row']}  ·  Seat {line['seat']}" for line in order["lines"]]
    for kind, href in links.items():
        answer = client.get(href)
        assert answer.status_code == 200 and answer["Content-Type"] == "application/pdf", kind
        text = pdf_text(answer.content)
        assert order["ref"] in text, kind
        if kind == "receipt":
            stored = mongo.orders().find_one({"_id": order["_id"]})
            assert f"Receipt {stored['receiptNo']:06d}" in text
        else:
            assert all(seat in text for seat in seats) and page_count(answer.content) == len(seats), kind


def test_every_paid_order_page_offers_its_tickets_and_receipt_to_print_again(manager_client, manager):
    session = make_session()
    online = sell(session["_id"], ["0:0", "0:1"])
    assert_prints(manager_client, online)

    staff = counter.staff_owner(manager.pk)
    hold = holds.hold_seats(session["_id"], staff, None, ["1:2", "1:3"])
    sale = counter.CounterSale(name="Grace Hopper", method=counter.CASH, by="manager", by_id=manager.pk)
    at_the_counter = counter.sell(staff, hold.cart_id, sale)
    assert_prints(manager_client, at_the_counter)

    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    cart = holds.hold_seats(session["_id"], "s:guest", None, ["2:0", "2:1"])
    reserved = payments.start("s:guest", cart.cart_id, "Gus", "gus@example.com", "box_office")
    page = manager_client.get(f"/admin/booking/order/{reserved['_id']}/change/").content.decode()
    assert print_links(page) == {}  # no valid tickets before it is paid
    manager_client.post(f"/admin/booking/order/{reserved['_id']}/mark-paid/", {"means": "cash"})
    assert_prints(manager_client, reserved)


def test_printing_an_orders_tickets_is_checked_like_its_page(client, manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    links = print_links(manager_client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode())
    assert manager_client.get(links["tickets-page"].replace("layout=page", "layout=poster")).status_code == 400
    client.logout()
    client.force_login(make_staff("seller", ["view_session"]))
    for href in links.values():
        assert client.get(href).status_code == 403
    client.force_login(make_staff("reader", ["view_order"]))  # may see the order page: may print it
    for href in links.values():
        assert client.get(href).status_code == 200
    client.logout()
    assert all(client.get(href).status_code == 302 for href in links.values())  # to the login
    assert client.get("/admin/booking/order/000000000000000000000000/tickets.pdf").status_code in (302, 404)
    cancels.cancel_order(order["_id"], by="staff", reason="test")
    client.force_login(make_staff("boss", ["view_order"]))
    refunded = client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert set(print_links(refunded)) == {"receipt"}  # its tickets are void; the receipt says so
    assert client.get(links["tickets-page"]).status_code == 409


# --- the customer's name and e-mail corrected ---


def customer_form(order, **fields):
    return {
        "name": order["name"],
        "email": order["email"],
        "seen_name": order["name"],
        "seen_email": order["email"],
        **fields,
    }


def test_staff_correct_the_customer_and_send_the_mail_to_the_new_address(
    manager_client, django_capture_on_commit_callbacks
):
    session = make_session()
    order = sell(session["_id"], ["0:0"])
    mail.outbox.clear()
    url = f"/admin/booking/order/{order['_id']}/customer/"
    response = manager_client.post(
        url, customer_form(order, name="Augusta King", email="augusta@example.org", resend="1"), follow=True
    )
    page = response.content.decode()
    assert (
        "The customer&#x27;s name and e-mail are saved." in page or "The customer's name and e-mail are saved." in page
    )
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert stored["name"] == "Augusta King" and stored["email"] == "augusta@example.org"
    assert "Customer&#x27;s name or e-mail corrected" in page or "Customer's name or e-mail corrected" in page
    assert "Ada Lovelace &lt;ada@example.com&gt; → Augusta King &lt;augusta@example.org&gt;" in page
    assert (
        "Customer corrected: Ada Lovelace <ada@example.com> -> Augusta King <augusta@example.org>"
        in last_log("order").change_message
    )
    assert stored["mail"] == "pending"  # queued again, for the new address
    notifications.send_confirmation(order["_id"])
    assert mail.outbox[-1].to == ["augusta@example.org"]


def test_a_customer_edit_over_a_newer_one_or_with_a_bad_address_changes_nothing(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0"])
    url = f"/admin/booking/order/{order['_id']}/customer/"
    before = mongo.orders().find_one({"_id": order["_id"]})
    response = manager_client.post(url, customer_form(order, email="not an address"))
    assert response.status_code == 400
    assert "Please enter a valid e-mail address." in response.content.decode()
    stale = customer_form(order, name="Someone", seen_name="Not What Is Stored")
    response = manager_client.post(url, stale)
    assert response.status_code == 409
    assert "changed since this page was shown" in response.content.decode()
    assert mongo.orders().find_one({"_id": order["_id"]}) == before


def test_a_customer_name_past_its_limit_is_a_400_and_changes_nothing(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0"])
    before = mongo.orders().find_one({"_id": order["_id"]})
    response = manager_client.post(f"/admin/booking/order/{order['_id']}/customer/", customer_form(order, name=""))
    assert response.status_code == 400
    assert mongo.orders().find_one({"_id": order["_id"]}) == before


def test_mark_paid_keeps_how_in_the_write_that_makes_the_order_paid(manager_client, crash_at):
    """A crash right after the order became paid leaves no paid order without its means."""
    order = box_office_reservation()
    crash_at("pay.after_paid")
    with pytest.raises(faults.InjectedCrash):
        manager_client.post(
            f"/admin/booking/order/{order['_id']}/mark-paid/", {"means": "bank_transfer", "reference": "TX-9"}
        )
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert stored["state"] == "paid"
    assert (stored["paidWith"]["means"], stored["paidWith"]["reference"]) == ("bank_transfer", "TX-9")


def test_a_viewer_cannot_correct_the_customer(client):
    session = make_session()
    order = sell(session["_id"], ["0:0"])
    client.force_login(make_staff("viewer", ["view_order"]))
    response = client.post(f"/admin/booking/order/{order['_id']}/customer/", customer_form(order, name="X"))
    assert response.status_code == 403
    assert mongo.orders().find_one({"_id": order["_id"]})["name"] == order["name"]


def test_the_order_page_shows_every_mail_sent_with_its_text(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0"])
    notifications.send_confirmation(order["_id"])
    page = manager_client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert "No mail sent yet" not in page
    [kept] = mongo.orders().find_one({"_id": order["_id"]})["sentMails"]
    assert kept["to"] == ["ada@example.com"] and kept["kind"] == "confirmation" and order["ref"] in kept["body"]
    assert kept["subject"] in page and order["ref"] in page.split("sent-mails")[1]
    manager_client.post(
        f"/admin/booking/order/{order['_id']}/customer/",
        customer_form(order, email="augusta@example.org", resend="1"),
    )
    notifications.send_confirmation(order["_id"])
    kept = mongo.orders().find_one({"_id": order["_id"]})["sentMails"]
    assert [m["to"] for m in kept] == [["ada@example.com"], ["augusta@example.org"]]
