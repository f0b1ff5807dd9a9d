"""Helpers for tests that run buyers (or doors) in threads."""

import asyncio
import threading

from django.conf import settings
from pymongo import MongoClient


class PerThreadClient:
    """Give each buyer thread its own MongoClient, as separate processes would have."""

    def __init__(self):
        self.local = threading.local()
        self.clients = []
        self.lock = threading.Lock()

    def get(self):
        client = getattr(self.local, "client", None)
        if client is None:
            client = MongoClient(settings.MONGODB_URI, tz_aware=True)
            self.local.client = client
            with self.lock:
                self.clients.append(client)
        return client

    def close(self):
        for client in self.clients:
            client.close()


def at_once(action, times: int, timeout: float = 60) -> list:
    """``action()`` in ``times`` threads started one after another without waiting: the results
    of those that returned, in the order they finished (an exception leaves its result out)."""
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(action())) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return results


def in_thread(fn, *args):
    """Run ``fn`` in a thread of its own: another test (Playwright's sync API) may leave an event
    loop running in this one, where neither asyncio.run nor async_to_sync may be used."""
    out = {}

    def target():
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(60)
    if "error" in out:
        raise out["error"]
    return out.get("value")


def run_async(coro_fn):
    """``asyncio.run(coro_fn())`` in a thread of its own (``in_thread``)."""
    return in_thread(lambda: asyncio.run(coro_fn()))
