"""Crash points between the writes of a multi-write operation, for fault-injection tests.

Production never sets a hook; tests set one that raises at a named point to prove that
reconcile finishes or undoes whatever was left half done.
"""

from collections.abc import Callable

_hook: Callable[[str], None] | None = None


class InjectedCrash(Exception):
    """Raised by a test hook to simulate a process dying between two writes."""


def point(name: str) -> None:
    if _hook is not None:
        _hook(name)


def set_hook(hook: Callable[[str], None] | None) -> None:
    global _hook
    _hook = hook
