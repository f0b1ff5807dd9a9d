"""The waiting room's place in line, pushed: Server-Sent Events from
``/queue/<id>/live/`` (``queue_views.queue_live``), so a waiting buyer's page sends no requests.

Each event loop (one per ASGI web process) keeps one ``QueueHub``: its waiting viewers, each with
the time its next look is due, and one task that wakes every ``TICK_SECONDS``. The viewers of a
queue that are due are looked at together: one pipelined round trip to Redis runs the queue's
poll script for each of them (``waiting_room.poll_many``: it stamps that they are still there,
joins them once the room opens, admits whoever's turn it is and answers their places), their
panels are rendered (each in its buyer's language), and each gets one ``status`` event with its
panel's HTML. That look and render run in a worker thread, never in the event loop.

The pace is the poll's (``queue_panel.status_context``): every ``BOOKING_QUEUE_POLL_SECONDS``
near the front, up to ``BOOKING_QUEUE_POLL_MAX_SECONDS`` far back, jittered; before the sale, once
more just after it starts (spread over three seconds). So a waiting buyer costs Redis what a
polling one did, and no HTTP request per update. A viewer whose turn came gets ``go`` with the
queue page's address: that page (a plain GET) issues the admission cookie and sends the buyer to
the seat map, as a poll would. Redis unreachable: every due viewer is told the queue is paused
(places kept) and looked at again a few seconds later. When staff change the queue (pause,
resume, rate, end), every viewer of it is looked at on the next tick after this process sees the
new settings (they are kept 5 s per process), not at its own pace. When this process's reading of
the seats finds the hall sold out, every viewer is told so on that tick without a look at Redis for
each (``tell_sold_out``: the same panel per language), and the next looks go on at the sold-out pace.

Every open page is also marked still there a few times per grace period, apart from its looks
(``waiting_room.mark_present``, one write per thousand buyers): a look that comes late in a rush
must not cost an open page its place.

A viewer only reads what it is sent: a slow one lets its own list grow, up to ``QUEUE_SIZE``
events, then keeps only the newest (every event is a whole panel). A closed stream ends its
viewer; neither looked at nor marked any more, the buyer leaves the line after the grace period,
as when a polling page is closed.
"""

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async
from bson import ObjectId
from django.conf import settings
from django.urls import reverse
from django.utils import translation

from booking.core import clock
from booking.presale import queue_panel
from booking.sales import waiting_room
from booking.web import push

log = logging.getLogger(__name__)

TICK_SECONDS = 0.25  # how often the hub looks for viewers that are due
# Marks the queue page a buyer whose turn came is sent to, so that the sale's threads answer it, not
# the waiting room's few (theater_site/asgi.py). It lets nobody in: the queue page asks Redis.
TURN_QUERY = "turn=1"
QUEUE_SIZE = 8  # events kept for a viewer that does not read; older ones go (each is a whole panel)
ON_SALE_SPREAD_SECONDS = 3.0  # the looks just after the on-sale are spread over this long
SOLD_OUT, CHANGED = "sold out", "changed"  # what a hub's tick found changed in a queue (QueueHub._change)


@dataclass(eq=False)
class QueueViewer:
    """One open waiting-room page: whose, in which language, and when it is looked at next."""

    queue_id: ObjectId
    owner: str
    ticket: tuple[str, str] | None
    language: str
    due: float = 0.0  # time.monotonic() of the next look; 0: at once
    pending: list[bytes] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    last_put: float = field(default_factory=time.monotonic)  # when the stream was last written to

    def put(self, event: bytes) -> None:  # in the viewer's event loop; never waits
        self.pending.append(event)
        del self.pending[:-QUEUE_SIZE]
        self.last_put = time.monotonic()
        self.wake.set()

    async def take(self) -> bytes:
        while not self.pending:
            self.wake.clear()
            await self.wake.wait()
        events, self.pending = self.pending, []
        return b"".join(events)


