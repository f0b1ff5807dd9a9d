"""A small thread-safe LRU cache: the one way this app keeps derived data per process.

Web processes run several threads (gunicorn gthread), so every get and put holds a lock; the values
are shared read-only between threads and must never be mutated after ``put``.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable


class LRUCache[K: Hashable, V]:
    """At most ``size`` entries; the least recently used one goes first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def peek(self, key: K) -> V | None:
        """The value without counting it as a use."""
        with self._lock:
            return self._entries.get(key)

    def put(self, key: K, value: V) -> V:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        """The kept value, or ``build()`` kept. Built outside the lock: two threads may build the
        same value at once (both results are equal), but no thread waits for another's build."""
        found = self.get(key)
        return found if found is not None else self.put(key, build())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
