"""The real stack on loopback: each process started on a free port, killed and restarted on demand.

Every process gets its own session (process group), so a kill takes its children with it, like a
container dying. Logs go to files in the run directory; nothing listens beyond 127.0.0.1.
"""

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.cpu import children

ROOT = Path(__file__).resolve().parent.parent
LOCALSTRIPE = ROOT / "scripts" / "localstripe_server.py"  # localstripe honouring idempotency keys


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


class Proc:
    """One supervised process: start, kill -9 (with its group), stop politely."""

    def __init__(self, name: str, argv: list[str], env: dict, log_dir: Path):
        self.name = name
        self.argv = argv
        self.env = env
        self.log_path = log_dir / f"{name}.log"
        self.popen: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            self.popen = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self.starts += 1

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill9(self) -> None:
        """SIGKILL the whole process group: no cleanup, no goodbye."""
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(timeout=10)

    def stop(self, timeout: float = 10) -> None:
        if not self.running():
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
            self.popen.wait(timeout=timeout)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            self.kill9()


STRIPE_KEYS = {  # localstripe takes any keys of the right shape
    "STRIPE_SECRET_KEY": "sk_test_chaos",
    "STRIPE_PUBLISHABLE_KEY": "pk_test_chaos",
    "STRIPE_WEBHOOK_SECRET": "whsec_chaos",
}


