"""Push vs polling, measured (docs/performance.md, "Live updates"; ``make bench-push``).

Starts devmongo (a one-member replica set) and ONE web process: gunicorn with one uvicorn worker
(bench/asgi.py: the app's ASGI application, a counter of its MongoDB commands and a trace of each
change's way through it). The clients are lean (bench/sse_clients.py): one process per core on
uvloop, each holding its share of the push viewers (raw SSE readers of /sessions/<id>/live/ noting
each event's version and the time) and of the pollers (/sessions/<id>/map/ every 2 s with
If-None-Match, as the page does). Holds are written by this process through the engine
(holds.hold_seats), one at a time; latencies are from just before a hold's write.

1. Propagation, side by side in one run: ``--viewers`` push viewers and ``--pollers`` pollers on one
   session, ``--holds`` holds spaced ``--every`` seconds apart. Where the time goes, per change:
   the write acknowledged, devmongo logged it (its change event's ``wallTime``), the web process
   received the event, its fan-out began in the event loop, each viewer's write returned, each
   viewer read it.
2. Capacity: ``--capacity`` push viewers open at once on another session; the web worker's CPU,
   threads and memory while idle, its MongoDB commands while idle (per viewer), then a rush of
   holds (``--rush-rate`` per second for ``--rush-seconds``): CPU, event-loop lag and propagation
   under it, and whether the worker survived (gunicorn's ``--timeout`` 30 s, as deployed).

Everything shares the machine's cores (clients, web, devmongo): figures are for this machine, with
its load average. Writes bench/results/push.md and push.json (and prints the former).
``--small`` is a quick check (200 viewers, 20 pollers, 300 for capacity).
"""

import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pymongo import monitoring

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
RESULTS = ROOT / "bench" / "results" / "push.md"
RESULTS_JSON = ROOT / "bench" / "results" / "push.json"


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


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


class AckTimes(monitoring.CommandListener):
    """pymongo listener: when the server acknowledged this process's last write of a session."""

    def __init__(self):
        self.pending: dict[int, str] = {}
        self.last_session_write = 0.0

    def started(self, event):
        if event.command_name in ("findAndModify", "update"):
            self.pending[event.request_id] = event.command.get(event.command_name)

    def succeeded(self, event):
        if self.pending.pop(event.request_id, None) == "sessions":
            self.last_session_write = time.time()

    def failed(self, event):
        self.pending.pop(event.request_id, None)


class Clients:
    """The viewer and poller processes (bench/sse_clients.py), one per core."""

    def __init__(self, port: int, session_id, viewers: int, pollers: int, processes: int):
        from bench import sse_clients

        context = multiprocessing.get_context("spawn")
        path, poll_path = f"/sessions/{session_id}/live/", f"/sessions/{session_id}/map/"
        self.conns, self.procs = [], []
        for i in range(processes):
            mine = viewers // processes + (1 if i < viewers % processes else 0)
            polls = pollers // processes + (1 if i < pollers % processes else 0)
            parent, child = context.Pipe()
            proc = context.Process(target=sse_clients.run, args=(child, port, path, mine, polls, poll_path, 2.0))
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def opened(self) -> dict:
        answers = [conn.recv() for conn in self.conns]
        return {
            "hello": sum(a["hello"] for a in answers),
            "refused": sum(a["refused"] for a in answers),
            "open_seconds": max(a["open_seconds"] for a in answers),
        }

    def stop(self) -> dict:
        from bench import sse_clients

        for conn in self.conns:
            conn.send("stop")
        answers = [conn.recv() for conn in self.conns]
        for proc in self.procs:
            proc.join(30)
        polls = [seen for a in answers for seen in a["poll"]["seen"]]
        codes: dict[str, int] = {}
        for a in answers:
            for code, n in a["poll"].items():
                if code != "seen":
                    codes[code] = codes.get(code, 0) + n
        return {
            "push": [pair for a in answers for pair in sse_clients.unpack(a)],
            "reloads": sum(a["reloads"] for a in answers),
            "closed_early": sum(a["closed_early"] for a in answers),
            "bytes": sum(a["bytes"] for a in answers),
            "poll": polls,
            "poll_codes": codes,
        }


