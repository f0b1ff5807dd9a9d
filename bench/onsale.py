"""``python -m bench.onsale`` (``make bench-onsale``): the on-sale simulation (a waiting room's big on-sale).

5,000 simulated buyers arrive within 60 s for the 830-seat Grand Hall (booking/sales/demo.py); the sale
opens 30 s after the first arrival. Three runs on the same real stack (bench/stack.py: the MongoDB
stand-in, a redis-server, gunicorn with 2 workers, production settings), with the same arrivals,
wishes and leavers (one random seed):

- ``push``: the performance has a waiting room and the web workers are ASGI (uvicorn, as the
  Procfile deploys them). A buyer opens the seat map, is sent to the queue page, then listens to
  its event stream (``/queue/<id>/live/``, one connection per buyer, no requests) until ``go``
  (the queue page then lets them in) or the panel says sold out; a refused or dropped stream
  polls instead. Let in, the buyer opens the seat map, asks for the best N seats (1-4) and, with
  fewer if N are not there any more, checks out and pays. Some leave: 5% close the page before
  their turn (the grace period drops them), 10% of those let in leave without buying, everybody
  leaves when the page says sold out.
- ``poll``: the same with the polling page (the fallback without a stream; gthread WSGI workers,
  as the runs before): the buyer polls the queue's panel at the delay each answer names.
- ``rush``: no waiting room. Buyers who came early wait on the seat map and all ask at the
  on-sale (within a second: reaction time), later ones ask when they arrive; the same wishes, the
  same leavers.

``--nodes N`` starts N web nodes (a gunicorn each) and keeps each buyer on one of them;
``--waiting-room-nice N`` gives the waiting room's pages and streams a node of their own at that
CPU priority, routed by path as deploy/Caddyfile routes them (a buyer whose turn came, ``?turn=1``,
goes to the sale's node).

Every buyer is a real HTTP client with its own cookies and address (X-Forwarded-For; one trusted
proxy), over a pool of keep-alive connections per client process (as a reverse proxy in front of
the app would hold them), so the app sees ~250 connections, not 5,000 (plus, in the push run,
one stream per waiting page).
The client is a small HTTP/1.1 implementation on asyncio streams: it shares the two cores with
the server it measures. Reported: seats sold
twice (booking/upkeep/invariants.py and the orders' lines), HTTP 5xx, admitted order against queue order
(the admission log in Redis: every admitted buyer's queue score, in admission order), time to
sell out, how soon every waiting page said sold out, hold latency (p50/p99) during the rush, what
each buyer ended with. A run ends by itself ``STOP_AFTER_SOLD_OUT`` after no seat is left that a
buyer could take (buyers still there then are counted as such). The results go to
bench/results/onsale.md (and .json), each run's table also to bench/results/onsale-runs/;
docs/performance.md explains them.
"""

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import re
import subprocess
import sys
import time
import urllib.parse
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from queue import Empty

from .stack import WORKERS

TURN_QUERY = "turn=1"  # on the queue page's URL of a buyer whose turn came (booking/presale/queue_push.py)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

RESULTS = Path(__file__).resolve().parent / "results"
ARRIVAL_SECONDS = 60.0
ON_SALE_AFTER = 30.0
PROCESSES = 2
# Browsers have connections of their own; the simulated ones share a pool per process, and a request
# waits for a free connection there (recorded: ``Timing.waited``). With 128 or 1,024 each, a
# 20,000-buyer rush's holds waited seconds behind the arrivals' queue pages (answered slowly then,
# by the waiting room's few threads) for a connection a real browser would have had. 4,096 each
# keeps that wait at zero within the processes' 20,000 open files (the pushed pages' streams too).
CONNECTIONS_PER_PROCESS = 4096
WANTS = [(1, 0.10), (2, 0.50), (3, 0.15), (4, 0.25)]  # seats per buyer, and how many want so many
QUEUE_QUITTERS = 0.05  # stop polling before their turn
ADMITTED_LEAVERS = 0.10  # let in (or, without a queue, at the map), leave without buying
MINE = b"held by you"
TOLD_GOAL_SECONDS = 10  # the goal: every waiting page told sold out within this (pushed)
SOLD_OUT_TEXT = b"wr-sold_out"  # the waiting room's panel in its sold-out state (templates/booking/queue.html)
STOP_AFTER_SOLD_OUT = 120.0  # the run ends at most this long after no seat is left that a buyer could take
NEXT_POLL_RE = re.compile(rb'data-next-poll="([\d.]+)"')

# The stack's settings for the simulation (read by the web processes at start).
SIM_ENV = {
    "BOOKING_QUEUE_POLL_SECONDS": "2",
    "BOOKING_QUEUE_POLL_MAX_SECONDS": "15",
    "BOOKING_QUEUE_GRACE_SECONDS": "30",
    "BOOKING_QUEUE_ADMISSION_SECONDS": "300",
}


@dataclass
class Size:
    buyers: int = 5000
    arrival_seconds: float = ARRIVAL_SECONDS
    on_sale_after: float = ON_SALE_AFTER
    rate: int = 300  # buyers per minute let in
    web_nodes: int = 1  # web nodes (a gunicorn each); the buyers are spread over them as a balancer would
    waiting_room_nice: int | None = None  # the waiting room on a node of its own at this CPU priority


@dataclass
class Plan:
    """One buyer's script, the same in both runs."""

    arrive: float
    want: int
    quits_queue_at: float | None  # seconds after arrival; None: stays
    leaves_at_map: bool


@dataclass
class Outcome:
    index: int
    result: str = ""  # bought | left-queue | left-sold-out | left-at-map | no-seats | error
    seats: int = 0
    arrived: float = 0.0
    admitted_at: float | None = None
    polls: int = 0
    events: int = 0  # pushed waiting-room events read (push variant)
    early: bool = False
    told_sold_out_at: float | None = None  # when the buyer's page said sold out
    told_by: str = ""  # what said it: "stream" (pushed), "page" (the queue page or a poll)
    fell_back: bool = False  # the stream was refused or dropped: the page polled instead
    error: str = ""


@dataclass
class Timing:
    label: str
    at: float  # seconds after the first arrival when the request was sent
    seconds: float
    status: int
    server_us: int = 0  # time inside Django (bench/wsgi.py's X-Server-Time-Us)
    waited: float = 0.0  # of ``seconds``: waiting for a free connection of the simulation's pool


