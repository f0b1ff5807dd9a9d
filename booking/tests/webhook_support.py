"""A real HTTP receiver for the webhook tests, started on 127.0.0.1 by the test, and shortcuts
that run the worker's webhook tasks in the test's process (Celery's ``apply``)."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bson import ObjectId

from booking.core import clock, mongo
from booking.sales import outbox
from booking.upkeep.tasks import deliver_webhook
from booking.webhooks import endpoints, signing
from booking.webhooks.dispatch import dispatch


@dataclass
class Receiver:
    """Answers each POST with the next of ``statuses`` (the last one from then on) and keeps
    what it got; ``secret``: the signature it checks (``verified`` per request)."""

    statuses: list[int]
    secret: str = ""
    url: str = ""
    received: list[dict] = field(default_factory=list)

    def answer(self) -> int:
        index = min(len(self.received) - 1, len(self.statuses) - 1)
        return self.statuses[index]

    def events(self) -> list[dict]:
        return [json.loads(r["body"]) for r in self.received]

    def types(self) -> list[str]:
        return [e["type"] for e in self.events()]


@contextmanager
def receiver(statuses: list[int] | None = None) -> Iterator[Receiver]:
    got = Receiver(statuses or [200])
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            header = self.headers.get(signing.SIGNATURE_HEADER, "")
            with lock:
                got.received.append(
                    {
                        "body": body,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "verified": signing.verify(got.secret, header, body, now=int(clock.now().timestamp())),
                    }
                )
                status = got.answer()
            answer = f"answer {status}".encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    got.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()


def register(got: Receiver, theater_id: ObjectId, events=outbox.WEBHOOK_EVENT_TYPES, active: bool = True) -> dict:
    """An endpoint at the receiver; the receiver checks signatures with its secret."""
    endpoint = endpoints.create_endpoint(theater_id=theater_id, url=got.url, events=list(events), active=active)
    got.secret = endpoint["secret"]
    return endpoint


def deliver(delivery_id: str) -> str:
    """The worker's delivery task, its retries included, in this process."""
    return deliver_webhook.apply(args=[delivery_id]).get()


def deliver_order_events(order_id: ObjectId) -> list[str]:
    """Dispatch the order's events as the worker does, then send each delivery."""
    return [deliver(d) for d in dispatch(outbox.ORDERS, order_id)]


def deliver_pending() -> list[str]:
    """Send every pending delivery (what reconcile queued to the broker)."""
    pending = mongo.webhook_deliveries().find({"state": "pending"}, {"_id": 1}).sort("createdOn", 1)
    return [deliver(d["_id"]) for d in pending]
