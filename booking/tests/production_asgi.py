"""Production's web application (``theater_site/asgi.py``) called as uvicorn calls it.

The live streams run there without Django's middleware chain, so their tests open them through it
rather than through Django's AsyncClient, which runs every middleware.
"""

import asyncio
from http.cookies import SimpleCookie

from theater_site.asgi import application


class Stream:
    """One request to the application: its status and headers, then its body as it is written."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.started = asyncio.Event()
        self.chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self.gone = asyncio.Event()  # the client hung up
        self.task: asyncio.Task | None = None

    async def next_chunk(self, timeout: float = 5) -> bytes:
        return await asyncio.wait_for(self.chunks.get(), timeout)

    async def body(self, timeout: float = 5) -> bytes:
        """The whole body of an answer that ends (not a stream)."""
        assert self.task is not None
        await asyncio.wait_for(self.task, timeout)
        return b"".join(self.chunks.get_nowait() for _ in range(self.chunks.qsize()))

    async def close(self) -> None:
        self.gone.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, 5)


async def request(
    path: str,
    *,
    method: str = "GET",
    cookies: SimpleCookie | None = None,
    headers: dict[str, str] | None = None,
) -> Stream:
    """Send the request; return once the answer's status and headers have come."""
    stream = Stream()
    raw_headers = [(b"host", b"testserver")]
    if cookies:
        raw_headers.append((b"cookie", "; ".join(f"{c.key}={c.coded_value}" for c in cookies.values()).encode()))
    raw_headers += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": raw_headers,
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent_body = False

    async def receive() -> dict:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await stream.gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            stream.status = message["status"]
            stream.headers = {name.decode().lower(): value.decode() for name, value in message["headers"]}
            stream.started.set()
        elif message.get("body"):
            stream.chunks.put_nowait(message["body"])

    stream.task = asyncio.get_running_loop().create_task(application(scope, receive, send))
    started = asyncio.get_running_loop().create_task(stream.started.wait())
    await asyncio.wait({stream.task, started}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    started.cancel()
    if stream.task.done():
        stream.task.result()  # an error in the application is the test's
    assert stream.started.is_set(), f"no answer to {method} {path} within 10 s"
    return stream
