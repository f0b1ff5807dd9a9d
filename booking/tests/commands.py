"""Count the MongoDB commands the app sends, through pymongo's command monitoring."""

import contextlib
import threading
from collections import Counter

import bson
from pymongo import monitoring

from booking.core import mongo

WRITE_COMMANDS = {"insert", "update", "delete", "findAndModify"}


class CommandCounter(monitoring.CommandListener):
    """Counts the commands sent by the thread that made it: a live server or a push thread left running
    by another test in the same worker must not add to what a test counts."""

    def __init__(self):
        self._thread = threading.get_ident()
        self.commands: list[tuple[str, str]] = []
        self._pending: dict[int, tuple[str, str]] = {}
        self.replies: list[tuple[str, str, int]] = []  # (command, collection, reply size in bytes)

    def started(self, event):
        if threading.get_ident() != self._thread:
            return
        if event.command_name in {"hello", "isMaster", "ismaster", "endSessions", "ping"}:
            return
        collection = event.command.get(event.command_name)
        command = (event.command_name, collection if isinstance(collection, str) else "")
        self.commands.append(command)
        self._pending[event.request_id] = command

    def succeeded(self, event):
        command = self._pending.pop(event.request_id, None)
        if command is not None:
            self.replies.append((*command, len(bson.encode(event.reply))))

    def replies_bytes(self, name: str, collection: str) -> int:
        return sum(size for n, c, size in self.replies if (n, c) == (name, collection))

    def failed(self, event):
        pass

    @property
    def writes(self) -> list[tuple[str, str]]:
        return [c for c in self.commands if c[0] in WRITE_COMMANDS]

    @property
    def reads(self) -> list[tuple[str, str]]:
        return [c for c in self.commands if c[0] not in WRITE_COMMANDS]

    def by_name(self) -> Counter:
        return Counter(name for name, _ in self.commands)

    def clear(self):
        self.commands.clear()


@contextlib.contextmanager
def counting_commands():
    counter = CommandCounter()
    mongo.add_listener(counter)
    try:
        yield counter
    finally:
        mongo.remove_listener(counter)