class Bench:
    def __init__(self, args):
        self.args = args
        self.procs: list[subprocess.Popen] = []
        self.log_path = Path(tempfile.gettempdir()) / f"bench-push-gunicorn-{os.getpid()}.log"
        self.log = self.log_path.open("w")

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
        self.procs.append(
            subprocess.Popen([PYTHON, "-m", "devmongo", "--port", str(mongo_port), "--replset", "rs0"], cwd=ROOT)
        )
        self.devmongo_pid = self.procs[-1].pid
        wait_port(mongo_port)
        os.environ.update({k: env[k] for k in ("MONGODB_URI", "MONGODB_DB", "DJANGO_SETTINGS_MODULE", "REDIS_URL")})
        os.environ["BOOKING_HOLD_RATE"] = ""
        import django

        sys.path.insert(0, str(ROOT))
        django.setup()
        from datetime import timedelta

        from booking.core import clock, mongo
        from booking.sales.demo import GRAND_CATEGORIES, grand_hall_grid
        from booking.sales.sessions import create_session
        from booking.venues.layouts import parse_grid
        from booking.venues.theaters import create_theater

        self.acks = AckTimes()
        mongo.add_listener(self.acks)
        mongo.get_client().drop_database("bench_push")
        mongo.ensure_indexes()
        theater = create_theater("Grand Hall", parse_grid(grand_hall_grid(), GRAND_CATEGORIES))
        start = clock.now() + timedelta(days=3)
        prices = {c["code"]: 3000 for c in theater["layout"]["categories"]}
        self.sessions = [
            create_session(
                theater["_id"],
                published=True,
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
            "--timeout",
            str(self.args.timeout),
            "--bind",
            f"127.0.0.1:{self.web_port}",
            "--log-level",
            "warning",
            "--backlog",
            "4096",
        ]
        self.procs.append(subprocess.Popen(web, cwd=ROOT, env=env, stderr=self.log))
        wait_port(self.web_port)
        time.sleep(1.0)
        master = self.procs[-1].pid
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        self.worker_pid = int(children[0])

    def worker_alive(self) -> bool:
        return Path(f"/proc/{self.worker_pid}").exists()

    def stop(self):
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def hold(self, session, i: int) -> tuple[int, float, float]:
        from booking.sales import holds

        key = self.free[session["_id"]].pop(0)
        written = time.time()
        result = holds.hold_seats(session["_id"], f"bench-{i}", None, [key], allow_orphans=True)
        return result.session["version"], written, self.acks.last_session_write

    def web_info(self, query: str = "") -> dict:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/__bench/push{query}", timeout=60) as answer:
            return json.loads(answer.read())

    def wait_written(self, expected: int, timeout: float = 60) -> None:
        """Until the worker has written every change to every viewer (or ``timeout``), then a
        second for the clients to read the last ones."""
        deadline = time.monotonic() + timeout
        while self.web_info()["written"] < expected and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)

    def holds_at(self, session, count: int, rate: float, start_index: int) -> dict[int, tuple[float, float]]:
        """``count`` holds at ``rate`` a second (on a schedule, not after each other): version ->
        (write started, acknowledged)."""
        written = {}
        began = time.monotonic()
        for i in range(count):
            delay = began + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            version, at, ack = self.hold(session, start_index + i)
            written[version] = (at, ack)
        return written


class LoopLag:
    """Asks the worker's /__bench/push every 0.2 s: how long an answer takes is how long the
    event loop keeps a new request waiting."""

    def __init__(self, bench: Bench):
        self.bench, self.samples, self.failures = bench, [], 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.is_set():
            started = time.perf_counter()
            try:
                self.bench.web_info()
                self.samples.append((time.perf_counter() - started) * 1000)
            except OSError:
                self.failures += 1
            self.done.wait(0.2)

    def stop(self) -> list[float]:
        self.done.set()
        self.thread.join(90)
        return self.samples


