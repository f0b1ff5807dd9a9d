"""Count the MongoDB commands the app sends, through pymongo's command monitoring."""

import contextlib
from collections import Counter

from pymongo import monitoring

from booking import mongo

WRITE_COMMANDS = {"insert", "update", "delete", "findAndModify"}


class CommandCounter(monitoring.CommandListener):
    def __init__(self):
        self.commands: list[tuple[str, str]] = []

    def started(self, event):
        if event.command_name in {"hello", "isMaster", "ismaster", "endSessions", "ping"}:
            return
        collection = event.command.get(event.command_name)
        self.commands.append((event.command_name, collection if isinstance(collection, str) else ""))

    def succeeded(self, event):
        pass

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
