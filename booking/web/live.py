"""GET /sessions/<id>/live/: a session's seat changes as Server-Sent Events (ASGI, async view).

The viewer waits on this process's fan-out (``booking.web.push``); nothing is read while it is idle.
Events:

* ``hello`` (at once): ``{"v": the newest version this process knows}``. The page compares it
  with the map it shows and fetches the map once when it is behind. The first viewer of a session
  in a process costs one tiny read of the version (Q3), later ones none.
* ``seats``: ``{"v": version, "seats": {"r:c": state}, "avail": n}``, or ``{"v": ..., "reload":
  true}`` when the change is more than seat states (the page fetches its map once).
* a comment every ``push.HEARTBEAT_SECONDS`` (keeps proxies from closing an idle stream).

Each event is encoded once per change by the hub and written as is: nothing per viewer but the write.

Answers 204 (EventSource then stops retrying and the page keeps polling) when push is off
(``BOOKING_PUSH``), the site is served by WSGI, or the server keeps no change streams (a
standalone MongoDB).
"""

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_safe

from booking.core.errors import NotFound
from booking.core.ids import object_id
from booking.sales import selectors
from booking.web import push
from booking.web.middleware import MONGO_DOWN_ERRORS

RETRY_MS = 3000  # EventSource reconnects after this long when the connection drops


@require_safe
async def session_live(request, session_id):
    try:
        sid = object_id(session_id, "performance")
    except NotFound:
        return HttpResponse(status=404)
    if request.method == "HEAD":  # headers only: a stream here would never end
        return HttpResponse(content_type="text/event-stream")
    if not isinstance(request, ASGIRequest):
        return HttpResponse(status=204)  # served by WSGI (a thread per stream): the page polls
    hub = push.hub()
    if not settings.BOOKING_PUSH or not await sync_to_async(hub.available, thread_sensitive=False)():
        return HttpResponse(status=204)
    sub = hub.subscribe(sid)  # before the version is read: a change from now on is queued
    try:
        version = hub.known.get(sid)
        if version is None:
            version = await sync_to_async(selectors.listed_session_version, thread_sensitive=False)(sid)
            if version is None:
                hub.unsubscribe(sub)
                return HttpResponse(status=404)
            hub.known[sid] = max(hub.known.get(sid, 0), version)
    except MONGO_DOWN_ERRORS:  # the page polls, and its polls say what is wrong
        hub.unsubscribe(sub)
        return HttpResponse(status=204)
    except BaseException:
        hub.unsubscribe(sub)
        raise

    async def events():
        try:
            yield f"retry: {RETRY_MS}\n".encode() + push.sse_event("hello", {"v": version})
            while True:
                yield await sub.take()  # the hub's heartbeat comes the same way
        finally:
            hub.unsubscribe(sub)

    return event_stream(events())


def event_stream(events) -> StreamingHttpResponse:
    """A Server-Sent Events answer written as it comes (also the waiting room's, queue_views)."""
    response = StreamingHttpResponse(events, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"  # nginx: do not buffer this answer
    return response
