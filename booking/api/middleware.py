"""Every API call logged with its token's name: a line on the ``booking.api`` logger and a
document in ``api_calls`` (kept 30 days; web/api_tokens.log_call). Calls without a valid token
are logged on the logger only (there is no token to name).

HEAD is answered as GET without the body, as every page of the site is (monitors and link
checkers ask with HEAD); django-ninja itself routes only the methods an operation declares."""

import logging
import time

from pymongo.errors import PyMongoError

from booking.web import api_tokens

logger = logging.getLogger("booking.api")
PREFIX = "/api/"


class ApiCallLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(PREFIX):
            return self.get_response(request)
        started = time.perf_counter()
        head = request.method == "HEAD"
        if head:
            request.method = "GET"
        response = self.get_response(request)
        if head:
            request.method = "HEAD"
            response.content = b""
        millis = (time.perf_counter() - started) * 1000
        token = getattr(request, "api_token", None)
        name = token["name"] if token else "-"
        logger.info("api %s %s %s token=%r %.1fms", request.method, request.path, response.status_code, name, millis)
        if token is not None:
            try:
                api_tokens.log_call(
                    token=token, method=request.method, path=request.path, status=response.status_code, millis=millis
                )
            except PyMongoError as exc:  # the answer stands; the logger line above has the call
                logger.warning("api call not stored in api_calls: %s", exc)
        return response