def stages(session_id, written: dict, trace: dict, reads: list[tuple[int, float]]) -> dict:
    """Per stage, the ms from a change's write to it (per change; per viewer for the last two)."""
    out: dict[str, list[float]] = {name: [] for name in ("ack", "logged", "received", "fanout", "written", "read")}
    for version, (at, ack) in written.items():
        key = f"{session_id}:{version}"
        out["ack"].append((ack - at) * 1000)
        for stage in ("logged", "received", "fanout"):
            if key in trace[stage]:
                out[stage].append((trace[stage][key] - at) * 1000)
        out["written"].extend((t - at) * 1000 for t in trace["written"].get(key, ()))
    out["read"] = [(t - written[v][0]) * 1000 for v, t in reads if v in written]
    return out


def propagation(bench: Bench, args) -> dict:
    session = bench.sessions[0]
    bench.web_info("?reset=1")
    clients = Clients(bench.web_port, session["_id"], args.viewers, args.pollers, args.clients)
    opened = clients.opened()
    time.sleep(4)  # every poller has its ETag
    load0, cpu0, t0 = load_average(), proc_stat(bench.worker_pid)["cpu"], time.perf_counter()
    written = bench.holds_at(session, args.holds, 1 / args.every, 0)
    bench.wait_written(args.holds * opened["hello"])
    time.sleep(2)  # the last hold reaches every poller
    cpu = (proc_stat(bench.worker_pid)["cpu"] - cpu0) / (time.perf_counter() - t0)
    load1 = load_average()
    seen = clients.stop()
    trace = bench.web_info("?trace=1")["trace"]
    poll = [(v, t) for v, t in seen["poll"] if v in written]
    return {
        "viewers": args.viewers,
        "viewers_connected": opened["hello"],
        "refused": opened["refused"],
        "pollers": args.pollers,
        "holds": args.holds,
        "every": args.every,
        "stages": stages(session["_id"], written, trace, seen["push"]),
        "poll": [(t - written[v][0]) * 1000 for v, t in poll],
        "push_expected": args.holds * opened["hello"],
        "poll_expected": args.holds * args.pollers,
        "poll_codes": seen["poll_codes"],
        "reloads": seen["reloads"],
        "closed_early": seen["closed_early"],
        "web_cpu": cpu,
        "load": [load0, load1],
    }


def capacity(bench: Bench, args) -> dict:
    session = bench.sessions[1]
    base = proc_stat(bench.worker_pid)
    bench.web_info("?reset=1")
    clients = Clients(bench.web_port, session["_id"], args.capacity, 0, args.clients)
    opened = clients.opened()
    time.sleep(3)
    info0, stat0, t0 = bench.web_info(), proc_stat(bench.worker_pid), time.perf_counter()
    time.sleep(args.idle_seconds)
    info1, stat1, t1 = bench.web_info(), proc_stat(bench.worker_pid), time.perf_counter()
    idle_commands = {k: info1["commands"].get(k, 0) - info0["commands"].get(k, 0) for k in info1["commands"]}
    idle_commands = {k: v for k, v in idle_commands.items() if v}
    count = max(1, round(args.rush_rate * args.rush_seconds))
    load0 = load_average()
    lag = LoopLag(bench)
    stat2, t2 = proc_stat(bench.worker_pid), time.perf_counter()
    written = bench.holds_at(session, count, args.rush_rate, 10_000)
    alive = bench.worker_alive()
    if alive:
        bench.wait_written(count * opened["hello"])
    alive = bench.worker_alive()
    stat3, t3 = proc_stat(bench.worker_pid) if alive else None, time.perf_counter()
    lag_ms = lag.stop()
    load1 = load_average()
    seen = clients.stop()
    info3 = bench.web_info("?trace=1")
    return {
        "asked": args.capacity,
        "connected": opened["hello"],
        "refused": opened["refused"],
        "open_seconds": opened["open_seconds"],
        "hub_viewers": info0["viewers"],
        "rss_before_mb": base["rss_mb"],
        "rss_mb": stat1["rss_mb"],
        "threads": stat1["threads"],
        "idle_seconds": t1 - t0,
        "idle_cpu": (stat1["cpu"] - stat0["cpu"]) / (t1 - t0),
        "idle_commands": idle_commands,
        "rush_holds": count,
        "rush_rate": args.rush_rate,
        "rush_cpu": (stat3["cpu"] - stat2["cpu"]) / (t3 - t2) if stat3 else float("nan"),
        "loop_lag": lag_ms,
        "loop_lag_failures": lag.failures,
        "worker_survived": alive,
        "stages": stages(session["_id"], written, info3["trace"], seen["push"]),
        "rush_expected": count * opened["hello"],
        "reloads": seen["reloads"],
        "closed_early": seen["closed_early"],
        "hub_stats": info3["stats"],
        "load": [load0, load1],
    }


