"""A free TCP port on the loopback, for tests that start a server of their own. (Test modules
cannot import it from the root conftest: tests/conftest.py is a module named conftest too, and
which one ``import conftest`` finds depends on what pytest collected first.)"""

import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int, proc: subprocess.Popen, seconds: float) -> bool:
    """Wait until a server just started listens on the loopback port: False when its process ended
    first or ``seconds`` passed."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False