@dataclass
class RunResult:
    variant: str
    outcomes: list = field(default_factory=list)
    timings: list = field(default_factory=list)
    statuses: dict = field(default_factory=dict)
    transport_errors: int = 0
    all_taken_after: float | None = None  # seconds after the on-sale: no seat free (held or sold)
    nothing_takeable_after: float | None = None  # seconds after the on-sale: no seat left any wish fits (lately)
    first_nothing_takeable_after: float | None = None  # the first time so (seats may come back after it)
    stopped_after: float | None = None  # seconds after the on-sale: the run was ended (buyers still waiting)
    web_commands: dict = field(default_factory=dict)  # MongoDB commands of the web workers (push variant)
    peak_viewers: int = 0  # waiting-room streams open at once (push variant)
    peak_viewers_per_worker: dict = field(default_factory=dict)  # pid: the most open at once in it
    worker_peak_rss_mb: dict = field(default_factory=dict)  # pid: the most memory in use in it
    sold_out_after: float | None = None  # seconds after the on-sale: every seat sold
    sold: int = 0
    seats_total: int = 0
    orders: int = 0
    breaches: list = field(default_factory=list)
    seats_in_two_orders: int = 0
    admission: dict = field(default_factory=dict)
    cpu: dict = field(default_factory=dict)
    wall_seconds: float = 0.0
    load_before: tuple = ()
    load_after: tuple = ()


def plans(size: Size, seed: int = 19) -> list[Plan]:
    rng = random.Random(seed)
    counts, weights = zip(*WANTS, strict=True)
    out = []
    for _ in range(size.buyers):
        arrive = rng.uniform(0, size.arrival_seconds)
        quits = rng.uniform(5, 60) if rng.random() < QUEUE_QUITTERS else None
        out.append(Plan(arrive, rng.choices(counts, weights)[0], quits, rng.random() < ADMITTED_LEAVERS))
    return out


# --- HTTP: a small keep-alive client on asyncio streams (httpx costs several times the CPU per
# request, and the client shares the two cores with the server it measures) ---


class TransportError(Exception):
    pass


class Headers:
    def __init__(self, pairs):
        self.pairs = pairs

    def get(self, name: str, default=None):
        return next((v for k, v in self.pairs if k == name), default)

    def get_list(self, name: str) -> list:
        return [v for k, v in self.pairs if k == name]

    def __getitem__(self, name):
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value


@dataclass
class Response:
    status_code: int
    headers: Headers
    content: bytes
    waited: float = 0.0  # seconds the request waited for a free connection of the pool


async def _read_response(reader) -> tuple[Response, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    pairs = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            pairs.append((name.strip().lower(), value.strip()))
    headers = Headers(pairs)
    keep = (headers.get("connection") or "").lower() != "close"
    if (headers.get("transfer-encoding") or "").lower() == "chunked":
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(chunks)
    elif headers.get("content-length") is not None:
        body = await reader.readexactly(int(headers.get("content-length")))
    elif status in (204, 304) or status < 200:
        body = b""
    else:
        body, keep = await reader.read(), False
    return Response(status, headers, body), keep


class Pool:
    """Keep-alive connections to one server, at most ``size`` at once (the rest wait their turn).
    A connection idle longer than ``IDLE_SECONDS`` is closed rather than reused (gunicorn closes
    idle ones after its keep-alive of 30 s); one that fails anyway is retried once on a new one."""

    IDLE_SECONDS = 20.0

    def __init__(self, base_url: str, size: int):
        parsed = urllib.parse.urlsplit(base_url)
        self.host, self.port = parsed.hostname, parsed.port
        self.idle: list = []  # (reader, writer, last used)
        self.slots = asyncio.Semaphore(size)

    def _kept(self):
        while self.idle:
            reader, writer, used = self.idle.pop()
            if time.monotonic() - used < self.IDLE_SECONDS:
                return reader, writer
            writer.close()
        return None

    async def request(self, method: str, path: str, data=None, headers=None) -> Response:
        body = urllib.parse.urlencode(data).encode() if data is not None else b""
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if data is not None:
            head += ["Content-Type: application/x-www-form-urlencoded", f"Content-Length: {len(body)}"]
        raw = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        asked = time.monotonic()
        async with self.slots:
            waited = time.monotonic() - asked
            for attempt in range(2):
                conn = self._kept() if attempt == 0 else None
                fresh = conn is None
                try:
                    if fresh:
                        conn = await asyncio.open_connection(self.host, self.port, limit=1 << 20)
                    reader, writer = conn
                    writer.write(raw)
                    await writer.drain()
                    response, keep = await asyncio.wait_for(_read_response(reader), 120)
                except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError) as exc:
                    if conn is not None:
                        conn[1].close()
                    if fresh:  # a kept connection the server had closed is tried once more, anew
                        raise TransportError(f"{type(exc).__name__}: {exc}") from exc
                    continue
                if keep:
                    self.idle.append((reader, writer, time.monotonic()))
                else:
                    writer.close()
                response.waited = waited
                return response
        raise TransportError("no connection")


# --- one simulated browser ---


