""" "Reserve now, pay at the box office": the buyer's mails, sent by a real Celery worker (the
embedded one of test_worker_mail.py, consuming the test Redis): the reservation (reference, seats,
amount due, deadline, where to pay) once however often it is queued, kept pending while the mail
server is away; the confirmation with the receipt once staff mark it paid; a notice when it lapses
unpaid. In the buyer's language."""

import socket
import time
from datetime import timedelta
from typing import cast

import pytest
from django.core import mail
from django.core.mail import EmailMultiAlternatives
from django.utils import translation

from booking.core import clock, mongo
from booking.core.formatting import mail_time
from booking.notifications import change_notices
from booking.notifications import confirmations as notifications
from booking.payments import flow as payments
from booking.sales import cart_expiry, holds
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.upkeep.tasks import send_change_notices

pytestmark = pytest.mark.slow
ADA = "s:ada"


def box_office_session(minutes=60, days=1.0, **kw):
    session = make_session(days=days, **kw)
    mongo.sessions().update_one(
        {"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True, "deadlineMinutes": minutes}}}
    )
    return session


def reserve(session, language="en", keys=("0:0", "0:1")):
    cart = holds.hold_seats(session["_id"], ADA, None, list(keys))
    return payments.start(ADA, cart.cart_id, "Ada Lovelace", "ada@example.com", "box_office", language=language)


def notices(order) -> list[tuple[str, str]]:
    found = mongo.orders().find_one({"_id": order["_id"]}).get("changeNotices", [])
    return [(n["kind"], n["state"]) for n in found]


def wait_until(condition, timeout=20.0, what="the worker"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_reservation_mail_says_what_how_much_by_when_and_where_and_goes_once(
    empty_queue,  # noqa: F811 - the fixture
    embedded_worker,  # noqa: F811
    settings,
):
    session = box_office_session()
    mail.outbox.clear()
    order = reserve(session)  # queues the notice while no worker runs
    assert notices(order) == [("reservation", "pending")]  # stored with the order itself
    send_change_notices.apply_async(args=[str(order["_id"])])  # a duplicate delivery
    settings.BOOKING_MAIL_REQUEUE_SECONDS = 0
    assert change_notices.requeue_pending() == 1  # and reconcile, impatient, queues it once more
    with embedded_worker():
        wait_until(lambda: notices(order) == [("reservation", "sent")])
        time.sleep(0.5)  # the other two deliveries run too
    [message] = mail.outbox
    assert message.to == ["ada@example.com"]
    assert message.subject == f"Your reservation {order['ref']}: please pay at the box office"
    deadline = session["start"] - timedelta(minutes=60)
    assert order["payment"]["until"] == deadline
    body = message.body
    assert f"Booking reference: {order['ref']}" in body
    assert "Row A, seat 1" in body and "Row A, seat 2" in body
    assert "Amount due: 40.00 EUR" in body
    assert f"Pay by: {mail_time(deadline)}" in body
    assert f"Where: at the box office of {session['theaterName']}" in body
    assert message.attachments == []  # no tickets and no receipt before the money
    html = str(cast(EmailMultiAlternatives, message).alternatives[0][0])
    assert "Amount due: 40.00 EUR" in html and order["ref"] in html


def test_the_reservation_mail_waits_for_a_mail_server_that_is_away(settings):
    session = box_office_session()
    order = reserve(session)
    options = {"host": "127.0.0.1", "port": closed_port(), "timeout": 2}
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend", "OPTIONS": options}}
    with pytest.raises(notifications.MailServerUnavailable):  # the task retries on this
        change_notices.send_pending(order["_id"])
    assert notices(order) == [("reservation", "pending")]
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    mail.outbox.clear()
    assert change_notices.send_pending(order["_id"]) == ["sent"]
    assert change_notices.send_pending(order["_id"]) == []
    assert len(mail.outbox) == 1


def test_the_reservation_mail_is_in_the_language_the_buyer_booked_in(settings):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    session = box_office_session()
    order = reserve(session, language="de")
    mail.outbox.clear()
    assert change_notices.send_pending(order["_id"]) == ["sent"]
    [message] = mail.outbox
    deadline = session["start"] - timedelta(minutes=60)
    with translation.override("de"):
        when = mail_time(deadline)
    assert message.subject == f"Ihre Reservierung {order['ref']}: bitte an der Theaterkasse bezahlen"
    assert "Offener Betrag: 40,00 EUR" in message.body
    assert f"Zu bezahlen bis: {when}" in message.body
    assert "Theaterkasse" in message.body and "Reihe A, Platz 1" in message.body


def test_paid_at_the_counter_the_buyer_gets_the_confirmation_with_the_receipt(
    empty_queue,  # noqa: F811
    embedded_worker,  # noqa: F811
):
    session = box_office_session()
    order = reserve(session)
    with embedded_worker():
        wait_until(lambda: notices(order) == [("reservation", "sent")])
        mail.outbox.clear()
        paid = payments.mark_paid_at_counter(order["_id"], by="clerk")
        assert paid["state"] == "paid" and paid["receiptNo"] == 1
        wait_until(lambda: mongo.orders().find_one({"_id": order["_id"]})["mail"] == "sent")
    [message] = mail.outbox
    assert order["ref"] in message.subject and "reservation" not in message.subject.lower()
    names = [a[0] for a in message.attachments]
    assert names == [f"receipt-{order['ref']}.pdf", f"booking-{order['ref']}.ics"]
    assert message.attachments[0][1][:5] == b"%PDF-"
    assert notices(order) == [("reservation", "sent")]  # no lapse notice for a paid one
    assert check_invariants() == []


def test_an_unpaid_reservation_lapses_at_its_deadline_and_the_buyer_is_told_once(
    empty_queue,  # noqa: F811
    embedded_worker,  # noqa: F811
    settings,
):
    session = box_office_session(minutes=60, days=0.05)  # the show starts in 72 minutes
    order = reserve(session)
    deadline = session["start"] - timedelta(minutes=60)
    assert cart_expiry.expire_stale_carts(deadline - timedelta(seconds=1)).carts_expired == 0
    assert notices(order) == [("reservation", "pending")]
    assert cart_expiry.expire_stale_carts(deadline + timedelta(seconds=1)).carts_expired == 1
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "expired"
    assert notices(order) == [("reservation", "pending"), ("reservation_lapsed", "pending")]
    cart_expiry.expire_stale_carts(deadline + timedelta(seconds=2))  # again: nothing more to say
    settings.BOOKING_PAYMENT_CHECK_GRACE_SECONDS = 0
    reconcile(now=deadline + timedelta(minutes=5), grace=timedelta(0))
    assert len(notices(order)) == 2
    mail.outbox.clear()
    with embedded_worker():
        wait_until(lambda: notices(order) == [("reservation", "sent"), ("reservation_lapsed", "sent")])
    lapsed = next(m for m in mail.outbox if "lapsed" in m.subject)
    assert lapsed.subject == f"Your reservation {order['ref']} has lapsed"
    assert f"was not paid by {mail_time(deadline)}" in lapsed.body and "Nothing was charged" in lapsed.body
    assert "Row A, seat 1" in lapsed.body and lapsed.attachments == []
    assert len(mail.outbox) == 2  # the reservation and its lapse, one each
    assert check_invariants() == []


def test_a_reservation_expired_by_reconcile_tells_the_buyer_too(settings):
    """Reconcile expires a reservation whose cart is gone (not paying any more) the same way."""
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    session = box_office_session()
    order = reserve(session)
    mongo.carts().update_one({"_id": order["cartId"]}, {"$set": {"state": "expired"}})
    settings.BOOKING_PAYMENT_CHECK_GRACE_SECONDS = 0
    reconcile(now=order["payment"]["until"] + timedelta(minutes=1), grace=timedelta(0))
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "expired"
    assert notices(order)[-1] == ("reservation_lapsed", "pending")


def test_a_card_order_gets_no_reservation_mails():
    session = make_session()
    cart = holds.hold_seats(session["_id"], ADA, None, ["0:0"])
    order = payments.start(ADA, cart.cart_id, "Ada", "ada@example.com", "card")
    assert "changeNotices" not in mongo.orders().find_one({"_id": order["_id"]})
    mongo.carts().update_one({"_id": order["cartId"]}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    cart_expiry.expire_stale_carts()
    assert "changeNotices" not in mongo.orders().find_one({"_id": order["_id"]})
