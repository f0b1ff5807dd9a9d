"""Starting devmongo's command line in a subprocess, for the tests of what outlives a process."""

import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_cli(port: int, data_path: str, *options: str) -> subprocess.Popen:
    """`python -m devmongo` on 127.0.0.1:port with its data in data_path; returns once it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "devmongo", "--host", "127.0.0.1", "--port", str(port), "--data", data_path, *options],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.time() + 20
    while time.time() < deadline:
        line = proc.stdout.readline()
        if f"devmongo listening on mongodb://127.0.0.1:{port}/" in line:
            return proc
        if proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("devmongo CLI did not start")
