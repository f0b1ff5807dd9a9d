"""A web worker keeps long-lived objects out of Python's full collections, and still collects the
cyclic garbage among them: when the worker is calm after RELEASE_SECONDS, or after
RELEASE_AT_LEAST_SECONDS whatever the load (booking/core/collector.py). Python's real collector
is used; each test gives back what it froze."""

import gc
import threading
import time
import weakref

import pytest
from django.test import override_settings
from django.urls import reverse

from booking.core.collector import (
    CALM_REQUESTS,
    RELEASE_AT_LEAST_SECONDS,
    RELEASE_SECONDS,
    CollectorKeeper,
    RequestsInFlight,
)
from booking.tests import production_asgi
from booking.tests.factories import make_session
from booking.tests.threads import run_async
from booking.web import push
from theater_site import asgi


class Node:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def keeper():
    clock = Clock()
    keeper = CollectorKeeper(RequestsInFlight(), clock=clock)
    yield keeper, clock
    keeper.stop()
    gc.unfreeze()


def cycle_frozen_by(keeper: CollectorKeeper) -> weakref.ref:
    """A cycle alive at a tick (frozen by it), dead right after."""
    node = Node()
    alive = weakref.ref(node)
    assert keeper.tick() is False
    del node
    gc.collect()
    assert alive() is not None, "a frozen cycle was walked by a full collection"
    return alive


def test_frozen_cyclic_garbage_is_collected_when_the_worker_is_calm_after_the_release_interval(keeper):
    keeper, clock = keeper
    alive = cycle_frozen_by(keeper)
    keeper.in_flight.count = CALM_REQUESTS  # calm at the exact limit
    clock.now += RELEASE_SECONDS - 0.001
    assert keeper.tick() is False
    gc.collect()
    assert alive() is not None
    clock.now += 0.001
    assert keeper.tick() is True
    assert alive() is None
    assert gc.get_freeze_count() > 0  # what lives on is frozen again


def test_a_busy_worker_keeps_its_frozen_objects_until_the_hour_is_up(keeper):
    keeper, clock = keeper
    alive = cycle_frozen_by(keeper)
    keeper.in_flight.count = CALM_REQUESTS + 1  # one request over calm: an on-sale rush, say
    clock.now += RELEASE_SECONDS
    assert keeper.tick() is False
    clock.now += RELEASE_AT_LEAST_SECONDS - RELEASE_SECONDS - 0.001
    assert keeper.tick() is False
    gc.collect()
    assert alive() is not None
    clock.now += 0.001
    assert keeper.tick() is True
    assert alive() is None


def test_the_next_release_counts_from_the_last_one(keeper):
    keeper, clock = keeper
    cycle_frozen_by(keeper)
    clock.now += RELEASE_SECONDS
    assert keeper.tick() is True
    alive = cycle_frozen_by(keeper)
    clock.now += RELEASE_SECONDS - 0.001
    assert keeper.tick() is False
    assert alive() is not None


def test_the_keepers_thread_ticks_until_stopped(keeper):
    keeper, clock = keeper
    keeper.start(every=0.01)
    keeper.start(every=0.01)  # once per process
    assert sum(t.name == "collector-keeper" for t in threading.enumerate()) == 1
    deadline = time.monotonic() + 5
    while keeper.last_release is None:
        assert time.monotonic() < deadline, "the keeper's thread did not tick"
        time.sleep(0.01)
    keeper.stop()
    time.sleep(0.05)
    gc.unfreeze()
    time.sleep(0.05)
    assert gc.get_freeze_count() == 0, "a stopped keeper froze again"


@pytest.mark.django_db
def test_the_web_application_counts_open_streams_and_starts_its_keeper():
    sid = str(make_session()["_id"])

    async def scenario():
        before = asgi.requests_in_flight.count
        stream = await production_asgi.request(reverse("booking:seat_live", kwargs={"session_id": sid}))
        assert asgi.requests_in_flight.count == before + 1
        await stream.close()
        assert asgi.requests_in_flight.count == before

    push.reset_hub()
    try:
        with override_settings(WEB_GC_FREEZE_SECONDS=3600):
            run_async(scenario)
        assert any(t.name == "collector-keeper" for t in threading.enumerate())
    finally:
        asgi.collector_keeper.stop()
        push.reset_hub()  # the stream started this process's change stream
