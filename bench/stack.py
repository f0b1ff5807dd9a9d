"""Start the real stack on loopback: MongoDB (the stand-in, or MONGODB_URI), Redis, gunicorn.

gunicorn runs with one fixed configuration for every measured request (``GUNICORN_ARGS``), so the
hello-world floor and the app's pages are served the same way. There are two of them, same
arguments: the one at ``base_url`` serves every timed request and runs without the command
monitor (pymongo then builds no event objects at all); the one at ``accounting_url`` has it
(BOOKING_MONGO_MONITOR=1) and only ever answers the accounting requests, one at a time, so it sits
idle during timed runs.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .cpu import CpuMeter, children

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
WORKERS = int(os.environ.get("BENCH_WORKERS", 2))  # one per core of the 2-core machines this runs on
THREADS = int(os.environ.get("BENCH_THREADS", 8))
GUNICORN_ARGS = [
    "--workers",
    str(WORKERS),
    "--threads",
    str(THREADS),
    "--worker-class",
    "gthread",
    "--keep-alive",
    "30",
    "--backlog",
    "512",
    "--log-level",
    "warning",
]

# The pushed waiting room needs ASGI (Procfile's web line): uvicorn workers, as many as gthread's.
ASGI_ARGS = [
    "--workers",
    str(WORKERS),
    "--worker-class",
    "uvicorn_worker.UvicornWorker",
    "--keep-alive",
    "30",
    "--backlog",
    "4096",
    "--log-level",
    "warning",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_workers(proc: subprocess.Popen, ready_dir: Path, what: str, timeout: float = 240) -> None:
    """Wait until every worker has loaded the app (bench/wsgi.py leaves its pid in ``ready_dir``),
    so no worker's start-up CPU falls into the first timed run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode}")
        ready = {int(p.name) for p in ready_dir.iterdir()}
        if len(ready & set(children(proc.pid))) >= WORKERS:
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what}: {WORKERS} workers not ready within {timeout}s")


def wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout}s")


def app_env() -> dict:
    """The app's settings for a benchmark run (gunicorn's, and bench/profile.py's in-process)."""
    return {
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        # production mode over plain http on loopback
        "DEBUG": "False",
        "SECRET_KEY": "bench-" + uuid.uuid4().hex,
        "SECURE_SSL_REDIRECT": "False",
        "LOG_LEVEL": "WARNING",
        # Each virtual client gets its own address (X-Forwarded-For), so the anti-hoarding
        # checks run as in production; the hold rate limits still count in Redis, but
        # they are raised so that a benchmark client doing hundreds of holds a minute is
        # not refused (the per-address ceiling refused about 4 % of the box-office row).
        "BOOKING_TRUSTED_PROXIES": "1",
        "BOOKING_HOLD_RATE": "1000000/m",
        "BOOKING_HOLD_RATE_PER_ADDRESS": "1000000/m",
        # The box-office loop is one buyer reserving group after group (a hoarder, by these
        # limits' rules): they stay on, so their commands are counted, but out of its way.
        "BOOKING_MAX_LIVE_CARTS_PER_OWNER": "1000000",
        "BOOKING_MAX_HELD_SEATS_PER_CLIENT": "1000000",
        "BOOKING_MAX_OPEN_RESERVATIONS": "1000000",
        "BOOKING_RESERVATION_MAIL_RATE": "1000000/m",
        "BOOKING_RESERVATION_MAIL_RATE_PER_EMAIL": "1000000/m",
        "PYTHONPATH": str(ROOT),
    }


