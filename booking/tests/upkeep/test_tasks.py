"""The worker's jobs, called in this process: what they do to the data, the e-mail they write,
re-queuing by reconcile, and the operator's status command. (A real worker and beat drive them
in test_worker.py and test_worker_mail.py.)"""

import io
import json
import socket
from datetime import timedelta
from typing import cast

import pytest
import redis
from django.conf import settings as django_settings
from django.core import mail
from django.core.mail import EmailMultiAlternatives
from django.core.management import CommandError, call_command
from django.utils import timezone

from booking.core import clock, faults, mongo
from booking.notifications import confirmations as notifications
from booking.reports import takings
from booking.sales import holds
from booking.sales.cart_expiry import expire_stale_carts
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import finish_interrupted_expiries, reconcile
from booking.upkeep.tasks import keep_takings_days, mail_retry_countdown
from booking.venues.seat_grid import FREE
from theater_site.celery import app as celery_app

ALICE = "s:alice"


def queued_task_names() -> list[str]:
    """The tasks waiting in the broker's default queue (real Redis)."""
    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    return [json.loads(raw)["headers"]["task"] for raw in client.lrange("celery", 0, -1)]


@pytest.fixture
def empty_queue():
    celery_app.control.purge()
    yield
    celery_app.control.purge()


def buy(session, seats=("1:2", "1:3"), owner=ALICE, email="alice@example.org"):
    cart = holds.hold_seats(session["_id"], owner, None, list(seats))
    return checkout_paid(owner, cart.cart_id, "Alice Example", email)


def cells(session, keys):
    grid = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    return [grid[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


def test_the_celery_app_uses_redis_from_settings_and_finds_the_tasks():
    assert celery_app.conf.broker_url == django_settings.REDIS_URL
    celery_app.loader.import_default_modules()
    names = {"booking.tasks.expire_stale_carts", "booking.tasks.reconcile", "booking.tasks.send_order_confirmation"}
    assert names <= set(celery_app.tasks)
    schedule = celery_app.conf.beat_schedule
    assert schedule["expire-stale-carts"]["schedule"] == django_settings.BOOKING_EXPIRE_EVERY_SECONDS
    assert schedule["reconcile-holds"]["options"]["time_limit"] == django_settings.BOOKING_RECONCILE_TIME_LIMIT_SECONDS


def test_an_expiry_cut_short_after_the_cart_write_is_finished_by_the_next_run(crash_at, fault_hook):
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    later = clock.now() + timedelta(seconds=django_settings.BOOKING_HOLD_SECONDS + 1)

    crash_at("expire.after_cart")
    with pytest.raises(faults.InjectedCrash):
        expire_stale_carts(now=later)
    fault_hook(None)
    assert mongo.carts().find_one({"_id": cart.cart_id})["state"] == "expired"
    assert check_invariants() != []  # the seats are still held by an expired cart

    assert expire_stale_carts(now=later).carts_expired == 0  # the cart is no longer active...
    finished = finish_interrupted_expiries(now=later)  # ...so the task's second step frees its seats
    assert (finished.holds_released, finished.seats_released) == (1, 2)
    assert cells(session, ["0:0", "0:1"]) == [FREE, FREE]
    assert check_invariants() == []
    assert finish_interrupted_expiries(now=later).holds_released == 0  # and twice is harmless


def test_confirmation_mail_has_text_and_html_reference_seats_and_ticket_link(settings):
    settings.SITE_URL = "https://tickets.example.org"
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    session = make_session(name="Hamlet")
    order = buy(session, seats=["0:0", "1:2"], email="alice+t@example.org")  # a stalls and a premium seat
    assert notifications.send_confirmation(order["_id"]) == "sent"
    assert len(mail.outbox) == 1
    message = cast(EmailMultiAlternatives, mail.outbox[0])  # the confirmation has an HTML part
    assert message.to == ["alice+t@example.org"]
    assert message.from_email == settings.DEFAULT_FROM_EMAIL
    assert order["ref"] in message.subject and "Hamlet" in message.subject
    link = f"https://tickets.example.org/orders/{order['ref']}/?email=alice%2Bt%40example.org"
    html, mimetype = message.alternatives[0]
    assert isinstance(html, str)
    assert mimetype == "text/html"
    seats = {(line["row"], line["seat"]) for line in order["lines"]}
    assert seats == {("A", "1"), ("B", "3")}
    assert "Row A, seat 1 (Stalls, Full price): 20.00 EUR" in message.body  # category, ticket type
    assert "Row B, seat 3 (Premium, Full price): 35.00 EUR" in message.body
    assert "2 seats, total 55.00 EUR" in message.body
    assert link in message.body
    assert f"<strong>{order['ref']}</strong>" in html
    assert f'<a href="{link}">' in html
    assert '<td style="padding: 2px 8px;">Premium<br><small>Full price</small></td>' in html
    assert "<strong>55.00 EUR</strong>" in html
    assert mongo.orders().find_one({"_id": order["_id"]})["mail"] == "sent"


def test_a_second_send_of_the_same_order_sends_nothing():
    order = buy(make_session())
    assert notifications.send_confirmation(order["_id"]) == "sent"
    assert notifications.send_confirmation(order["_id"]) == "already sent"
    assert len(mail.outbox) == 1


def test_while_one_worker_is_sending_another_does_not_send_too():
    order = buy(make_session())
    assert notifications._claim(order["_id"])  # a worker took the order and is talking to the server
    assert notifications.send_confirmation(order["_id"]) == "busy"
    assert mail.outbox == []


def test_a_customer_name_cannot_inject_html_into_the_mail():
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    order = checkout_paid(ALICE, cart.cart_id, "<script>x</script>", "a@example.org")
    notifications.send_confirmation(order["_id"])
    html = cast(str, cast(EmailMultiAlternatives, mail.outbox[0]).alternatives[0][0])
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "Hello <script>x</script>," in mail.outbox[0].body  # plain text is not HTML-escaped


def test_checkout_queues_the_mail_task_with_the_order_id(empty_queue):
    order = buy(make_session())
    assert queued_task_names() == ["booking.tasks.send_order_confirmation"]  # no webhook endpoint: no dispatch
    assert mongo.orders().find_one({"_id": order["_id"]})["mail"] == "pending"


def test_reconcile_requeues_a_mail_that_was_never_queued(empty_queue, settings):
    buy(make_session())
    celery_app.control.purge()  # as if Redis had been down at checkout
    soon = clock.now() + timedelta(seconds=60)
    assert reconcile(now=soon).mails_requeued == 0  # too early: the worker may still be at it
    later = clock.now() + timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS + 1)
    assert reconcile(now=later).mails_requeued == 1
    assert queued_task_names() == ["booking.tasks.send_order_confirmation"]
    assert reconcile(now=later + timedelta(seconds=1)).mails_requeued == 0  # queued, not lost yet


def test_reconcile_leaves_a_mail_alone_while_its_task_is_retrying(empty_queue, settings):
    order = buy(make_session())
    celery_app.control.purge()
    notifications._claim(order["_id"])  # the task tried, failed and will retry
    notifications._release_claim(order["_id"])
    later = clock.now() + timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS + 1)
    assert reconcile(now=later).mails_requeued == 0
    lost = later + timedelta(seconds=settings.BOOKING_MAIL_RETRY_MAX_SECONDS)
    assert reconcile(now=lost).mails_requeued == 1  # its retries must have died with a worker