class Browser:
    def __init__(
        self,
        client: Pool,
        index: int,
        t0: float,
        timings: list,
        statuses: dict,
        stripe_url: str,
        waiting_room: Pool | None = None,
    ):
        self.client, self.t0, self.timings, self.statuses = client, t0, timings, statuses
        self.waiting_room = waiting_room  # the waiting room's own node, if it has one
        self.stripe_url = stripe_url
        self.cookies: dict[str, str] = {}
        self.address = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255 or 1}"

    async def request(self, label: str, method: str, path: str, data=None, htmx=False):
        headers = {"X-Forwarded-For": self.address, "Accept": "text/html"}
        if htmx:
            headers["HX-Request"] = "true"
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if data is not None and "csrftoken" in self.cookies:
            headers["X-CSRFToken"] = self.cookies["csrftoken"]
        sent = time.monotonic()
        response = await self.pool_for(path).request(method, path, data, headers)
        took = time.monotonic() - sent
        server_us = int(response.headers.get("x-server-time-us") or 0)
        self.timings.append(Timing(label, sent - self.t0, took, response.status_code, server_us, response.waited))
        self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1
        for value in response.headers.get_list("set-cookie"):
            name, _, rest = value.partition("=")
            morsel = rest.split(";", 1)[0]
            if "max-age=0" in value.lower() or "expires=thu, 01 jan 1970" in value.lower():
                self.cookies.pop(name.strip(), None)
            else:
                self.cookies[name.strip()] = morsel
        return response

    def pool_for(self, path: str) -> Pool:
        """As the proxy in front routes: the waiting room's pages and streams to its node, but for a
        buyer whose turn came (``?turn=1``), who is a buyer of the sale from then on."""
        if self.waiting_room is not None and path.startswith("/queue/") and TURN_QUERY not in path:
            return self.waiting_room
        return self.client

    async def stream(self, path: str, out: Outcome, quits_at: float | None, after_ticket: bool = False) -> str:
        """Listen to the waiting room's event stream on a connection of its own until it says
        ``go`` or ``ticket``, or sold out ("left-sold-out"), or the buyer gives up ("left-queue");
        "no-stream" when it was refused (204) or dropped."""
        headers = {"X-Forwarded-For": self.address, "Accept": "text/event-stream"}
        headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        pool = self.pool_for(path)
        head = [f"GET {path} HTTP/1.1", f"Host: {pool.host}:{pool.port}"]
        raw = ("\r\n".join(head + [f"{k}: {v}" for k, v in headers.items()]) + "\r\n\r\n").encode("latin-1")
        writer = None
        sent = time.monotonic()
        try:
            reader, writer = await asyncio.open_connection(pool.host, pool.port, limit=1 << 20)
            writer.write(raw)
            await writer.drain()
            response_head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 120)
            status = int(response_head.split(b" ", 2)[1])
            server_us = int((re.search(rb"x-server-time-us: (\d+)", response_head, re.I) or [b"", b"0"])[1])
            self.timings.append(Timing("stream", sent - self.t0, time.monotonic() - sent, status, server_us))
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status != 200:
                return "no-stream"
            events = _events(reader)
            while True:
                timeout = None if quits_at is None else quits_at - time.monotonic()
                if timeout is not None and timeout <= 0:
                    return "left-queue"  # closes the page; the grace period drops them
                try:
                    name, data = await asyncio.wait_for(anext(events), timeout)
                except TimeoutError:
                    return "left-queue"
                except StopAsyncIteration:
                    return "no-stream"
                out.events += 1
                if name == b"go":
                    return "go"
                if name == b"ticket":
                    return "ticket"
                if name == b"status" and SOLD_OUT_TEXT in data:
                    out.told_sold_out_at, out.told_by = time.monotonic() - self.t0, "stream"
                    return "left-sold-out"
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            return "no-stream"
        finally:
            if writer is not None:
                writer.close()


async def _hold_and_buy(b: Browser, sid: str, plan: Plan, out: Outcome) -> None:
    page = await b.request("map", "GET", f"/sessions/{sid}/")
    if page.status_code != 200:
        out.result, out.error = "error", f"map {page.status_code}"
        return
    if plan.leaves_at_map:
        out.result = "left-at-map"
        return
    want = plan.want
    while want >= 1:
        answer = await b.request("hold", "POST", f"/sessions/{sid}/best", {"count": str(want)}, htmx=True)
        if answer.status_code == 200 and MINE in answer.content:
            break
        if answer.status_code >= 500 or answer.status_code in (403, 429):
            out.result, out.error = "error", f"hold {answer.status_code}"
            return
        want -= 1  # not so many together any more: fewer
    if want < 1:
        out.result = "no-seats"
        return
    answer = await b.request(
        "checkout", "POST", "/checkout/", {"name": f"Buyer {out.index}", "email": f"b{out.index}@example.org"}
    )
    location = answer.headers.get("location", "")
    if answer.status_code != 302 or "/orders/" not in location:
        out.result, out.error = "error", f"checkout {answer.status_code}"
        return
    # Since payments checkout leaves the order to pay: the buyer pays by card as the
    # page does, a card token at (local)stripe (the browser's Stripe.js), then /orders/<ref>/pay.
    from .flows import card_token

    card, _seconds = await asyncio.to_thread(card_token, b.stripe_url)
    paid = await b.request(
        "pay", "POST", urllib.parse.urlsplit(location).path.rstrip("/") + "/pay", {"payment_method": card}
    )
    if paid.status_code == 200 and b'"status": "paid"' in paid.content:
        out.result, out.seats = "bought", want
    else:
        out.result, out.error = "error", f"pay {paid.status_code}"


async def _join_queue(b: Browser, sid: str, out: Outcome):
    """The seat map sends the buyer to the queue; the queue page gives them their place.
    (queue path, the queue page's answer), or None after an error (noted in ``out``)."""
    first = await b.request("map", "GET", f"/sessions/{sid}/")
    if first.status_code != 302 or "/queue/" not in first.headers.get("location", ""):
        out.result, out.error = "error", f"expected the queue, got {first.status_code}"
        return None
    queue = first.headers["location"]
    return queue, await b.request("queue-page", "GET", queue)


def _let_in(answer) -> bool:
    redirected = answer.status_code == 302 and "/sessions/" in answer.headers.get("location", "")
    return bool(answer.headers.get("hx-redirect")) or redirected


async def _poll_until_turn(b: Browser, queue: str, plan: Plan, out: Outcome, answer) -> bool:
    """Poll the queue's panel at the pace each answer names (htmx's way) until the buyer is let in
    (True) or leaves (False, ``out`` says why)."""
    status_path = queue + "status"
    while True:
        out.polls += 1
        if answer.status_code >= 500:
            out.result, out.error = "error", f"queue {answer.status_code}"
            return False
        if _let_in(answer):
            out.admitted_at = time.monotonic() - b.t0
            return True
        if SOLD_OUT_TEXT in answer.content:
            out.result, out.told_sold_out_at, out.told_by = "left-sold-out", time.monotonic() - b.t0, "page"
            return False
        delay = float((NEXT_POLL_RE.search(answer.content) or [b"", b"3"])[1])
        now = time.monotonic() - b.t0
        if plan.quits_queue_at is not None and now + delay > plan.arrive + plan.quits_queue_at:
            out.result = "left-queue"  # closes the page: stops polling, the grace period drops them
            return False
        await asyncio.sleep(delay)
        answer = await b.request("poll", "GET", status_path, htmx=True)


async def queue_buyer(b: Browser, sid: str, plan: Plan, out: Outcome) -> None:
    """The polling page (the fallback when a page gets no stream)."""
    joined = await _join_queue(b, sid, out)
    if joined is None:
        return
    queue, answer = joined
    if await _poll_until_turn(b, queue, plan, out, answer):
        await _hold_and_buy(b, sid, plan, out)


