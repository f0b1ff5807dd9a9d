"""One web worker as production runs it (gunicorn, one uvicorn worker, theater_site/asgi.py)
serves synchronous pages side by side, and its live streams still stream meanwhile."""

import http.client
import subprocess
import sys
import threading
import time

import pytest

from bench.stack import ROOT, Stack, free_port, wait_for_port

SLOW_SECONDS = 2.0

CREATE_PERFORMANCE = """
import django
django.setup()
from bench import data
from booking.core import mongo
mongo.ensure_indexes()
print(data.performance(data.grand_hall(), "Concurrency", 3)["_id"])
"""


def get(port: int, path: str) -> tuple[int, float]:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path)
    status = connection.getresponse().status
    connection.close()
    return status, time.monotonic() - started


@pytest.fixture(scope="module")
def one_worker():
    with Stack(web=False) as stack:
        env = {**stack.env(), "SLOW_SECONDS": str(SLOW_SECONDS)}
        made = subprocess.run(
            [sys.executable, "-c", CREATE_PERFORMANCE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
        )
        port = free_port()
        args = ["--workers", "1", "--worker-class", "uvicorn_worker.UvicornWorker", "--bind", f"127.0.0.1:{port}"]
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "tests.deploy.slow_pages_asgi:application", *args], cwd=ROOT, env=env
        )
        try:
            wait_for_port(port, server, "gunicorn", timeout=120)
            assert get(port, "/favicon.ico")[0] == 301  # the worker has loaded the app
            yield port, made.stdout.strip().splitlines()[-1]
        finally:
            server.terminate()
            server.wait(timeout=30)


@pytest.mark.slow
def test_one_worker_answers_two_slow_pages_side_by_side_while_a_stream_flows(one_worker):
    port, session_id = one_worker
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
