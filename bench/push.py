"""Push vs polling, measured (docs/performance.md, "Live updates"; ``make bench-push``).

Starts devmongo (a one-member replica set) and ONE web process: gunicorn with one uvicorn worker
(bench/asgi.py, the app's ASGI application plus a counter of its MongoDB commands). The clients
run in this process on asyncio: push viewers are raw HTTP/1.1 Server-Sent Events readers of
/sessions/<id>/live/; pollers ask /sessions/<id>/map/ every 2 s with If-None-Match, as the page
does. Holds are written by this process through the engine (holds.hold_seats), one at a time;
a hold's latency is from just before its write to the moment a client has the version it made.

1. Propagation, side by side: ``--viewers`` push viewers and ``--pollers`` pollers on one session,
   ``--holds`` holds spaced ``--every`` seconds apart.
2. Capacity: ``--capacity`` push viewers open at once on one session; the web worker's CPU, threads
   and memory while idle, its MongoDB commands while idle (per viewer), then a rush of holds
   (``--rush-rate`` per second for ``--rush-seconds``): CPU and propagation under it.

Everything shares the machine's cores (clients, web, devmongo): figures are for this machine.
Writes bench/results/push.md (and prints it).
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
RESULTS = ROOT / "bench" / "results" / "push.md"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def proc_stat(pid: int) -> dict:
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    threads = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Threads"))
    ticks = os.sysconf("SC_CLK_TCK")
    return {"cpu": (int(stat[11]) + int(stat[12])) / ticks, "rss_mb": rss / 1024, "threads": threads}


class Recorder:
    """When each version was written, and when each client first had it."""

    def __init__(self):
        self.written: dict[int, float] = {}
        self.seen: dict[str, list[tuple[int, float]]] = {"push": [], "poll": []}

    def latencies(self, kind: str, versions=None) -> list[float]:
        out = []
        for version, at in self.seen[kind]:
            if version in self.written and (versions is None or version in versions):
                out.append((at - self.written[version]) * 1000)
        return out


async def sse_viewer(port: int, path: str, rec: Recorder | None, hello: asyncio.Event, counter: dict):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        counter["refused"] += 1
        writer.close()
        return
    chunked = False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
            chunked = True
    buffer = b""
    try:
        while True:
            if chunked:
                size = int((await reader.readline()).strip() or b"0", 16)
                if size == 0:
                    break
                data = await reader.readexactly(size + 2)
                buffer += data[:-2]
            else:
                data = await reader.read(65536)
                if not data:
                    break
                buffer += data
            while b"\n\n" in buffer:
                raw, buffer = buffer.split(b"\n\n", 1)
                event, payload = "message", None
                for line in raw.decode().split("\n"):
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        payload = json.loads(line[6:])
                now = time.perf_counter()
                if event == "hello":
                    counter["hello"] += 1
                    hello.set()
                elif event == "seats" and payload and rec is not None and payload.get("v") is not None:
                    rec.seen["push"].append((payload["v"], now))
                    counter["bytes"] += len(raw) + 2
                    counter["events"] += 1
    except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def poller(client, path: str, rec: Recorder, stop: asyncio.Event, counter: dict, every: float = 2.0):
    import random

    etag = None
    seen = 0
    await asyncio.sleep(random.uniform(0, every))  # pages open at different times
    while not stop.is_set():
        started = time.perf_counter()
        try:
            answer = await client.get(path, headers={"If-None-Match": etag} if etag else {})
        except Exception:  # noqa: BLE001 - counted, the run goes on
            counter["errors"] += 1
            await asyncio.sleep(every)
            continue
        now = time.perf_counter()
        counter["requests"] += 1
        counter["304" if answer.status_code == 304 else str(answer.status_code)] += 1
        tag = answer.headers.get("etag")
        if tag:
            version = int(tag.strip('"W/'))
            if etag is not None and version > seen:
                for v in range(seen + 1, version + 1):
                    rec.seen["poll"].append((v, now))
            seen = max(seen, version)
            etag = tag
        await asyncio.sleep(max(0.0, every - (time.perf_counter() - started)))


class Bench:
    def __init__(self, args):
        self.args = args
        self.procs: list[subprocess.Popen] = []

    def start(self):
        mongo_port, self.web_port = free_port(), free_port()
        uri = f"mongodb://127.0.0.1:{mongo_port}/?replicaSet=rs0"
        env = {
            **os.environ,
            "MONGODB_URI": uri,
            "MONGODB_DB": "bench_push",
            "BOOKING_HOLD_RATE": "",
            "REDIS_URL": "redis://127.0.0.1:1/0",  # not used by these requests
            "DJANGO_SETTINGS_MODULE": "bench.settings",
        }
        self.env = env
        self.procs.append(
            subprocess.Popen([PYTHON, "-m", "devmongo", "--port", str(mongo_port), "--replset", "rs0"], cwd=ROOT)
        )
        wait_port(mongo_port)
        os.environ.update({k: env[k] for k in ("MONGODB_URI", "MONGODB_DB", "DJANGO_SETTINGS_MODULE", "REDIS_URL")})
        os.environ["BOOKING_HOLD_RATE"] = ""
        import django

        sys.path.insert(0, str(ROOT))
        django.setup()
        from datetime import timedelta

        from booking import clock, mongo
        from booking.demo import GRAND_CATEGORIES, grand_hall_grid
        from booking.layouts import parse_grid
        from booking.services.sessions import create_session
        from booking.services.theaters import create_theater

        mongo.get_client().drop_database("bench_push")
        mongo.ensure_indexes()
        theater = create_theater("Grand Hall", parse_grid(grand_hall_grid(), GRAND_CATEGORIES))
        start = clock.now() + timedelta(days=3)
        prices = {c["code"]: 3000 for c in theater["layout"]["categories"]}
        self.sessions = [
            create_session(
                theater["_id"],
                name=f"Bench {i}",
                description="",
                start=start,
                end=start + timedelta(hours=2),
                prices=prices,
            )
            for i in range(2)
        ]
        self.free = {
            s["_id"]: [f"{r}:{c}" for r, row in enumerate(s["seats"]) for c, st in enumerate(row) if st == 0]
            for s in self.sessions
        }
        web = [
            PYTHON,
            "-m",
            "gunicorn",
            "bench.asgi:application",
            "--worker-class",
            "uvicorn_worker.UvicornWorker",
            "--workers",
            "1",
            "--bind",
            f"127.0.0.1:{self.web_port}",
            "--log-level",
            "warning",
            "--backlog",
            "4096",
        ]
        self.procs.append(subprocess.Popen(web, cwd=ROOT, env=env))
        wait_port(self.web_port)
        time.sleep(1.0)
        master = self.procs[-1].pid
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        self.worker_pid = int(children[0])

    def stop(self):
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def hold(self, session, i: int) -> tuple[int, float]:
        from booking.services import holds

        key = self.free[session["_id"]].pop(0)
        written = time.perf_counter()
        result = holds.hold_seats(session["_id"], f"bench-{i}", None, [key], allow_orphans=True)
        return result.session["version"], written

    async def web_info(self) -> dict:
        import httpx

        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.web_port}") as client:
            return (await client.get("/__bench/push")).json()

    async def open_viewers(self, session, count: int, rec, counter) -> list[asyncio.Task]:
        tasks, hellos = [], []
        path = f"/sessions/{session['_id']}/live/"
        for i in range(count):
            ev = asyncio.Event()
            hellos.append(ev)
            tasks.append(asyncio.create_task(sse_viewer(self.web_port, path, rec, ev, counter)))
            if i % 50 == 49:
                await asyncio.sleep(0.05)  # a ramp, not a SYN flood
        deadline = time.monotonic() + 120
        while counter["hello"] + counter["refused"] < count and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        return tasks

    async def holds_at(self, session, count: int, every: float, rec: Recorder, start_index: int) -> list[int]:
        versions = []
        for i in range(count):
            version, written = await asyncio.to_thread(self.hold, session, start_index + i)
            rec.written[version] = written
            versions.append(version)
            await asyncio.sleep(every)
        return versions


def new_counter() -> dict:
    from collections import Counter

    return Counter()


async def propagation(bench: Bench, args) -> dict:
    import httpx

    session = bench.sessions[0]
    rec, counter = Recorder(), new_counter()
    viewers = await bench.open_viewers(session, args.viewers, rec, counter)
    stop, pcount = asyncio.Event(), new_counter()
    limits = httpx.Limits(max_connections=args.pollers + 10, max_keepalive_connections=args.pollers + 10)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bench.web_port}", limits=limits, timeout=30) as client:
        pollers = [
            asyncio.create_task(poller(client, f"/sessions/{session['_id']}/map/", rec, stop, pcount))
            for _ in range(args.pollers)
        ]
        await asyncio.sleep(4)  # every poller has its ETag
        cpu0 = proc_stat(bench.worker_pid)["cpu"]
        t0 = time.perf_counter()
        await bench.holds_at(session, args.holds, args.every, rec, 0)
        await asyncio.sleep(3)  # the last hold reaches every poller
        cpu = (proc_stat(bench.worker_pid)["cpu"] - cpu0) / (time.perf_counter() - t0)
        stop.set()
        await asyncio.gather(*pollers, return_exceptions=True)
    for task in viewers:
        task.cancel()
    await asyncio.gather(*viewers, return_exceptions=True)
    push_ms, poll_ms = rec.latencies("push"), rec.latencies("poll")
    return {
        "viewers": args.viewers,
        "viewers_connected": counter["hello"],
        "pollers": args.pollers,
        "holds": args.holds,
        "push": push_ms,
        "poll": poll_ms,
        "push_expected": args.holds * counter["hello"],
        "poll_requests": pcount["requests"],
        "poll_304": pcount["304"],
        "poll_200": pcount["200"],
        "poll_errors": pcount["errors"],
        "event_bytes": counter["bytes"] / max(counter["events"], 1),
        "web_cpu": cpu,
    }


async def capacity(bench: Bench, args) -> dict:
    session = bench.sessions[1]
    rec, counter = Recorder(), new_counter()
    base = proc_stat(bench.worker_pid)
    opened_at = time.perf_counter()
    viewers = await bench.open_viewers(session, args.capacity, rec, counter)
    open_seconds = time.perf_counter() - opened_at
    await asyncio.sleep(3)
    info0, stat0, t0 = await bench.web_info(), proc_stat(bench.worker_pid), time.perf_counter()
    await asyncio.sleep(args.idle_seconds)
    info1, stat1, t1 = await bench.web_info(), proc_stat(bench.worker_pid), time.perf_counter()
    idle_commands = {k: info1["commands"].get(k, 0) - info0["commands"].get(k, 0) for k in info1["commands"]}
    idle_commands = {k: v for k, v in idle_commands.items() if v}
    count = max(1, round(args.rush_rate * args.rush_seconds))
    stat2, t2 = proc_stat(bench.worker_pid), time.perf_counter()
    versions = await bench.holds_at(session, count, 1 / args.rush_rate, rec, 10_000)
    await asyncio.sleep(2)
    stat3, t3 = proc_stat(bench.worker_pid), time.perf_counter()
    info3 = await bench.web_info()
    for task in viewers:
        task.cancel()
    await asyncio.gather(*viewers, return_exceptions=True)
    rush = rec.latencies("push", set(versions))
    return {
        "asked": args.capacity,
        "connected": counter["hello"],
        "refused": counter["refused"],
        "open_seconds": open_seconds,
        "hub_viewers": info0["viewers"],
        "rss_before_mb": base["rss_mb"],
        "rss_mb": stat1["rss_mb"],
        "threads": stat1["threads"],
        "idle_seconds": t1 - t0,
        "idle_cpu": (stat1["cpu"] - stat0["cpu"]) / (t1 - t0),
        "idle_commands": idle_commands,
        "rush_holds": count,
        "rush_rate": args.rush_rate,
        "rush_cpu": (stat3["cpu"] - stat2["cpu"]) / (t3 - t2),
        "rush": rush,
        "rush_expected": count * counter["hello"],
        "hub_stats": info3["stats"],
    }


def report(p: dict, c: dict, args) -> str:
    def row(name, values, expected):
        return (
            f"| {name} | {len(values)} of {expected} | {pct(values, 50):.0f} | {pct(values, 90):.0f} | "
            f"{pct(values, 99):.0f} | {max(values) if values else float('nan'):.0f} |"
        )

    poll_expected = p["holds"] * p["pollers"]
    lines = [
        "# Push vs polling (bench/push.py)",
        "",
        f"Run: `python -m bench.push {' '.join(sys.argv[1:])}` on {os.cpu_count()} cores shared with other work;",
        "one web process (gunicorn + 1 uvicorn worker), devmongo replica set, clients in one asyncio process.",
        "",
        "## Propagation: a hold written, then seen by another client (ms)",
        "",
        f"{p['viewers_connected']} push viewers and {p['pollers']} pollers (every 2 s, If-None-Match) on one",
        f"session of the Grand Hall, {p['holds']} holds {args.every} s apart; "
        f"web worker CPU {p['web_cpu'] * 100:.0f} %.",
        "",
        "| how | samples | p50 | p90 | p99 | max |",
        "| --- | --- | --- | --- | --- | --- |",
        row("push (SSE)", p["push"], p["push_expected"]),
        row("polling (2 s)", p["poll"], poll_expected),
        "",
        f"Pushed event size: {p['event_bytes']:.0f} bytes on the wire per change. Polling: {p['poll_requests']} "
        f"requests ({p['poll_304']} answered 304, {p['poll_200']} full maps, {p['poll_errors']} errors).",
        "",
        "## Capacity: open SSE viewers on one web process",
        "",
        f"Asked {c['asked']}, connected {c['connected']} (refused {c['refused']}), "
        f"opened in {c['open_seconds']:.1f} s.",
        f"Web worker: {c['rss_mb']:.0f} MB RSS (was {c['rss_before_mb']:.0f} MB before), {c['threads']} threads.",
        f"Idle {c['idle_seconds']:.0f} s: web worker CPU {c['idle_cpu'] * 100:.1f} %; MongoDB commands the web "
        f"process sent meanwhile: {c['idle_commands'] or 'none'} "
        f"(per idle viewer: {sum(c['idle_commands'].values()) / max(c['connected'], 1):.4f}).",
        f"Rush: {c['rush_holds']} holds at {c['rush_rate']}/s with all viewers watching: web worker CPU "
        f"{c['rush_cpu'] * 100:.0f} %.",
        "",
        "| rush | samples | p50 | p90 | p99 | max |",
        "| --- | --- | --- | --- | --- | --- |",
        row("push (SSE)", c["rush"], c["rush_expected"]),
        "",
        f"Hub counters: {c['hub_stats']}.",
        "",
    ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewers", type=int, default=1000)
    parser.add_argument("--pollers", type=int, default=200)
    parser.add_argument("--holds", type=int, default=40)
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--capacity", type=int, default=2000)
    parser.add_argument("--idle-seconds", type=float, default=10)
    parser.add_argument("--rush-rate", type=float, default=20)
    parser.add_argument("--rush-seconds", type=float, default=10)
    parser.add_argument("--no-write", action="store_true", help="print only, do not write bench/results/push.md")
    args = parser.parse_args()
    bench = Bench(args)
    try:
        bench.start()
        p = asyncio.run(propagation(bench, args))
        c = asyncio.run(capacity(bench, args))
    finally:
        bench.stop()
    text = report(p, c, args)
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
