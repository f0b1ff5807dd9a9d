"""A web worker keeps long-lived objects out of Python's full collections, and still collects the
cyclic garbage among them: when the worker is calm after RELEASE_SECONDS, after
RELEASE_AT_LEAST_SECONDS whatever the load, or once its freezes have caught
RELEASE_AFTER_PAGES_CAUGHT pages in flight; a freeze waits for a moment with no page in flight, at
most FREEZE_SECONDS (booking/core/collector.py). Python's real collector is used; each test gives
back what it froze."""

import gc
import threading
import time
import weakref

import pytest
from django.test import override_settings
from django.urls import reverse

from booking.core import faults
from booking.core.collector import (
    CALM_REQUESTS,
    FREEZE_SECONDS,
    RELEASE_AFTER_PAGES_CAUGHT,
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
    assert keeper.tick() == "freeze"
    del node
    gc.collect()
    assert alive() is not None, "a frozen cycle was walked by a full collection"
    return alive


def test_frozen_cyclic_garbage_is_collected_when_the_worker_is_calm_after_the_release_interval(keeper):
    keeper, clock = keeper
    alive = cycle_frozen_by(keeper)
    keeper.in_flight.count = CALM_REQUESTS  # calm at the exact limit
    clock.now += RELEASE_SECONDS - 0.001
    assert keeper.tick() == "freeze"
    gc.collect()
    assert alive() is not None
    clock.now += 0.001
    survivor = Node()
    assert keeper.tick() == "release"
    assert alive() is None
    # what lives on is frozen again: in no generation a collection walks
    assert all(o is not survivor for o in gc.get_objects())


def test_a_busy_worker_keeps_its_frozen_objects_until_the_hour_is_up(keeper):
    keeper, clock = keeper
    alive = cycle_frozen_by(keeper)
    keeper.in_flight.count = CALM_REQUESTS + 1  # one request over calm: an on-sale rush, say
    clock.now += RELEASE_SECONDS
    assert keeper.tick() == "freeze"
    clock.now += RELEASE_AT_LEAST_SECONDS - RELEASE_SECONDS - 0.001
    assert keeper.tick() == "freeze"
    gc.collect()
    assert alive() is not None
    clock.now += 0.001
    assert keeper.tick() == "release"
    assert alive() is None


def test_the_next_release_counts_from_the_last_one(keeper):
    keeper, clock = keeper
    cycle_frozen_by(keeper)
    clock.now += RELEASE_SECONDS
    assert keeper.tick() == "release"
    alive = cycle_frozen_by(keeper)
    clock.now += RELEASE_SECONDS - 0.001
    assert keeper.tick() == "freeze"
    assert alive() is not None


def test_a_freeze_waits_for_no_page_in_flight_at_most_the_freeze_interval(keeper):
    keeper, clock = keeper
    keeper.tick()  # frozen at the start
    keeper.in_flight.enter(page=True)
    clock.now += FREEZE_SECONDS - 0.001
    node = Node()  # a page's cyclic garbage, made while it was in flight
    alive = weakref.ref(node)
    assert keeper.tick() is None  # not frozen: the page is still in flight
    del node
    gc.collect()
    assert alive() is None
    clock.now += 0.001
    assert keeper.tick() == "freeze"  # a page in flight for the whole interval is frozen with it
    assert keeper.pages_caught == 1
    keeper.in_flight.leave(page=True)
    keeper.in_flight.enter(page=False)  # an open stream does not hold a freeze back
    clock.now += 0.001
    assert keeper.tick() == "freeze"
    assert keeper.pages_caught == 1


def test_pages_caught_in_flight_release_the_frozen_objects_at_the_limit_whatever_the_load(keeper):
    keeper, clock = keeper
    alive = cycle_frozen_by(keeper)
    keeper.in_flight.count = CALM_REQUESTS + 1000  # busy
    keeper.in_flight.pages = 8
    for _ in range(RELEASE_AFTER_PAGES_CAUGHT // 8 - 1):
        clock.now += FREEZE_SECONDS
        assert keeper.tick() == "freeze"
    clock.now += FREEZE_SECONDS
    keeper.in_flight.pages = 7
    assert keeper.tick() == "freeze"
    assert keeper.pages_caught == RELEASE_AFTER_PAGES_CAUGHT - 1
    gc.collect()
    assert alive() is not None
    clock.now += FREEZE_SECONDS
    keeper.in_flight.pages = 1
    assert keeper.tick() == "freeze"
    assert keeper.pages_caught == RELEASE_AFTER_PAGES_CAUGHT
    assert keeper.tick() == "release"  # at the limit
    assert alive() is None
    assert keeper.pages_caught == 0


def test_the_keepers_thread_ticks_until_stopped(keeper):
    keeper, clock = keeper
    before = set(threading.enumerate())
    keeper.start(freeze_seconds=0.1)
    keeper.start(freeze_seconds=0.1)  # once per process
    assert [t.name for t in set(threading.enumerate()) - before] == ["collector-keeper"]
    deadline = time.monotonic() + 5
    while keeper.last_freeze is None:
        assert time.monotonic() < deadline, "the keeper's thread did not tick"
        time.sleep(0.01)
    keeper.stop()
    time.sleep(0.05)  # the tick under way ends
    marker = Node()
    time.sleep(0.3)  # thirty of its tick intervals
    assert any(o is marker for o in gc.get_objects()), "a stopped keeper froze again"


@pytest.mark.django_db
def test_the_web_application_counts_pages_and_open_streams_in_flight_and_starts_its_keeper():
    sid = str(make_session()["_id"])
    seen = {}

    def during_the_health_check(name: str) -> None:
        if name == "healthz.before_checks":
            seen["count"], seen["pages"] = asgi.requests_in_flight.count, asgi.requests_in_flight.pages

    async def scenario():
        before = (asgi.requests_in_flight.count, asgi.requests_in_flight.pages)
        stream = await production_asgi.request(reverse("booking:seat_live", kwargs={"session_id": sid}))
        assert (asgi.requests_in_flight.count, asgi.requests_in_flight.pages) == (before[0] + 1, before[1])
        health = await production_asgi.request("/healthz")
        await health.body()
        assert seen == {"count": before[0] + 2, "pages": before[1] + 1}
        await stream.close()
        assert (asgi.requests_in_flight.count, asgi.requests_in_flight.pages) == before

    push.reset_hub()
    faults.set_hook(during_the_health_check)
    try:
        with override_settings(WEB_GC_FREEZE_SECONDS=3600):
            run_async(scenario)
        assert any(t.name == "collector-keeper" for t in threading.enumerate())
    finally:
        faults.set_hook(None)
        asgi.collector_keeper.stop()
        push.reset_hub()  # the stream started this process's change stream
