"""The waiting room's pages for buyers (the queue is ``sales/waiting_room.py``).

GET /queue/<queue id>/         the waiting room: countdown to the sale, then place in line and an
                               estimated wait; joins the buyer (one place per buyer cookie)
GET /queue/<queue id>/status   the same panel for htmx (polled; the answer names the next delay).
                               Admitted: the admission cookie is set and the buyer is sent to the
                               seat map (HX-Redirect, or 302 without htmx)
GET /queue/<queue id>/live/    the panel pushed as Server-Sent Events (ASGI; ``queue_push``): the
                               page stops polling while it hears them; 204 (the page polls) when
                               push is off, under WSGI, or without a buyer cookie

Each poll is one Redis round trip (the script admits whoever's turn it is and answers) and no
MongoDB read: the queue's settings are kept a few seconds per process. Redis unreachable: the
panel says the queue is paused and the buyer keeps the place. The queue id is the session's id,
or the performance's for a sectioned venue.

The gates the seat map's views use (``session_gate``, ``performance_gate``, ``admitted_queues``,
``admission_refused``) are booking/presale/context.py's.
"""

from asgiref.sync import sync_to_async
from bson import ObjectId
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from booking.core import clock, faults, mongo
from booking.core.errors import NotFound
from booking.core.ids import object_id
from booking.presale import queue_panel, queue_push
from booking.presale.context import ROOM_ENDED_QUERY, has_admission
from booking.sales import admission, waiting_room
from booking.web import buyer, live
from booking.web.middleware import MONGO_DOWN_ERRORS

RETRY_MS = 5000  # EventSource reconnects after this long when the stream drops


def _cookie(response, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max(1, int(max_age)),
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def target_url(config: waiting_room.RoomConfig) -> str:
    """Where an admitted buyer goes: the seat map, or a sectioned performance's overview."""
    if config.sectioned:
        return reverse("booking:performance", args=[str(config.queue_id)])
    return reverse("booking:session", args=[str(config.queue_id)])


def _no_queue_target(queue_id: ObjectId) -> str | None:
    """A queue id whose room has ended (or never was): the performance's page, if it exists."""
    if mongo.sessions().find_one({"_id": queue_id}, {"_id": 1}) is not None:
        return reverse("booking:session", args=[str(queue_id)]) + "?" + ROOM_ENDED_QUERY
    if mongo.sessions().find_one({"performanceId": queue_id}, {"_id": 1}) is not None:
        return reverse("booking:performance", args=[str(queue_id)])
    return None


# --- the waiting room ---


@never_cache
@require_safe
def queue_page(request, queue_id):
    return _answer(request, queue_id, partial=False)


@never_cache
@require_safe
def queue_status(request, queue_id):
    return _answer(request, queue_id, partial=True)


def _answer(request, raw_queue_id: str, *, partial: bool):
    faults.point("queue.answer")
    try:
        queue_id = object_id(raw_queue_id, "waiting room")
    except NotFound:
        return render(request, "404.html", {"message": gettext("No such waiting room.")}, status=404)
    config = waiting_room.get_config(queue_id)
    if config is None:
        target = _no_queue_target(queue_id)
        if target is None:
            return render(request, "404.html", {"message": gettext("No such waiting room.")}, status=404)
        return _go(request, target)  # the room has ended: seats are sold to everybody
    if has_admission(request, queue_id):
        return _go(request, target_url(config))
    # The page makes the buyer cookie; a poll without one (cookies off) does not join anybody.
    owner = buyer.owner(request, create=not partial)
    context = queue_panel.base_context(config, queue_id)
    if owner is None:
        context.update(state="no_cookie", next_poll=settings.BOOKING_QUEUE_POLL_MAX_SECONDS)
        return _render(request, context, partial)
    ticket_name = waiting_room.ticket_cookie_name(queue_id)
    ticket = waiting_room.read_ticket(request.COOKIES.get(ticket_name), queue_id, owner)
    try:
        # HEAD (link previews, crawlers) looks without taking a place in line
        result = waiting_room.poll(config, owner, ticket=ticket, join=request.method != "HEAD")
    except waiting_room.QueueUnavailable:
        context.update(queue_panel.unavailable_context())
        return _render(request, context, partial)
    if result.state == "admitted":
        response = _go(request, target_url(config))
        token = admission.issue(queue_id, owner, result.admitted_at_ms)
        left_ms = result.admitted_at_ms + settings.BOOKING_QUEUE_ADMISSION_SECONDS * 1000 - result.now_ms
        _cookie(response, admission.cookie_name(queue_id), token, left_ms // 1000)
        response.delete_cookie(ticket_name, samesite="Lax")
        return response
    supply = waiting_room.refresh_supply(config)  # the poll's own reading, kept in this process
    seats_left = supply.takeable if supply is not None else None
    context.update(queue_panel.status_context(config, result, seats_left=seats_left))
    response = _render(request, context, partial)
    if result.state == "waiting" and ticket != (result.epoch, result.score):
        keep = int((config.start - clock.now()).total_seconds()) + 3600
        _cookie(response, ticket_name, waiting_room.sign_ticket(queue_id, owner, result.epoch, result.score), keep)
    return response


@require_safe
async def queue_live(request, queue_id):
    """The waiting buyer's panel, pushed: a ``status`` event with the panel's HTML at once and
    whenever the place is looked at again, ``go`` when it is the buyer's turn (the page then loads
    the queue page, which lets them in), ``ticket`` when the page should poll once to keep its
    place in a cookie."""
    try:
        queue = object_id(queue_id, "waiting room")
    except NotFound:
        return HttpResponse(status=404)
    if request.method == "HEAD":  # headers only: a stream here would run (and keep the place) for nothing
        return HttpResponse(content_type="text/event-stream")
    owner = buyer.owner(request)
    if not isinstance(request, ASGIRequest) or not settings.BOOKING_QUEUE_PUSH or owner is None:
        return HttpResponse(status=204)  # the page polls (a thread per stream under WSGI; no buyer yet)
    found, config = waiting_room.kept_config(queue)  # in a rush, kept: no thread hop per stream
    if not found:
        try:
            config = await sync_to_async(waiting_room.get_config, thread_sensitive=False)(queue)
        except MONGO_DOWN_ERRORS:
            return HttpResponse(status=204)  # the page polls, and its polls say what is wrong
    if config is None:
        return HttpResponse(status=204)  # the room has ended: the page's next poll sends the buyer on
    ticket = waiting_room.read_ticket(request.COOKIES.get(waiting_room.ticket_cookie_name(queue)), queue, owner)
    # Streams run without the middleware chain (theater_site/asgi.py), so not after LocaleMiddleware.
    language = translation.get_language_from_request(request)
    viewer = queue_push.QueueViewer(queue, owner, ticket, language)
    hub = queue_push.hub()

    async def events():
        hub.add(viewer)  # here, not before: a stream that never starts must not keep a viewer (and its place)
        try:
            yield f"retry: {RETRY_MS}\n\n".encode()
            while True:
                yield await viewer.take()
        finally:
            hub.remove(viewer)

    return live.event_stream(events())


def _go(request, url: str) -> HttpResponse:
    if request.htmx:
        response = HttpResponse(status=200)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def _render(request, context: dict, partial: bool) -> HttpResponse:
    if partial:  # the poll: the panel alone, the same words as a pushed one (no request context in it)
        return HttpResponse(queue_panel.POLLED.render(context))
    return HttpResponse(queue_panel.PAGES.render(request, context))
