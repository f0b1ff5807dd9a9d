"""The customer's e-mail about a change (notifications/change_notices.py): stored with the change, sent
once, kept pending while the mail server is away (the task retries, reconcile re-queues it)."""

import socket
from datetime import timedelta

import pytest
from django.core import mail

from booking.core import clock, mongo
from booking.notifications import change_notices
from booking.notifications import confirmations as notifications
from booking.payments import refunds
from booking.tests.admin_support import sell
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants

pytestmark = pytest.mark.slow
LOCMEM = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_mail_server_that_is_away_leaves_the_notice_pending_then_it_goes_once(settings):
    order = sell(make_session()["_id"], ["0:0", "0:1"])
    refunds.refund_tickets(order["_id"], tickets=[order["lines"][0]["ticket"]], reason="broken seat", by="anna")
    options = {"host": "127.0.0.1", "port": closed_port(), "timeout": 2}
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend", "OPTIONS": options}}
    with pytest.raises(notifications.MailServerUnavailable):
        change_notices.send_pending(order["_id"])
    [notice] = mongo.orders().find_one({"_id": order["_id"]})["changeNotices"]
    assert notice["state"] == "pending" and "claimedUntil" not in notice  # the task's retry may take it at once

    # reconcile queues it again once it has waited long enough (the broker is the test's Redis)
    assert change_notices.requeue_pending(clock.now()) == 0
    assert change_notices.requeue_pending(clock.now() + timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS)) == 1

    settings.MAILERS = LOCMEM
    mail.outbox.clear()
    assert change_notices.send_pending(order["_id"]) == ["sent"]
    assert change_notices.send_pending(order["_id"]) == []
    assert len(mail.outbox) == 1 and "A1" in mail.outbox[0].body
    assert check_invariants() == []


def test_an_address_that_can_never_work_fails_the_notice_for_good(settings):
    settings.MAILERS = LOCMEM
    order = sell(make_session()["_id"], ["0:0", "0:1"])
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"email": "\u202eevil@example.com"}})
    refunds.refund_tickets(order["_id"], tickets=[order["lines"][0]["ticket"]], by="anna")
    assert change_notices.send_pending(order["_id"]) == ["failed"]
    [notice] = mongo.orders().find_one({"_id": order["_id"]})["changeNotices"]
    assert notice["state"] == "failed" and "control or formatting" in notice["failure"]
    assert check_invariants() == []


def test_the_task_sends_the_pending_notices(settings):
    from booking.upkeep.tasks import send_change_notices

    settings.MAILERS = LOCMEM
    order = sell(make_session()["_id"], ["0:0", "0:1"])
    refunds.refund_tickets(order["_id"], by="anna")  # the whole order
    mail.outbox.clear()
    assert send_change_notices.apply(args=[str(order["_id"])]).get() == ["sent"]
    assert send_change_notices.apply(args=["not-an-id"]).get() == ["invalid id"]
    [message] = mail.outbox
    assert "No tickets of this booking are valid any more." in message.body
    # no tickets left to attach; the receipt's credit note; the calendar entry, still the same
    # one, now says it is canceled
    names = [a[0] for a in message.attachments]
    assert names == [f"receipt-{order['ref']}.pdf", "credit-note-CN-000001.pdf", f"booking-{order['ref']}.ics"]
    assert "STATUS:CANCELLED" in message.attachments[2][1]
    assert check_invariants() == []


def test_staff_calling_off_an_unpaid_reservation_tells_the_customer_without_tickets(settings):
    from booking.payments import flow as payments
    from booking.sales import holds

    settings.MAILERS = LOCMEM
    session = make_session()
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["0:0", "0:1"])
    order = payments.start("s:ada", cart.cart_id, "Ada", "ada@example.com")
    payments.cancel_unpaid(order["_id"], by="anna", reason="no show at the box office")
    mail.outbox.clear()
    assert change_notices.send_pending(order["_id"]) == ["sent"]
    [message] = mail.outbox
    assert "tickets canceled" in message.subject and "A1, A2" in message.body
    assert "no show at the box office" in message.body and message.attachments == []
    # the buyer giving up themselves gets no such mail
    cart = holds.hold_seats(session["_id"], "s:bob", None, ["2:0", "2:1"])
    other = payments.start("s:bob", cart.cart_id, "Bob", "bob@example.com")
    payments.cancel_unpaid(other["_id"], owner="s:bob")
    assert "changeNotices" not in mongo.orders().find_one({"_id": other["_id"]})
    assert check_invariants() == []