STAGE_NAMES = {
    "ack": "write acknowledged (the hold's session write)",
    "logged": "devmongo logged it (the change event's wallTime, ms)",
    "received": "the web process has the change event",
    "fanout": "its fan-out begins in the event loop",
    "written": "written to each viewer's stream (send returned)",
    "read": "**read by each viewer** (the client)",
}


def table(rows: list[tuple[str, list[float], str]]) -> list[str]:
    lines = [
        "| from the write's start to ... | samples | p50 | p90 | p99 | max |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, values, samples in rows:
        lines.append(
            f"| {name} | {samples} | {pct(values, 50):.0f} | {pct(values, 90):.0f} | {pct(values, 99):.0f} | "
            f"{max(values) if values else float('nan'):.0f} |"
        )
    return lines


def stage_rows(st: dict, expected: int, changes: int) -> list[tuple[str, list[float], str]]:
    rows = []
    for stage, name in STAGE_NAMES.items():
        values = st[stage]
        total = expected if stage in ("written", "read") else changes
        rows.append((name, values, f"{len(values)} of {total}"))
    return rows


def report(p: dict, c: dict, args, command: str, commit: str) -> str:
    poll_row = (
        "**polling (every 2 s)**: a poll's answer has it",
        p["poll"],
        f"{len(p['poll'])} of {p['poll_expected']}",
    )
    lag = c["loop_lag"]
    rush_reads = c["stages"]["read"]
    lines = [
        "# Push vs polling (bench/push.py)",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M %Z')}: `{command}` at commit {commit}, on {os.cpu_count()} cores shared "
        "with other work. One web process (gunicorn + 1 uvicorn worker, timeout "
        f"{args.timeout} s), devmongo replica set, clients in {args.clients} lean processes "
        "(bench/sse_clients.py, uvloop).",
        "",
        "## Propagation: a hold written, then seen by other clients (ms)",
        "",
        f"{p['viewers_connected']} push viewers (refused {p['refused']}) and {p['pollers']} pollers "
        f"(every 2 s, If-None-Match) on one session of the Grand Hall, {p['holds']} holds {p['every']} s apart; "
        f"web worker CPU {p['web_cpu'] * 100:.0f} %; load average (1 min) {p['load'][0]:.1f} -> {p['load'][1]:.1f}.",
        "",
        *table([*stage_rows(p["stages"], p["push_expected"], p["holds"]), poll_row]),
        "",
        f"Polling answers: {p['poll_codes']}. Viewers told to reload: {p['reloads']}; streams closed early: "
        f"{p['closed_early']}.",
        "",
        "## Capacity: open SSE viewers on one web process",
        "",
        f"Asked {c['asked']}, connected {c['connected']} (refused {c['refused']}), "
        f"opened in {c['open_seconds']:.1f} s.",
        f"Web worker: {c['rss_mb']:.0f} MB RSS (was {c['rss_before_mb']:.0f} MB before), {c['threads']} threads.",
        f"Idle {c['idle_seconds']:.0f} s: web worker CPU {c['idle_cpu'] * 100:.1f} %; MongoDB commands the web "
        f"process sent meanwhile: {c['idle_commands'] or 'none'} "
        f"(per idle viewer: {sum(c['idle_commands'].values()) / max(c['connected'], 1):.4f}).",
        f"Rush: {c['rush_holds']} holds at {c['rush_rate']:g}/s with all viewers watching "
        f"({c['rush_rate'] * c['connected']:,.0f} events/s to write): web worker CPU {c['rush_cpu'] * 100:.0f} %; "
        f"load average {c['load'][0]:.1f} -> {c['load'][1]:.1f}; worker survived: **{c['worker_survived']}**; "
        f"event-loop lag (a request's answer time, every 0.2 s) p50 {pct(lag, 50):.0f} ms, p99 {pct(lag, 99):.0f} ms, "
        f"max {max(lag) if lag else float('nan'):.0f} ms ({c['loop_lag_failures']} failed).",
        "",
        *table(stage_rows(c["stages"], c["rush_expected"], c["rush_holds"])),
        "",
        f"Viewers told to reload (fell 256 events behind): {c['reloads']}; "
        f"streams closed early: {c['closed_early']}; rush reads: {len(rush_reads)}. Hub counters: {c['hub_stats']}.",
        "",
    ]
    return "\n".join(lines)


def summary(values: list[float]) -> dict:
    return {
        "n": len(values),
        "p50": pct(values, 50),
        "p90": pct(values, 90),
        "p99": pct(values, 99),
        "max": max(values) if values else None,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewers", type=int, default=1000)
    parser.add_argument("--pollers", type=int, default=50)
    parser.add_argument("--holds", type=int, default=40)
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--capacity", type=int, default=2000)
    parser.add_argument("--idle-seconds", type=float, default=10)
    parser.add_argument("--rush-rate", type=float, default=20)
    parser.add_argument("--rush-seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=os.cpu_count() or 2, help="client processes")
    parser.add_argument("--timeout", type=int, default=30, help="gunicorn's worker timeout (s)")
    parser.add_argument("--small", action="store_true", help="200 viewers, 20 pollers, 10 holds, 300 for capacity")
    parser.add_argument("--no-write", action="store_true", help="print only, do not write the results")
    parser.add_argument("--out", type=Path, default=RESULTS.parent, help="folder for push.md and push.json")
    args = parser.parse_args()
    if args.small:
        args.viewers, args.pollers, args.holds, args.capacity = 200, 20, 10, 300
        args.idle_seconds, args.rush_rate, args.rush_seconds = 3, 10, 2
    command = "python -m bench.push " + " ".join(sys.argv[1:])
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    bench = Bench(args)
    try:
        bench.start()
        p = propagation(bench, args)
        c = capacity(bench, args)
    finally:
        bench.stop()
        bench.log.close()
    timeouts = re.findall(r"WORKER TIMEOUT.*", bench.log_path.read_text())
    text = report(p, c, args, command.strip(), commit)
    if timeouts:
        text += f"\ngunicorn's log: {timeouts}\n"
    print(text)
    if not args.no_write:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / RESULTS.name).write_text(text)
        data = {
            "command": command,
            "commit": commit,
            "propagation": {
                **{k: v for k, v in p.items() if k not in ("stages", "poll")},
                "stages": {k: summary(v) for k, v in p["stages"].items()},
                "poll": summary(p["poll"]),
            },
            "capacity": {
                **{k: v for k, v in c.items() if k not in ("stages", "loop_lag")},
                "stages": {k: summary(v) for k, v in c["stages"].items()},
                "loop_lag": summary(c["loop_lag"]),
            },
        }
        (args.out / RESULTS_JSON.name).write_text(json.dumps(data, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
