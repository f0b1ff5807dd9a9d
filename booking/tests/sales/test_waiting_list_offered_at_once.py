"""Seats coming back are offered to the waiting list at once (sales/seats_returned.py): a buyer's
cancel, an exchange's old seats, a hold let go each ask the worker (a real Celery worker on the
test Redis) to offer that performance's seats, without the worker's 30 s round."""

import io
import json
import time

import pytest
import redis
from django.conf import settings as django_settings
from django.core.management import call_command

from booking.core import clock, faults, mongo, work_queue
from booking.sales import buyer_changes, holds, self_service, waiting_list
from booking.tests.factories import make_session, make_theater, reread
from booking.tests.paying import checkout_paid
from booking.upkeep.invariants import check_invariants
from booking.upkeep.tasks import offer_returned_seats
from booking.venues.seat_grid import HELD
from theater_site.celery import app as celery_app

pytestmark = pytest.mark.slow

RULES = self_service.Rules(exchange=True, cancel=True, hours_before=48, fee=0)  # an even exchange: done at once
ROW = ["0:0", "0:1", "0:2", "0:3"]


@pytest.fixture
def theater():
    theater = make_theater("A: ssss\n")
    self_service.set_theater_rules(theater_id=theater["_id"], rules=RULES)
    return theater


def paid(session, keys, owner, email):
    cart = holds.hold_seats(session["_id"], owner, None, list(keys))
    return checkout_paid(owner, cart.cart_id, "Ada Lovelace", email)


def join(session, email, count=1):
    return waiting_list.join(
        session_id=session["_id"], email=email, count=count, together=True, category=None, language="en"
    )


def offered_within(entry_id, seconds=15.0) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        found = mongo.waiting_list().find_one({"_id": entry_id})
        if found["state"] == waiting_list.OFFERED or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def queued_task_names() -> list[str]:
    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    return [json.loads(raw)["headers"]["task"] for raw in client.lrange("celery", 0, -1)]


@pytest.fixture
def purged():
    celery_app.control.purge()
    yield
    celery_app.control.purge()


def cell(session_id, key):
    return reread(session_id)["seats"][0][int(key.split(":")[1])]


def test_a_buyer_s_cancel_is_offered_to_the_waiting_buyer_by_the_worker_at_once(theater, worker):
    session = make_session(theater, days=5)
    order = paid(session, ROW[:2], "s:ada", "ada@example.com")
    paid(session, ROW[2:], "s:bob", "bob@example.com")
    waiting = join(session, "wait@example.com")
    canceled = order["lines"][0]

    buyer_changes.cancel_tickets(order_id=order["_id"], tickets=[canceled["ticket"]], confirmed=None, now=clock.now())

    offered = offered_within(waiting["_id"])
    assert offered["state"] == waiting_list.OFFERED and offered["offer"]["seats"] == [canceled["key"]]
    assert cell(session["_id"], canceled["key"]) == HELD and reread(session["_id"])["seatsAvailable"] == 0
    assert check_invariants() == []


def test_an_exchange_s_old_seats_are_offered_at_once(theater, worker):
    session = make_session(theater, days=5)
    later = make_session(theater, days=6)
    order = paid(session, ROW[:2], "s:ada", "ada@example.com")
    paid(session, ROW[2:], "s:bob", "bob@example.com")
    waiting = join(session, "wait@example.com", count=2)

    buyer_changes.exchange_tickets(
        order_id=order["_id"],
        tickets=[x["ticket"] for x in order["lines"]],
        session_id=later["_id"],
        keys=["0:0", "0:1"],
        now=clock.now(),
    )

    offered = offered_within(waiting["_id"])
    assert offered["state"] == waiting_list.OFFERED and sorted(offered["offer"]["seats"]) == ROW[:2]
    assert check_invariants() == []


def test_a_hold_let_go_is_offered_at_once(theater, worker):
    session = make_session(theater, days=5)
    cart = holds.hold_seats(session["_id"], "s:ada", None, ROW)
    waiting = join(session, "wait@example.com")

    holds.release_seats(session["_id"], "s:ada", cart.cart_id, ["0:3"])

    offered = offered_within(waiting["_id"])
    assert offered["state"] == waiting_list.OFFERED and offered["offer"]["seats"] == ["0:3"]


def test_the_worker_is_asked_only_when_someone_waits(theater, purged):
    session = make_session(theater, days=5)
    cart = holds.hold_seats(session["_id"], "s:ada", None, ROW)
    holds.release_seats(session["_id"], "s:ada", cart.cart_id, ["0:3"])
    assert work_queue.OFFER_RETURNED_SEATS not in queued_task_names()  # nobody waits: no message

    holds.hold_seats(session["_id"], "s:ada", cart.cart_id, ["0:3"])
    waiting = join(session, "wait@example.com")
    holds.release_seats(session["_id"], "s:ada", cart.cart_id, ["0:2"])
    assert queued_task_names().count(work_queue.OFFER_RETURNED_SEATS) == 1
    assert mongo.waiting_list().find_one({"_id": waiting["_id"]})["state"] == waiting_list.WAITING  # not yet

    assert offer_returned_seats(str(session["_id"])) == {"offered": 1, "missed": 0}
    assert mongo.waiting_list().find_one({"_id": waiting["_id"]})["offer"]["seats"] == ["0:2"]


def test_the_task_given_a_bad_id_offers_nothing():
    assert offer_returned_seats("not-an-id") == {"offered": 0, "error": "invalid id"}


def test_a_crash_after_the_flag_before_the_entry_only_costs_a_release_one_read(theater, purged, crash_at):
    session = make_session(theater, days=5)
    cart = holds.hold_seats(session["_id"], "s:ada", None, ROW)
    crash_at("waiting_list.after_flag")
    with pytest.raises(faults.InjectedCrash):
        join(session, "wait@example.com")
    assert reread(session["_id"])["waitingList"] is True and mongo.waiting_list().count_documents({}) == 0

    holds.release_seats(session["_id"], "s:ada", cart.cart_id, ["0:3"])
    assert work_queue.OFFER_RETURNED_SEATS not in queued_task_names()  # the list was asked: nobody waits


def test_entries_from_before_the_flag_are_flagged_by_ensure_indexes_and_then_offered(theater, purged):
    session = make_session(theater, days=5)
    cart = holds.hold_seats(session["_id"], "s:ada", None, ROW)
    waiting = join(session, "wait@example.com")
    other = make_session(theater, days=6)
    holds.hold_seats(other["_id"], "s:bob", None, ROW)
    gone = join(other, "gone@example.com")
    assert waiting_list.leave(entry_id=gone["_id"], email="gone@example.com")
    mongo.sessions().update_many({}, {"$unset": {"waitingList": ""}})  # as if joined before the flag
    holds.release_seats(session["_id"], "s:ada", cart.cart_id, ["0:3"])
    assert work_queue.OFFER_RETURNED_SEATS not in queued_task_names()  # unflagged: the worker's round finds it

    out = io.StringIO()
    call_command("ensure_indexes", stdout=out)
    assert "sessions flagged as having a waiting list: 1" in out.getvalue()
    assert reread(session["_id"])["waitingList"] is True and "waitingList" not in reread(other["_id"])  # left
    holds.release_seats(session["_id"], "s:ada", cart.cart_id, ["0:2"])
    assert queued_task_names().count(work_queue.OFFER_RETURNED_SEATS) == 1
    assert offer_returned_seats(str(session["_id"])) == {"offered": 1, "missed": 0}
    assert mongo.waiting_list().find_one({"_id": waiting["_id"]})["state"] == waiting_list.OFFERED
