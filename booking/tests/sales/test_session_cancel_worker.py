"""Canceling a performance with a real Celery worker (a subprocess on the test Redis and MongoDB)
that is killed (SIGKILL) in the middle of its orders: reconcile queues the run again and a new
worker refunds the rest, each order once."""

import sys
from datetime import timedelta

import pytest

from booking.core import clock, mongo
from booking.sales import session_cancel
from booking.sales.sessions import cancel_session
from booking.tests.admin_support import sell
from booking.tests.factories import make_session
from booking.tests.sales.test_worker import Processes, wait_until
from booking.upkeep.invariants import check_invariants
from theater_site.celery import app as celery_app

pytestmark = pytest.mark.slow

KILLABLE_WORKER = """
import sys, time, django
django.setup()
from pathlib import Path
from booking.core import faults
marker = Path(sys.argv[1])
done = []

def stall_after_the_second_order(name):
    if name == "session_cancel.after_order":
        done.append(name)
        if len(done) == 2:
            marker.write_text("stalled")
            time.sleep(120)  # killed here

faults.set_hook(stall_after_the_second_order)
from theater_site.celery import app
app.worker_main(["worker", "--pool", "solo", "--loglevel", "INFO", "-n", "doomed@%h", "--without-mingle"])
"""


@pytest.fixture
def procs(tmp_path):
    celery_app.control.purge()
    processes = Processes(tmp_path)
    yield processes
    processes.kill_all()
    celery_app.control.purge()


def test_a_worker_killed_mid_cancellation_is_taken_up_again_and_refunds_each_order_once(procs, tmp_path):
    session = make_session()
    orders = [sell(session["_id"], [f"{r}:{c}", f"{r}:{c + 1}"], owner=f"s:p{r}{c}") for r in range(3) for c in (0, 5)]
    marker = tmp_path / "stalled"
    procs.start("doomed", [sys.executable, "-c", KILLABLE_WORKER, str(marker)])
    cancel_session(session["_id"], cancel_orders=True, by="anna")  # queues the task
    wait_until(marker.exists, 30, "the worker to reach the middle of the orders", procs, "doomed")
    procs.kill("doomed")

    progress = session_cancel.progress(mongo.sessions().find_one({"_id": session["_id"]}))
    assert progress and (progress.state, progress.done, progress.left) == ("running", 2, 4)
    assert check_invariants() == []  # each order is refunded whole or not at all

    procs.worker("w2", "--pool", "solo")
    assert session_cancel.resume_stalled(clock.now() + timedelta(minutes=6)) == 1  # reconcile's part
    wait_until(
        lambda: mongo.sessions().find_one({"_id": session["_id"]})["cancelRun"]["state"] == "done",
        30,
        "the second worker to finish the cancellation",
        procs,
        "w2",
    )
    for order in orders:
        after = mongo.orders().find_one({"_id": order["_id"]})
        assert after["state"] == "refunded" and len(after["refunds"]) == 1
        assert after["refunds"][0]["status"] == "succeeded"
    wait_until(
        lambda: all(
            n["state"] == "sent"
            for o in mongo.orders().find({"_id": {"$in": [o["_id"] for o in orders]}})
            for n in o["changeNotices"]
        ),
        30,
        "every customer's mail",
        procs,
        "w2",
    )
    assert mongo.sessions().find_one({"_id": session["_id"]})["seatsAvailable"] == 24
    assert check_invariants() == []