@dataclass
class Stack:
    """Everything the benchmark talks to. Use as a context manager."""

    mongodb_uri: str = ""
    redis_url: str = ""
    db_name: str = field(default_factory=lambda: f"bench_{uuid.uuid4().hex[:8]}")
    stripe_port: int = 0  # localstripe: card payments (checkout's row pays)
    web_port: int = 0  # gunicorn for timed requests, no command monitor
    accounting_port: int = 0  # gunicorn with the command monitor, for X-Bench-Account requests only
    real_mongodb: bool = False
    web: bool = True  # the two gunicorns (the seed scenario alone calls the engine, no web)
    asgi: bool = False  # the timed one with uvicorn workers (ASGI, as deployed: SSE); bench/onsale_asgi.py
    web_nodes: int = 1  # timed gunicorns, each with WORKERS workers: more than one stands for more web nodes
    node_ports: list[int] = field(default_factory=list)  # every timed gunicorn's port, web_port first
    # A web node of its own for the waiting room (queue pages and streams, routed there by path as a
    # proxy would), run at this lower CPU priority (nice); None: no such node.
    waiting_room_nice: int | None = None
    waiting_room_port: int = 0
    workdir: Path | None = None
    procs: list = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def node_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.node_ports]

    def node_names(self) -> list[str]:
        return ["gunicorn-timed"] + [f"gunicorn-timed-{n}" for n in range(2, self.web_nodes + 1)]

    def web_pids(self) -> list[int]:
        """Every timed gunicorn's workers (looked up now)."""
        return [pid for name in self.node_names() for pid in children(self._proc(name).pid)]

    @property
    def waiting_room_url(self) -> str | None:
        return f"http://127.0.0.1:{self.waiting_room_port}" if self.waiting_room_port else None

    def all_node_urls(self) -> list[str]:
        return self.node_urls + ([self.waiting_room_url] if self.waiting_room_url else [])

    def waiting_room_pids(self) -> list[int] | None:
        proc = self._proc("gunicorn-waiting")
        return None if proc is None else children(proc.pid)

    @property
    def accounting_url(self) -> str:
        return f"http://127.0.0.1:{self.accounting_port}"

    @property
    def stripe_url(self) -> str:
        return f"http://127.0.0.1:{self.stripe_port}"

    def stripe_settings(self) -> dict:
        return {
            "STRIPE_SECRET_KEY": "sk_test_bench",
            "STRIPE_PUBLISHABLE_KEY": "pk_test_bench",
            "STRIPE_WEBHOOK_SECRET": "whsec_bench",
            "STRIPE_API_BASE": self.stripe_url,
            "STRIPE_JS_URL": f"{self.stripe_url}/js.stripe.com/v3/",
        }

    def env(self) -> dict:
        env = dict(os.environ)
        env.update(
            {
                "MONGODB_URI": self.mongodb_uri,
                "MONGODB_DB": self.db_name,
                "REDIS_URL": self.redis_url,
                "DATABASE_URL": f"sqlite:///{self.workdir / 'django.sqlite3'}",
                **app_env(),
                **self.stripe_settings(),
            }
        )
        return env

    def __enter__(self) -> "Stack":
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-"))
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _spawn(self, args, what, port, **kwargs):
        log = open(self.workdir / f"{what}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, **kwargs)
        self.procs.append((what, proc, log))
        wait_for_port(port, proc, what)
        return proc

    def _start(self) -> None:
        self.mongodb_uri = os.environ.get("MONGODB_URI", "")
        self.real_mongodb = bool(self.mongodb_uri)
        if not self.mongodb_uri:
            port = free_port()
            args = [PYTHON, "-m", "devmongo", "--port", str(port), "--replset", "rs0", "--log-level", "warning"]
            args += ["--notablescan", "--random-tie-break"]  # every query has its index; no order relied on
            self._spawn(args, "devmongo", port)
            self.mongodb_uri = f"mongodb://127.0.0.1:{port}/?replicaSet=rs0"
        self.redis_url = os.environ.get("REDIS_URL", "")
        if not self.redis_url:
            binary = shutil.which("redis-server")
            if binary is None:
                raise RuntimeError(
                    "redis-server is not installed (apt-get install redis-server) and REDIS_URL is unset"
                )
            port = free_port()
            args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            self._spawn([*args, "--dir", str(self.workdir)], "redis", port)
            self.redis_url = f"redis://127.0.0.1:{port}/0"
        self.stripe_port = free_port()
        # localstripe honouring idempotency keys as Stripe does, the same launcher as run.sh, chaos and the tests
        launcher = str(ROOT / "scripts" / "localstripe_server.py")
        localstripe = [PYTHON, launcher, "--port", str(self.stripe_port), "--from-scratch"]
        self._spawn(localstripe, "localstripe", self.stripe_port)
        env = self.env()
        subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        if not self.web:
            return
        timed_env = {k: v for k, v in env.items() if k != "BOOKING_MONGO_MONITOR"}
        self.node_ports = [self._start_gunicorn(name, timed_env) for name in self.node_names()]
        self.web_port = self.node_ports[0]
        booting = [*self.node_names(), "gunicorn-accounting"]
        if self.waiting_room_nice is not None:
            waiting_env = {**timed_env, "WAITING_ROOM_THREADS": os.environ.get("BENCH_WAITING_ROOM_THREADS", "8")}
            self.waiting_room_port = self._start_gunicorn("gunicorn-waiting", waiting_env, nice=self.waiting_room_nice)
            booting.append("gunicorn-waiting")
        self.accounting_port = self._start_gunicorn("gunicorn-accounting", {**env, "BOOKING_MONGO_MONITOR": "1"})
        for what in booting:  # they boot side by side
            wait_for_workers(self._proc(what), self._ready_dir(what), what)

    def _start_gunicorn(self, what: str, env: dict, nice: int = 0) -> int:
        port = free_port()
        ready_dir = self._ready_dir(what)
        ready_dir.mkdir()
        app, app_args = "bench.wsgi:application", GUNICORN_ARGS
        if self.asgi and what != "gunicorn-accounting":  # the same worker count, one event loop each
            app, app_args = "bench.onsale_asgi:application", ASGI_ARGS
        args = [PYTHON, "-m", "gunicorn", app, *app_args, "--bind", f"127.0.0.1:{port}"]
        if nice:
            args = ["nice", "-n", str(nice), *args]
        self._spawn(args, what, port, env={**env, "BENCH_READY_DIR": str(ready_dir)})
        return port

    def _ready_dir(self, what: str) -> Path:
        return self.workdir / f"{what}-ready"

    def _proc(self, what: str) -> subprocess.Popen | None:
        return next((proc for name, proc, _log in self.procs if name == what), None)

    def _pids(self, what: str) -> list[int] | None:
        """The pid of a process this stack started, as a list; None when it did not start one."""
        proc = self._proc(what)
        return None if proc is None else [proc.pid]

    def cpu_meter(self) -> CpuMeter:
        """A meter for one timed run: the timed gunicorn's workers (looked up again each time),
        the stand-in and redis-server when the benchmark started them."""
        return CpuMeter({"web": self.web_pids(), "db": self._pids("devmongo"), "redis": self._pids("redis")})

    def use_in_this_process(self) -> None:
        """Point this process's Django settings and MongoDB client at the stack."""
        from django.conf import settings

        from booking.core import mongo

        os.environ.update({"MONGODB_URI": self.mongodb_uri, "MONGODB_DB": self.db_name, "REDIS_URL": self.redis_url})
        settings.MONGODB_URI = self.mongodb_uri
        settings.MONGODB_DB = self.db_name
        settings.REDIS_URL = self.redis_url
        settings.CELERY_BROKER_URL = self.redis_url
        for name, value in self.stripe_settings().items():  # the scenario pays in this process
            setattr(settings, name, value)
        # localstripe answers about 20 payments a second (it pickles its whole store on every
        # write); the seed scenario sends 1,000 at 200 a second, so its queue, not our flow, passed
        # the 20 s default and counted as failed flows. Stripe answers in well under a second; the
        # scenario measures our flow's outcome, so the fake gets the time it needs.
        settings.STRIPE_TIMEOUT_SECONDS = 300.0
        mongo.close_client()

    def __exit__(self, *exc) -> None:
        for _what, proc, log in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()
        if self.real_mongodb and self.mongodb_uri:
            try:
                import pymongo

                pymongo.MongoClient(self.mongodb_uri, serverSelectionTimeoutMS=2000).drop_database(self.db_name)
            except Exception:  # noqa: BLE001, S110 - best effort cleanup of a throwaway database
                pass
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
