"""Fixtures shared by the booking app's tests (MongoDB and Redis come from the root conftest)."""

import logging
from contextlib import contextmanager

import pytest
from celery.contrib.testing.worker import start_worker

from booking.core import faults
from booking.tests.admin_support import every_booking_perm, make_staff
from theater_site.celery import app as celery_app


@pytest.fixture
def manager(db):
    """A staff user with every permission on the booking pages (not a superuser)."""
    return make_staff("manager", every_booking_perm())


@pytest.fixture
def manager_client(client, manager):
    """Django's test client logged in as the manager."""
    client.force_login(manager)
    return client


@pytest.fixture
def fault_hook():
    """fault_hook(fn): booking.core.faults.point(name) calls fn(name) until the test ends."""
    yield faults.set_hook
    faults.set_hook(None)


@pytest.fixture
def crash_at(fault_hook):
    """crash_at("hold.after_session"): the process 'dies' there (faults.InjectedCrash is raised)."""

    def arm(point_name):
        def hook(name):
            if name == point_name:
                raise faults.InjectedCrash(name)

        fault_hook(hook)

    return arm


@pytest.fixture
def no_hold_rate_limit(settings):
    """No hold rate limit per buyer: for tests that hold more seats a minute than a person clicks
    (every test client is 127.0.0.1; the limits have their own tests in tests/security/)."""
    settings.BOOKING_HOLD_RATE = ""


@pytest.fixture
def embedded_worker(monkeypatch):
    """embedded_worker(): a context manager running a Celery worker in a thread. Root logging stays
    as pytest set it up (the worker neither takes it over nor leaves its handlers behind)."""
    root = logging.getLogger()
    monkeypatch.setitem(celery_app.conf, "worker_hijack_root_logger", False)
    # The worker waits for a message at most this long (Redis BRPOP; kombu's default 1 s), so it
    # stops within a tenth of a second at the end of a test instead of a second.
    options = {**celery_app.conf.broker_transport_options, "polling_interval": 0.1}
    monkeypatch.setitem(celery_app.conf, "broker_transport_options", options)
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(root, "level", root.level)

    @contextmanager
    def run():
        with start_worker(celery_app, pool="solo", perform_ping_check=False, loglevel="INFO", shutdown_timeout=20):
            yield

    return run


@pytest.fixture
def empty_queue(caplog):
    caplog.set_level(logging.INFO, logger="booking")
    celery_app.control.purge()
    yield
    celery_app.control.purge()


@pytest.fixture
def worker(empty_queue, embedded_worker):
    with embedded_worker():
        yield
