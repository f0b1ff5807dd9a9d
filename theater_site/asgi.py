"""The web process's application, as production serves it (Procfile, Dockerfile, compose: gunicorn
with uvicorn workers).

Django runs every synchronous view of an ASGI process in one shared thread (asgiref's
``thread_sensitive``), so a worker would serve one page, hold or checkout at a time. Only the live
streams are async views; every other request goes to the WSGI application in a pool of
``WEB_THREADS`` threads (a2wsgi), as gunicorn's gthread worker serves it. The streams stay on the
event loop, with Django's ASGI handler.
"""

import os
from functools import lru_cache

from a2wsgi import WSGIMiddleware
from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.wsgi import get_wsgi_application
from django.urls import Resolver404, resolve

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "theater_site.settings")

# Threads per worker for the synchronous pages: what gthread's --threads 8 gave each worker.
WEB_THREADS = int(os.environ.get("WEB_THREADS", "8"))

streams = get_asgi_application()
pages = WSGIMiddleware(get_wsgi_application(), workers=WEB_THREADS)


@lru_cache(maxsize=4096)
def is_async_view(path: str) -> bool:
    """Whether the URL's view is a coroutine (a live stream): then the event loop serves it."""
    try:
        match = resolve(path)
    except Resolver404:
        return False
    return iscoroutinefunction(match.func)


async def application(scope, receive, send):
    if scope["type"] == "http" and not is_async_view(scope["path"]):
        await pages(scope, receive, send)
    else:
        await streams(scope, receive, send)


if settings.DEBUG:
    # Development serves static files itself, as runserver does (production: WhiteNoise).
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    application = ASGIStaticFilesHandler(application)
