"""The waiting room's pages for buyers (issue 19; the queue is ``services/waiting_room.py``).

GET /queue/<queue id>/         the waiting room: countdown to the sale, then place in line and an
                               estimated wait; joins the buyer (one place per buyer cookie)
GET /queue/<queue id>/status   the same panel for htmx (polled; the answer names the next delay).
                               Admitted: the admission cookie is set and the buyer is sent to the
                               seat map (HX-Redirect, or 302 without htmx)

Each poll is one Redis round trip (the script admits whoever's turn it is and answers) and no
MongoDB read: the queue's settings are kept a few seconds per process. Redis unreachable: the
panel says the queue is paused and the buyer keeps the place. The queue id is the session's id,
or the performance's for a sectioned venue.

The rest of the site uses three helpers from here: ``session_gate`` (a queued session's page
sends a buyer without admission to the queue), ``admissions`` (the tokens a seat action brings,
verified for the hold service) and ``admission_refused`` (the 403 with a link to the queue).
"""

import random
from contextlib import contextmanager

from bson import ObjectId
from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape
from django.utils.translation import gettext, ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from . import buyer, clock, mongo
from .errors import NotFound
from .ids import object_id
from .services import admission, waiting_room

TEMPLATE = "booking/queue.html"


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


def queue_url(queue_id) -> str:
    return reverse("booking:queue", args=[str(queue_id)])


def _no_queue_target(queue_id: ObjectId) -> str | None:
    """A queue id whose room has ended (or never was): the performance's page, if it exists."""
    if mongo.sessions().find_one({"_id": queue_id}, {"_id": 1}) is not None:
        return reverse("booking:session", args=[str(queue_id)])
    if mongo.sessions().find_one({"performanceId": queue_id}, {"_id": 1}) is not None:
        return reverse("booking:performance", args=[str(queue_id)])
    return None


