"""A real Celery worker and beat (subprocesses) on the test Redis and MongoDB.

No task runs eagerly here: tasks go through Redis to `celery -A theater_site worker` processes,
and in the first test beat alone decides when expiry runs. Every process is started in its own
process group and killed at teardown.
"""

import io
import os
import re
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from booking.core import clock, mongo
from booking.sales import holds
from booking.tests.factories import make_session, make_theater
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.upkeep.tasks import expire_stale_carts
from booking.venues.seat_grid import FREE, HELD
from theater_site.celery import app as celery_app

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
CELERY = [sys.executable, "-m", "celery", "-A", "theater_site"]
EXPIRY_LINE = re.compile(r"expire_stale_carts task=(\S+): carts expired: (\d+), seats released: (\d+)")


class Processes:
    """Subprocesses of one test: each in its own process group, output in a log file."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, args: list[str], **env) -> subprocess.Popen:
        log = open(self.tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed by the child's exit
        proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **{k: str(v) for k, v in env.items()}},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: prefork children die with it
        )
        log.close()
        self.procs[name] = proc
        return proc

    def worker(self, name: str, *extra: str, **env) -> subprocess.Popen:
        args = [*CELERY, "worker", "--loglevel", "INFO", "-n", f"{name}@%h", "--without-gossip", "--without-mingle"]
        proc = self.start(name, [*args, *extra], **env)
        self.wait_for_log(name, "ready.")
        return proc

    def beat(self, name: str = "beat", **env) -> subprocess.Popen:
        schedule = self.tmp_path / "celerybeat-schedule"
        args = [*CELERY, "beat", "--loglevel", "INFO", "--schedule", str(schedule), "--max-interval", "1"]
        return self.start(name, args, **env)

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")

    def wait_for_log(self, name: str, text: str, timeout: float = 20) -> None:
        wait_until(lambda: text in self.log(name), timeout, f"{name} to log {text!r}", self, name)

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def kill_all(self) -> None:
        for name in list(self.procs):
            self.kill(name)


def wait_until(condition, timeout: float, what: str, procs: Processes | None = None, name: str | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if procs is not None and name is not None and procs.procs[name].poll() is not None:
            pytest.fail(f"{name} exited while waiting for {what}:\n{procs.log(name)[-3000:]}")
        time.sleep(0.05)
    detail = f"\n{procs.log(name)[-3000:]}" if procs is not None and name is not None else ""
    pytest.fail(f"timed out after {timeout} s waiting for {what}{detail}")


def expiry_reports(*logs: str) -> dict[str, tuple[int, int]]:
    """Task id -> (carts expired, seats released), from the workers' log lines."""
    return {m[1]: (int(m[2]), int(m[3])) for log in logs for m in EXPIRY_LINE.finditer(log)}


@pytest.fixture
def procs(tmp_path):
    celery_app.control.purge()  # nothing left over from another test
    processes = Processes(tmp_path)
    yield processes
    processes.kill_all()
    celery_app.control.purge()