class QueueHub:
    """This event loop's waiting viewers, and the task that looks at the due ones."""

    def __init__(self) -> None:
        self.viewers: dict[ObjectId, set[QueueViewer]] = {}
        self._revs: dict[ObjectId, tuple | None] = {}  # each queue's (settings revision, sold out) as last seen
        self._task: asyncio.Task | None = None
        self._marker: asyncio.Task | None = None
        self._beat = time.monotonic()
        self.looks = 0  # viewers looked at so far (bench/waiting.py)

    def add(self, viewer: QueueViewer) -> None:
        self.viewers.setdefault(viewer.queue_id, set()).add(viewer)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        if self._marker is None or self._marker.done():
            self._marker = asyncio.get_running_loop().create_task(self._mark_present())

    def remove(self, viewer: QueueViewer) -> None:
        group = self.viewers.get(viewer.queue_id)
        if group is not None:
            group.discard(viewer)
            if not group:
                del self.viewers[viewer.queue_id]
                self._revs.pop(viewer.queue_id, None)

    def count(self, queue_id: ObjectId | None = None) -> int:
        if queue_id is not None:
            return len(self.viewers.get(queue_id, ()))
        return sum(len(group) for group in self.viewers.values())

    async def _run(self) -> None:
        while self.viewers:
            await asyncio.sleep(TICK_SECONDS)
            now = time.monotonic()
            for queue_id, group in list(self.viewers.items()):
                change = await self._change(queue_id)
                if change == SOLD_OUT and await self._tell_sold_out(queue_id, list(group)):
                    continue
                if change is not None:  # staff paused, re-rated, ended, or seats came back: tell everybody now
                    for viewer in group:
                        viewer.due = now
                due = [viewer for viewer in group if viewer.due <= now]
                if not due:
                    continue
                for viewer in due:  # not looked at again by the next tick while this look runs
                    viewer.due = float("inf")
                try:
                    answers = await sync_to_async(look, thread_sensitive=False)(queue_id, due)
                except Exception:  # a bug must not end every viewer's updates: they are looked at again
                    log.exception("waiting room %s: pushing the places failed", queue_id)
                    answers = [(viewer, b"", 5.0) for viewer in due]
                self._deliver(answers)
            if now - self._beat >= push.HEARTBEAT_SECONDS / 2:
                self._beat = now
                self._heartbeat(now)

    async def _mark_present(self) -> None:
        """Every open page marked still there a few times per grace period, apart from the looks:
        in a rush a look can come late, and a buyer whose page is open must not lose the place
        for it (a closed page is not marked, and is dropped after the grace period as ever)."""
        while self.viewers:
            await asyncio.sleep(max(1.0, settings.BOOKING_QUEUE_GRACE_SECONDS / 4))
            for queue_id, group in list(self.viewers.items()):
                owners = [viewer.owner for viewer in group]
                try:
                    await sync_to_async(waiting_room.mark_present, thread_sensitive=False)(queue_id, owners)
                except waiting_room.QueueUnavailable:  # the looks say the queue is paused meanwhile
                    log.warning("waiting room %s: its open pages could not be marked present", queue_id)

    def _deliver(self, answers: list[tuple[QueueViewer, bytes, float]]) -> None:
        after = time.monotonic()
        self.looks += len(answers)
        for viewer, event, delay in answers:
            if event:
                viewer.put(event)
            viewer.due = after + delay

    async def _tell_sold_out(self, queue_id: ObjectId, viewers: list[QueueViewer]) -> bool:
        """Tell every viewer at once that the hall is sold out (``tell_sold_out``); False when
        this process's reading of the seats no longer says so (then everybody is looked at)."""
        try:
            answers = await sync_to_async(tell_sold_out, thread_sensitive=False)(queue_id, viewers)
        except Exception:  # the ordinary looks tell them instead
            log.exception("waiting room %s: telling the room it is sold out failed", queue_id)
            return False
        if answers is None:
            return False
        self._deliver(answers)
        return True

    def _heartbeat(self, now: float) -> None:
        """A comment to every stream nothing was written to for ``push.HEARTBEAT_SECONDS`` (so
        proxies do not close it as idle); a stream whose place was just pushed needs none. Looked
        at every half of that, so no stream is idle for more than one and a half of it."""
        for group in self.viewers.values():
            for viewer in group:
                if now - viewer.last_put >= push.HEARTBEAT_SECONDS:
                    viewer.put(push.HEARTBEAT)

    async def _change(self, queue_id: ObjectId) -> str | None:
        """What changed since the last tick: the queue's settings (kept 5 s per process) or whether
        it is sold out (its seats read every ``waiting_room.SUPPLY_SECONDS`` per process). None:
        nothing; ``SOLD_OUT``: only that the hall sold out; ``CHANGED``: anything else."""
        try:
            config, sold_out = await sync_to_async(_config_and_supply, thread_sensitive=False)(queue_id)
        except Exception:  # MongoDB away: the viewers' own looks go on (the settings kept so far)
            log.warning("waiting room %s: its settings could not be read", queue_id, exc_info=True)
            return None
        state = None if config is None else (config.rev, sold_out)
        before = self._revs.get(queue_id, state)
        self._revs[queue_id] = state
        if before == state:
            return None
        return SOLD_OUT if before is not None and state == (before[0], True) else CHANGED


def _config_and_supply(queue_id: ObjectId) -> tuple[waiting_room.RoomConfig | None, bool]:
    """The queue's settings and whether it is sold out (its seats read again, and published to
    Redis, when this process's reading is older than ``waiting_room.SUPPLY_SECONDS``)."""
    config = waiting_room.get_config(queue_id)
    supply = waiting_room.refresh_supply(config) if config is not None else None
    return config, supply is not None and supply.sold_out


