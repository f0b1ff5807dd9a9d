"""Per-request MongoDB accounting for the benchmark: commands, bytes sent and bytes received.

Off unless the process starts with ``BOOKING_MONGO_MONITOR=1`` (``booking/core/mongo.py`` then adds
this listener to its client). Even then a request is only counted between ``begin()`` and
``end()`` on its own thread (the benchmark's WSGI wrapper calls them when asked to), so timed
requests pay nothing but one thread-local lookup per command.

Sizes are the BSON size of the command and of the reply as pymongo reports them through command
monitoring: exact and repeatable for a given request (the wire adds a 21-byte OP_MSG header each
way, not counted).
"""

import os
import threading
from dataclasses import dataclass, field

import bson
from pymongo import monitoring

ENV_VAR = "BOOKING_MONGO_MONITOR"
HANDSHAKE = {"hello", "isMaster", "ismaster", "endSessions", "ping", "buildInfo"}
WRITES = {"insert", "update", "delete", "findAndModify"}


def enabled() -> bool:
    return os.environ.get(ENV_VAR, "") not in ("", "0", "false", "False")


@dataclass
class Tally:
    commands: list[str] = field(default_factory=list)  # "update sessions", in the order sent
    bytes_out: int = 0
    bytes_in: int = 0

    @property
    def writes(self) -> int:
        return sum(1 for c in self.commands if c.split(" ", 1)[0] in WRITES)


class RequestCommandMonitor(monitoring.CommandListener):
    """Counts the commands of whichever request is being counted on the calling thread."""

    def __init__(self):
        self._local = threading.local()

    def begin(self) -> None:
        self._local.tally = Tally()

    def end(self) -> Tally | None:
        tally = getattr(self._local, "tally", None)
        self._local.tally = None
        return tally

    def started(self, event):
        tally = getattr(self._local, "tally", None)
        if tally is None or event.command_name in HANDSHAKE:
            return
        target = event.command.get(event.command_name)
        tally.commands.append(f"{event.command_name} {target}" if isinstance(target, str) else event.command_name)
        tally.bytes_out += len(bson.encode(event.command))

    def succeeded(self, event):
        tally = getattr(self._local, "tally", None)
        if tally is None or event.command_name in HANDSHAKE:
            return
        tally.bytes_in += len(bson.encode(event.reply))

    def failed(self, event):
        pass


monitor = RequestCommandMonitor()