async def _events(reader):
    """The events of an SSE answer, as (name, data bytes), read chunk by chunk (the server writes
    whole events per chunk of the chunked answer)."""
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            return
        chunk = await reader.readexactly(size)
        await reader.readexactly(2)
        for raw in chunk.split(b"\n\n"):
            name = data = b""
            for line in raw.split(b"\n"):
                if line.startswith(b"event: "):
                    name = line[7:]
                elif line.startswith(b"data: "):
                    data = line[6:]
            if name:
                yield name, data


async def push_buyer(b: Browser, sid: str, plan: Plan, out: Outcome) -> None:
    """The waiting page as a browser with EventSource has it: the queue page once, then the place
    pushed over ``/queue/<id>/live/`` (one connection of its own, no requests) until ``go`` (the
    queue page then lets the buyer in) or sold out; a refused or dropped stream polls instead."""
    joined = await _join_queue(b, sid, out)
    if joined is None:
        return
    queue, answer = joined
    if _let_in(answer) or answer.status_code >= 500 or SOLD_OUT_TEXT in answer.content:
        if await _poll_until_turn(b, queue, plan, out, answer):
            await _hold_and_buy(b, sid, plan, out)
        return
    quits = None if plan.quits_queue_at is None else b.t0 + plan.arrive + plan.quits_queue_at
    outcome = await b.stream(queue + "live/", out, quits)
    if outcome == "go":
        answer = await b.request("queue-page", "GET", queue)  # issues the admission cookie
    elif outcome == "ticket":
        answer = await b.request("poll", "GET", queue + "status", htmx=True)
    elif outcome in ("left-queue", "left-sold-out"):
        out.result = outcome
        return
    else:  # no stream: the page polls
        out.fell_back = True
        answer = await b.request("poll", "GET", queue + "status", htmx=True)
    if outcome == "ticket" and not _let_in(answer) and SOLD_OUT_TEXT not in answer.content:
        return await push_buyer_stream_again(b, sid, plan, out, queue)
    if await _poll_until_turn(b, queue, plan, out, answer):
        await _hold_and_buy(b, sid, plan, out)


async def push_buyer_stream_again(b: Browser, sid: str, plan: Plan, out: Outcome, queue: str) -> None:
    """After the poll that wrote the ticket cookie, the page listens again."""
    quits = None if plan.quits_queue_at is None else b.t0 + plan.arrive + plan.quits_queue_at
    outcome = await b.stream(queue + "live/", out, quits, after_ticket=True)
    if outcome in ("left-queue", "left-sold-out"):
        out.result = outcome
        return
    if outcome == "go":
        answer = await b.request("queue-page", "GET", queue)
    else:
        out.fell_back = outcome != "ticket"
        answer = await b.request("poll", "GET", queue + "status", htmx=True)
    if await _poll_until_turn(b, queue, plan, out, answer):
        await _hold_and_buy(b, sid, plan, out)


async def rush_buyer(b: Browser, sid: str, plan: Plan, out: Outcome, on_sale_at: float, rng: random.Random) -> None:
    if plan.quits_queue_at is not None and plan.arrive + plan.quits_queue_at < on_sale_at:
        out.result = "left-queue"  # gave up waiting for the sale
        return
    now = time.monotonic() - b.t0
    if now < on_sale_at:  # early: on the seat map, clicking the moment the sale opens
        await b.request("map", "GET", f"/sessions/{sid}/")
        await asyncio.sleep(on_sale_at - (time.monotonic() - b.t0) + rng.uniform(0, 1.0))
    await _hold_and_buy(b, sid, plan, out)


async def _buyers(
    node_urls: list[str],
    waiting_room_url: str | None,
    stripe_url: str,
    sid: str,
    variant: str,
    plans_here,
    t0: float,
    size: Size,
    seed: int,
    stop,
):
    timings: list = []
    statuses: dict = {}
    outcomes = []
    transport_errors = 0
    rng = random.Random(seed)
    pools = [Pool(url, CONNECTIONS_PER_PROCESS) for url in node_urls]
    waiting_room = Pool(waiting_room_url, CONNECTIONS_PER_PROCESS) if waiting_room_url else None

    async def one(index, plan):
        nonlocal transport_errors
        await asyncio.sleep(max(0.0, t0 + plan.arrive - time.monotonic()))
        out = Outcome(index=index, arrived=plan.arrive, early=plan.arrive < size.on_sale_after)
        # each buyer stays on one node, as a balancer's sticky sessions or one keep-alive connection would
        b = Browser(pools[index % len(pools)], index, t0, timings, statuses, stripe_url, waiting_room)
        outcomes.append(out)
        try:
            if variant == "push":
                await push_buyer(b, sid, plan, out)
            elif variant == "poll":
                await queue_buyer(b, sid, plan, out)
            else:
                await rush_buyer(b, sid, plan, out, size.on_sale_after, rng)
        except TransportError as exc:
            transport_errors += 1
            out.result, out.error = "error", str(exc)
        except asyncio.CancelledError:
            out.result = out.result or "still-there-at-the-end"  # the run was ended (STOP_AFTER_SOLD_OUT)

    everyone = [asyncio.ensure_future(one(i, p)) for i, p in plans_here]
    while not all(task.done() for task in everyone):
        await asyncio.wait(everyone, timeout=0.5)
        if stop.is_set():  # the hall has had nothing to take for STOP_AFTER_SOLD_OUT: end the run
            for task in everyone:
                task.cancel()
            await asyncio.gather(*everyone, return_exceptions=True)
    for pool in [*pools, *([waiting_room] if waiting_room else [])]:
        for _reader, writer, _used in pool.idle:
            writer.close()
    return outcomes, timings, statuses, transport_errors


def _process(node_urls, waiting_room_url, stripe_url, sid, variant, plans_here, t0_wall, size, seed, queue, stop):
    t0 = time.monotonic() + (t0_wall - time.time())
    result = asyncio.run(
        _buyers(node_urls, waiting_room_url, stripe_url, sid, variant, plans_here, t0, size, seed, stop)
    )
    queue.put(result)


# --- one run ---


