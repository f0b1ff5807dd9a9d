"""The queue page kept around its panel (``queue_panel.PageSkeletons``): each buyer's page, with
their own panel, CSRF token and address put in, must read exactly as the page rendered whole."""

import re
from datetime import timedelta

from django.contrib.messages.storage.cookie import CookieStorage
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.utils import timezone, translation

from booking.presale import queue_panel
from booking.sales import waiting_room
from booking.tests.presale.test_queue_panel_batch import T0, config, context
from booking.tests.presale.test_waiting_room_views import open_room, queue_path

TOKEN = re.compile(r'"X-CSRFToken": "([^"]+)"')


def before_sale(room):
    now = int(T0.timestamp() * 1000) - 90_000
    result = waiting_room.PollResult(
        state="waiting", position=4, waiting=9, rate=room.rate, note="", on_sale_ms=now + 90_000, now_ms=now
    )
    return {**queue_panel.base_context(room, room.queue_id), **queue_panel.status_context(room, result)}


def every_state(room) -> list[dict]:
    base = queue_panel.base_context(room, room.queue_id)
    return [
        context(room, 57, 60),
        context(room, 1, 1),
        context(room, 1234, 5000, "left"),
        context(room, 40, 6000, sold_out=True, seats_back_ms=int((T0 + timedelta(minutes=20)).timestamp() * 1000)),
        before_sale(room),
        {**base, **queue_panel.unavailable_context()},
        {**base, "state": "no_cookie", "next_poll": 30},
    ]


def whole(request, page: str, ctx: dict) -> str:
    """The page rendered whole for this request, with the token the kept page put in."""
    (token,) = set(TOKEN.findall(page))
    return render_to_string(queue_panel.TEMPLATE, {**ctx, "csrf_token": token}, request)


def test_every_buyers_page_reads_as_if_rendered_whole_for_them():
    """One process's kept pages, in both languages and two time zones (the show's time is shown)."""
    room = config(300)
    paths = [f"/queue/{room.queue_id}/", f"/queue/{room.queue_id}/?turn=1", f"/queue/{room.queue_id}/?q=<\"&'>"]
    pages = queue_panel.PageSkeletons(queue_panel.PanelBatch())
    for language, zone in [("en", "Europe/Berlin"), ("de", "Europe/Berlin"), ("en", "America/New_York")]:
        with translation.override(language), timezone.override(zone):
            for ctx in every_state(room):
                for path in paths:  # the first builds the kept page, the others are put together from it
                    request = RequestFactory().get(path)
                    page = pages.render(request, ctx)
                    assert page == whole(request, page, ctx), (language, zone, ctx.get("state"), path)
    assert len(pages.kept()) == 6 and None not in pages.kept()  # kept, not rendered each time


def test_the_page_is_rendered_once_for_many_buyers(monkeypatch):
    renders: list[str] = []
    real = queue_panel.render_to_string

    def counted(name, *args, **kwargs):
        renders.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(queue_panel, "render_to_string", counted)
    room = config(300)
    pages = queue_panel.PageSkeletons(queue_panel.PanelBatch())
    with translation.override("en"):
        tokens = {TOKEN.search(pages.render(RequestFactory().get("/"), context(room, n, 500)))[1] for n in range(3, 53)}
    assert renders.count(queue_panel.TEMPLATE) == 1  # the page, for the first buyer
    assert len(renders) <= 3  # and its panel, to cut it out, and the kept panel of places from 3 on
    assert len(tokens) == 50  # each buyer's own token


def test_a_buyer_with_messages_gets_the_page_rendered_whole_and_sees_them():
    room = config(300)
    pages = queue_panel.PageSkeletons(queue_panel.PanelBatch())
    pages.render(RequestFactory().get("/"), context(room, 5, 10))  # the kept page
    request = RequestFactory().get("/")
    storage = CookieStorage(request)
    setattr(request, "_messages", storage)  # noqa: B010 - as MessageMiddleware sets it
    storage.add(20, "Your hold has ended.")
    page = pages.render(request, context(room, 5, 10))
    assert "Your hold has ended." in page
    assert storage.used  # shown, so gone with this answer


def test_a_page_whose_parts_are_not_found_as_expected_is_rendered_whole(monkeypatch):
    monkeypatch.setattr(queue_panel.PageSkeletons, "TOKENS_IN_PAGE", 3)  # the template writes the token twice
    room = config(300)
    pages = queue_panel.PageSkeletons(queue_panel.PanelBatch())
    for n in (5, 6):
        request, ctx = RequestFactory().get("/"), context(room, n, 10)
        page = pages.render(request, ctx)
        assert page == whole(request, page, ctx)
    assert pages.kept() == [None]


def test_each_buyers_page_carries_a_token_their_language_switch_is_accepted_with():
    _session, room = open_room(on_sale=-1, rate=1)
    waiting_room.poll(room, "s:first")  # let in: the buyers below wait
    for _buyer in range(2):
        client = Client(enforce_csrf_checks=True)
        page = client.get(queue_path(room)).content.decode()
        assert "You are in line" in page
        token = TOKEN.search(page)[1]
        switched = client.post("/i18n/setlang/", {"language": "de", "next": queue_path(room)}, HTTP_X_CSRFTOKEN=token)
        assert switched.status_code == 302
        assert "Sie stehen in der Warteschlange" in client.get(queue_path(room)).content.decode()
