"""A Redis outage across the on-sale moment, with a real redis-server this test stops and starts.

While Redis is away the queue page says "paused, you keep your place", nobody is admitted (the
session page still sends everybody to the queue), and the pages keep asking. When it is back,
admission goes on in the queue's order: with its data (append-only file) at once; without it
(a Redis that restarted empty) the buyers' tickets put everybody back at their place, and the
queue waits for them (the regather period) before letting anybody in.
"""

import re
import shutil
import subprocess
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from booking.core import clock
from booking.sales import admission, waiting_room
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.tests.ports import free_port, listening

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


class OwnRedis:
    def __init__(self, workdir, persistent: bool):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        server = shutil.which("redis-server")
        assert server is not None, "redis-server is not installed"
        self.args = [server, "--port", str(self.port), "--bind", "127.0.0.1"]
        self.args += ["--dir", str(workdir)]
        self.args += ["--appendonly", "yes", "--appendfsync", "always"] if persistent else ["--appendonly", "no"]
        self.args += ["--save", ""]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not listening(self.port, self.proc, 10):
            raise RuntimeError("redis-server did not start")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: a clean shutdown (the append-only file is complete)
            self.proc.wait(timeout=10)


def text(response):
    return re.sub(r"\s+", " ", response.content.decode())


@pytest.mark.parametrize("persistent", [True, False], ids=["redis-keeps-its-data", "redis-comes-back-empty"])
def test_a_redis_outage_pauses_admission_and_it_resumes_in_queue_order(tmp_path, settings, persistent):
    redis_server = OwnRedis(tmp_path, persistent)
    redis_server.start()
    settings.REDIS_URL = redis_server.url
    settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 2  # regather: 7.5 s
    try:
        session = make_session()
        now = clock.now()
        on_sale = now + timedelta(seconds=3)
        config = waiting_room.enable(session["_id"], opens_at=now - timedelta(minutes=1), on_sale_at=on_sale, rate=600)
        queue = reverse("booking:queue", args=[str(config.queue_id)])
        status = reverse("booking:queue_status", args=[str(config.queue_id)])
        seat_map = reverse("booking:session", args=[str(session["_id"])])
        buyers = [Client() for _ in range(5)]
        for b in buyers:
            assert "You are in the waiting room" in text(b.get(queue))
        owners = waiting_room.store().zrange(waiting_room.keys(config.queue_id)[1], 0, -1)
        expected = [o.decode() for o in owners]  # the lot's order
        assert len(expected) == 5

        redis_server.stop()
        while clock.now() < on_sale + timedelta(milliseconds=500):  # the sale opens while Redis is away
            for b in buyers:
                answer = b.get(status, **HTMX)
                assert answer.status_code == 200
                assert "The queue is paused" in text(answer) and "You keep your place." in text(answer)
                assert b.get(seat_map).status_code == 302  # nobody is let in meanwhile
            time.sleep(0.5)

        redis_server.start()
        for b in reversed(buyers):  # they come back in any order
            answer = b.get(status, **HTMX)
            assert answer.status_code == 200
        if not persistent:
            assert all("You are in line" in text(b.get(status, **HTMX)) for b in buyers)  # put back, waiting
            assert waiting_room.admission_log(config.queue_id) == []  # regathering: nobody let in yet
            time.sleep(waiting_room.regather_ms() / 1000 + 0.2)
            buyers[0].get(status, **HTMX)
        assert [owner for owner, _ in waiting_room.admission_log(config.queue_id)] == expected

        for b in buyers:
            answer = b.get(status, **HTMX)
            assert answer["HX-Redirect"] == seat_map
            assert admission.cookie_name(config.queue_id) in b.cookies
        held = buyers[0].post(reverse("booking:toggle_seat", args=[str(session["_id"])]), {"seat": "0:0"}, **HTMX)
        assert held.status_code == 200 and "held by you" in text(held)
    finally:
        redis_server.stop()
