"""Helpers for tests that run buyers (or doors) in threads."""

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
