"""The waiting room's place in line pushed over Server-Sent Events (``booking/presale/queue_push.py``,
``queue_views.queue_live``), through production's application: the panel at once and as the line moves,
``go`` when it is the buyer's turn (the queue page then lets them in), the buyer's language, Redis
away, one look for every due viewer of a process, and a 204 (the page polls) wherever push cannot
serve."""

import asyncio
import json
import re
import time
from datetime import UTC, timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone, translation

from booking.core import mongo
from booking.presale import queue_panel, queue_push
from booking.sales import admission, holds, waiting_room
from booking.sales.cart_expiry import expire_stale_carts
from booking.tests import production_asgi
from booking.tests.factories import make_session
from booking.tests.headers import GERMAN
from booking.tests.ports import free_port
from booking.tests.presale.test_waiting_room_views import open_room, queue_path, url
from booking.tests.threads import in_thread, run_async
from booking.web import push

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _looked_at_often(settings):
    settings.BOOKING_QUEUE_POLL_SECONDS = 0.2  # near the front the panel is pushed this often,
    settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 1  # and at least this often further back


def live_path(config) -> str:
    return url("queue_live", queue_id=str(config.queue_id))


def waiting_buyer(config) -> Client:
    """A buyer who opened the queue page (it gave them their buyer cookie and their place)."""
    client = Client()
    assert client.get(queue_path(config)).status_code == 200
    return client