def cells(session_id, keys):
    grid = mongo.sessions().find_one({"_id": session_id})["seats"]
    return [grid[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


def stale_carts(count: int, seats_per_cart: int = 2, per_session: int = 50) -> tuple[list, int]:
    """`count` carts holding seats (pairs from the row start), all with their hold already over."""
    row = "s" * 20
    grid = "\n".join(f"{chr(65 + r)}: {row}" for r in range(per_session * seats_per_cart // 20 + 1))
    theater = make_theater(grid)
    cart_ids, session_ids = [], []
    for n in range(count):
        if n % per_session == 0:
            session_ids.append(make_session(theater)["_id"])
        i = (n % per_session) * seats_per_cart
        keys = [f"{(i + k) // 20}:{(i + k) % 20}" for k in range(seats_per_cart)]
        cart_ids.append(holds.hold_seats(session_ids[-1], f"s:buyer{n}", None, keys, allow_orphans=True).cart_id)
    past = clock.now() - timedelta(seconds=1)
    mongo.carts().update_many({"_id": {"$in": cart_ids}}, {"$set": {"expiresAt": past}})  # abandoned long ago
    return cart_ids, count * seats_per_cart


def seats_held() -> int:
    return sum(row.count(HELD) for s in mongo.sessions().find({}, {"seats": 1}) for row in s["seats"])


def test_beat_expires_an_abandoned_cart_without_anyone_calling_the_task(procs, settings):
    settings.BOOKING_HOLD_SECONDS = 2
    session = make_session()
    # Abandoned while no worker ran: expiry catches up as soon as worker and beat are back.
    before = holds.hold_seats(session["_id"], "s:early", None, ["0:0", "0:1"])
    mongo.carts().update_one({"_id": before.cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(minutes=5)}})

    fast = {"BOOKING_EXPIRE_EVERY_SECONDS": 1, "BOOKING_HOLD_SECONDS": 2, "BOOKING_RECONCILE_EVERY_SECONDS": 3600}
    procs.worker("w1", "--pool", "solo", **fast)
    procs.beat(**fast)
    # the bound includes starting a worker and a beat process, slow on a loaded machine
    wait_until(lambda: cells(session["_id"], ["0:0", "0:1"]) == [FREE, FREE], 30, "the early cart to expire")

    cart = holds.hold_seats(session["_id"], "s:later", None, ["2:0", "2:1"])  # held now, then left alone
    assert cells(session["_id"], ["2:0", "2:1"]) == [HELD, HELD]

    def expired_and_free():  # two writes: the cart's state first, then its seats
        state = mongo.carts().find_one({"_id": cart.cart_id})["state"]
        return state == "expired" and cells(session["_id"], ["2:0", "2:1"]) == [FREE, FREE]

    wait_until(expired_and_free, 10, "beat and worker to expire the cart", procs, "w1")
    assert mongo.sessions().find_one({"_id": session["_id"]})["seatsAvailable"] == 24  # every seat of the small hall
    assert check_invariants() == []
    assert "Sending due task expire-stale-carts" in procs.log("beat")
    # Each run logs what it did (the log line follows the writes, so wait for it).
    wait_until(lambda: sum(n for n, _ in expiry_reports(procs.log("w1")).values()) == 2, 5, "the log lines")
    assert sum(seats for _, seats in expiry_reports(procs.log("w1")).values()) == 4

    status = io.StringIO()
    call_command("worker_status", "--timeout", "2", stdout=status)
    assert "past their hold, not expired: 0" in status.getvalue()
    assert "workers answering: 1 (w1@" in status.getvalue()


def test_two_workers_expiring_the_same_carts_release_each_seat_once(procs):
    cart_ids, seat_count = stale_carts(200)
    assert seats_held() == seat_count
    procs.worker("w1", "--pool", "solo")
    procs.worker("w2", "--pool", "solo")
    for _ in range(4):  # prefetch 1: both workers take one at once, then one more each
        expire_stale_carts.apply_async()
    wait_until(lambda: len(expiry_reports(procs.log("w1"), procs.log("w2"))) == 4, 30, "four expiry runs")

    per_worker = [expiry_reports(procs.log(name)) for name in ("w1", "w2")]
    runs = [r for reports in per_worker for r in reports.values()]
    # Both took a share of the same stale carts at the same time (each worker's first run).
    assert all(any(expired for expired, _ in reports.values()) for reports in per_worker), per_worker
    assert sum(expired for expired, _ in runs) == len(cart_ids)  # every cart expired by exactly one run
    assert sum(seats for _, seats in runs) == seat_count  # every seat released exactly once
    assert mongo.carts().count_documents({"_id": {"$in": cart_ids}, "state": "expired"}) == len(cart_ids)
    assert seats_held() == 0
    assert check_invariants() == []


KILLABLE_WORKER = """
import pathlib, sys, time
from booking.core import faults

marker = pathlib.Path(sys.argv[1])
done = []

def stall_mid_expiry(name):
    # The 30th cart: its state is written, its seats are not released yet. Wait here to be killed.
    if name == "expire.after_cart":
        done.append(name)
        if len(done) == 30:
            marker.write_text("stalled")
            time.sleep(120)

faults.set_hook(stall_mid_expiry)
from theater_site.celery import app
app.worker_main(["worker", "--pool", "solo", "--loglevel", "INFO", "-n", "doomed@%h", "--without-mingle"])
"""


def test_a_worker_killed_mid_batch_leaves_nothing_half_expired_after_the_next_run(procs, tmp_path):
    cart_ids, _ = stale_carts(100)
    marker = tmp_path / "stalled"
    procs.start("doomed", [sys.executable, "-c", KILLABLE_WORKER, str(marker)])
    expire_stale_carts.apply_async()
    wait_until(marker.exists, 20, "the worker to reach the middle of the batch", procs, "doomed")
    procs.kill("doomed")  # SIGKILL to the whole process group, mid-batch

    assert mongo.carts().count_documents({"_id": {"$in": cart_ids}, "state": "expired"}) == 30
    breaches = check_invariants()
    assert any("which is expired" in b for b in breaches), breaches  # one cart expired, seats still held

    procs.worker("w2", "--pool", "solo")  # the worker comes back; the next scheduled run:
    expire_stale_carts.apply_async()
    wait_until(lambda: expiry_reports(procs.log("w2")), 20, "the next expiry run", procs, "w2")
    [(expired, released)] = expiry_reports(procs.log("w2")).values()
    assert expired == 70
    assert released == 70 * 2 + 2  # the rest, plus the seats of the cart cut off mid-expiry
    assert "interrupted expiries finished: 1" in procs.log("w2")
    assert seats_held() == 0
    assert check_invariants() == []


CHECKOUT_WITHOUT_REDIS = """
import os, sys, time, django
django.setup()
from bson import ObjectId
from booking.sales import holds
from booking.tests.paying import checkout_paid  # checkout, then the card payment (localstripe)
t = time.monotonic()
cart = holds.hold_seats(ObjectId(sys.argv[1]), "s:offline", None, ["0:0", "0:1"])
order = checkout_paid("s:offline", cart.cart_id, "Olga Offline", "olga@example.org")
print("ORDER", order["ref"], round(time.monotonic() - t, 2))
"""


def test_with_redis_down_buyers_still_hold_and_buy_and_the_mail_follows_later(procs, tmp_path):
    session = make_session()
    dead = f"redis://127.0.0.1:{_closed_port()}/0"
    env = {**os.environ, "REDIS_URL": dead, "DJANGO_SETTINGS_MODULE": "theater_site.settings"}
    result = subprocess.run(
        [sys.executable, "-c", CHECKOUT_WITHOUT_REDIS, str(session["_id"])],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    _, ref, seconds = result.stdout.split()
    assert float(seconds) < 10  # the broker failure does not hang the checkout
    assert "could not queue confirmation mail" in result.stderr
    order = mongo.orders().find_one({"ref": ref})
    assert order["mail"] == "pending" and order["state"] == "paid"
    assert cells(session["_id"], ["0:0", "0:1"]) == [2, 2]  # sold

    # Redis is back: the next reconcile queues the mail, the worker sends it (console backend).
    later = clock.now() + timedelta(seconds=django_settings.BOOKING_MAIL_REQUEUE_SECONDS + 1)
    assert reconcile(now=later).mails_requeued == 1
    procs.worker("w1", "--pool", "solo", EMAIL_URL="consolemail://")
    wait_until(lambda: mongo.orders().find_one({"_id": order["_id"]})["mail"] == "sent", 20, "the mail", procs, "w1")
    log = procs.log("w1")
    assert f"Subject: Your booking {ref}: Hamlet" in log
    assert f"/orders/{ref}/?email=3Dolga%40example.org" in log  # the text part, quoted-printable
    assert check_invariants() == []


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_while_redis_is_down_seats_stay_available_and_expiry_catches_up_when_it_is_back(procs, settings):
    """Worker and beat on a Redis of their own, which dies and comes back."""
    port = _closed_port()
    redis_args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    procs.start("redis", redis_args)
    wait_until(lambda: "Ready to accept connections" in procs.log("redis"), 10, "redis", procs, "redis")
    fast = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "BOOKING_EXPIRE_EVERY_SECONDS": 1}
    procs.worker("w1", "--pool", "solo", **fast)
    procs.beat(**fast)
    procs.kill("redis")

    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    session = make_session()
    past = clock.now() - timedelta(seconds=1)
    abandoned = [holds.hold_seats(session["_id"], f"s:gone{n}", None, [f"0:{n}"]).cart_id for n in range(3)]
    mongo.carts().update_many({"_id": {"$in": abandoned}}, {"$set": {"expiresAt": past}})
    # Beat tried twice to send the expiry without a broker (it logs each failed try): nothing
    # expired them...
    tried_twice = lambda: procs.log("beat").count("beat: Connection error") >= 2  # noqa: E731
    wait_until(tried_twice, 30, "beat to fail to reach Redis twice", procs, "beat")
    assert mongo.carts().count_documents({"_id": {"$in": abandoned}, "state": "active"}) == 3
    taken = holds.hold_seats(session["_id"], "s:next", None, ["0:0"])  # ...but the next buyer gets the seat
    assert cells(session["_id"], ["0:0"]) == [HELD] and taken.cart_id not in abandoned

    procs.start("redis", redis_args)  # Redis is back: beat and worker reconnect and catch up
    # The other two (the next buyer's hold expired the first one inline) are the worker's job.
    caught_up = lambda: sum(n for n, _ in expiry_reports(procs.log("w1")).values()) == 2  # noqa: E731
    wait_until(caught_up, 30, "the expiry to catch up", procs, "w1")
    assert mongo.carts().count_documents({"_id": {"$in": abandoned}, "state": "expired"}) == 3
    assert cells(session["_id"], ["0:0", "0:1", "0:2"]) == [HELD, FREE, FREE]
    assert check_invariants() == []
