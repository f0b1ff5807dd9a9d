"""The confirmation e-mail sent by a real Celery worker (Celery's embedded worker, in a thread of
this process so it shares Django's locmem outbox) consuming the test Redis; the SMTP cases talk to
a real SMTP server (aiosmtpd) that is down, comes up, or refuses the address. Also: a failed mail
sent by a later reconcile round, and the operator's re-send command run twice at once."""

import io
import socket
import threading
import time
from datetime import timedelta

import pytest
from aiosmtpd.controller import Controller
from django.core import mail
from django.core.management import CommandError, call_command

from booking.core import mongo
from booking.notifications import confirmations as notifications
from booking.sales import holds
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep.reconcile import reconcile
from booking.upkeep.tasks import send_order_confirmation

pytestmark = pytest.mark.slow


class Inbox:
    """An SMTP server's mailbox; `refuse` makes it reject every recipient for good (550)."""

    def __init__(self, refuse: bool = False):
        self.refuse = refuse
        self.messages: list = []  # aiosmtpd envelopes

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802 - aiosmtpd's name
        if self.refuse:
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        self.messages.append(envelope)
        return "250 Message accepted"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def smtp_mailer(port: int) -> dict:
    options = {"host": "127.0.0.1", "port": port, "timeout": 2}
    return {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend", "OPTIONS": options}}


def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def buy(email="alice@example.org"):
    session = make_session()
    cart = holds.hold_seats(session["_id"], "s:alice", None, ["0:0", "0:1"])
    return checkout_paid("s:alice", cart.cart_id, "Alice Example", email)  # queues the mail task


def mail_state(order) -> str:
    return mongo.orders().find_one({"_id": order["_id"]})["mail"]


def outcomes(caplog, order) -> list[str]:
    prefix = f"confirmation mail for order {order['_id']}: "
    return [r.getMessage().removeprefix(prefix) for r in caplog.records if r.getMessage().startswith(prefix)]


def retries(caplog, order) -> int:
    return sum(1 for r in caplog.records if f"order {order['_id']} failed" in r.getMessage())


def test_one_mail_per_order_even_when_the_task_is_queued_three_times(empty_queue, embedded_worker, caplog, settings):
    order = buy()  # queued by checkout while no worker runs
    send_order_confirmation.apply_async(args=[str(order["_id"])])  # a duplicate delivery
    settings.BOOKING_MAIL_REQUEUE_SECONDS = 0
    assert reconcile().mails_requeued == 1  # and reconcile, impatient, queues it once more
    with embedded_worker():
        wait_until(lambda: len(outcomes(caplog, order)) == 3, 20, "three task runs")
    assert sorted(outcomes(caplog, order)) == ["already sent", "already sent", "sent"]
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["alice@example.org"] and order["ref"] in mail.outbox[0].subject
    assert mail_state(order) == "sent"


def test_an_unknown_order_id_is_logged_and_dropped(worker, caplog):
    send_order_confirmation.apply_async(args=["not-an-id"])
    send_order_confirmation.apply_async(args=["0123456789abcdef01234567"])
    wait_until(lambda: "no such order" in caplog.text and "is not an order id" in caplog.text, 20, "both runs")
    assert mail.outbox == []


def test_the_mail_is_retried_with_backoff_until_the_mail_server_is_back(worker, caplog, settings):
    port = free_port()
    settings.MAILERS = smtp_mailer(port)  # nothing listens there yet
    settings.BOOKING_MAIL_RETRY_BASE_SECONDS = 0.4
    order = buy()
    wait_until(lambda: retries(caplog, order) >= 2, 20, "two failed attempts")
    assert mail_state(order) == "pending"

    inbox = Inbox()
    server = Controller(inbox, hostname="127.0.0.1", port=port)
    server.start()
    try:
        wait_until(lambda: mail_state(order) == "sent", 20, "the mail to go out")
    finally:
        server.stop()
    assert len(inbox.messages) == 1
    assert inbox.messages[0].rcpt_tos == ["alice@example.org"]
    assert order["ref"].encode() in inbox.messages[0].original_content
    assert "retry 1 in" in caplog.text and "retry 2 in" in caplog.text


def test_a_refused_address_is_not_retried(worker, caplog, settings):
    inbox = Inbox(refuse=True)
    server = Controller(inbox, hostname="127.0.0.1", port=free_port())
    server.start()
    try:
        settings.MAILERS = smtp_mailer(server.port)
        order = buy(email="nobody@example.org")
        wait_until(lambda: mail_state(order) == "failed", 20, "the mail to be given up")
    finally:
        server.stop()
    assert outcomes(caplog, order) == ["failed"]
    assert retries(caplog, order) == 0
    assert inbox.messages == []
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert "550" in stored["mailFailure"]
    assert "mailRetryAt" not in stored  # reconcile leaves it to an operator


def test_after_the_last_retry_the_mail_is_marked_failed(worker, caplog, settings):
    settings.MAILERS = smtp_mailer(free_port())  # never up
    settings.BOOKING_MAIL_RETRY_BASE_SECONDS = 0.02
    settings.BOOKING_MAIL_RETRY_MAX_SECONDS = 0.05
    order = buy()
    wait_until(lambda: mail_state(order) == "failed", 30, "the retries to run out")
    assert retries(caplog, order) == send_order_confirmation.max_retries
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert "kept failing" in stored["mailFailure"]
    assert stored["mailFailures"] == 1 and stored["mailRetryAt"] > stored["mailDoneOn"]  # a later round


def test_a_failed_mail_is_sent_once_by_the_next_reconcile_after_the_server_is_back(worker, caplog, settings):
    port = free_port()
    settings.MAILERS = smtp_mailer(port)  # down for the whole first round
    settings.BOOKING_MAIL_RETRY_BASE_SECONDS = 0.02
    settings.BOOKING_MAIL_RETRY_MAX_SECONDS = 0.05
    order = buy()
    wait_until(lambda: mail_state(order) == "failed", 30, "the first round to fail")
    retry_at = mongo.orders().find_one({"_id": order["_id"]})["mailRetryAt"]
    assert reconcile().mails_retried == 0  # its next round is not due yet

    inbox = Inbox()
    server = Controller(inbox, hostname="127.0.0.1", port=port)
    server.start()
    try:
        # Two reconciles (two beats, or a manual run) race for the due mail: one queues it.
        reports = []
        barrier = threading.Barrier(2)

        def run():
            barrier.wait()
            reports.append(reconcile(now=retry_at))

        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(r.mails_retried for r in reports) == [0, 1]
        wait_until(lambda: mail_state(order) == "sent", 20, "the mail to go out")
        assert reconcile(now=retry_at + timedelta(days=1)).mails_retried == 0
        # A marker queued last: once the worker (one, in order) has dropped it, everything queued
        # before it has run.
        send_order_confirmation.apply_async(args=["0123456789abcdef01234567"])
        wait_until(lambda: "no such order" in caplog.text, 20, "the queue to be worked off")
    finally:
        server.stop()
    assert len(inbox.messages) == 1
    assert inbox.messages[0].rcpt_tos == ["alice@example.org"]
    stored = mongo.orders().find_one({"_id": order["_id"]})
    assert (stored["mail"], stored["mailFailures"], stored["mailRound"]) == ("sent", 1, 1)


def test_two_resend_commands_at_once_send_one_mail(empty_queue, settings, fault_hook):
    inbox = Inbox()
    server = Controller(inbox, hostname="127.0.0.1", port=free_port())
    server.start()
    settings.MAILERS = smtp_mailer(server.port)
    order = buy()
    notifications.give_up(order["_id"], "mail server kept failing", permanent=True)  # failed, given up
    barrier = threading.Barrier(2, timeout=10)

    def both_have_read_the_order(name):
        if name == "mail.before_reopen":
            barrier.wait()

    results = []

    def resend():
        out = io.StringIO()
        try:
            call_command("resend_confirmation", order["ref"], stdout=out)
            results.append(("ok", out.getvalue()))
        except CommandError:
            results.append(("error", out.getvalue()))

    fault_hook(both_have_read_the_order)
    try:
        threads = [threading.Thread(target=resend) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        server.stop()
    assert len(inbox.messages) == 1
    assert sorted(kind for kind, _ in results) == ["error", "ok"]
    assert "sent to alice@example.org" in dict(results)["ok"]
    assert "changed meanwhile" in dict(results)["error"]
    assert mail_state(order) == "sent"