def has_admission(request, queue_id) -> bool:
    owner = buyer.owner(request)
    return admission.verify(request.COOKIES.get(admission.cookie_name(queue_id)), queue_id, owner)


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
    context = {
        "config": config,
        "queue_id": str(queue_id),
        "grace_minutes": max(1, round(settings.BOOKING_QUEUE_GRACE_SECONDS / 60)),
        "admission_minutes": max(1, round(settings.BOOKING_QUEUE_ADMISSION_SECONDS / 60)),
    }
    if owner is None:
        context.update(state="no_cookie", next_poll=settings.BOOKING_QUEUE_POLL_MAX_SECONDS)
        return _render(request, context, partial)
    ticket_name = waiting_room.ticket_cookie_name(queue_id)
    ticket = waiting_room.read_ticket(request.COOKIES.get(ticket_name), queue_id, owner)
    try:
        # HEAD (link previews, crawlers) looks without taking a place in line
        result = waiting_room.poll(config, owner, ticket=ticket, join=request.method != "HEAD")
    except waiting_room.QueueUnavailable:
        context.update(_unavailable(config))
        return _render(request, context, partial)
    if result.state == "admitted":
        response = _go(request, target_url(config))
        token = admission.issue(queue_id, owner, result.admitted_at_ms)
        left_ms = result.admitted_at_ms + settings.BOOKING_QUEUE_ADMISSION_SECONDS * 1000 - result.now_ms
        _cookie(response, admission.cookie_name(queue_id), token, left_ms // 1000)
        response.delete_cookie(ticket_name, samesite="Lax")
        return response
    context.update(_status_context(config, result))
    response = _render(request, context, partial)
    if result.state == "waiting" and ticket != (result.epoch, result.score):
        keep = int((config.start - clock.now()).total_seconds()) + 3600
        _cookie(response, ticket_name, waiting_room.sign_ticket(queue_id, owner, result.epoch, result.score), keep)
    return response


def _go(request, url: str) -> HttpResponse:
    if request.htmx:
        response = HttpResponse(status=200)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def _render(request, context: dict, partial: bool) -> HttpResponse:
    template = f"{TEMPLATE}#status" if partial else TEMPLATE
    return render(request, template, context)


def _seconds_until(ms: int, now_ms: int) -> int:
    return max(0, -(-(ms - now_ms) // 1000))


def _jitter(seconds: float) -> float:
    """Polls spread out, so the whole room does not ask at the same moment."""
    return round(seconds * random.uniform(0.8, 1.2), 1)  # noqa: S311 - not security


def _unavailable(config) -> dict:
    return {"state": "unavailable", "next_poll": _jitter(max(settings.BOOKING_QUEUE_POLL_SECONDS, 5))}


def _status_context(config, result: waiting_room.PollResult) -> dict:
    fast, slow = settings.BOOKING_QUEUE_POLL_SECONDS, settings.BOOKING_QUEUE_POLL_MAX_SECONDS
    context = {"result": result, "note": result.note, "sold_out": config.seats_available <= 0}
    if result.state != "waiting" or result.before_sale:  # the room is not open yet, or the sale
        until = _seconds_until(result.opens_ms if result.state != "waiting" else result.on_sale_ms, result.now_ms)
        context.update(
            state="not_open" if result.state != "waiting" else "before_sale",
            seconds=until,
            countdown=countdown(until),
            next_poll=_jitter(min(slow, max(fast, until / 2))),
        )
        return context
    wait = result.wait_seconds()
    if result.paused or wait is None:  # None only while paused (the rate is at least 1)
        context.update(state="paused", next_poll=_jitter(min(slow, max(fast, 5))))
        return context
    # near the front: ask often; far back: rarely (the estimate moves slowly there)
    next_poll = _jitter(min(slow, max(fast, wait / 10)))
    context.update(state="waiting", wait=wait, wait_text=wait_text(wait), next_poll=next_poll)
    return context


def countdown(seconds: int) -> str:
    """h:mm:ss (or m:ss under an hour), as queue.js shows it while counting down."""
    hours, rest = divmod(max(0, int(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def wait_text(seconds: int | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return gettext("less than a minute")
    minutes = round(seconds / 60)
    if minutes < 60:
        return ngettext("about %(count)d minute", "about %(count)d minutes", minutes) % {"count": minutes}
    hours, minutes = divmod(minutes, 60)
    return gettext("about %(hours)d h %(minutes)02d min") % {"hours": hours, "minutes": minutes}


# --- used by the session page and the seat actions (booking/views.py) ---


def session_gate(request, session: dict):
    """For a session's page: None when it is not queued; a redirect to the queue when the buyer
    has no admission; else the admission's details for the page (seconds left)."""
    queue_id = waiting_room.queue_of(session)
    if queue_id is None:
        return None
    token = request.COOKIES.get(admission.cookie_name(queue_id))
    if not admission.verify(token, queue_id, buyer.owner(request)):
        return redirect(queue_url(queue_id))
    expires_ms = admission.expiry_ms(token)
    if expires_ms is None:  # cannot happen: verify() passed, so the token is ours and well formed
        return redirect(queue_url(queue_id))
    seconds_left = max(0, (expires_ms - admission.clock_ms()) // 1000)
    return {"queue_id": queue_id, "seconds_left": seconds_left, "countdown": countdown(seconds_left)}


def performance_gate(request, sections: list[dict]):
    """For a sectioned performance's overview (its section documents as read, with
    ``waitingRoom.queueId``): a redirect to its queue when the buyer needs one. No read of its own."""
    queue_id = next((q for q in map(waiting_room.queue_of, sections) if q is not None), None)
    if queue_id is None or has_admission(request, queue_id):
        return None
    return redirect(queue_url(queue_id))


@contextmanager
def admissions(request, owner: str | None):
    """Around a seat action: the hold service accepts the admissions this request presents."""
    with admission.presenting(owner, admission.tokens_in(request.COOKIES)) as queues:
        yield queues


def admission_refused(request, error: admission.AdmissionRequired) -> HttpResponse:
    """A hold on a queued sale without admission: 403 and the way to the queue."""
    url = error.queue_url
    if request.htmx:
        body = (
            '<div id="notice" class="notice-area" role="status" aria-live="polite">'
            f'<p class="msg msg-error">{escape(error.message)} '
            f'<a href="{escape(url)}">Go to the waiting room</a></p></div>'
        )
        return HttpResponse(body, status=403)
    html = render_to_string("booking/queue_required.html", {"message": error.message, "url": url}, request=request)
    return HttpResponse(html, status=403)
