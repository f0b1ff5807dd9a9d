"""A session's page with its seat map, the map's live partial, and the members' presale code.

One view serves the full page and the htmx partial. The seat clicks on the map are views/seats.py.
"""

from bson import ObjectId
from django.conf import settings
from django.contrib import messages
from django.contrib.messages import get_messages
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.cache import patch_vary_headers
from django.utils.translation import gettext, gettext_noop
from django.views.decorators.http import require_POST, require_safe

from booking.core import clock
from booking.core.domain import SessionStatus
from booking.core.errors import NotFound
from booking.core.ids import object_id
from booking.presale.context import (
    arrival_gate,
    cart_context,
    current_cart,
    drop_canceled,
    error_page,
    load_seat_map,
    load_session_head,
    map_context,
    sale_notice,
    session_gate,
)
from booking.presale.views import ticket_kinds
from booking.sales import selectors
from booking.sales import sessions as session_service
from booking.web import buyer, live_versions, presenters, ratelimits, seatmap_html

SERVER_NOW_MARKER = "8c1d0e5a-server-now"  # in a shared page, replaced by the time of each answer


@require_safe
def session_page(request, session_id):
    sent_on = arrival_gate(request, session_id)
    if sent_on is not None:
        return sent_on
    try:
        cart, expired = current_cart(request)  # first: an expired hold frees its seats on this map
        head = load_session_head(session_id)
    except NotFound as exc:
        return error_page(request, exc, 404)
    if drop_canceled(cart, head):
        cart, expired = current_cart(request)
    # Waiting room: None, a redirect, or the admission. Before the map: in an on-sale rush every
    # arrival is sent on from here, and the map changes with every hold, so it would be read whole.
    turn = session_gate(request, head)
    if isinstance(turn, HttpResponse):
        return turn
    try:
        session, shared = load_seat_map(head)
    except NotFound as exc:  # deleted since the head was read
        return error_page(request, exc, 404)
    template = "booking/session.html#seatmap" if request.htmx and not request.htmx.boosted else "booking/session.html"

    def context(**extra):
        return {
            **map_context(request, session, cart, shared=shared),
            **cart_context(request, cart, expired, [session]),
            "card": presenters.session_card(session),
            "legend": seatmap_html.legend(session),
            "kinds": seatmap_html.ticket_kinds(session),
            "max_seats": settings.BOOKING_MAX_SEATS_PER_CART,
            "seat_counts": range(1, settings.BOOKING_MAX_SEATS_PER_CART + 1),
            "held_here": len(selectors.cart_seat_keys(cart, session["_id"])),
            "has_wheelchair": shared.wheelchair,
            "price_steps": sorted({p for p in session["prices"].values()}),
            "wheelchair_counts": range(1, settings.BOOKING_MAX_SEATS_PER_CART // 2 + 1),
            "admission": turn,
            "chosen_kinds": ticket_kinds.chosen_words(request, session),
            **extra,
        }

    chosen = ticket_kinds.chosen_kinds(request, session["_id"])
    if (
        cart is None
        and not expired
        and not turn
        and not chosen
        and not get_messages(request)
        and not buyer.presale_keys(request)
    ):
        # The same page for every viewer without a cart, a message, a presale or a waiting-room
        # turn: built once per version.
        tz = timezone.get_current_timezone_name()
        language = translation.get_language()  # the page's words and formats are the buyer's language's
        key = (session["_id"], session["version"], template, sale_notice(session), tz, language)
        extra = {"csrf_token": seatmap_html.CSRF_MARKER, "server_now_ms": SERVER_NOW_MARKER}
        html = seatmap_html.shared_page(key, lambda: render_to_string(template, context(**extra), request))
        html = html.replace(SERVER_NOW_MARKER, str(int(clock.now().timestamp() * 1000)))
        return HttpResponse(html.replace(seatmap_html.CSRF_MARKER, get_token(request)))
    return render(request, template, context())


@require_safe
def seat_map(request, session_id):
    """The live map partial. Unchanged session: a 304 from the version this process read a moment ago
    (``web/live_versions.py``), else after one tiny read; nothing else loaded."""
    try:
        sid = object_id(session_id, "performance")
    except NotFound as exc:
        return error_page(request, exc, 404)
    claimed = _etags(request.META.get("HTTP_IF_NONE_MATCH", ""))
    version = live_versions.fresh(sid)  # read by this process a moment ago
    if version is None or f'"{version}"' not in claimed:
        version = selectors.session_version(sid)
        if version is None:
            return error_page(request, gettext("No such performance."), 404)
        live_versions.keep(sid, version)
    etag = f'"{version}"'
    if etag in claimed:
        response = HttpResponse(status=304)
    else:
        cart, _expired = current_cart(request)
        shared = seatmap_html.cached_seat_map(sid, version)  # built here already: read only the small part
        session = selectors.get_session_head(sid) if shared else selectors.get_session(sid)
        if session is not None and shared is not None and session["version"] != version:
            shared, session = None, selectors.get_session(sid)  # changed again meanwhile
        if session is None or session.get("status") == SessionStatus.DRAFT:
            return error_page(request, gettext("No such performance."), 404)
        if cart is not None and session.get("status") == SessionStatus.CANCELED:
            # canceled while this buyer holds seats: the live map brings the cart's news with it
            if drop_canceled(cart, session):
                cart, _expired = current_cart(request)
            context = {
                **map_context(request, session, cart, shared=shared),
                **cart_context(request, cart, False, [session]),
                "oob": True,
            }
            response = render(request, "booking/session.html#seatmap-with-cart", context)
        else:
            response = render(
                request, "booking/session.html#seatmap", map_context(request, session, cart, shared=shared)
            )
        etag = f'"{session["version"]}"'
    response["ETag"] = etag
    response["Cache-Control"] = "private, no-cache"  # always ask; the answer is usually a 304
    patch_vary_headers(response, ["Cookie"])  # "held by you" differs per buyer
    return response


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


# --- members' presale: an access code unlocks holds for this buyer ---

WRONG_ACCESS_CODE = gettext_noop("That code does not open a presale for this performance.")
TOO_MANY_CODES = gettext_noop("Too many access codes tried from your connection. Please wait a minute and try again.")


@require_POST
def presale_access(request, session_id):
    """Check a members' access code. A right one puts the presale's key in the buyer cookie; a
    wrong one, a session without presale and an unknown id get the same answer after the same
    work (sales.sessions.unlock_presale), and every try is counted (BOOKING_ACCESS_CODE_RATE)."""
    if ratelimits.rate_exceeded(request, "booking.access", settings.BOOKING_ACCESS_CODE_RATE):
        response = error_page(request, gettext(TOO_MANY_CODES), 429)
        response["Retry-After"] = "60"
        return response
    sid = ObjectId(session_id) if ObjectId.is_valid(session_id) else None
    key = session_service.unlock_presale(sid, request.POST.get("code", ""))
    if key is None:
        messages.error(request, gettext(WRONG_ACCESS_CODE))
    else:
        buyer.add_presale_key(request, key)
        messages.success(request, gettext("Code accepted: you can choose seats in the members' presale."))
    return redirect("booking:session", session_id=session_id)