def test_reconcile_gives_up_on_a_mail_after_the_last_requeue(empty_queue, settings):
    settings.BOOKING_MAIL_MAX_REQUEUES = 2
    order = buy(make_session())
    step = timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS + settings.BOOKING_MAIL_RETRY_MAX_SECONDS + 1)
    when = clock.now()
    outcomes = []
    for _ in range(4):
        when += step
        report = reconcile(now=when)
        outcomes.append((report.mails_requeued, report.mails_given_up))
    assert outcomes == [(1, 0), (1, 0), (0, 1), (0, 0)]
    assert mongo.orders().find_one({"_id": order["_id"]})["mail"] == "failed"


def test_mail_retry_backoff_grows_and_is_capped(settings):
    settings.BOOKING_MAIL_RETRY_BASE_SECONDS = 10
    settings.BOOKING_MAIL_RETRY_MAX_SECONDS = 600
    assert 5 <= mail_retry_countdown(0) <= 10
    assert 40 <= mail_retry_countdown(3) <= 80
    assert 300 <= mail_retry_countdown(12) <= 600


def test_worker_status_shows_the_expiry_backlog_without_a_worker(settings, empty_queue):
    settings.BOOKING_HOLD_SECONDS = 1
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    session = make_session()
    holds.hold_seats(session["_id"], "s:a", None, ["0:0"])
    holds.hold_seats(session["_id"], "s:b", None, ["0:2"])
    mongo.carts().update_one({"owner": "s:a"}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=95)}})
    out = io.StringIO()
    call_command("worker_status", "--timeout", "0.3", stdout=out)
    text = out.getvalue()
    assert "active carts:" in text and text.split("active carts:")[1].split()[0] == "1"
    assert text.split("not expired:")[1].split()[0] == "1"
    assert "oldest of them ended:" in text and "95 s ago" in text
    assert "is the worker or beat down?" in text
    assert "workers: none answered" in text


