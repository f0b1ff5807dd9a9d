"""The pushed panels of one look (``queue_panel.PanelBatch``): rendered once with stand-ins and
each buyer's figures put in, they must read exactly as the panel rendered for that buyer."""

from datetime import UTC, datetime, timedelta

import pytest
from bson import ObjectId
from django.utils import translation

from booking.presale import queue_panel
from booking.sales import waiting_room

T0 = datetime(2031, 3, 1, 10, 0, tzinfo=UTC)


def config(rate):
    return waiting_room.RoomConfig(
        queue_id=ObjectId(),
        session_ids=(),
        opens_at=T0 - timedelta(hours=1),
        on_sale_at=T0,
        rate=rate,
        paused=False,
        rev=1,
        start=T0 + timedelta(days=1),
        name="Hamlet",
        theater="Grand Hall",
    )


def context(room, position, waiting, note="", *, sold_out=False, seats_back_ms=0):
    now = int(T0.timestamp() * 1000) + 60_000
    result = waiting_room.PollResult(
        state="waiting",
        position=position,
        waiting=waiting,
        rate=room.rate,
        note=note,
        on_sale_ms=now - 1,
        now_ms=now,
        sold_out=sold_out,
        seats_back_ms=seats_back_ms,
    )
    return {**queue_panel.base_context(room, room.queue_id), **queue_panel.status_context(room, result)}


@pytest.fixture
def rendered(monkeypatch) -> list:
    """The contexts the panel template is rendered with from now on (the renders still happen)."""
    contexts: list = []
    real = queue_panel.render_status

    def counted(ctx):
        contexts.append(ctx)
        return real(ctx)

    monkeypatch.setattr(queue_panel, "render_status", counted)
    return contexts


@pytest.mark.parametrize("language", ["en", "de"])
def test_every_buyers_panel_reads_as_if_rendered_for_them(language):
    rooms = [config(1), config(300)]
    cases = [
        (room, position, waiting, note)
        for room in rooms
        for position, waiting in [(1, 1), (2, 2), (3, 3), (4, 1500), (57, 60), (1234, 5000), (123_456, 200_000)]
        for note in ("", "left", "restored")
    ]
    batch = queue_panel.PanelBatch()
    with translation.override(language):
        for room, position, waiting, note in cases:
            ctx = context(room, position, waiting, note)
            assert batch.render(ctx) == queue_panel.render_status(ctx), (position, waiting, note)


def test_a_batch_renders_once_per_language_and_note_not_once_per_buyer(rendered):
    room = config(300)
    batch = queue_panel.PanelBatch()
    with translation.override("en"):
        panels = [batch.render(context(room, position, 500)) for position in range(3, 103)]
    assert len(rendered) == 1 and len(set(panels)) == 100


@pytest.mark.parametrize("language", ["en", "de"])
def test_every_buyers_sold_out_panel_reads_as_if_rendered_for_them(language):
    back = int(T0.timestamp() * 1000) + 20 * 60_000
    batch = queue_panel.PanelBatch()
    with translation.override(language):
        for room in (config(1), config(300)):
            for position, note, seats_back_ms in [(1, "", 0), (2, "left", back), (40, "", back), (5000, "restored", 0)]:
                ctx = context(room, position, 6000, note, sold_out=True, seats_back_ms=seats_back_ms)
                assert ctx["state"] == "sold_out"
                assert batch.render(ctx) == queue_panel.render_status(ctx), (position, note, seats_back_ms)


def test_at_a_sell_out_the_panel_is_rendered_once_for_every_buyer(rendered):
    room = config(300)
    batch = queue_panel.PanelBatch()
    with translation.override("de"):
        panels = [batch.render(context(room, position, 500, sold_out=True)) for position in range(1, 101)]
    assert len(rendered) == 1
    assert all("Ausverkauft" in panel for panel in panels)
    delays = {panel.split('data-next-poll="')[1].split('"')[0] for panel in panels}
    assert len(delays) > 1  # each buyer's own (jittered) next look
