"""The web process's application, as production serves it (Procfile, Dockerfile, compose: gunicorn
with uvicorn workers).

Django runs every synchronous view of an ASGI process in one shared thread (asgiref's
``thread_sensitive``), so a worker would serve one page, hold or checkout at a time. Only the live
streams are async views; every other request goes to the WSGI application in a pool of
``WEB_THREADS`` threads (a2wsgi), as gunicorn's gthread worker serves it, but for the waiting
room's pages, which have ``WAITING_ROOM_THREADS`` of their own. The streams stay on the event loop,
with Django's ASGI handler but without the middleware chain (``StreamHandler``). Objects that
outlive a second are kept out of Python's full collections (``booking/core/collector.py``): a
worker holding thousands of streams stood still for a second at each one.
"""

import asyncio
import os
from collections.abc import Awaitable, Callable
from contextlib import closing
from functools import lru_cache
from typing import Any, cast

from a2wsgi import WSGIMiddleware
from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.core.wsgi import get_wsgi_application
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.urls import Resolver404, ResolverMatch, resolve, set_script_prefix
from django.utils.log import log_response

from booking.core import collector
from booking.presale import queue_push

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "theater_site.settings")

# Threads per worker for the synchronous pages: what gthread's --threads 8 gave each worker.
WEB_THREADS = int(os.environ.get("WEB_THREADS", "8"))


class StreamHandler(ASGIHandler):
    """Django's ASGI handler for the live streams (the async views), calling the view itself.

    A stream reads only its URL, the buyer cookie and the language, and uses no Django database
    connection, so it needs neither the middleware chain nor the request signals (whose receivers
    close database connections). Five of the chain's middlewares are synchronous, and the signals'
    receivers too: under Django's own handler each stream opened paid a thread hop for each and a
    one-thread executor of its own (``ThreadSensitiveContext``), about 2.7 ms of CPU on the event
    loop, the largest part of a waiting buyer's arrival in an on-sale rush. The URL is resolved
    once per path (``resolved``), as ``server_for`` did to send the request here: resolving every
    stream's URL again through the site's patterns was 4 % of a web worker's CPU in a rush.
    """

    def __init__(self) -> None:
        super().__init__()
        # An exception in a view becomes Django's error response (404, 403, 400 or 500), as in the chain.
        self.view_response = cast(
            Callable[[HttpRequest], Awaitable[HttpResponseBase]], convert_exception_to_response(self._call_view)
        )

    async def __call__(self, scope, receive, send):
        """As ``ASGIHandler.handle``: the answer is sent until it ends or the client hangs up
        (which cancels it: a stream's generator is closed), without the request signals."""
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        try:
            body = await self.read_body(receive)
        except RequestAborted:
            return
        with closing(body):
            set_script_prefix(get_script_prefix(scope))
            request, error = self.create_request(scope, body)
            if error is not None:  # a body Django refuses (too large, not UTF-8)
                await self.send_response(error, send)
                return
            hang_up = asyncio.ensure_future(self.listen_for_disconnect(receive))
            answer = asyncio.ensure_future(self._answer(request, send))
            try:
                await asyncio.wait({hang_up, answer}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                hang_up.cancel()
                answer.cancel()
                await asyncio.gather(hang_up, answer, return_exceptions=True)
            if not answer.cancelled() and answer.exception() is not None:
                raise cast(BaseException, answer.exception())

    async def _answer(self, request, send) -> None:
        response = await self.view_response(request)
        if response.status_code >= 400:
            logged = cast(HttpResponse, response)  # (django-stubs: any response is logged alike)
            log_response("%s: %s", response.reason_phrase, request.path, response=logged, request=request)
        await self.send_response(response, send)

    @staticmethod
    async def _call_view(request):
        match = resolved(request.path_info)
        if match is None or not iscoroutinefunction(match.func):
            raise Http404("not a live stream")
        request.resolver_match = match
        return await match.func(request, *match.args, **match.kwargs)


# Threads per worker for the waiting room's own pages (the queue page and its poll): few, so that in
# an on-sale rush the arrivals wait their turn there instead of taking the cores from the buyers who
# are choosing seats and paying, whose pages keep the WEB_THREADS.
WAITING_ROOM_THREADS = int(os.environ.get("WAITING_ROOM_THREADS", "2"))
WAITING_ROOM_VIEWS = {"booking:queue", "booking:queue_status"}

# (django-stubs type the WSGI handler's answer as a response object: it is an iterable of bytes)
wsgi = cast(Any, get_wsgi_application())  # sets Django up
pages = WSGIMiddleware(wsgi, workers=WEB_THREADS)
waiting_room_pages = WSGIMiddleware(wsgi, workers=WAITING_ROOM_THREADS)
streams = StreamHandler()


@lru_cache(maxsize=4096)
def resolved(path: str) -> ResolverMatch | None:
    """The URL's view, kept per path (the site's URLs do not change while a process runs)."""
    try:
        return resolve(path)
    except Resolver404:
        return None


@lru_cache(maxsize=4096)
def server_for(path: str) -> Callable:
    """Who answers the URL: the event loop for an async view (a live stream), the waiting room's
    threads for its pages, the page threads for everything else."""
    match = resolved(path)
    if match is None:
        return pages
    if iscoroutinefunction(match.func):
        return streams
    return waiting_room_pages if match.view_name in WAITING_ROOM_VIEWS else pages


TURN = queue_push.TURN_QUERY.encode()
requests_in_flight = collector.RequestsInFlight()
collector_keeper = collector.CollectorKeeper(requests_in_flight)


async def serve(scope, receive, send):
    if settings.WEB_GC_FREEZE_SECONDS:
        collector_keeper.start(freeze_seconds=settings.WEB_GC_FREEZE_SECONDS)
    server = server_for(scope["path"]) if scope["type"] == "http" else streams
    if server is waiting_room_pages and TURN in scope["query_string"]:
        server = pages  # a buyer whose turn came, on the way to the seat map: a buyer of the sale now
    page = server is not streams
    requests_in_flight.enter(page=page)
    try:
        await server(scope, receive, send)
    finally:
        requests_in_flight.leave(page=page)


application: Callable = serve
if settings.DEBUG:
    # Development serves static files itself, as runserver does (production: WhiteNoise).
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    application = ASGIStaticFilesHandler(cast(ASGIHandler, serve))  # it only calls what it wraps
