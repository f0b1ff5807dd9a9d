"""One web worker as production runs it (gunicorn, one uvicorn worker, theater_site/asgi.py)
serves synchronous pages side by side, and its live streams still stream meanwhile; the waiting
room's pages take only threads of their own, so a rush of arrivals leaves the sale's pages free."""

import http.client
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from booking.tests.factories import make_session

ROOT = Path(__file__).resolve().parents[2]
SLOW_SECONDS = 2.0


def get(port: int, path: str, timeout: float = 30) -> tuple[int, float]:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.request("GET", path)
    status = connection.getresponse().status
    connection.close()
    return status, time.monotonic() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def one_worker(tmp_path):
    """gunicorn with one uvicorn worker, on the suite's MongoDB and Redis (os.environ), in
    production mode; its health check and the waiting room's pages are held SLOW_SECONDS at fault
    points."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "theater_site.settings",
        "DEBUG": "False",
        "SECRET_KEY": "test-" + uuid.uuid4().hex,
        "SECURE_SSL_REDIRECT": "False",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'django.sqlite3'}",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
        "SLOW_SECONDS": str(SLOW_SECONDS),
    }
    port = free_port()
    args = ["--workers", "1", "--worker-class", "uvicorn_worker.UvicornWorker", "--bind", f"127.0.0.1:{port}"]
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "tests.deploy.slow_pages_asgi:application", *args], cwd=ROOT, env=env
    )
    try:
        deadline = time.monotonic() + 180  # the worker loads the app after the port is open
        while True:
            assert server.poll() is None, "gunicorn exited"
            try:
                assert get(port, "/favicon.ico", timeout=5)[0] == 301
                break
            except OSError:
                assert time.monotonic() < deadline, "the worker did not answer within 180 s"
                time.sleep(0.5)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_one_worker_answers_two_slow_pages_side_by_side_while_a_stream_flows(one_worker):
    port, session_id = one_worker, str(make_session()["_id"])
    stream = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    stream.request("GET", f"/sessions/{session_id}/live/", headers={"Accept": "text/event-stream"})
    events = stream.getresponse()
    assert events.status == 200 and events.getheader("Content-Type") == "text/event-stream"

    answers: list[tuple[int, float]] = []
    pages = [threading.Thread(target=lambda: answers.append(get(port, "/healthz"))) for _ in range(2)]
    started = time.monotonic()
    for page in pages:
        page.start()
    time.sleep(SLOW_SECONDS / 4)  # both pages are being answered now
    first_lines = [events.fp.readline() for _ in range(3)]  # the stream's hello, while the pages wait
    for page in pages:
        page.join()
    elapsed = time.monotonic() - started
    stream.close()

    assert b"event: hello\n" in first_lines
    assert [status for status, _ in answers] == [200, 200]
    # One after the other would take twice SLOW_SECONDS; side by side, one and some overhead.
    assert elapsed < SLOW_SECONDS * 1.75, f"two slow pages took {elapsed:.2f} s on one worker"


@pytest.mark.slow
def test_the_waiting_rooms_pages_wait_for_their_own_threads_and_leave_the_sales_pages_free(one_worker):
    port, threads = one_worker, 2  # theater_site.asgi.WAITING_ROOM_THREADS
    arrivals = threads + 1
    queue_page = "/queue/" + "0" * 24 + "/"  # held at its fault point, then: no such room
    answers: list[tuple[int, float]] = []
    turn: list[tuple[int, float]] = []
    pages = [threading.Thread(target=lambda: answers.append(get(port, queue_page))) for _ in range(arrivals)]
    started = time.monotonic()
    for page in pages:
        page.start()
    time.sleep(SLOW_SECONDS / 4)  # the waiting room's threads are all taken now
    # a buyer whose turn came goes to the queue page by the sale's threads (queue_push.TURN_QUERY)
    let_in = threading.Thread(target=lambda: turn.append(get(port, queue_page + "?turn=1")))
    let_in.start()
    sale_status, sale_seconds = get(port, "/")  # what's on, meanwhile
    for page in [*pages, let_in]:
        page.join()
    elapsed = time.monotonic() - started

    assert sale_status == 200 and sale_seconds < SLOW_SECONDS / 2, f"what's on took {sale_seconds:.2f} s"
    assert sorted(status for status, _ in answers) == [404] * arrivals
    # Two threads for three held pages: the third starts when one of the first two ends.
    assert elapsed >= SLOW_SECONDS * 2, f"{arrivals} waiting-room pages took {elapsed:.2f} s"
    # The buyer let in waited only for the page's own hold, not for a waiting-room thread.
    assert turn[0][0] == 404 and turn[0][1] < SLOW_SECONDS * 1.5, f"the turn's page took {turn[0][1]:.2f} s"
