"""Lean clients for bench/push.py: one process per core, each holding its share of the SSE viewers
and pollers on uvloop (plain asyncio when uvloop is missing).

A viewer is an ``asyncio.Protocol`` on one connection: its ``data_received`` notes the wall-clock
time (``time.time()``, comparable between processes and with the server's trace) and the version of
every ``seats`` event in the bytes read, with a byte search, no JSON, no per-event coroutine. Chunk
size lines of the chunked answer sit between events (the server writes whole events per chunk), so
searching the raw bytes for the event's start is enough. A poller asks the map every ``every``
seconds with ``If-None-Match`` on a kept-alive connection and notes the ETag's version of each
answer. The previous client (httpx and ``json.loads`` per event, all viewers, pollers and the
writes in one process) was measured to be slower than the server (docs/performance.md).

``run(...)`` is a child process's main: it opens its connections, tells the parent how many said
hello, waits for "stop", closes them and sends back what it saw as packed arrays.
"""

import asyncio
import random
import time
from array import array
from multiprocessing.connection import Connection

SEATS = b'event: seats\ndata: {"v":'
HELLO = b"event: hello"


class Seen:
    """(version, wall time) of every event read by the viewers of one process."""

    def __init__(self):
        self.versions = array("q")
        self.times = array("d")
        self.reloads = 0
        self.hello = 0
        self.refused = 0
        self.closed = 0
        self.bytes = 0


class Viewer(asyncio.Protocol):
    def __init__(self, request: bytes, seen: Seen, hello: asyncio.Event):
        self.request = request
        self.seen = seen
        self.hello_event = hello
        self.tail = b""
        self.headers_done = False
        self.said_hello = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes):
        now = time.time()
        self.seen.bytes += len(data)
        buf = self.tail + data if self.tail else data
        if not self.headers_done:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self.tail = buf
                return
            if b" 200 " not in buf[: buf.find(b"\r\n")]:
                self.seen.refused += 1
                self.hello_event.set()
                self.transport.close()
                return
            self.headers_done = True
        if not self.said_hello and HELLO in buf:
            self.said_hello = True
            self.seen.hello += 1
            self.hello_event.set()
        position, size = 0, len(buf)
        while True:
            start = buf.find(SEATS, position)
            if start < 0:
                break
            digits = end = start + len(SEATS)
            while end < size and 48 <= buf[end] <= 57:
                end += 1
            if end == size:  # the number may go on in the next read
                position = start
                break
            if end > digits:
                self.seen.versions.append(int(buf[digits:end]))
                self.seen.times.append(now)
            else:
                self.seen.reloads += 1  # {"v":null,"reload":true}
            position = end
        keep = max(position, size - len(SEATS) - 20)
        self.tail = buf[keep:] if keep < size else b""

    def connection_lost(self, exc):
        self.seen.closed += 1
        self.hello_event.set()


async def poll(port: int, path: str, every: float, stop: asyncio.Event, out: dict):
    """One page polling the map with If-None-Match, on one kept-alive connection (opened again
    when the server closed it: uvicorn keeps an idle one for gunicorn's keep-alive, 2 s). Every
    version from the last one it had up to the one answered counts as seen at the answer."""
    await asyncio.sleep(random.uniform(0, every))  # pages opened at different times
    reader = writer = None
    etag, last = b"", None
    while not stop.is_set():
        started = time.monotonic()
        header = b"If-None-Match: " + etag + b"\r\n" if etag else b""
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode() + header + b"\r\n"
        for attempt in range(2):
            try:
                if writer is None or writer.is_closing():
                    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
                writer.write(request)
                status = await reader.readline()
                if not status:
                    raise ConnectionResetError("closed while idle")
                length, tag = 0, b""
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b""):
                        break
                    name, _, value = line.partition(b":")
                    name = name.strip().lower()
                    if name == b"content-length":
                        length = int(value)
                    elif name == b"etag":
                        tag = value.strip()
                if length:
                    await reader.readexactly(length)
                break
            except (OSError, asyncio.IncompleteReadError):
                if writer is not None:
                    writer.close()
                writer = None
                if attempt:
                    out["errors"] += 1
                    status, tag = b"", b""
        now = time.time()
        code = status.split(b" ", 2)[1].decode() if status else "error"
        out[code] = out.get(code, 0) + 1
        if tag:
            version = int(tag.strip(b'W/"'))
            if last is not None and version > last:
                out["seen"].extend((v, now) for v in range(last + 1, version + 1))
            last = version if last is None else max(last, version)
            etag = tag
        await asyncio.sleep(max(0.0, every - (time.monotonic() - started)))
    if writer is not None:
        writer.close()


async def _main(conn: Connection, port: int, path: str, viewers: int, pollers: int, poll_path: str, every: float):
    loop = asyncio.get_running_loop()
    seen = Seen()
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode()
    transports, hellos = [], []
    opened = time.monotonic()
    for i in range(viewers):
        ev = asyncio.Event()
        hellos.append(ev)
        try:
            transport, _ = await loop.create_connection(lambda ev=ev: Viewer(request, seen, ev), "127.0.0.1", port)
            transports.append(transport)
        except OSError:
            seen.refused += 1
            ev.set()
        if i % 25 == 24:
            await asyncio.sleep(0.02)  # a ramp, not a SYN flood
    try:
        await asyncio.wait_for(asyncio.gather(*(ev.wait() for ev in hellos)), 120)
    except TimeoutError:
        pass
    open_seconds = time.monotonic() - opened
    stop = asyncio.Event()
    poll_out: dict = {"seen": [], "errors": 0}
    poll_tasks = [asyncio.create_task(poll(port, poll_path, every, stop, poll_out)) for _ in range(pollers)]
    conn.send({"hello": seen.hello, "refused": seen.refused, "open_seconds": open_seconds})
    await loop.run_in_executor(None, conn.recv)  # "stop"
    closed_early = seen.closed
    stop.set()
    await asyncio.gather(*poll_tasks, return_exceptions=True)
    for transport in transports:
        transport.close()
    conn.send(
        {
            "versions": seen.versions.tobytes(),
            "times": seen.times.tobytes(),
            "reloads": seen.reloads,
            "hello": seen.hello,
            "refused": seen.refused,
            "closed_early": closed_early,
            "bytes": seen.bytes,
            "poll": poll_out,
        }
    )


def run(conn: Connection, port: int, path: str, viewers: int, pollers: int, poll_path: str, every: float) -> None:
    try:
        import uvloop

        loop_factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvloop is in requirements.txt
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(_main(conn, port, path, viewers, pollers, poll_path, every))


def unpack(answer: dict) -> list[tuple[int, float]]:
    versions, times = array("q"), array("d")
    versions.frombytes(answer["versions"])
    times.frombytes(answer["times"])
    return list(zip(versions, times, strict=True))
