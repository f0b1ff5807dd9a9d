"""The buyer whose payment came after their hold ended and whose seats were taken meanwhile is
told by e-mail (notifications/payment_notices.py), once, by the worker (the embedded Celery worker of
test_worker_mail.py), in the language they booked in; the page says so too."""

import time
from datetime import timedelta

import pytest
from django.core import mail

from booking.core import clock, mongo
from booking.notifications import payment_notices
from booking.payments import flow as payments
from booking.sales import cart_expiry, holds
from booking.tests.factories import make_session
from booking.tests.localstripe import THREE_D_SECURE, authenticate, card
from booking.tests.paying import intent_of
from booking.upkeep.tasks import send_payment_notice

pytestmark = pytest.mark.slow
ALICE, BOB = "s:alice", "s:bob"


def lost_late_payment(language="en"):
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["1:2", "1:3"])
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com", "card", language=language)
    asked = payments.pay_with_card(order["_id"], ALICE, card(THREE_D_SECURE))
    mongo.carts().update_one({"_id": order["cartId"]}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    cart_expiry.expire_stale_carts()
    holds.hold_seats(session["_id"], BOB, None, ["1:3"])
    authenticate(intent_of(order), asked.client_secret)
    return order


def notice_state(order) -> str:
    return mongo.orders().find_one({"_id": order["_id"]})["noticeMail"]


def test_the_refund_notice_goes_once_through_the_worker(empty_queue, embedded_worker):  # noqa: F811
    order = lost_late_payment()
    mail.outbox.clear()
    assert payments.check(order["_id"])["state"] == "refunded"  # queues the notice; no worker yet
    send_payment_notice.apply_async(args=[str(order["_id"])])  # a duplicate delivery
    with embedded_worker():
        deadline = time.monotonic() + 20
        while notice_state(order) != "sent" and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
    assert notice_state(order) == "sent"
    [message] = mail.outbox
    assert message.to == ["ada@example.com"]
    assert message.subject == f"Your booking {order['ref']}: payment refunded"
    assert "someone else had booked the seats meanwhile" in message.body
    assert f"Refunded: 70.00 EUR (booking {order['ref']})" in message.body.replace("\n", " ")
    assert payment_notices.send_notice(order["_id"]) == "sent"  # again: nothing more
    assert len(mail.outbox) == 1


def test_the_refund_notice_is_in_the_buyers_language(settings):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    order = lost_late_payment(language="de")
    payments.check(order["_id"])
    mail.outbox.clear()
    assert payment_notices.send_notice(order["_id"]) == "sent"
    [message] = mail.outbox
    assert order["ref"] in message.subject and "payment refunded" not in message.subject
    assert "70,00" in message.body


@pytest.mark.django_db
def test_the_page_tells_the_buyer_too(client):
    order = lost_late_payment()
    payments.check(order["_id"])

    stranger = client.post("/find-booking/", {"ref": order["ref"], "email": "ada@example.com"}, follow=True)
    page = stranger.content.decode()
    assert "someone else had booked the seats meanwhile" in page and "Refunded so far" in page
