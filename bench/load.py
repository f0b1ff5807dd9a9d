"""A small HTTP load generator: keep-alive clients with cookies and CSRF, closed loop, in processes.

Each virtual client is a thread with its own connection, cookies and address (X-Forwarded-For),
like a browser. Clients are spread over several processes so the Python client is not one GIL.
A *flow* is a module-level function ``flow(client, index, params)`` that prepares the client
and returns ``step()``; each step returns a list of ``Sample``s (one per timed request).
"""

import gc
import http.client
import multiprocessing
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

PROCESSES = 2
RAN_OUT = "ran out of work before the window ended"  # counted in LoadResult.ran_out, not an error


@dataclass
class Response:
    status: int
    headers: dict
    body: bytes
    seconds: float

    @property
    def server_us(self) -> int:
        return int(self.headers.get("x-server-time-us", 0))


@dataclass
class Sample:
    label: str
    seconds: float
    server_us: int
    ok: bool
    status: int = 0
    size: int = 0


class Client:
    def __init__(self, base_url: str, index: int = 0):
        parsed = urllib.parse.urlsplit(base_url)
        self.host, self.port = parsed.hostname, parsed.port
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        self.cookies: dict[str, str] = {}
        self.address = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255 or 1}"

    def request(self, method: str, path: str, form: dict | list | None = None, headers: dict | None = None) -> Response:
        all_headers = {"X-Forwarded-For": self.address, "Accept": "text/html"}
        if self.cookies:
            all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form, doseq=True)
            all_headers["Content-Type"] = "application/x-www-form-urlencoded"
            if "csrftoken" in self.cookies:
                all_headers["X-CSRFToken"] = self.cookies["csrftoken"]
        all_headers.update(headers or {})
        for attempt in range(2):
            started = time.perf_counter()
            try:
                self.conn.request(method, path, body=body, headers=all_headers)
                raw = self.conn.getresponse()
                data = raw.read()
                break
            except (http.client.HTTPException, ConnectionError):
                # the server closed an idle keep-alive connection: reconnect once
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                if attempt:
                    raise
        elapsed = time.perf_counter() - started
        for value in raw.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return Response(raw.status, {k.lower(): v for k, v in raw.headers.items()}, data, elapsed)

    def get(self, path: str, headers: dict | None = None) -> Response:
        return self.request("GET", path, headers=headers)

    def post(self, path: str, form, headers: dict | None = None) -> Response:
        return self.request("POST", path, form=form, headers=headers)

    def close(self) -> None:
        self.conn.close()


def sample(label: str, response: Response, ok_statuses=(200,)) -> Sample:
    return Sample(
        label, response.seconds, response.server_us, response.status in ok_statuses, response.status, len(response.body)
    )


@dataclass
class LoadResult:
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    seconds: float = 0.0
    clients: int = 0
    errors: list[str] = field(default_factory=list)
    ran_out: int = 0  # clients whose flow had no work left before the window ended


def _client_thread(flow, base_url, index, params, sync, seconds, max_steps, out, errors):
    client = Client(base_url, index)
    ready, go, start = sync
    try:
        try:
            step = flow(client, index, params)
        except BaseException:
            ready.abort()  # the others and the caller stop waiting for this client
            raise
        ready.wait()
        go.wait()
        start_at = start.value
        stop_at = start_at + seconds
        while time.time() < start_at:
            time.sleep(0.001)
        done = 0
        # At least one step each, even if this client's setup ended after the window (a busy
        # machine, the CI-sized run's short window): every flow then has its figures.
        while (time.time() < stop_at or done == 0) and (max_steps is None or done < max_steps):
            result = step()
            if result is None:  # the flow ran out of work (e.g. seats to buy)
                if time.time() < stop_at:
                    errors.append(RAN_OUT)
                break
            out.extend(result)
            done += 1
    except Exception as exc:  # noqa: BLE001 - reported to the caller, who fails loudly
        errors.append(f"client {index}: {type(exc).__name__}: {exc}")
    finally:
        client.close()


def _worker_process(flow, base_url, indexes, params, sync, seconds, max_steps, queue):
    # The client's own garbage collection would be timed as the server's latency: the heap forked
    # from the parent is frozen (never walked) and the run's few cycles wait for the process's end.
    gc.freeze()
    gc.disable()
    out: list[Sample] = []
    errors: list[str] = []
    threads = [
        threading.Thread(target=_client_thread, args=(flow, base_url, i, params, sync, seconds, max_steps, out, errors))
        for i in indexes
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put((out, errors))


SETUP_TIMEOUT = 600.0  # seconds the clients' setups may take together (a flow that prepares buyers)


def run(
    flow, base_url: str, clients: int, seconds: float, params=None, max_steps=None, warmup: float = 3.0, window=None
):
    """Run ``clients`` closed-loop clients of ``flow`` for ``seconds`` (after their setup).

    The window starts ``warmup`` seconds after the run begins, or, when the clients' setups take
    longer (a flow that prepares its buyers first), as soon as every client is set up: no client
    does its setup inside the window.

    ``window``, if given, is a context manager held open for exactly the measured seconds (a
    bench.cpu.CpuMeter): only this function knows when the warmup ends.
    """
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    processes = min(PROCESSES, clients)
    groups = [list(range(p, clients, processes)) for p in range(processes)]
    start_at = time.time() + warmup + clients * 0.01
    ready, go, start = ctx.Barrier(clients + 1, timeout=SETUP_TIMEOUT), ctx.Event(), ctx.Value("d", start_at)
    procs = [
        ctx.Process(
            target=_worker_process, args=(flow, base_url, g, params, (ready, go, start), seconds, max_steps, queue)
        )
        for g in groups
    ]
    for p in procs:
        p.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass  # a client's setup failed: its error comes back with the results
    start_at = max(start_at, time.time() + 0.01)
    start.value = start_at
    stop_at = start_at + seconds
    go.set()
    if window is not None:
        time.sleep(max(0.0, start_at - time.time()))
        with window:
            time.sleep(max(0.0, stop_at - time.time()))
    result = LoadResult(clients=clients)
    for _ in procs:
        out, errors = queue.get()
        result.ran_out += errors.count(RAN_OUT)
        result.errors.extend(e for e in errors if e != RAN_OUT)
        for s in out:
            result.samples.setdefault(s.label, []).append(s)
    for p in procs:
        p.join()
    result.seconds = min(seconds, max(time.time() - start_at, 1e-9))
    return result


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]