def look(queue_id: ObjectId, viewers: list[QueueViewer]) -> list[tuple[QueueViewer, bytes, float]]:
    """Look at the queue for these viewers (one round trip to Redis) and word each one's panel:
    ``(viewer, event, seconds until its next look)`` for each."""
    config = waiting_room.get_config(queue_id)
    go_to_queue = reverse("booking:queue", args=[str(queue_id)]) + "?" + TURN_QUERY
    if config is None:  # the room has ended: the queue page sends the buyer on to the sale
        return [(viewer, push.sse_event("go", {"url": go_to_queue}), 60.0) for viewer in viewers]
    base = queue_panel.base_context(config, queue_id)
    try:
        results = waiting_room.poll_many(config, [(viewer.owner, viewer.ticket) for viewer in viewers])
    except waiting_room.QueueUnavailable:
        context = {**base, **queue_panel.unavailable_context()}
        return [(viewer, _status(viewer, context), context["next_poll"]) for viewer in viewers]
    answers = []
    events = StatusEvents()
    for language, group in _by_language(zip(viewers, results, strict=True)):
        with translation.override(language):
            for viewer, result in group:
                if result.state == "admitted":
                    answers.append((viewer, push.sse_event("go", {"url": go_to_queue}), 60.0))
                    continue
                context = {**base, **queue_panel.status_context(config, result)}
                delay = context["next_poll"]
                if context["state"] in ("not_open", "before_sale"):  # look again just after the moment
                    delay = min(delay, context["seconds"] + random.uniform(0.1, ON_SALE_SPREAD_SECONDS))  # noqa: S311
                event = events.status(context)
                if result.state == "waiting" and viewer.ticket != (result.epoch, result.score):
                    # A place the page's ticket cookie does not name yet (joined by a push, or put
                    # back): one ordinary poll writes the cookie that would bring the buyer back to it.
                    viewer.ticket = (result.epoch, result.score)
                    event += push.sse_event("ticket", {})
                answers.append((viewer, event, delay))
    return answers


def tell_sold_out(queue_id: ObjectId, viewers: list[QueueViewer]) -> list[tuple[QueueViewer, bytes, float]] | None:
    """The sold-out panel for every viewer, from this process's reading of the seats, without a
    look at Redis for each: a sell-out reaches a room of thousands within a tick. Their next looks
    are spread over the sold-out pace as ever, so a buyer let in just before it is sent on then. None
    when the reading no longer says sold out (seats came back) or the sale has not begun: the
    ordinary looks tell them then."""
    config = waiting_room.get_config(queue_id)
    supply = waiting_room.refresh_supply(config) if config is not None else None
    now = clock.now()
    if config is None or supply is None or not supply.sold_out or now < config.on_sale_at:
        return None  # (before the sale the panels count down to it, sold out or not)
    base = queue_panel.base_context(config, queue_id)
    slowest = settings.BOOKING_QUEUE_POLL_MAX_SECONDS
    answers = []
    events = StatusEvents()
    for language, group in _by_language((viewer, None) for viewer in viewers):
        with translation.override(language):
            for viewer, _nothing in group:
                context = {**base, **queue_panel.sold_out_context(supply.seats_back_at, now=now, slowest=slowest)}
                answers.append((viewer, events.status(context), context["next_poll"]))
    return answers


class StatusEvents:
    """The ``status`` events of one look, in the language active now: each panel rendered through
    one ``PanelBatch``; a sold-out one is the same for a whole room but for its next look (8 to
    12 s, in tenths of a second), so it is made once per language and next look."""

    def __init__(self) -> None:
        self.panels = queue_panel.PanelBatch()
        self._sold_out: dict[tuple, bytes] = {}

    def status(self, context: dict) -> bytes:
        if context["state"] != "sold_out" or context.get("note"):
            return push.sse_event("status", {"html": self.panels.render(context)})
        key = (translation.get_language(), context["seats_back_at"], context["next_poll"])
        event = self._sold_out.get(key)
        if event is None:
            event = self._sold_out[key] = push.sse_event("status", {"html": self.panels.render(context)})
        return event


def _by_language(pairs) -> list[tuple[str, list]]:
    """(viewer, anything) pairs grouped by the viewer's language: one switch of language each."""
    groups: dict[str, list] = {}
    for pair in pairs:
        groups.setdefault(pair[0].language, []).append(pair)
    return list(groups.items())


def _status(viewer: QueueViewer, context: dict) -> bytes:
    with translation.override(viewer.language):
        return push.sse_event("status", {"html": queue_panel.render_status(context)})


_hubs: dict[asyncio.AbstractEventLoop, QueueHub] = {}


def hub() -> QueueHub:
    """The running event loop's hub (made on first use)."""
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        for old in [other for other in _hubs if other.is_closed()]:
            del _hubs[old]
        found = _hubs[loop] = QueueHub()
    return found