class Stack:
    """MongoDB (the stand-in, or MONGODB_URI), Redis, localstripe, gunicorn, Celery worker and beat."""

    def __init__(self, workdir: Path, *, web_workers: int, web_threads: int, settings_env: dict, unsafe: bool):
        self.workdir = workdir
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.web_workers = web_workers
        self.web_threads = web_threads
        self.settings_env = settings_env
        self.unsafe = unsafe
        self.external_mongo = os.environ.get("MONGODB_URI")
        self.mongo_port = free_port()
        self.redis_port = free_port()
        self.web_port = free_port()
        self.stripe_port = free_port()
        self.mongo_uri = self.external_mongo or f"mongodb://127.0.0.1:{self.mongo_port}/?replicaSet=rs0"
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.procs: dict[str, Proc] = {}

    @property
    def wsgi_app(self) -> str:
        """The control run serves the app with the hold's free-seat check taken out (chaos/control_wsgi.py)."""
        return "chaos.control_wsgi:application" if self.unsafe else "theater_site.wsgi"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def stripe_url(self) -> str:
        return f"http://127.0.0.1:{self.stripe_port}"

    def env(self) -> dict:
        """The environment every app process (and the harness itself) runs with."""
        env = dict(os.environ)
        env.update(self.settings_env)
        env.update(
            {
                "MONGODB_URI": self.mongo_uri,
                "REDIS_URL": self.redis_url,
                "DATABASE_URL": f"sqlite:///{self.workdir / 'django.sqlite3'}",
                "DJANGO_SETTINGS_MODULE": "theater_site.settings",
                "PYTHONUNBUFFERED": "1",
                # card payments go to a localstripe of the run's own (the buyers pay there)
                **STRIPE_KEYS,
                "STRIPE_API_BASE": self.stripe_url,
                "STRIPE_JS_URL": f"{self.stripe_url}/js.stripe.com/v3/",
            }
        )
        return env

    # --- starting ---

    def start_data_services(self) -> None:
        python = sys.executable
        if not self.external_mongo:
            data = self.workdir / "devmongo.bson"
            self.procs["mongo"] = Proc(
                "mongo",
                [
                    python,
                    "-m",
                    "devmongo",
                    "--port",
                    str(self.mongo_port),
                    "--replset",
                    "rs0",
                    "--notablescan",  # every query has its index, under the rush too
                    "--random-tie-break",
                    "--data",
                    str(data),
                    "--log-level",
                    "warning",
                ],
                self.env(),
                self.logs,
            )
            self.procs["mongo"].start()
            if not wait_for_port(self.mongo_port, 30):
                raise RuntimeError("the MongoDB stand-in did not start; see " + str(self.procs["mongo"].log_path))
        redis_server = shutil.which("redis-server")
        if redis_server is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        redis_dir = self.workdir / "redis"
        redis_dir.mkdir(exist_ok=True)
        self.procs["redis"] = Proc(
            "redis",
            [redis_server, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            + ["--dir", str(redis_dir)],
            self.env(),
            self.logs,
        )
        self.start_redis()
        self.procs["stripe"] = Proc(
            "stripe",
            [python, str(LOCALSTRIPE), "--port", str(self.stripe_port), "--from-scratch"],
            self.env(),
            self.logs,
        )
        self.procs["stripe"].start()
        if not wait_for_port(self.stripe_port, 30):
            raise RuntimeError("localstripe did not start; see " + str(self.procs["stripe"].log_path))

    def register_webhook(self) -> None:
        """localstripe sends its events to the app, as Stripe would (racing the return page)."""
        body = {"url": self.base_url + "/payments/stripe/webhook/", "secret": STRIPE_KEYS["STRIPE_WEBHOOK_SECRET"]}
        httpx.post(f"{self.stripe_url}/_config/webhooks/chaos", json=body, timeout=10).raise_for_status()

    def start_app(self) -> None:
        python = sys.executable
        subprocess.run(
            [python, "manage.py", "migrate", "--noinput"],
            cwd=ROOT,
            env=self.env(),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        self.procs["web"] = Proc(
            "web",
            [python, "-m", "gunicorn", self.wsgi_app, "--workers", str(self.web_workers)]
            + ["--threads", str(self.web_threads), "--worker-class", "gthread"]
            + ["--bind", f"127.0.0.1:{self.web_port}", "--timeout", "30", "--graceful-timeout", "5"]
            + ["--backlog", "2048", "--no-control-socket"],
            self.env(),
            self.logs,
        )
        self.procs["worker"] = Proc(
            "worker",
            [python, "-m", "celery", "-A", "theater_site", "worker", "--loglevel", "INFO", "--concurrency", "2"]
            + ["--without-gossip", "--without-mingle", "-n", f"chaos-{self.web_port}@%h"],
            self.env(),
            self.logs,
        )
        self.procs["beat"] = Proc(
            "beat",
            [python, "-m", "celery", "-A", "theater_site", "beat", "--loglevel", "INFO"]
            + ["--schedule", str(self.workdir / "celerybeat-schedule")],
            self.env(),
            self.logs,
        )
        for name in ("web", "worker", "beat"):
            self.procs[name].start()
        self.wait_healthy(60)
        self.register_webhook()

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                r = httpx.get(self.base_url + "/healthz", timeout=2)
                if r.status_code == 200:
                    return
                last = f"{r.status_code} {r.text[:200]}"
            except httpx.HTTPError as exc:
                last = str(exc)
            time.sleep(0.2)
        raise RuntimeError(f"the web server did not become healthy: {last}; see {self.procs['web'].log_path}")

    # --- faults ---

    def web_worker_pids(self) -> list[int]:
        web = self.procs["web"]
        return children(web.pid) if web.running() else []

    def kill_web_worker(self, rng: random.Random) -> int | None:
        """kill -9 one gunicorn worker; the gunicorn master starts a new one."""
        pids = self.web_worker_pids()
        if not pids:
            return None
        pid = rng.choice(pids)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        return pid

    def kill_celery_worker(self) -> None:
        self.procs["worker"].kill9()

    def restart_celery_worker(self) -> None:
        self.procs["worker"].start()

    def stop_redis(self) -> None:
        self.procs["redis"].stop()

    def start_redis(self) -> None:
        self.procs["redis"].start()
        if not wait_for_port(self.redis_port, 15):
            raise RuntimeError("redis-server did not start; see " + str(self.procs["redis"].log_path))

    def can_restart_mongo(self) -> bool:
        return "mongo" in self.procs

    def stop_mongo(self) -> None:
        """A clean shutdown (the stand-in writes its snapshot; a real mongod keeps its journal)."""
        self.procs["mongo"].stop(timeout=30)

    def start_mongo(self) -> None:
        self.procs["mongo"].start()
        if not wait_for_port(self.mongo_port, 60):
            raise RuntimeError("the MongoDB stand-in did not come back; see " + str(self.procs["mongo"].log_path))

    # --- stopping ---

    def stop_app(self) -> None:
        for name in ("web", "beat", "worker"):
            if name in self.procs:
                self.procs[name].stop()

    def stop_all(self) -> None:
        self.stop_app()
        for name in ("redis", "mongo", "stripe"):
            if name in self.procs:
                self.procs[name].stop(timeout=30)

    def log_text(self, name: str) -> str:
        proc = self.procs.get(name)
        if proc is None or not proc.log_path.exists():
            return ""
        return proc.log_path.read_text(errors="replace")
