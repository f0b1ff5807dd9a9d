"""Webhooks through a real Celery worker (a subprocess on the test Redis and MongoDB): the sale
only writes the event and queues its dispatch; the worker dispatches it, and retries the delivery
with its backoff until the receiver, answering 500 twice, takes it."""

import pytest

from booking.core import mongo
from booking.sales import outbox
from booking.tests.admin_support import sell
from booking.tests.factories import make_session
from booking.tests.sales.test_worker import CELERY, Processes, wait_until
from booking.tests.webhook_support import receiver, register
from theater_site.celery import app as celery_app

pytestmark = pytest.mark.slow

QUICK_RETRIES = {
    "BOOKING_WEBHOOK_ALLOW_LOCAL": "true",
    "BOOKING_WEBHOOK_RETRY_BASE_SECONDS": "0.2",
    "BOOKING_WEBHOOK_RETRY_MAX_SECONDS": "1",
}


@pytest.fixture
def procs(tmp_path):
    celery_app.control.purge()
    processes = Processes(tmp_path)
    yield processes
    processes.kill_all()
    celery_app.control.purge()


def test_the_worker_delivers_a_paid_order_after_two_500s(procs, settings):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = True
    session = make_session()
    with receiver([500, 500, 200]) as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        worker = [*CELERY, "worker", "--loglevel", "INFO", "-n", "hooks@%h", "--without-gossip", "--without-mingle"]
        procs.start("hooks", [*worker, "--pool", "solo"], **QUICK_RETRIES)
        procs.wait_for_log("hooks", "ready.", timeout=60)  # a loaded machine (xdist) starts it slowly
        order = sell(session["_id"], ["0:0", "0:1"])
        wait_until(lambda: len(got.received) >= 3, 60, "three tries at the receiver", procs, "hooks")
        wait_until(
            lambda: (mongo.webhook_deliveries().find_one() or {}).get("state") == "delivered",
            30,
            "the delivery to be delivered",
            procs,
            "hooks",
        )
    assert got.types() == ["order.paid"] * 3 and all(r["verified"] for r in got.received)
    assert got.events()[0]["data"]["order"]["ref"] == order["ref"]
    [delivery] = mongo.webhook_deliveries().find()
    assert [a["status"] for a in delivery["attempts"]] == [500, 500, 200]
    later = [a["at"] for a in delivery["attempts"]]
    assert later == sorted(later) and (later[2] - later[0]).total_seconds() >= 0.2  # it waited between tries
    assert "webhookEvents" not in mongo.orders().find_one({"_id": order["_id"]})  # out of the sparse index