async def open_stream(client: Client, config, headers: dict | None = None):
    """The buyer's page's event stream (its cookies), as production's application serves it, read
    event by event: ``await next(name)``."""
    stream = await production_asgi.request(live_path(config), cookies=client.cookies, headers=headers)
    assert stream.status == 200 and stream.headers["content-type"] == "text/event-stream"
    assert (await stream.next_chunk()).startswith(b"retry: ")
    seen: list[tuple[str, dict]] = []

    async def next_event(name: str, timeout: float = 5) -> dict:
        """The next event of that name within ``timeout`` seconds (the others before it skipped)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            while seen:
                event, data = seen.pop(0)
                if event == name:
                    return data
            left = deadline - asyncio.get_running_loop().time()
            for raw in (await stream.next_chunk(max(0.0, left))).decode().split("\n\n"):
                lines = dict(line.split(": ", 1) for line in raw.split("\n") if line and not line.startswith(":"))
                if "event" in lines:
                    seen.append((lines["event"], json.loads(lines["data"])))

    return next_event


def test_a_waiting_buyer_sees_the_place_pushed_then_is_sent_in_at_their_turn():
    session, config = open_room(on_sale=-1, rate=1)  # one buyer a minute: the first caller is let in
    waiting_room.poll(config, "s:first")
    waiting_room.poll(config, "s:second")
    buyer = waiting_buyer(config)

    async def scenario():
        next_event = await open_stream(buyer, config)
        panel = (await next_event("status"))["html"]
        assert "You are in line" in panel and "<strong>2</strong>" in panel and "1 person is ahead of you." in panel
        await asyncio.to_thread(waiting_room.set_rate, config.queue_id, 60_000)  # staff let everybody in
        return await next_event("go")

    assert run_async(scenario) == {"url": queue_path(config) + "?turn=1"}  # answered by the sale's threads
    let_in = buyer.get(queue_path(config) + "?turn=1")  # where the page goes: the queue page issues the admission
    assert let_in.status_code == 302 and let_in["Location"] == url("session", session_id=str(session["_id"]))


def test_the_pushed_panel_is_in_the_buyers_language():
    _session, config = open_room(on_sale=-1, rate=1)
    waiting_room.poll(config, "s:first")
    buyer = waiting_buyer(config)

    async def scenario():
        next_event = await open_stream(buyer, config, {"Accept-Language": GERMAN["HTTP_ACCEPT_LANGUAGE"]})
        return (await next_event("status"))["html"]

    panel = run_async(scenario)
    assert "Ihr Platz in der Schlange" in panel and "Your place" not in panel


def test_before_the_sale_the_panel_counts_down_and_the_place_is_pushed_again_once_it_starts():
    _session, config = open_room(on_sale=0.05, rate=600)  # the sale starts in three seconds

    buyer = waiting_buyer(config)

    async def scenario():
        next_event = await open_stream(buyer, config)
        before = (await next_event("status"))["html"]
        assert "The sale starts in" in before
        return await next_event("go", timeout=10)  # looked at again just after the on-sale: let in

    assert run_async(scenario) == {"url": queue_path(config) + "?turn=1"}


def test_a_staff_pause_reaches_every_waiting_page_at_once_not_at_its_pace(settings):
    settings.BOOKING_QUEUE_POLL_SECONDS = settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 30  # next look: 24-36 s
    _session, config = open_room(on_sale=-1, rate=1)
    waiting_room.poll(config, "s:first")
    buyer = waiting_buyer(config)

    async def scenario():
        next_event = await open_stream(buyer, config)
        assert "You are in line" in (await next_event("status"))["html"]
        await asyncio.to_thread(waiting_room.pause, config.queue_id)
        return (await next_event("status", timeout=3))["html"]

    assert "The box office has paused the queue" in run_async(scenario)


def test_with_redis_unreachable_the_pushed_panel_says_paused_and_keeps_the_place(settings):
    _session, config = open_room(on_sale=-1, rate=1)
    waiting_room.poll(config, "s:first")
    buyer = waiting_buyer(config)
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there

    async def scenario():
        next_event = await open_stream(buyer, config)
        return (await next_event("status"))["html"]

    panel = run_async(scenario)
    assert "The queue is paused" in panel and "You keep your place." in panel


def test_one_look_serves_every_due_viewer_of_the_process_and_a_closed_page_is_forgotten():
    _session, config = open_room(on_sale=-1, rate=1)
    waiting_room.poll(config, "s:first")
    buyers = [waiting_buyer(config) for _ in range(3)]

    async def scenario():
        streams = [await open_stream(buyer, config) for buyer in buyers]
        panels = [(await next_event("status"))["html"] for next_event in streams]
        hub = queue_push.hub()
        assert hub.count(config.queue_id) == 3
        return panels, hub

    panels, hub = run_async(scenario)
    places = sorted(int(panel.split("<strong>")[1].split("<")[0]) for panel in panels)
    assert places == [1, 2, 3]  # each their own place (the first caller was let in)
    assert hub.count() == 0  # the streams ended with the loop: their viewers are gone


def test_a_place_joined_by_a_push_asks_the_page_to_keep_it_in_a_cookie():
    """A page opened before the room did has no ticket cookie; the push that joins the buyer asks
    for one ordinary poll, whose answer writes it (the way back to the place should Redis lose it)."""
    _session, config = open_room(opens=0.05, on_sale=10, rate=1)  # the room opens in three seconds
    buyer = waiting_buyer(config)
    assert waiting_room.ticket_cookie_name(config.queue_id) not in buyer.cookies

    async def scenario():
        next_event = await open_stream(buyer, config)
        assert "The waiting room opens soon" in (await next_event("status"))["html"]
        await next_event("ticket", timeout=10)

    run_async(scenario)


def test_where_push_cannot_serve_the_stream_answers_204_and_the_page_polls(settings):
    _session, config = open_room(on_sale=-1, rate=1)
    waiting_room.poll(config, "s:first")
    buyer = waiting_buyer(config)
    # WSGI (a thread per stream, so the page polls). In a thread: the Django test client runs an
    # async view through async_to_sync, which a Playwright test's loop left in this thread refuses.
    assert in_thread(lambda: buyer.get(live_path(config)).status_code) == 204

    async def answers():
        def status_of(path: str, method: str = "GET", cookies=buyer.cookies):
            return production_asgi.request(path, method=method, cookies=cookies)

        anonymous = (await status_of(live_path(config), cookies=None)).status  # no buyer cookie yet
        settings.BOOKING_QUEUE_PUSH = False
        off = (await status_of(live_path(config))).status
        bad = (await status_of("/queue/not-an-id/live/")).status
        posted = (await status_of(live_path(config), "POST")).status
        settings.BOOKING_QUEUE_PUSH = True
        head = await status_of(live_path(config), "HEAD")  # headers only, at once: no stream, no viewer kept
        return anonymous, off, bad, posted, head.status, await head.body(), queue_push.hub().count()

    assert run_async(answers) == (204, 204, 404, 405, 200, b"", 0)


def test_a_room_that_ended_answers_204_and_the_page_names_its_stream():
    _session, config = open_room(on_sale=-1, rate=1)
    waiting_room.poll(config, "s:first")
    buyer = waiting_buyer(config)
    page = buyer.get(queue_path(config)).content.decode()
    assert f'data-live="{live_path(config)}"' in page
    waiting_room.disable(config.queue_id)

    async def status():
        return (await production_asgi.request(live_path(config), cookies=buyer.cookies)).status

    assert run_async(status) == 204


def test_with_mongodb_unreachable_the_stream_answers_204_and_the_page_polls(settings):
    _session, config = open_room(on_sale=-1, rate=1)
    waiting_room.poll(config, "s:first")
    buyer = waiting_buyer(config)
    settings.MONGODB_URI = f"mongodb://127.0.0.1:{free_port()}/?directConnection=true"  # nothing listens
    settings.MONGODB_TIMEOUT_MS = 300
    mongo.close_client()
    waiting_room.forget_cached(config.queue_id)  # the stream must read the room's settings

    async def status():
        return (await production_asgi.request(live_path(config), cookies=buyer.cookies)).status

    try:
        assert run_async(status) == 204
    finally:
        mongo.close_client()  # the next test's client is the test database's again


def test_the_language_chosen_with_the_switch_is_the_pushed_panels():
    _session, config = open_room(on_sale=-1, rate=1)
    waiting_room.poll(config, "s:first")
    buyer = waiting_buyer(config)
    buyer.cookies[settings.LANGUAGE_COOKIE_NAME] = "de"

    async def scenario():
        next_event = await open_stream(buyer, config, {"Accept-Language": "en"})
        return (await next_event("status"))["html"]

    panel = run_async(scenario)
    assert "Ihr Platz in der Schlange" in panel and "Your place" not in panel


def hold_the_last_two_seats(session, config) -> holds.HoldResult:
    """The buyer "s:first", let in, holds the two seats of a hall of two: nothing is left."""
    tokens = {config.queue_id: admission.issue(config.queue_id, "s:first", admission.clock_ms())}
    context = holds.HoldContext(admitted_queues=admission.verified_queues("s:first", tokens))
    return holds.hold_seats(session["_id"], "s:first", None, ["0:0", "0:1"], context=context)


def queue_script_runs() -> int:
    """How often Redis ran a script by its digest: a look at the queue runs one per buyer."""
    return int(waiting_room.store().info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def test_a_sell_out_and_seats_coming_back_reach_every_waiting_page_at_once_not_at_its_pace(settings):
    """Sold out is pushed within 10 s however far away the page's next look is, with the time
    held seats may come back; when they do, the page says the line moves again."""
    settings.BOOKING_QUEUE_POLL_SECONDS = settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 30  # next look: 24-36 s
    session, config = open_room(make_session(grid="A: ss", prices={"s": 2000}), on_sale=-1, rate=1)
    assert waiting_room.poll(config, "s:first").state == "admitted"  # the one buyer let in this minute
    buyer = waiting_buyer(config)

    async def scenario():
        next_event = await open_stream(buyer, config)
        assert "You are in line" in (await next_event("status"))["html"]
        held = await asyncio.to_thread(hold_the_last_two_seats, session, config)
        sold_out = (await next_event("status", timeout=10))["html"]
        expires = mongo.carts().find_one({"_id": held.cart_id})["expiresAt"]
        await asyncio.to_thread(expire_stale_carts, expires + timedelta(seconds=1))
        return sold_out, expires, (await next_event("status", timeout=10))["html"]

    sold_out, expires, reopened = run_async(scenario)
    assert "Sold out" in sold_out and "You are in line" not in sold_out
    back = timezone.localtime(expires.replace(tzinfo=UTC)).strftime("%H:%M")
    assert "at the latest by <strong>" in sold_out and back in sold_out
    assert "You are in line" in reopened and "Sold out" not in reopened


def test_a_heartbeat_goes_only_to_a_stream_nothing_else_was_written_to_for_a_while(settings, monkeypatch):
    monkeypatch.setattr(push, "HEARTBEAT_SECONDS", 2.0)
    _session, config = open_room(on_sale=-1, rate=1)
    waiting_room.poll(config, "s:first")
    pushed_often, idle = waiting_buyer(config), waiting_buyer(config)

    async def chunks_within(buyer, seconds: float) -> list[bytes]:
        stream = await production_asgi.request(live_path(config), cookies=buyer.cookies)
        deadline, chunks = asyncio.get_running_loop().time() + seconds, []
        while (left := deadline - asyncio.get_running_loop().time()) > 0:
            try:
                chunks.append(await stream.next_chunk(left))
            except TimeoutError:
                break
        await stream.close()
        return chunks

    async def scenario():
        often = await chunks_within(pushed_often, 5.5)  # its place pushed every 0.2-1.2 s (the fixture)
        settings.BOOKING_QUEUE_POLL_SECONDS = settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 30  # next look: 24-36 s
        return often, await chunks_within(idle, 5.5)

    often, quiet = run_async(scenario)
    assert push.HEARTBEAT not in often and sum(b"event: status" in chunk for chunk in often) >= 3
    assert [chunk for chunk in quiet if b"event: status" in chunk] == [quiet[1]]  # the panel at once, then
    assert all(chunk == push.HEARTBEAT for chunk in quiet[2:])  # then heartbeats only,
    assert 1 <= len(quiet[2:]) <= 3  # each after 2-3 s with nothing written


def test_a_sell_out_reaches_the_whole_room_in_one_tick_without_a_look_at_the_queue_for_each(settings):
    """At a sell-out the hub tells every viewer from its own reading of the seats: no script run in
    Redis per buyer, every panel the one an ordinary look words (in each buyer's language), and the
    next looks spread over the sold-out pace."""
    settings.BOOKING_QUEUE_POLL_SECONDS = settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 30  # next look: 24-36 s
    session, config = open_room(make_session(grid="A: ss", prices={"s": 2000}), on_sale=-1, rate=1)
    assert waiting_room.poll(config, "s:first").state == "admitted"  # the one buyer let in this minute
    viewers = [queue_push.QueueViewer(config.queue_id, f"s:{n}", None, ("en", "de")[n % 2]) for n in range(40)]

    async def scenario():
        hub = queue_push.hub()
        for viewer in viewers:
            hub.add(viewer)
        places = [await asyncio.wait_for(viewer.take(), 5) for viewer in viewers]
        await asyncio.to_thread(hold_the_last_two_seats, session, config)
        runs = queue_script_runs()
        told = [await asyncio.wait_for(viewer.take(), 5) for viewer in viewers]
        script_runs, now = queue_script_runs() - runs, time.monotonic()
        return places, told, script_runs, [viewer.due - now for viewer in viewers]

    places, told, script_runs, next_looks = run_async(scenario)
    assert all(b"You are in line" in place or b"Sie stehen in der Warteschlange" in place for place in places)
    assert script_runs == 0
    panels = [json.loads(event.split(b"data: ", 1)[1])["html"] for event in told]
    assert all("Sold out" in panel for panel in panels[0::2]) and all("Ausverkauft" in panel for panel in panels[1::2])
    looked_at = waiting_room.poll_many(config, [(viewer.owner, None) for viewer in viewers[:2]])
    for viewer, result, panel in zip(viewers, looked_at, panels, strict=False):
        assert result.sold_out
        with translation.override(viewer.language):
            worded = queue_panel.render_status(
                {**queue_panel.base_context(config, config.queue_id), **queue_panel.status_context(config, result)}
            )
        assert _without_next_look(panel) == _without_next_look(worded)
    assert all(7 <= seconds <= 12 for seconds in next_looks)  # 8-12 s (10 s jittered), less the wait
    assert len({round(seconds, 1) for seconds in next_looks}) > 5


def test_a_buyer_let_in_just_before_the_sell_out_is_sent_on_at_the_next_look(settings):
    """The sell-out is told without asking the queue, so a buyer let in a moment before hears
    "sold out" first; the next look (at the sold-out pace) finds the admission and sends them on."""
    settings.BOOKING_QUEUE_POLL_SECONDS = 0.2
    settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 1  # the sold-out pace is 0.8-1.2 s then
    session, config = open_room(make_session(grid="A: ss", prices={"s": 2000}), on_sale=-1, rate=1)
    assert waiting_room.poll(config, "s:first").state == "admitted"
    waiting = queue_push.QueueViewer(config.queue_id, "s:waiting", None, "en")

    async def scenario():
        hub = queue_push.hub()
        hub.add(waiting)
        await asyncio.wait_for(waiting.take(), 5)  # the hub has seen the hall with seats left
        viewer = queue_push.QueueViewer(config.queue_id, "s:first", None, "en", due=time.monotonic() + 60)
        hub.add(viewer)  # let in, but not looked at (so not told) before the sell-out
        await asyncio.to_thread(hold_the_last_two_seats, session, config)
        return [await asyncio.wait_for(viewer.take(), 5) for _ in range(2)]

    told, sent_on = run_async(scenario)
    assert b"Sold out" in told
    assert sent_on.startswith(b"event: go") and b"turn=1" in sent_on


def _without_next_look(panel: str) -> str:
    return re.sub(r"\d+\.\d+s?\b", "N", panel)


def test_an_open_page_keeps_its_place_however_late_its_look_and_a_closed_one_loses_it(settings):
    """In a rush a look can come long after its time; a page whose stream is open is marked still
    there apart from its looks, so only a page that was closed leaves the line after the grace."""
    settings.BOOKING_QUEUE_GRACE_SECONDS = 2  # open pages are marked every second
    settings.BOOKING_QUEUE_POLL_SECONDS = settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 30  # looks 24-36 s apart
    _session, config = open_room(on_sale=-1, rate=1)
    assert waiting_room.poll(config, "s:first").state == "admitted"  # the one buyer let in this minute
    assert waiting_room.poll(config, "s:closed").state == "waiting"  # then its page was closed
    open_page = queue_push.QueueViewer(config.queue_id, "s:open", None, "en")

    async def scenario():
        queue_push.hub().add(open_page)
        await asyncio.wait_for(open_page.take(), 5)  # its first look; the next is 24 s away
        await asyncio.sleep(3.5)  # past the grace period
        return await asyncio.to_thread(
            lambda: [waiting_room.poll(config, owner, join=False) for owner in ("s:open", "s:closed")]
        )

    kept, dropped = run_async(scenario)
    assert kept.state == "waiting" and kept.position == 1
    assert dropped.state != "waiting"


def test_before_the_sale_a_hall_with_nothing_left_still_counts_down_to_it(settings):
    """The sold-out shortcut is for a sale that has begun: before it the panel counts down, as an
    ordinary look words it, whatever the seats."""
    settings.BOOKING_QUEUE_POLL_SECONDS = settings.BOOKING_QUEUE_POLL_MAX_SECONDS = 30  # next look: 24-36 s
    session, config = open_room(make_session(grid="A: ss", prices={"s": 2000}), on_sale=10, rate=1)
    viewer = queue_push.QueueViewer(config.queue_id, "s:early", None, "en")

    async def scenario():
        queue_push.hub().add(viewer)
        first = await asyncio.wait_for(viewer.take(), 5)
        await asyncio.to_thread(hold_the_last_two_seats, session, config)
        return first, await asyncio.wait_for(viewer.take(), 5)  # the flip has everybody looked at

    first, after = run_async(scenario)
    assert b"Sold out" not in first and b"Sold out" not in after
    assert b"wr-before_sale" in first and b"wr-before_sale" in after