def seed_hall():
    from booking.core import clock
    from booking.sales.demo import GRAND_CATEGORIES, grand_hall_grid
    from booking.sales.sessions import create_session
    from booking.venues.layouts import parse_grid
    from booking.venues.theaters import create_theater

    grand = create_theater("Grand Hall", parse_grid(grand_hall_grid(), GRAND_CATEGORIES))
    start = clock.now() + timedelta(days=7)
    return create_session(
        grand["_id"],
        published=True,
        name="The Big Premiere",
        description="The on-sale simulation.",
        start=start,
        end=start + timedelta(hours=2),
        prices={"p": 5500, "s": 3900, "b": 2500},
    )


def run_variant(variant: str, size: Size, log) -> RunResult:
    from .stack import Stack

    saved = dict(os.environ)
    os.environ.update(SIM_ENV)
    try:
        return _run_variant(variant, size, log, Stack, RunResult(variant))
    finally:  # use_in_this_process() exported this stack's URIs: the next Stack must start its own
        os.environ.clear()
        os.environ.update(saved)


def _run_variant(variant: str, size: Size, log, Stack, result: RunResult) -> RunResult:
    from booking.core import mongo
    from booking.core.domain import OrderState
    from booking.sales import hold_facts, waiting_room
    from booking.upkeep.invariants import check_invariants
    from booking.venues.seat_grid import FREE, SOLD, takeable_seats

    from .cpu import CpuMeter

    waiting_room_nice = size.waiting_room_nice if variant == "push" else None
    with Stack(asgi=variant == "push", web_nodes=size.web_nodes, waiting_room_nice=waiting_room_nice) as stack:
        stack.use_in_this_process()
        mongo.ensure_indexes()
        session = seed_hall()
        sid = session["_id"]
        result.seats_total = session["seatsTotal"]
        t0_wall = time.time() + 3.0
        on_sale_wall = t0_wall + size.on_sale_after
        from datetime import UTC, datetime

        if variant in ("push", "poll"):
            from django.conf import settings

            settings.REDIS_URL = stack.redis_url
            waiting_room.enable(
                sid,
                opens_at=datetime.fromtimestamp(t0_wall - 60, UTC),
                on_sale_at=datetime.fromtimestamp(on_sale_wall, UTC),
                rate=size.rate,
            )
        everyone = list(enumerate(plans(size)))
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        stop = ctx.Event()
        procs = [
            ctx.Process(
                target=_process,
                args=(
                    stack.node_urls,
                    stack.waiting_room_url,
                    stack.stripe_url,
                    str(sid),
                    variant,
                    everyone[p::PROCESSES],
                    t0_wall,
                    size,
                    p,
                    queue,
                    stop,
                ),
            )
            for p in range(PROCESSES)
        ]
        meter = CpuMeter(
            {
                "web": stack.web_pids(),
                "waiting room node": stack.waiting_room_pids(),
                "db": stack._pids("devmongo"),
                "redis": stack._pids("redis"),
            }
        )
        log(f"{variant}: {size.buyers} buyers over {size.arrival_seconds:.0f} s, sale at +{size.on_sale_after:.0f} s")
        result.load_before = os.getloadavg()
        with meter:
            for p in procs:
                p.start()
            pending = len(procs)
            last_report = 0.0
            layout = hold_facts.session_layout(sid, session.get("layoutRev", 0))
            workers: dict = {}  # pid -> the push variant's worker state (bench/onsale_asgi.py)
            while pending:
                try:
                    outcomes, timings, statuses, transport_errors = queue.get(timeout=0.25)
                except Empty:
                    outcomes = None  # nobody finished yet: look at the hall meanwhile
                if outcomes is not None:
                    pending -= 1
                    result.outcomes += outcomes
                    result.timings += timings
                    for code, n in statuses.items():
                        result.statuses[code] = result.statuses.get(code, 0) + n
                    result.transport_errors += transport_errors
                doc = mongo.sessions().find_one({"_id": sid}, {"seats": 1, "seatsAvailable": 1})
                since_sale = time.time() - on_sale_wall
                if result.all_taken_after is None and doc["seatsAvailable"] == 0:
                    result.all_taken_after = since_sale
                sold = sum(row.count(SOLD) for row in doc["seats"])
                if result.sold_out_after is None and sold == result.seats_total:
                    result.sold_out_after = since_sale
                if since_sale > 0 and takeable_seats(layout, doc["seats"]) == 0:
                    if result.nothing_takeable_after is None:
                        result.nothing_takeable_after = since_sale
                        if result.first_nothing_takeable_after is None:
                            result.first_nothing_takeable_after = since_sale
                    elif since_sale - result.nothing_takeable_after > STOP_AFTER_SOLD_OUT and not stop.is_set():
                        result.stopped_after = since_sale
                        log(f"  nothing left to take for {STOP_AFTER_SOLD_OUT:.0f} s: the run ends")
                        stop.set()
                else:
                    result.nothing_takeable_after = None  # seats came back
                if time.time() - last_report > 10:
                    last_report = time.time()
                    free = sum(row.count(FREE) for row in doc["seats"])
                    if variant == "push":
                        worker_states(stack.all_node_urls(), workers)
                        result.peak_viewers = max(
                            result.peak_viewers, sum(w["queue_viewers"] for w in workers.values())
                        )
                        for pid, state in workers.items():
                            most = result.peak_viewers_per_worker.get(pid, 0)
                            result.peak_viewers_per_worker[pid] = max(most, state["queue_viewers"])
                    log(f"  +{time.time() - t0_wall:5.0f} s: {sold} sold, {free} free")
            for p in procs:
                p.join()
        result.load_after = os.getloadavg()
        if variant == "push":
            worker_states(stack.all_node_urls(), workers)
            result.worker_peak_rss_mb = {pid: state["peak_rss_mb"] for pid, state in workers.items()}
            for state in workers.values():
                for name, n in state["commands"].items():
                    result.web_commands[name] = result.web_commands.get(name, 0) + n
        result.cpu = {name: cpu for name, cpu in meter.cpu.items()}
        result.cpu["machine"] = meter.machine
        result.wall_seconds = meter.seconds
        doc = mongo.sessions().find_one({"_id": sid}, {"seats": 1})
        result.sold = sum(row.count(SOLD) for row in doc["seats"])
        result.orders = mongo.orders().count_documents(
            {"state": OrderState.PAID}, hint="_id_"
        )  # every order, on purpose
        per_seat: dict = {}
        for order in mongo.orders().find({"state": OrderState.PAID}, {"lines": 1}).hint("_id_"):
            for line in order["lines"]:
                per_seat[line["key"]] = per_seat.get(line["key"], 0) + 1
        result.seats_in_two_orders = sum(1 for n in per_seat.values() if n > 1)
        result.breaches = check_invariants()
        if variant in ("push", "poll"):
            result.admission = admission_check(sid, result, size)
    return result


