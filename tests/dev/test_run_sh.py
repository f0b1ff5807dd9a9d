"""scripts/run.sh, the development stack, twice side by side as two checkouts run it: with the
port variables the README's table names set to other values for each, both stacks come up and
serve their pages, and every port either opens is one of those values (none is fixed, so none
is shared). Each stack runs from a copy of this checkout of its own (its own .run/ and SQLite
file), with this checkout's virtualenv; they are stopped, every process they started, at the end."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# What run.sh must not inherit from the test run: it starts its own services when these are unset.
NOT_INHERITED = ("MONGODB_URI", "MONGODB_DB", "REDIS_URL", "DATABASE_URL", "EMAIL_URL", "SITE_URL", "DEV_ENV_FILE")
START_SECONDS = 300  # two stacks at once on a busy two-core machine, each seeding its demo stadium


def documented_port_variables() -> list[str]:
    """The variables the README's table says move the dev stack's ports."""
    readme = (ROOT / "README.md").read_text()
    return re.findall(r"^\| `(\w+)` \| `\d+` \| [^|\n]*port", readme, flags=re.MULTILINE)


def port_variables_of_run_sh() -> set[str]:
    script = (ROOT / "scripts" / "run.sh").read_text()
    return set(re.findall(r"\$\{(\w*PORT\w*):-", script))


def free_ports(count: int) -> list[int]:
    sockets = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def copy_of_this_checkout(dest: Path) -> Path:
    """The tracked files as they are now, and this checkout's virtualenv (run.sh would install
    into a virtualenv whose requirements differ: then this test does not run)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in files.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    venv = (ROOT / ".venv").resolve()
    wanted = (ROOT / "requirements.txt").read_text() + (ROOT / "requirements-dev.txt").read_text()
    stamp = venv / ".requirements-dev.stamp"
    if not stamp.exists() or stamp.read_text().strip() != wanted.strip():
        pytest.skip("this checkout's .venv is not installed from its requirements (run.sh would install)")
    (dest / ".venv").symlink_to(venv)
    return dest


def environment(ports: dict[str, int]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED and not k.startswith(("STRIPE_", "DJANGO_"))}
    return {**env, **{name: str(port) for name, port in ports.items()}}


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    tree, i = [pid], 0
    while i < len(tree):
        tree += children.get(tree[i], [])
        i += 1
    return tree


def listening_ports(pid: int) -> set[int]:
    """The TCP ports a process and its descendants listen on (from /proc)."""
    inodes = set()
    for member in descendants(pid):
        try:
            for fd in os.listdir(f"/proc/{member}/fd"):
                try:
                    target = os.readlink(f"/proc/{member}/fd/{fd}")
                except OSError:
                    continue
                found = re.fullmatch(r"socket:\[(\d+)\]", target)
                if found:
                    inodes.add(found.group(1))
        except OSError:
            continue
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def serves(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:  # noqa: S310 - loopback
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop(proc: subprocess.Popen) -> None:
    """honcho stops what it started on SIGTERM; whatever is left of the tree is killed."""
    tree = descendants(proc.pid)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=10)


def test_the_readme_names_every_port_variable_of_run_sh():
    assert set(documented_port_variables()) == port_variables_of_run_sh() | {"PORT"}
    example = re.search(r"^(?:\w+=\d+ )+\./scripts/run\.sh$", (ROOT / "README.md").read_text(), flags=re.MULTILINE)
    assert example is not None, "the README's example of a second stack"
    assert set(re.findall(r"(\w+)=", example.group(0))) == set(documented_port_variables())


def test_two_stacks_with_the_readmes_port_variables_run_side_by_side(tmp_path):
    variables = documented_port_variables()
    assert "PORT" in variables
    stacks = []
    try:
        for name in ("first", "second"):
            root = copy_of_this_checkout(tmp_path / name)
            ports = dict(zip(variables, free_ports(len(variables)), strict=True))
            with (tmp_path / f"{name}.log").open("wb") as log:  # (the child keeps its own handle)
                proc = subprocess.Popen(
                    ["./scripts/run.sh"], cwd=root, env=environment(ports), stdout=log, stderr=subprocess.STDOUT
                )
            stacks.append((name, proc, ports, tmp_path / f"{name}.log"))
        deadline = time.monotonic() + START_SECONDS
        waiting = list(stacks)
        while waiting and time.monotonic() < deadline:
            for stack in list(waiting):
                name, proc, ports, log = stack
                assert proc.poll() is None, f"the {name} stack stopped:\n{log.read_text()[-3000:]}"
                if serves(ports["PORT"]):
                    waiting.remove(stack)
            time.sleep(1)
        late = {name: log.read_text()[-3000:] for name, _proc, _ports, log in waiting}
        assert not late, f"not serving after {START_SECONDS} s: {late}"
        opened = {name: listening_ports(proc.pid) for name, proc, _ports, _log in stacks}
        for name, proc, ports, log in stacks:
            assert proc.poll() is None, f"the {name} stack stopped:\n{log.read_text()[-3000:]}"
            assert opened[name] == set(ports.values()), (name, ports, opened[name])
        assert not opened["first"] & opened["second"]
    finally:
        for _name, proc, _ports, _log in stacks:
            stop(proc)
