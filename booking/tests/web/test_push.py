"""Push: one change stream per process fanned out to the viewers of each session (booking/web/push.py)
and the SSE view (booking/web/live.py). Runs on the test suite's devmongo replica set; the fallback
test starts a standalone devmongo, which refuses $changeStream as a standalone MongoDB does."""

import asyncio
import json
import threading
import time
from typing import Any

import pytest
from django.test import AsyncClient
from django.urls import reverse
from pymongo import MongoClient, monitoring

from booking.core import mongo
from booking.sales import holds
from booking.tests import production_asgi
from booking.tests.factories import make_session
from booking.tests.threads import in_thread, run_async
from booking.venues.seat_grid import FREE, HELD
from booking.web import push

pytestmark = [
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.usefixtures("no_hold_rate_limit"),
]


@pytest.fixture(autouse=True)
def _seats_one_by_one(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False  # the tests hold seats one by one


@pytest.fixture
def hub():
    h = push.Hub()
    assert h.available(wait=10), h.state
    yield h
    h.stop()


def parse_events(chunk: bytes) -> list[dict]:
    """The data of each event in one write (comments, e.g. heartbeats, skipped)."""
    return [
        json.loads(line[6:])
        for raw in chunk.decode().split("\n\n")
        for line in raw.split("\n")
        if line.startswith("data: ")
    ]


_read_ahead: dict[push.Subscriber, list[dict]] = {}  # events of a write not yet asked for


async def next_message(sub, timeout=5.0):
    waiting = _read_ahead.setdefault(sub, [])
    while not waiting:
        waiting.extend(parse_events(await asyncio.wait_for(sub.take(), timeout)))
    return waiting.pop(0)


async def no_message(sub, within=0.5):
    if _read_ahead.get(sub):
        raise AssertionError(f"unexpected message {_read_ahead[sub][0]}")
    try:
        chunk = await asyncio.wait_for(sub.take(), within)
    except TimeoutError:
        return True
    raise AssertionError(f"unexpected message {chunk!r}")


def hold(session, key, owner=None):
    return holds.hold_seats(session["_id"], owner or f"buyer-{key}", None, [key])


def test_message_from_change_takes_only_the_changed_cells():
    change = {
        "operationType": "update",
        "documentKey": {"_id": "S"},
        "updateDescription": {
            "updatedFields": {"seats.2.5": HELD, "version": 7, "seatsAvailable": 41, "reservations.0.total": 10},
            "removedFields": [],
        },
    }
    assert push.message_from_change(change) == ("S", {"v": 7, "seats": {"2:5": HELD}, "avail": 41})
    prices = {**change, "updateDescription": {"updatedFields": {"prices": {"s": 1}, "version": 8}}}
    assert push.message_from_change(prices) == ("S", {"v": 8, "reload": True})
    row = {**change, "updateDescription": {"updatedFields": {"seats.1": [0, 1], "version": 9}}}
    assert push.message_from_change(row)[1]["seats"] == {"1:0": 0, "1:1": 1}
    assert push.message_from_change({"operationType": "delete", "documentKey": {"_id": "S"}})[1]["reload"]


def test_a_hold_reaches_the_viewers_of_its_session_only_in_version_order(hub):
    session, other = make_session(), make_session(name="Other")

    async def scenario():
        mine, theirs = hub.subscribe(session["_id"]), hub.subscribe(session["_id"])
        elsewhere = hub.subscribe(other["_id"])
        held = [await asyncio.to_thread(hold, session, key) for key in ("0:0", "0:1", "0:2")]
        await asyncio.to_thread(holds.release_seats, session["_id"], "buyer-0:1", held[1].cart_id, ["0:1"])
        got = [await next_message(mine) for _ in range(4)]
        assert [m["v"] for m in got] == [session["version"] + i for i in range(1, 5)]
        assert got[0]["seats"] == {"0:0": HELD} and got[3]["seats"] == {"0:1": FREE}
        assert [await next_message(theirs) for _ in range(4)] == got
        assert await no_message(elsewhere)
        assert len(json.dumps(got[0])) < 200  # a few bytes per change, not the map
        for sub in (mine, theirs, elsewhere):
            hub.unsubscribe(sub)

    run_async(scenario)
    assert hub.viewers() == 0


def test_idle_viewers_cost_no_reads(hub):
    session = make_session()
    counter = CommandCounter()
    mongo.add_listener(counter)
    try:

        async def scenario():
            subs = [hub.subscribe(session["_id"]) for _ in range(200)]
            await asyncio.sleep(1.5)
            before = counter.count
            await asyncio.sleep(2.0)  # idle: nothing changes
            idle_commands = counter.count - before
            await asyncio.to_thread(hold, session, "1:1")
            messages = await asyncio.gather(*(next_message(s) for s in subs))
            assert {m["v"] for m in messages} == {session["version"] + 1}
            return idle_commands

        idle_commands = run_async(scenario)
    finally:
        mongo.remove_listener(counter)
    # the stream's getMore (awaiting on the server) is the one read, whatever the number of viewers
    assert idle_commands <= 4, idle_commands


class CommandCounter(monitoring.CommandListener):
    def __init__(self):
        self.count = 0
        self.names = []

    def started(self, event):
        self.count += 1
        self.names.append(event.command_name)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_a_killed_cursor_is_resumed_without_losing_changes(hub):
    session = make_session()

    async def scenario():
        sub = hub.subscribe(session["_id"])
        await asyncio.to_thread(hold, session, "0:0")
        assert (await next_message(sub))["v"] == session["version"] + 1
        cursor_id = hub.stream._cursor.cursor_id
        mongo.get_db().command("killCursors", "$cmd.aggregate", cursors=[cursor_id])
        await asyncio.to_thread(hold, session, "0:1")
        await asyncio.to_thread(hold, session, "0:2")
        got = [await next_message(sub) for _ in range(2)]
        assert [m["v"] for m in got] == [session["version"] + 2, session["version"] + 3]

    run_async(scenario)


def test_a_broken_stream_reopens_from_its_token(hub):
    """The stream dies under the hub (closed from outside); changes made before it is reopened
    arrive in order, none lost."""
    session = make_session()

    async def scenario():
        sub = hub.subscribe(session["_id"])
        await asyncio.to_thread(hold, session, "0:0")
        assert (await next_message(sub))["v"] == session["version"] + 1
        opened = hub.stats["opened"]
        hub.stream.close()  # the thread's next read fails: it reopens from its last token
        for key in ("0:1", "0:2", "0:3"):
            await asyncio.to_thread(hold, session, key)
        got = [await next_message(sub) for _ in range(3)]
        assert [m["v"] for m in got] == [session["version"] + i for i in (2, 3, 4)]
        assert hub.stats["opened"] > opened

    run_async(scenario)


def test_standalone_mongodb_refuses_change_streams_and_pages_poll(client, settings, monkeypatch):
    from devmongo import DevMongoServer

    server = DevMongoServer(port=0).start()  # no --replset: $changeStream answers 40573
    other: MongoClient[dict[str, Any]] = MongoClient(server.uri, serverSelectionTimeoutMS=3000)
    standalone = push.Hub(db=other["theater"])
    try:
        assert standalone.available(wait=5) is False
        assert standalone.state == push.UNAVAILABLE
        session = make_session()
        with monkeypatch.context() as patched:
            patched.setattr(push, "_hub", standalone)
            answer = in_thread(client.get, reverse("booking:seat_live", kwargs={"session_id": str(session["_id"])}))
        assert answer.status_code == 204  # EventSource stops; the page keeps its htmx poll
        page = client.get(reverse("booking:session", kwargs={"session_id": str(session["_id"])})).content.decode()
        assert 'hx-trigger="every 2000ms"' in page
    finally:
        standalone.stop()
        other.close()
        server.stop()


def test_push_off_answers_204_and_the_page_has_no_stream(client, settings):
    settings.BOOKING_PUSH = False
    session = make_session()
    sid = str(session["_id"])
    assert in_thread(client.get, reverse("booking:seat_live", kwargs={"session_id": sid})).status_code == 204
    assert "data-live" not in client.get(reverse("booking:session", kwargs={"session_id": sid})).content.decode()


@pytest.fixture
def process_hub():
    push.reset_hub()
    yield push.hub()
    push.reset_hub()


def test_sse_view_sends_hello_then_the_seats_another_buyer_holds(process_hub):
    session = make_session()
    sid = str(session["_id"])

    async def scenario():
        # as production's application serves it (theater_site/asgi.py: no middleware chain)
        stream = await production_asgi.request(reverse("booking:seat_live", kwargs={"session_id": sid}))
        assert stream.status == 200
        assert stream.headers["content-type"] == "text/event-stream"
        first = (await stream.next_chunk()).decode()
        assert "event: hello" in first and f'"v":{session["version"]}' in first
        await asyncio.to_thread(hold, session, "2:3", "buyer-b")
        event = (await stream.next_chunk()).decode()
        assert event.startswith("event: seats\n")
        data = json.loads(event.split("data: ", 1)[1])
        assert data == {"v": session["version"] + 1, "seats": {"2:3": HELD}, "avail": session["seatsAvailable"] - 1}
        assert process_hub.viewers() == 1
        await stream.close()  # the viewer hangs up: the handler ends the response
        assert process_hub.viewers() == 0  # and the viewer is forgotten

    run_async(scenario)


def test_head_on_the_stream_answers_headers_at_once_and_subscribes_nobody(process_hub):
    session = make_session()
    url = reverse("booking:seat_live", kwargs={"session_id": str(session["_id"])})

    async def head():
        response = await AsyncClient().head(url)
        return response.status_code, response["Content-Type"], response.content, process_hub.viewers()

    assert run_async(head) == (200, "text/event-stream", b"", 0)


def test_page_names_its_stream(client):
    session = make_session()
    sid = str(session["_id"])
    page = client.get(reverse("booking:session", kwargs={"session_id": sid})).content.decode()
    assert f'data-live="/sessions/{sid}/live/"' in page


def test_many_viewers_one_stream(hub):
    """A thousand viewers of one session: one message each per change, one stream read for all."""
    session = make_session()

    threads_before = threading.active_count()  # other tests in this process may have left some

    async def scenario():
        subs = [hub.subscribe(session["_id"]) for _ in range(1000)]
        started = time.perf_counter()
        await asyncio.to_thread(hold, session, "0:5")
        await asyncio.gather(*(next_message(s) for s in subs))
        return time.perf_counter() - started

    elapsed = run_async(scenario)
    assert elapsed < 5
    assert threading.active_count() - threads_before < 10  # not a thread per viewer


def test_a_change_is_encoded_once_for_all_its_viewers(hub):
    """The per-change work is done once: every viewer is handed the same bytes, not its own copy."""
    session = make_session()

    async def scenario():
        subs = [hub.subscribe(session["_id"]) for _ in range(500)]
        await asyncio.to_thread(hold, session, "0:6")
        chunks = [await asyncio.wait_for(sub.take(), 5) for sub in subs]
        assert parse_events(chunks[0]) == [
            {"v": session["version"] + 1, "seats": {"0:6": HELD}, "avail": session["seatsAvailable"] - 1}
        ]
        assert all(chunk is chunks[0] for chunk in chunks)
        for sub in subs:
            hub.unsubscribe(sub)

    run_async(scenario)


def test_a_viewer_that_stops_reading_delays_nobody_and_is_told_to_reload(process_hub, monkeypatch):
    """Through the SSE view: one viewer reads nothing (a stalled phone), another reads everything.
    Changes past the stalled one's bound replace what it missed by one "fetch the map once"; the
    reader gets every version in order meanwhile; the stalled one, reading again, reloads and then
    follows the changes from there."""
    monkeypatch.setattr(push, "QUEUE_SIZE", 5)
    session = make_session()
    url = reverse("booking:seat_live", kwargs={"session_id": str(session["_id"])})
    keys = ["1:0", "1:1", "1:2", "1:3", "1:5", "1:6", "1:7", "1:8", "2:1"]  # column 4 is the aisle

    async def scenario():
        stalled = aiter((await AsyncClient().get(url)).streaming_content)  # type: ignore[attr-defined]  # an SSE stream; the stub's response type has no streaming_content
        reader = aiter((await AsyncClient().get(url)).streaming_content)  # type: ignore[attr-defined]
        await anext(stalled)  # hello; then it reads nothing for a while
        await anext(reader)
        seen: list[dict] = []
        for key in keys:
            await asyncio.to_thread(hold, session, key)
            while len(seen) < len(keys[: keys.index(key) + 1]):
                seen += parse_events(await asyncio.wait_for(anext(reader), 5))
        assert [m["v"] for m in seen] == [session["version"] + i for i in range(1, 10)]
        (stalled_sub,) = [s for s in process_hub._subs[session["_id"]][asyncio.get_running_loop()] if s.overflows]
        assert len(stalled_sub.pending) <= push.QUEUE_SIZE
        backlog = parse_events(await asyncio.wait_for(anext(stalled), 5))
        assert backlog[0] == {"v": None, "reload": True}
        assert [m["v"] for m in backlog[1:]] == [session["version"] + i for i in range(7, 10)]
        await asyncio.to_thread(hold, session, "2:2")
        assert parse_events(await asyncio.wait_for(anext(stalled), 5))[0]["v"] == session["version"] + 10

    run_async(scenario)


def test_idle_viewers_get_heartbeats_from_one_timer(hub, monkeypatch):
    monkeypatch.setattr(push, "HEARTBEAT_SECONDS", 0.2)
    session = make_session()

    async def scenario():
        subs = [hub.subscribe(session["_id"]) for _ in range(300)]
        loop = asyncio.get_running_loop()
        assert hub._beating == {loop}
        assert [await asyncio.wait_for(sub.take(), 5) for sub in subs] == [push.HEARTBEAT] * 300
        for sub in subs:
            hub.unsubscribe(sub)
        await asyncio.sleep(0.5)
        assert hub._beating == set()  # the timer stops with the loop's last viewer

    run_async(scenario)
