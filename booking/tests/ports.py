"""A free TCP port on the loopback, for tests that start a server of their own. (Test modules
cannot import it from the root conftest: tests/conftest.py is a module named conftest too, and
which one ``import conftest`` finds depends on what pytest collected first.)"""

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
