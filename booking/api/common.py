"""What the API's endpoints share: ids from the path, the error body, idempotent POSTs."""

import json
from collections.abc import Callable

from bson import ObjectId
from bson.errors import InvalidId
from django.http import HttpResponse
from django.utils.translation import gettext
from ninja.errors import HttpError

from booking.api.auth import token_of
from booking.core.errors import BookingError, InvalidRequest
from booking.web import idempotency
from booking.web.errors import status_for

ERROR_CODES = {400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict"}
ERROR_CODES.update({422: "idempotency_key_reused", 429: "rate_limited"})


def error_body(status: int, message: str, fields: dict | None = None) -> dict:
    return {"error": ERROR_CODES.get(status, "error"), "message": message, "fields": fields or {}}


def json_response(status: int, body) -> HttpResponse:
    return HttpResponse(json.dumps(body, default=str), status=status, content_type="application/json; charset=utf-8")


class NotFoundHere(HttpError):
    """An id that names nothing this token may see: malformed, unknown or another theater's."""

    def __init__(self, what: str):
        super().__init__(404, what)


def path_id(raw: str, missing: str) -> ObjectId:
    if not isinstance(raw, str) or len(raw) != 24:
        raise NotFoundHere(missing)
    try:
        return ObjectId(raw)
    except (InvalidId, TypeError):
        raise NotFoundHere(missing) from None


def booking_error_answer(exc: BookingError) -> tuple[int, dict]:
    status = status_for(exc)
    fields = exc.details.get("fields", {}) if isinstance(exc, InvalidRequest) else {}
    return status, error_body(status, exc.message, {k: str(v) for k, v in fields.items()})


def idempotent(request, run: Callable[[], tuple[int, dict]]) -> HttpResponse:
    """Run a POST once per ``Idempotency-Key`` (booking/web/idempotency.py); without the header,
    just run it. A domain refusal is an answer too, given again to a retry."""

    def answered() -> idempotency.Answer:
        try:
            status, body = run()
        except BookingError as exc:
            status, body = booking_error_answer(exc)
        return idempotency.Answer(status, json.loads(json.dumps(body, default=str)))

    key = request.headers.get("Idempotency-Key")
    if key is None:
        answer = answered()
        return json_response(answer.status, answer.body)
    if not idempotency.valid_key(key):
        message = gettext("An Idempotency-Key is 1 to 255 printable characters without spaces.")
        return json_response(400, error_body(400, message, {"Idempotency-Key": message}))
    token = token_of(request)
    try:
        answer = idempotency.once(
            owner=str(token["_id"]),
            key=key,
            request_fingerprint=idempotency.fingerprint(request.method, request.path, request.body),
            run=answered,
        )
    except idempotency.KeyReused:
        message = gettext("This Idempotency-Key was used with another request.")
        return json_response(422, error_body(422, message))
    except idempotency.StillRunning:
        message = gettext("A request with this Idempotency-Key is still running; try again shortly.")
        return json_response(409, error_body(409, message))
    response = json_response(answer.status, answer.body)
    if answer.replayed:
        response["Idempotent-Replayed"] = "true"
    return response