def worker_states(node_urls: list[str], workers: dict, asks: int = 8) -> None:
    """Each ASGI worker's MongoDB commands and open waiting-room streams (bench/onsale_asgi.py):
    a few asks per node, which its workers share between them; the newest answer of each is kept."""
    import urllib.request

    for base_url in node_urls:
        for _ in range(asks):
            try:
                with urllib.request.urlopen(f"{base_url}/__bench/onsale", timeout=10) as answer:  # noqa: S310 - loopback
                    state = json.loads(answer.read())
            except OSError:
                continue
            workers[state["pid"]] = state


def admission_check(queue_id, result: RunResult, size: Size) -> dict:
    """The admission log against the queue's order: scores must rise strictly (admitted in queue
    order), every early buyer (random score < 1) before every late one."""
    from booking.sales import waiting_room

    log_entries = waiting_room.admission_log(queue_id)
    scores = [float(score) for _owner, score in log_entries]
    rising = all(a < b for a, b in zip(scores, scores[1:], strict=False))
    early = [s < 1 for s in scores]
    early_first = early == sorted(early, reverse=True)
    stats = waiting_room.stats(waiting_room.get_config(queue_id, fresh=True))
    admitted_seen = sum(1 for o in result.outcomes if o.admitted_at is not None)
    times = sorted(o.admitted_at for o in result.outcomes if o.admitted_at is not None)
    span = (times[-1] - times[0]) if len(times) > 1 else 0
    return {
        "admitted": len(log_entries),
        "admitted_seen_by_buyers": admitted_seen,
        "order_rising": rising,
        "early_before_late": early_first,
        "out_of_order": sum(1 for a, b in zip(scores, scores[1:], strict=False) if a >= b),
        "early_admitted": sum(early),
        "left_by_grace": stats.left,
        "joined": stats.joined,
        "first_admitted_after_sale": (times[0] - size.on_sale_after) if times else None,
        "measured_rate_per_min": (len(times) - 1) / span * 60 if span else None,
    }


# --- report ---


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def summary(run: RunResult, size: Size) -> dict:
    counts: dict = {}
    for o in run.outcomes:
        counts[o.result] = counts.get(o.result, 0) + 1
    end = size.on_sale_after + (run.all_taken_after if run.all_taken_after is not None else 1e9)
    rush_holds = [t.seconds * 1000 for t in run.timings if t.label == "hold" and t.at <= end]
    rush_holds_server = [t.server_us / 1000 for t in run.timings if t.label == "hold" and t.at <= end]
    rush_holds_waited = [t.waited * 1000 for t in run.timings if t.label == "hold" and t.at <= end]
    waited = [t.waited * 1000 for t in run.timings]
    polls_server = [t.server_us / 1000 for t in run.timings if t.label in ("poll", "queue-page")]
    all_holds = [t.seconds * 1000 for t in run.timings if t.label == "hold"]
    polls = [t.seconds * 1000 for t in run.timings if t.label in ("poll", "queue-page")]
    # The goal is the seat map of a buyer let in (200); an arrival's first look at the map during
    # the sale is a 302 to the queue, reported apart.
    after_sale = [t for t in run.timings if t.label == "map" and t.at >= size.on_sale_after]
    maps = [t.seconds * 1000 for t in after_sale if t.status == 200]
    sent_to_queue = [t.seconds * 1000 for t in after_sale if t.status == 302]
    checkouts = [t.seconds * 1000 for t in run.timings if t.label == "checkout"]
    payments = [t.seconds * 1000 for t in run.timings if t.label == "pay"]
    five = sum(n for code, n in run.statuses.items() if int(code) >= 500)
    # How long after the hall had nothing left to take each waiting buyer's page said so; for a
    # buyer who arrived after that, how long after arriving (the queue page says it at once).
    told = []
    told_late_by: dict[str, int] = {}
    if run.first_nothing_takeable_after is not None:
        gone = size.on_sale_after + run.first_nothing_takeable_after
        for o in run.outcomes:
            if o.told_sold_out_at is not None:
                told.append(o.told_sold_out_at - max(gone, o.arrived))
                if told[-1] > TOLD_GOAL_SECONDS:
                    told_late_by[o.told_by] = told_late_by.get(o.told_by, 0) + 1
    return {
        "variant": run.variant,
        "buyers": len(run.outcomes),
        "outcomes": counts,
        "requests": sum(run.statuses.values()),
        "statuses": {str(k): v for k, v in sorted(run.statuses.items())},
        "http_5xx": five,
        "transport_errors": run.transport_errors,
        "seats_total": run.seats_total,
        "sold": run.sold,
        "orders": run.orders,
        "seats_sold_twice": run.seats_in_two_orders,
        "invariant_breaches": len(run.breaches),
        "breach_examples": run.breaches[:5],
        "all_taken_after_s": run.all_taken_after,
        "sold_out_after_s": run.sold_out_after,
        "holds_during_rush": len(rush_holds),
        "hold_p50_ms": percentile(rush_holds, 50),
        "hold_p99_ms": percentile(rush_holds, 99),
        "hold_max_ms": max(rush_holds) if rush_holds else None,
        "hold_server_p50_ms": percentile(rush_holds_server, 50),
        "hold_server_p99_ms": percentile(rush_holds_server, 99),
        "hold_connection_wait_p99_ms": percentile(rush_holds_waited, 99),
        "connection_wait_p99_ms": percentile(waited, 99),
        "poll_server_p50_ms": percentile(polls_server, 50),
        "poll_server_p99_ms": percentile(polls_server, 99),
        "holds_all": len(all_holds),
        "polls": len(polls),
        "poll_p50_ms": percentile(polls, 50),
        "poll_p99_ms": percentile(polls, 99),
        "map_after_sale_p99_ms": percentile(maps, 99),
        "maps_after_sale": len(maps),
        "sent_to_queue_p99_ms": percentile(sent_to_queue, 99),
        "sent_to_queue": len(sent_to_queue),
        "checkout_p99_ms": percentile(checkouts, 99),
        "pay_p99_ms": percentile(payments, 99),
        "errors": [o.error for o in run.outcomes if o.result == "error"][:10],
        "admission": run.admission,
        "cpu_seconds": run.cpu,
        "wall_seconds": run.wall_seconds,
        "nothing_takeable_after_s": run.nothing_takeable_after,
        "first_nothing_takeable_after_s": run.first_nothing_takeable_after,
        "stopped_after_s": run.stopped_after,
        "told_sold_out": len(told),
        "told_sold_out_p50_s": percentile(told, 50),
        "told_sold_out_p99_s": percentile(told, 99),
        "told_sold_out_max_s": max(told) if told else None,
        "told_sold_out_after_goal": sum(1 for t in told if t > TOLD_GOAL_SECONDS),
        "told_sold_out_late_by": told_late_by,
        "pushed_events": sum(o.events for o in run.outcomes),
        "fell_back_to_polling": sum(1 for o in run.outcomes if o.fell_back),
        "peak_queue_streams": run.peak_viewers,
        "web_workers": [  # each worker's most streams open at once and most memory in use
            {"streams": run.peak_viewers_per_worker.get(pid, 0), "peak_rss_mb": rss}
            for pid, rss in sorted(run.worker_peak_rss_mb.items())
        ],
        "web_mongo_commands": run.web_commands,
        "load_before": [round(x, 2) for x in run.load_before],
        "load_after": [round(x, 2) for x in run.load_after],
    }