# --- failed mails: retried by reconcile in rounds, up to a cap; re-sent on purpose by an operator ---


def dead_smtp_server() -> dict:
    """A mail server address where nothing listens: every send fails as when the server is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = {"host": "127.0.0.1", "port": port, "timeout": 2}
    return {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend", "OPTIONS": options}}


def fail_one_round(order) -> str:
    """What the task does with a mail server that is down, once its retries are used up."""
    with pytest.raises(notifications.MailServerUnavailable):
        notifications.send_confirmation(order["_id"])
    return notifications.give_up(order["_id"], "mail server kept failing: connection refused")


def stored(order) -> dict:
    return mongo.orders().find_one({"_id": order["_id"]})


def test_a_failed_mail_comes_back_in_rounds_with_growing_waits_until_the_cap(empty_queue, settings):
    settings.BOOKING_MAIL_RETRY_FAILED_SECONDS = 600
    settings.BOOKING_MAIL_MAX_FAILURES = 3
    settings.MAILERS = dead_smtp_server()
    order = buy(make_session())
    celery_app.control.purge()
    waits = []
    for round_no in (1, 2):
        assert fail_one_round(order) == "retry later"
        doc = stored(order)
        assert (doc["mail"], doc["mailFailures"]) == ("failed", round_no)
        waits.append((doc["mailRetryAt"] - doc["mailDoneOn"]).total_seconds())
        assert reconcile(now=doc["mailRetryAt"] - timedelta(seconds=1)).mails_retried == 0  # not yet
        assert queued_task_names() == []
        assert reconcile(now=doc["mailRetryAt"]).mails_retried == 1
        assert queued_task_names() == ["booking.tasks.send_order_confirmation"]
        assert stored(order)["mail"] == "pending" and "mailRetryAt" not in stored(order)
        celery_app.control.purge()
    assert waits == [600, 1200]

    assert fail_one_round(order) == "given up"  # the third failed round is the last
    doc = stored(order)
    assert (doc["mail"], doc["mailFailures"]) == ("failed", 3) and "mailRetryAt" not in doc
    assert reconcile(now=clock.now() + timedelta(days=30)).mails_retried == 0
    assert queued_task_names() == [] and mail.outbox == []

    out = io.StringIO()
    call_command("worker_status", "--no-ping", stdout=out)
    text = out.getvalue()
    assert "confirmation mails failed:    1 (0 to be retried automatically, 1 given up)" in text
    assert f"{order['ref']}  alice@example.org  given up, failed 3x: mail server kept failing" in text
    assert "resend_confirmation <REF>" in text


def test_worker_status_lists_a_failed_mail_with_its_next_round(settings):
    settings.MAILERS = dead_smtp_server()
    order = buy(make_session())
    fail_one_round(order)
    out = io.StringIO()
    call_command("worker_status", "--no-ping", stdout=out)
    text = out.getvalue()
    assert "confirmation mails pending:   0" in text
    assert "confirmation mails failed:    1 (1 to be retried automatically, 0 given up)" in text
    assert f"{order['ref']}  alice@example.org  next try in 30 min, failed 1x" in text
    assert "resend_confirmation" not in text


def test_a_mail_refused_for_good_is_not_retried_by_reconcile(empty_queue):
    order = buy(make_session())
    celery_app.control.purge()
    assert notifications.give_up(order["_id"], "refused for good: 550 no such user", permanent=True) == "given up"
    assert "mailRetryAt" not in stored(order)
    assert reconcile(now=clock.now() + timedelta(days=30)).mails_retried == 0
    assert queued_task_names() == []


def test_a_failure_is_counted_once_when_two_give_up_at_once(settings):
    order = buy(make_session())
    assert notifications.give_up(order["_id"], "first") == "retry later"
    assert notifications.give_up(order["_id"], "second") == ""  # no longer pending: nothing counted
    assert (stored(order)["mailFailures"], stored(order)["mailFailure"]) == (1, "first")


def test_a_mail_given_up_after_requeues_also_comes_back_later(empty_queue, settings):
    settings.BOOKING_MAIL_MAX_REQUEUES = 0
    order = buy(make_session())
    celery_app.control.purge()  # as if the task had been lost
    later = clock.now() + timedelta(seconds=settings.BOOKING_MAIL_REQUEUE_SECONDS + 1)
    assert reconcile(now=later).mails_given_up == 1
    doc = stored(order)
    assert doc["mailRetryAt"] == later + timedelta(seconds=settings.BOOKING_MAIL_RETRY_FAILED_SECONDS)
    assert reconcile(now=doc["mailRetryAt"]).mails_retried == 1
    assert notifications.send_confirmation(order["_id"]) == "sent"
    assert len(mail.outbox) == 1


def test_a_canceled_order_s_failed_mail_is_not_retried(empty_queue, settings):
    order = buy(make_session())
    notifications.give_up(order["_id"], "server down")
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"state": "canceled"}})
    assert reconcile(now=stored(order)["mailRetryAt"]).mails_retried == 0
    assert notifications.reopen(order["_id"], 0) == "not paid"
    assert stored(order)["mail"] == "failed"


def resend(*refs) -> str:
    out = io.StringIO()
    call_command("resend_confirmation", *refs, stdout=out)
    return out.getvalue()


def test_resend_confirmation_sends_a_sent_mail_again_on_purpose():
    order = buy(make_session())
    assert notifications.send_confirmation(order["_id"]) == "sent"
    assert resend(order["ref"].lower()) == f"{order['ref'].lower()}: sent to alice@example.org\n"
    assert len(mail.outbox) == 2 and mail.outbox[1].to == ["alice@example.org"]
    assert (stored(order)["mail"], stored(order)["mailRound"]) == ("sent", 1)


def test_resend_confirmation_sends_a_given_up_mail_with_a_fresh_budget(settings, empty_queue):
    settings.BOOKING_MAIL_MAX_FAILURES = 1
    good_mailers = settings.MAILERS
    settings.MAILERS = dead_smtp_server()
    order = buy(make_session())
    assert fail_one_round(order) == "given up"

    with pytest.raises(CommandError, match="1 of 1 mails were not sent"):
        resend(order["ref"])  # the server is still down: queued for the worker, pending again
    assert stored(order)["mail"] == "pending"
    assert queued_task_names()[-1] == "booking.tasks.send_order_confirmation"

    settings.MAILERS = good_mailers
    assert resend(order["ref"]) == f"{order['ref']}: sent to alice@example.org\n"  # pending: sent now
    doc = stored(order)
    assert (doc["mail"], doc["mailFailures"]) == ("sent", 0)
    assert len(mail.outbox) == 1
    assert notifications.send_confirmation(order["_id"]) == "already sent"  # the queued task sends nothing


def test_resend_confirmation_refuses_unknown_and_canceled_orders():
    order = buy(make_session())
    notifications.send_confirmation(order["_id"])
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"state": "canceled"}})
    err = io.StringIO()
    with pytest.raises(CommandError, match="2 of 2 mails were not sent"):
        call_command("resend_confirmation", "NOSUCHREF", order["ref"], stdout=err)
    assert "NOSUCHREF: no such order" in err.getvalue()
    assert f"{order['ref']}: the order is canceled; its mail is not sent" in err.getvalue()
    assert len(mail.outbox) == 1 and stored(order)["mail"] == "sent"


def test_two_operators_re_sending_the_same_round_send_one_mail():
    order = buy(make_session())
    notifications.send_confirmation(order["_id"])
    seen = stored(order).get("mailRound")
    assert notifications.reopen(order["_id"], seen) == "reopened"
    assert notifications.reopen(order["_id"], seen) == "changed"  # the same page again: nothing more
    assert notifications.send_confirmation(order["_id"]) == "sent"
    assert notifications.reopen(order["_id"], seen) == "changed"  # and after it went out, neither
    assert len(mail.outbox) == 2
    now = stored(order)["mailRound"]
    assert notifications.reopen(order["_id"], now) == "reopened"  # a fresh look at the page: again
    assert notifications.reopen(order["_id"], now + 1) == "pending"  # seen pending: send it now, claim decides


def test_the_hourly_task_keeps_the_past_weeks_takings_so_the_page_counts_no_day_again(settings, monkeypatch):
    moment = clock.now()
    monkeypatch.setattr(clock, "now", lambda: moment)
    assert settings.CELERY_BEAT_SCHEDULE["keep-takings-days"]["task"] == keep_takings_days.name
    assert keep_takings_days() == takings.KEEP_DAYS
    last = timezone.localdate(moment - takings.SEALED_AFTER) - timedelta(days=1)
    kept = sorted(d["_id"].split(":")[-1] for d in mongo.takings_days().find())
    assert kept == [(last - timedelta(days=n)).isoformat() for n in range(takings.KEEP_DAYS - 1, -1, -1)]
