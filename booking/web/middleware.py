import logging

from django.template.response import TemplateResponse
from pymongo.errors import AutoReconnect, ConnectionFailure, ServerSelectionTimeoutError

logger = logging.getLogger("booking.mongo")

MONGO_DOWN_ERRORS = (ServerSelectionTimeoutError, ConnectionFailure, AutoReconnect)


class MongoUnavailableMiddleware:
    """Answer 503 with a retry hint, not a stack trace, while MongoDB cannot be reached."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, MONGO_DOWN_ERRORS):
            return None
        logger.error("MongoDB unreachable while serving %s %s: %s", request.method, request.path, exception)
        response = TemplateResponse(request, "503.html", status=503)
        response["Retry-After"] = "5"
        return response.render()
