"""pretix, the peer, on this machine: its own venv, its PostgreSQL database, its Redis, its pretix.cfg,
its migrations, the seeded organizer and events, and its gunicorn (same arguments as ours).

Everything lives under ``.bench-peer/`` (gitignored). pretix is never installed into our venv: it
pins its own Django (5.2) and a hundred other packages.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..cpu import children
from ..stack import GUNICORN_ARGS, WORKERS, free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent.parent
HOME = ROOT / ".bench-peer"
VENV = HOME / "venv"
PY = VENV / "bin" / "python"
PRETIX_VERSION = os.environ.get("PEER_PRETIX_VERSION", "2026.8.0")
PG_HOST, PG_PORT, PG_USER = "127.0.0.1", int(os.environ.get("PEER_PG_PORT", 5432)), "postgres"
DB_NAME = "bench_peer_pretix"
SETUP_SCRIPT = Path(__file__).resolve().parent / "pretix_setup.py"


def find_python() -> str:
    """The Python scripts/_env.sh picks for our venv (>= 3.12): pretix gets the same interpreter."""
    out = subprocess.run(
        ["bash", "-c", "source scripts/_env.sh && find_python"], cwd=ROOT, capture_output=True, text=True
    )
    if out.returncode != 0 or not out.stdout.strip():
        raise RuntimeError(f"no Python >= 3.12 found (scripts/_env.sh): {out.stderr.strip()}")
    return out.stdout.strip().splitlines()[-1]


def ensure_venv(log=print) -> None:
    stamp = VENV / ".pretix-version"
    if PY.exists() and stamp.exists() and stamp.read_text().strip() == PRETIX_VERSION:
        return
    python = find_python()
    log(f"installing pretix {PRETIX_VERSION} into {VENV} (with {python})")
    if not PY.exists():
        subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    # aiosmtpd: the mail sink pretix's order mails go to (its SMTP client runs as in production)
    subprocess.run(
        [str(PY), "-m", "pip", "install", "-q", f"pretix=={PRETIX_VERSION}", "gunicorn", "aiosmtpd"], check=True
    )
    stamp.write_text(PRETIX_VERSION)


def psql(sql: str, db: str = "postgres") -> str:
    out = subprocess.run(
        ["psql", "-h", PG_HOST, "-p", str(PG_PORT), "-U", PG_USER, "-d", db, "-v", "ON_ERROR_STOP=1", "-Atc", sql],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"psql failed: {out.stderr.strip()}")
    return out.stdout


def ensure_postgres(log=print) -> None:
    """The machine's PostgreSQL (trust auth for postgres on loopback); installed and started if absent."""
    try:
        psql("select 1")
        return
    except (RuntimeError, FileNotFoundError):
        pass
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError("no PostgreSQL on 127.0.0.1:5432 and cannot install one (apt-get install postgresql)")
    log("installing PostgreSQL (apt-get install postgresql)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "postgresql"], check=True, env=env)
    subprocess.run(["service", "postgresql", "start"], check=True)
    for _ in range(50):
        try:
            psql("select 1")
            return
        except RuntimeError:
            time.sleep(0.2)
    raise RuntimeError("PostgreSQL did not start")


def postmaster_pid() -> int | None:
    """The PostgreSQL server's main process (its backends are its children)."""
    try:
        data_dir = psql("show data_directory").strip()
        return int(Path(data_dir, "postmaster.pid").read_text().splitlines()[0])
    except (RuntimeError, OSError, ValueError, IndexError):
        return None


def write_config(redis_url: str, smtp_port: int) -> Path:
    """pretix.cfg as its production docs have it: PostgreSQL, Redis for cache and sessions (its
    locks are PostgreSQL advisory locks), no [celery] section: tasks run eagerly in the web request."""
    data = HOME / "data"
    data.mkdir(parents=True, exist_ok=True)
    cfg = HOME / "pretix.cfg"
    cfg.write_text(
        f"""[pretix]
instance_name=bench peer
url=http://127.0.0.1
currency=EUR
datadir={data}
trust_x_forwarded_for=on
ecb_rates=off

[django]
secret=bench-peer-not-secret
debug=off

[database]
backend=postgresql
name={DB_NAME}
user={PG_USER}
host={PG_HOST}
port={PG_PORT}

[redis]
location={redis_url}
sessions=true

[mail]
from=tickets@example.org
host=127.0.0.1
port={smtp_port}

[locale]
default=en
timezone=Europe/Berlin
"""
    )
    return cfg


def pretix_env(cfg: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTHONPATH"))}
    env.update({"PRETIX_CONFIG_FILE": str(cfg), "DJANGO_SETTINGS_MODULE": "pretix.settings"})
    return env


def create_database(cfg: Path, log=print) -> None:
    """A fresh database for the run, copied from a migrated template (``pretix migrate`` takes
    minutes; it runs once per pretix version, into the template)."""
    template = f"{DB_NAME}_tpl_{PRETIX_VERSION.replace('.', '_')}"
    if psql(f"SELECT 1 FROM pg_database WHERE datname = '{template}'").strip() != "1":  # noqa: S608 - our constant
        log(f"pretix migrate (once per version, into {template})")
        started = time.monotonic()
        psql(f"CREATE DATABASE {template}")
        env = pretix_env(cfg)
        subprocess.run([str(PY), "-c", _MIGRATE_INTO, template], env=env, check=True, cwd=HOME)
        log(f"  migrated in {time.monotonic() - started:.0f}s")
    psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    psql(f"CREATE DATABASE {DB_NAME} TEMPLATE {template}")
    # the event pages need the compiled CSS/JS (collectstatic + compress, as pretix's docs deploy it)
    if not (HOME / "data" / "static.stamp").exists():
        log("pretix rebuild (static files, once)")
        subprocess.run([str(PY), "-m", "pretix", "rebuild"], env=pretix_env(cfg), check=True, cwd=HOME)
        (HOME / "data" / "static.stamp").write_text("done")


# ``python -m pretix migrate`` against another database name than pretix.cfg's
_MIGRATE_INTO = """
import sys, django
from django.conf import settings
import pretix.settings as s
s.DATABASES["default"]["NAME"] = sys.argv[1]
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
"""


def seed(cfg: Path, spec: dict) -> dict:
    """Run pretix_setup.py in pretix's venv: the organizer, the events, their seats. ``spec``: the
    halls (seat grids from our layouts), categories and prices. Returns what it made (ids, guids)."""
    out = subprocess.run(
        [str(PY), str(SETUP_SCRIPT)],
        input=json.dumps(spec),
        env=pretix_env(cfg),
        capture_output=True,
        text=True,
        cwd=HOME,
    )
    if out.returncode != 0:
        raise RuntimeError(f"pretix setup failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def query(cfg: Path, sql: str) -> list[list[str]]:
    rows = psql(sql, db=DB_NAME)
    return [line.split("|") for line in rows.splitlines() if line]


@dataclass
class PretixStack:
    """pretix's processes for one run: a Redis of its own, a mail sink, gunicorn."""

    workdir: Path
    procs: list = field(default_factory=list)
    port: int = 0
    redis_url: str = ""
    cfg: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _spawn(self, args, what, port, **kwargs):
        log = open(self.workdir / f"{what}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, **kwargs)
        self.procs.append((what, proc, log))
        wait_for_port(port, proc, what, timeout=120)
        return proc

    def start_services(self) -> None:
        redis_port = free_port()
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        args = [binary, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self._spawn([*args, "--dir", str(self.workdir)], "pretix-redis", redis_port)
        self.redis_url = f"redis://127.0.0.1:{redis_port}/1"  # a db number of its own, as the docs suggest
        smtp_port = free_port()
        self._spawn(
            [str(PY), "-m", "aiosmtpd", "-n", "-c", "aiosmtpd.handlers.Sink", "-l", f"127.0.0.1:{smtp_port}"],
            "pretix-smtp",
            smtp_port,
        )
        self.cfg = write_config(self.redis_url, smtp_port)

    def start_web(self) -> None:
        self.port = free_port()
        args = [str(VENV / "bin" / "gunicorn"), "pretix.wsgi:application", *GUNICORN_ARGS]
        proc = self._spawn(
            [*args, "--bind", f"127.0.0.1:{self.port}"], "pretix-gunicorn", self.port, env=pretix_env(self.cfg)
        )
        deadline = time.monotonic() + 60
        while len(children(proc.pid)) < WORKERS and time.monotonic() < deadline:
            time.sleep(0.1)

    def web_pids(self) -> list[int]:
        return children(self._proc("pretix-gunicorn").pid)

    def redis_pids(self) -> list[int]:
        return [self._proc("pretix-redis").pid]

    def _proc(self, what):
        return next(proc for name, proc, _log in self.procs if name == what)

    def close(self) -> None:
        for _what, proc, log in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()


if __name__ == "__main__":  # python -m bench.peer.pretix_env: just install
    ensure_venv()
    sys.exit(0)