def fmt(value, unit="", digits=0):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}{unit}"


def current_commit() -> str:
    answer = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return answer.stdout.strip()


def write_report(summaries: list[dict], size: Size, out: Path, commit: str = "") -> Path:
    """``commit``: the code the runs started on (the checkout may move while they run)."""
    import platform

    out.mkdir(parents=True, exist_ok=True)
    (out / "onsale.json").write_text(json.dumps({"size": asdict(size), "runs": summaries}, indent=2, default=str))
    by = {s["variant"]: s for s in summaries}
    rows = [
        (f"buyers (arrived within {size.arrival_seconds:.0f} s; sale at +{size.on_sale_after:.0f} s)", "buyers", None),
        ("HTTP requests", "requests", None),
        ("HTTP 5xx", "http_5xx", None),
        ("transport errors", "transport_errors", None),
        ("seats sold / in the hall", None, lambda s: f"{s['sold']} / {s['seats_total']}"),
        ("paid orders", "orders", None),
        ("seats sold twice (order lines)", "seats_sold_twice", None),
        ("invariant breaches (booking/upkeep/invariants.py)", "invariant_breaches", None),
        ("every seat taken, after the sale opened", None, lambda s: fmt(s["all_taken_after_s"], " s", 1)),
        ("every seat sold, after the sale opened", None, lambda s: fmt(s["sold_out_after_s"], " s", 1)),
        (
            "nothing left any wish fits, after the sale opened: first / for good",
            None,
            lambda s: (
                fmt(s.get("first_nothing_takeable_after_s"), " s", 1)
                + " / "
                + fmt(s["nothing_takeable_after_s"], " s", 1)
            ),
        ),
        (
            "**waiting pages told sold out: count, p50 / p99 / max after it first was (or after arriving)**",
            None,
            lambda s: (
                f"**{s['told_sold_out']:,}: {fmt(s['told_sold_out_p50_s'], ' s', 1)} / "
                f"{fmt(s.get('told_sold_out_p99_s'), ' s', 1)} / {fmt(s['told_sold_out_max_s'], ' s', 1)}**"
                if s["told_sold_out"]
                else "–"
            ),
        ),
        (
            f"waiting pages told sold out later than {TOLD_GOAL_SECONDS} s",
            None,
            lambda s: (
                fmt(s.get("told_sold_out_after_goal"))
                + "".join(f", {n:,} by {way}" for way, n in sorted(s.get("told_sold_out_late_by", {}).items()))
            ),
        ),
        (
            "run ended by itself (buyers still there), after the sale opened",
            None,
            lambda s: fmt(s["stopped_after_s"], " s", 1),
        ),
        (
            "pushed queue: events read / streams open at once (peak) / pages that polled instead",
            None,
            lambda s: (
                f"{s['pushed_events']:,} / {s['peak_queue_streams']:,} / {s['fell_back_to_polling']:,}"
                if s["variant"] == "push"
                else "–"
            ),
        ),
        (
            "each web worker: most streams open at once / most memory in use (RSS)",
            None,
            lambda s: " · ".join(f"{w['streams']:,} / {w['peak_rss_mb']:,.0f} MB" for w in s["web_workers"]) or "–",
        ),
        ("hold requests until every seat was taken", "holds_during_rush", None),
        ("hold p50 during the rush", None, lambda s: fmt(s["hold_p50_ms"], " ms")),
        ("**hold p99 during the rush**", None, lambda s: "**" + fmt(s["hold_p99_ms"], " ms") + "**"),
        ("hold max during the rush", None, lambda s: fmt(s["hold_max_ms"], " ms")),
        (
            "hold time inside Django, p50 / p99",
            None,
            lambda s: fmt(s["hold_server_p50_ms"], " ms", 1) + " / " + fmt(s["hold_server_p99_ms"], " ms", 1),
        ),
        (
            "of which waiting for a free connection of the simulation's pool, p99: holds / every request",
            None,
            lambda s: (
                fmt(s.get("hold_connection_wait_p99_ms"), " ms") + " / " + fmt(s.get("connection_wait_p99_ms"), " ms")
            ),
        ),
        (
            "seat map page p99 after the sale opened (buyers let in: 200)",
            None,
            lambda s: fmt(s["map_after_sale_p99_ms"], " ms") + f" ({s.get('maps_after_sale', 0):,} pages)",
        ),
        (
            "an arrival's first look at the map during the sale, sent to the queue (302): p99",
            None,
            lambda s: fmt(s.get("sent_to_queue_p99_ms"), " ms") + f" ({s.get('sent_to_queue', 0):,} requests)",
        ),
        ("checkout p99", None, lambda s: fmt(s["checkout_p99_ms"], " ms")),
        ("card payment p99 (/orders/<ref>/pay, localstripe)", None, lambda s: fmt(s["pay_p99_ms"], " ms")),
        (
            "queue polls (p50 / p99)",
            None,
            lambda s: (
                f"{s['polls']:,} ({fmt(s['poll_p50_ms'], ' ms', 1)} / {fmt(s['poll_p99_ms'], ' ms')})"
                if s["polls"]
                else "–"
            ),
        ),
        (
            "queue poll inside Django, p50 / p99",
            None,
            lambda s: (
                fmt(s["poll_server_p50_ms"], " ms", 1) + " / " + fmt(s["poll_server_p99_ms"], " ms", 1)
                if s["polls"]
                else "–"
            ),
        ),
        (
            "CPU seconds: web / db / redis / whole machine",
            None,
            lambda s: " / ".join(fmt(s["cpu_seconds"].get(k), "", 0) for k in ("web", "db", "redis", "machine")),
        ),
        (
            "CPU seconds of the waiting room's own node (niced; not in web above)",
            None,
            lambda s: fmt(s["cpu_seconds"].get("waiting room node"), "", 0),
        ),
        ("seconds measured", None, lambda s: fmt(s["wall_seconds"], " s")),
        ("load average before / after (1 min)", None, lambda s: f"{s['load_before'][0]} / {s['load_after'][0]}"),
    ]
    variants = [v for v in ("push", "poll", "rush") if v in by]
    names = {
        "push": f"waiting room ({size.rate}/min), pushed (SSE, ASGI)",
        "poll": f"waiting room ({size.rate}/min), polling (WSGI)",
        "rush": "no queue (the rush, WSGI)",
    }
    head = "| | " + " | ".join(names[v] for v in variants) + " |"
    lines = [
        "# On-sale simulation",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M:%S %Z')} on {platform.processor() or platform.machine()} "
        f"({os.cpu_count()} CPUs, shared with other work), Python {platform.python_version()}. "
        f"Command: `python -m bench.onsale` (`make bench-onsale`). The stack: bench/stack.py (devmongo, "
        f"redis-server, {size.web_nodes} web node(s), each a gunicorn with {WORKERS} workers: gthread x 8 "
        f"threads, or uvicorn for the pushed run; DEBUG off"
        + (
            f"; the waiting room's pages and streams on a node of its own at nice {size.waiting_room_nice}"
            if size.waiting_room_nice is not None
            else ""
        )
        + "). "
        f"Buyers: real HTTP clients in "
        f"{PROCESSES} processes, {CONNECTIONS_PER_PROCESS} keep-alive connections each. How to read it: "
        f'docs/performance.md, section "On-sale simulation".',
        "",
        head,
        "| --- | " + " | ".join("---:" for _ in variants) + " |",
    ]
    for label, key, render in rows:
        cells = [render(by[v]) if render else fmt(by[v][key]) for v in variants]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "## What the buyers ended with", "", head, "| --- | " + " | ".join("---:" for _ in variants) + " |"]
    kinds = sorted({k for v in variants for k in by[v]["outcomes"]})
    for kind in kinds:
        lines.append(f"| {kind} | " + " | ".join(fmt(by[v]["outcomes"].get(kind, 0)) for v in variants) + " |")
    for variant in [v for v in ("push", "poll") if v in by]:
        a = by[variant]["admission"]
        lines += [
            "",
            f"## The queue's order ({names[variant]})",
            "",
            f"- admitted: {a['admitted']} (the buyers saw {a['admitted_seen_by_buyers']} admissions: those let in "
            f"after they had stopped polling did not come back for it)",
            f"- admitted in queue order (scores strictly rising in the admission log): **{a['order_rising']}** "
            f"({a['out_of_order']} out of order)",
            f"- every early buyer (random place) before every later one: **{a['early_before_late']}** "
            f"({a['early_admitted']} early buyers admitted)",
            f"- first admission {fmt(a['first_admitted_after_sale'], ' s', 2)} after the sale opened (as the buyer's "
            f"next poll saw it); measured rate {fmt(a['measured_rate_per_min'], '/min', 0)} (set: {size.rate}/min)",
            f"- dropped after the grace period (stopped polling): {a['left_by_grace']}; joined: {a['joined']}",
        ]
    errors = [e for v in variants for e in by[v]["errors"]]
    if errors:
        lines += ["", "## Errors (first few)", "", *[f"- `{e}`" for e in errors]]
    path = out / "onsale.md"
    path.write_text("\n".join(lines) + "\n")
    runs = out / "onsale-runs"  # every run's table kept: bench/results/onsale-runs/<when>-<commit>-<what>.md
    runs.mkdir(exist_ok=True)
    nodes = f"-{size.web_nodes}-nodes" if size.web_nodes > 1 else ""
    if size.waiting_room_nice is not None:
        nodes += f"-waiting-room-node-nice-{size.waiting_room_nice}"
    name = f"{time.strftime('%Y-%m-%d-%H%M')}-{commit or 'unknown'}-{'-'.join(variants)}-{size.buyers}{nodes}"
    (runs / f"{name}.md").write_text("\n".join(lines) + "\n")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.onsale", description=__doc__.split("\n")[0])
    parser.add_argument("--buyers", type=int, default=5000)
    parser.add_argument("--rate", type=int, default=300, help="buyers per minute let in")
    parser.add_argument("--arrival-seconds", type=float, default=ARRIVAL_SECONDS)
    parser.add_argument("--on-sale-after", type=float, default=ON_SALE_AFTER)
    parser.add_argument(
        "--variant",
        choices=["all", "push", "poll", "rush"],
        default="all",
        help="push: the waiting room over SSE (ASGI); poll: its polling fallback; rush: no waiting room",
    )
    parser.add_argument("--nodes", type=int, default=1, help="web nodes: a gunicorn each, the buyers spread over them")
    parser.add_argument(
        "--waiting-room-nice",
        type=int,
        default=None,
        help="the waiting room's pages and streams on a web node of their own, at this CPU priority (nice)",
    )
    parser.add_argument("--small", action="store_true", help="smoke size: 300 buyers over 10 s, sale at +5 s")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    import django

    django.setup()
    size = Size(args.buyers, args.arrival_seconds, args.on_sale_after, args.rate, args.nodes, args.waiting_room_nice)
    if args.small:
        size = Size(300, 10.0, 5.0, args.rate, args.nodes, args.waiting_room_nice)
    variants = ["push", "poll", "rush"] if args.variant == "all" else [args.variant]
    commit = current_commit()
    summaries = []
    for variant in variants:
        run = run_variant(variant, size, log=lambda m: print(m, flush=True))
        summaries.append(summary(run, size))
        print(json.dumps(summaries[-1], indent=1, default=str), flush=True)
    path = write_report(summaries, size, args.out, commit)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
