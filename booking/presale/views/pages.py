"""The buyer's pages. Views parse input, call the engine (services write, selectors read), render.

One view serves the full page and the htmx partial. Engine errors become statuses in one place
(``STATUS_FOR``); a lost race on a seat click is not an error page: the refreshed map and a
message come back (htmx) or the buyer is sent back to the map with a message (plain form post).
"""

import io
from datetime import datetime, time, timedelta
from functools import partial
from typing import Any

import segno
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
from django.utils.translation import gettext, gettext_noop, ngettext
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django_htmx.http import reswap

from booking.core import clock, formatting
from booking.core.domain import CartState, SalePhase, SessionStatus, sale_phase
from booking.core.errors import (
    BookingError,
    CartExpired,
    CheckoutFailed,
    Conflict,
    InvalidRequest,
    NoAdjacentSeats,
    NotFound,
    OrphanSeat,
    SeatsTaken,
    SessionNotOnSale,
    TooManySeats,
    WheelchairSpaceNotDeclared,
)
from booking.core.ids import object_id
from booking.presale.forms import (
    BestAvailableForm,
    FindBookingForm,
    RemoveSeatForm,
    SeatForm,
    SeatsForm,
    WhatsOnFilterForm,
)
from booking.presale.views import queue as queue_views
from booking.sales import cart_expiry, holds, pricing, selectors
from booking.sales import carts as cart_service
from booking.sales import sessions as session_service
from booking.sales.admission import AdmissionRequired
from booking.venues import seat_words, venue_front
from booking.venues.seat_grid import FREE, HELD, seat_key
from booking.web import buyer, page_cache, presenters, ratelimits, seatmap_html

STATUS_FOR = {
    NotFound: 404,
    InvalidRequest: 400,
    TooManySeats: 400,
    OrphanSeat: 400,
    SeatsTaken: 409,
    NoAdjacentSeats: 409,
    CartExpired: 409,
    Conflict: 409,
    SessionNotOnSale: 409,
    CheckoutFailed: 409,
    AdmissionRequired: 403,  # a queued sale: the waiting room's admission is missing or ended
    WheelchairSpaceNotDeclared: 400,  # nothing changed; the message says how to ask for the space
}
LIVE_REFRESH_SECONDS = 2
SERVER_NOW_MARKER = "8c1d0e5a-server-now"  # in a shared page, replaced by the time of each answer
# Refusals a buyer answers by choosing other seats, not bad input: without JavaScript they are
# shown on the map the buyer returns to (htmx shows them in place, with their 400).
RULES_OF_CHOICE = (OrphanSeat, TooManySeats, WheelchairSpaceNotDeclared)


def status_for(error: BookingError) -> int:
    for cls in type(error).__mro__:
        if cls in STATUS_FOR:
            return STATUS_FOR[cls]
    return 400


# --- who is asking: the owner token and cart id, in the buyer cookie (booking/web/buyer.py) ---


def _current_cart(request) -> tuple[dict | None, bool]:
    """(the buyer's live cart or None, whether their hold has just run out).

    A cart found past its expiry is expired here and now (the engine's own expiry), so its seats
    are free on the map this buyer sees next rather than when the worker comes round.
    """
    owner = buyer.owner(request)
    cart = selectors.get_cart(owner, buyer.cart_id(request)) if owner else None
    if cart is None:
        return None, False
    live = cart_expiry.live_or_expire(cart, clock.now())
    # ran out: found past its hold (and expired just now), or expired already
    return live, live is None and cart["state"] in (CartState.ACTIVE, CartState.EXPIRED)


def _error_page(request, error: BookingError | str, status: int):
    message = error.message if isinstance(error, BookingError) else error
    template = "404.html" if status == 404 else "400.html"
    return render(request, template, {"message": message}, status=status)


# --- what's on ---


@require_safe
def whats_on(request):
    """Every viewer without a message gets the page kept for a moment (booking/web/page_cache.py): a
    hit is no MongoDB command and no template, and a browser holding the same page gets a 304."""
    template = "booking/whats_on.html#listing" if request.htmx and not request.htmx.boosted else "booking/whats_on.html"
    if get_messages(request):  # shown once, to this viewer: the page is theirs alone
        context, status = _whats_on_context(request)
        return render(request, template, context, status=status)

    refused = []

    def build() -> str | None:
        context, status = _whats_on_context(request)
        if status != 200:  # a bad filter: answered as it is, never kept
            refused.append(render(request, template, context, status=status))
            return None
        return render_to_string(template, {**context, "csrf_token": seatmap_html.CSRF_MARKER}, request)

    language, tz = translation.get_language(), timezone.get_current_timezone_name()
    page = page_cache.kept_page((template, language, tz, request.get_full_path()), build)
    if page is None:
        return refused[0]
    if page_cache.is_fresh(request, page):
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(page_cache.for_viewer(request, page))
    response["ETag"] = page_cache.etag(request, page)
    response["Cache-Control"] = "private, no-cache"  # always ask: the answer is a 304 while it is the same
    patch_vary_headers(response, ["Cookie", "HX-Request"])  # the CSRF token; the listing alone for htmx
    return response


def _whats_on_context(request) -> tuple[dict, int]:
    theaters = selectors.theaters()
    form = WhatsOnFilterForm(request.GET or None, theaters=theaters)
    query: dict[str, Any] = {}
    status = 200
    if form.is_bound and form.is_valid():
        tz = timezone.get_current_timezone()
        day = form.cleaned_data.get("date")
        if day:
            query["start_from"] = max(clock.now(), datetime.combine(day, time.min, tzinfo=tz))
            query["start_before"] = datetime.combine(day + timedelta(days=1), time.min, tzinfo=tz)
        if form.cleaned_data.get("theater"):
            query["theater_id"] = ObjectId(form.cleaned_data["theater"])
    elif form.is_bound:
        status = 400
    sessions = selectors.upcoming_sessions(**query) if status == 200 else []
    return {"form": form, "days": presenters.whats_on_days(sessions), "filtered": bool(query)}, status


# --- a session's page and its seat map ---


def _load_session(session_id: str) -> dict:
    session = selectors.get_session(object_id(session_id, "performance"))
    if session is None:
        raise NotFound(gettext("No such performance."))
    return session


def _sale_notice(session: dict, access=frozenset()) -> str:
    phase = sale_phase(session, clock.now(), access)
    if phase == SalePhase.CANCELED:
        return gettext("This performance has been canceled.")
    if phase == SalePhase.STARTED:
        return gettext("This performance has started; seats can no longer be booked.")
    if phase == SalePhase.CLOSED:
        return gettext("Sales for this performance have closed.")
    if phase == SalePhase.PRESALE:
        opens = formatting.sale_time(session["saleOpens"])
        return gettext("On sale to members until %(opens)s, to everyone from %(opens)s.") % {"opens": opens}
    if phase == SalePhase.NOT_YET:
        presale = session.get("presale")
        if presale and presale["key"] not in access:
            members = formatting.sale_time(presale["opens"])
            everyone = formatting.sale_time(session["saleOpens"])
            return gettext("On sale to members from %(members)s, to everyone from %(everyone)s.") % {
                "members": members,
                "everyone": everyone,
            }
        return gettext("On sale from %(opens)s.") % {"opens": formatting.sale_time(_opening(session, access))}
    if phase != SalePhase.OPEN:
        return gettext("This performance is not on sale.")
    if session.get("seatsAvailable", 0) <= 0:
        return gettext("This performance is sold out.")
    return ""


def _opening(session: dict, access) -> datetime:
    """When this viewer may first hold: a presale they unlocked, else the public on-sale."""
    presale = session.get("presale")
    return presale["opens"] if presale and presale["key"] in access else session["saleOpens"]


def _sale_clock(session: dict, access) -> dict:
    """A page before its on-sale time: the map is read-only and counts down to the second (server
    time sent along, static/booking/onsale.js), then becomes clickable without a reload."""
    phase = sale_phase(session, clock.now(), access)
    if phase not in (SalePhase.NOT_YET, SalePhase.PRESALE):
        return {"map_locked": False}
    opens = session["saleOpens"] if phase == SalePhase.PRESALE else _opening(session, access)
    return {
        "map_locked": True,
        "presale": bool(session.get("presale")) and session["presale"]["key"] not in access,
        "opens_ms": int(opens.timestamp() * 1000),
        "server_now_ms": int(clock.now().timestamp() * 1000),
    }


def _drop_canceled(cart: dict | None, session: dict) -> bool:
    """A performance canceled while this buyer held seats in it: the cart lets them go and says why
    (the cancelation drops them itself; this covers a cancelation interrupted before it got there)."""
    if cart is None or session.get("status") != SessionStatus.CANCELED:
        return False
    if not any(i["sessionId"] == session["_id"] for i in cart["items"]):
        return False
    cart_service.drop_canceled_session(cart["_id"], session)
    return True


def _load_session_page(session_id: str) -> tuple[dict, seatmap_html.SeatMapHtml]:
    """The session and its built map. When this process has built the map of the current version,
    one small read (no seat states, no layout rows); otherwise a second, full read builds it."""
    sid = object_id(session_id, "performance")
    session = selectors.get_session_head(sid)
    if session is None or session.get("status") == SessionStatus.DRAFT:
        raise NotFound(gettext("No such performance."))  # a draft is for staff only
    shared = seatmap_html.cached_seat_map(sid, session["version"])
    if shared is None:
        session = _load_session(session_id)
        shared = seatmap_html.seat_map_html(session)
    return session, shared


def _map_context(request, session: dict, cart: dict | None, picked=(), shared=None) -> dict:
    """``session`` needs its seat states and layout rows unless ``shared`` (its built map) is given."""
    mine = selectors.cart_seat_keys(cart, session["_id"])
    shared = shared or seatmap_html.seat_map_html(session)
    access = buyer.presale_keys(request)
    return {
        **_sale_clock(session, access),
        "session": session,
        "session_id": str(session["_id"]),
        "version": session["version"],
        "map_html": shared.for_viewer(mine, set(picked)),
        "map_width": shared.width,
        "category_css": seatmap_html.category_css(session),
        "refresh_ms": LIVE_REFRESH_SECONDS * 1000,
        "push": settings.BOOKING_PUSH,
        "sale_notice": _sale_notice(session, access),
        "front": venue_front.front_word(session),
    }


def _cart_context(request, cart: dict | None, expired: bool, known_sessions=()) -> dict:
    if cart is None:
        return {"cart": None, "cart_expired": expired, "groups": [], "total": 0, "seconds_left": 0}
    canceled = presenters.canceled_shows(cart)
    known = {s["_id"]: s for s in known_sessions}
    wanted = {i["sessionId"] for i in cart["items"]} - set(known)
    known.update(selectors.session_summaries(wanted))
    return {
        "cart": cart,
        "cart_expired": False,
        "groups": presenters.cart_groups(cart, known),
        "total": pricing.cart_totals(cart).total,  # the one totals function (sales/pricing.py)
        "discount": pricing.cart_totals(cart).discount,
        "seat_count": len(cart["items"]),
        "expires_at": cart["expiresAt"],
        "seconds_left": presenters.seconds_left(cart["expiresAt"], clock.now()),
        "canceled_shows": canceled,
    }


@require_safe
def session_page(request, session_id):
    try:
        cart, expired = _current_cart(request)  # first: an expired hold frees its seats on this map
        session, shared = _load_session_page(session_id)
    except NotFound as exc:
        return _error_page(request, exc, 404)
    if _drop_canceled(cart, session):
        cart, expired = _current_cart(request)
    turn = queue_views.session_gate(request, session)  # waiting room: None, a redirect, or the admission
    if isinstance(turn, HttpResponse):
        return turn
    template = "booking/session.html#seatmap" if request.htmx and not request.htmx.boosted else "booking/session.html"

    def context(**extra):
        return {
            **_map_context(request, session, cart, shared=shared),
            **_cart_context(request, cart, expired, [session]),
            "card": presenters.session_card(session),
            "legend": seatmap_html.legend(session),
            "max_seats": settings.BOOKING_MAX_SEATS_PER_CART,
            "seat_counts": range(1, settings.BOOKING_MAX_SEATS_PER_CART + 1),
            "held_here": len(selectors.cart_seat_keys(cart, session["_id"])),
            "has_wheelchair": shared.wheelchair,
            "price_steps": sorted({p for p in session["prices"].values()}),
            "wheelchair_counts": range(1, settings.BOOKING_MAX_SEATS_PER_CART // 2 + 1),
            "admission": turn,
            **extra,
        }

    if cart is None and not expired and not turn and not get_messages(request) and not buyer.presale_keys(request):
        # The same page for every viewer without a cart, a message, a presale or a waiting-room
        # turn: built once per version.
        tz = timezone.get_current_timezone_name()
        language = translation.get_language()  # the page's words and formats are the buyer's language's
        key = (session["_id"], session["version"], template, _sale_notice(session), tz, language)
        extra = {"csrf_token": seatmap_html.CSRF_MARKER, "server_now_ms": SERVER_NOW_MARKER}
        html = seatmap_html.shared_page(key, lambda: render_to_string(template, context(**extra), request))
        html = html.replace(SERVER_NOW_MARKER, str(int(clock.now().timestamp() * 1000)))
        return HttpResponse(html.replace(seatmap_html.CSRF_MARKER, get_token(request)))
    return render(request, template, context())


@require_safe
def performance_page(request, performance_id):
    """A sectioned venue (a stadium): every section with its free seats; each opens its own map."""
    try:
        sections = selectors.performance_sections(object_id(performance_id, "performance"))
    except NotFound as exc:
        return _error_page(request, exc, 404)
    if not sections:
        return _error_page(request, gettext("No such performance."), 404)
    gate = queue_views.performance_gate(request, sections)  # waiting room
    if gate is not None:
        return gate
    summary = selectors.group_sections(sections)[0]
    context = {"card": presenters.session_card(summary), "stands": presenters.section_stands(sections)}
    return render(request, "booking/performance.html", context)


@require_safe
def seat_map(request, session_id):
    """The live map partial. Unchanged session: one tiny read and a 304, nothing else loaded."""
    try:
        sid = object_id(session_id, "performance")
    except NotFound as exc:
        return _error_page(request, exc, 404)
    version = selectors.session_version(sid)
    if version is None:
        return _error_page(request, gettext("No such performance."), 404)
    etag = f'"{version}"'
    if etag in _etags(request.META.get("HTTP_IF_NONE_MATCH", "")):
        response = HttpResponse(status=304)
    else:
        cart, _expired = _current_cart(request)
        shared = seatmap_html.cached_seat_map(sid, version)  # built here already: read only the small part
        session = selectors.get_session_head(sid) if shared else selectors.get_session(sid)
        if session is not None and shared is not None and session["version"] != version:
            shared, session = None, selectors.get_session(sid)  # changed again meanwhile
        if session is None or session.get("status") == SessionStatus.DRAFT:
            return _error_page(request, gettext("No such performance."), 404)
        if cart is not None and session.get("status") == SessionStatus.CANCELED:
            # canceled while this buyer holds seats: the live map brings the cart's news with it
            if _drop_canceled(cart, session):
                cart, _expired = _current_cart(request)
            context = {
                **_map_context(request, session, cart, shared=shared),
                **_cart_context(request, cart, False, [session]),
                "oob": True,
            }
            response = render(request, "booking/session.html#seatmap-with-cart", context)
        else:
            response = render(
                request, "booking/session.html#seatmap", _map_context(request, session, cart, shared=shared)
            )
        etag = f'"{session["version"]}"'
    response["ETag"] = etag
    response["Cache-Control"] = "private, no-cache"  # always ask; the answer is usually a 304
    patch_vary_headers(response, ["Cookie"])  # "held by you" differs per buyer
    return response


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def hold_context_for(request, owner: str | None) -> holds.HoldContext:
    """What the hold service is told of this buyer's request: the client address (its held-seats
    limit), the presales the buyer unlocked, and the waiting-room admissions presented."""
    return holds.HoldContext(
        client=ratelimits.acting_client(request),
        presale_keys=buyer.presale_keys(request),
        admitted_queues=queue_views.admitted_queues(request, owner),
    )


def _seat_action(request, session_id, service, *args, notice: str = "", extra=None):
    """Run one hold/release and answer (htmx): the changed seats and the cart, or the refreshed
    map when the action did not go through; a plain form post is sent back to the map.

    ``service(session_id, owner, cart_id, *args, context=...)``: one of the engine's seat services
    (``holds``), given this request's ``hold_context_for``, returning a HoldResult or ReleaseResult;
    ``notice``: what to tell the buyer when it went through. Input errors are 400 with a message;
    lost races and closed sales are shown on the refreshed map.
    """
    try:
        sid = object_id(session_id, "performance")
    except NotFound as exc:
        return _error_page(request, exc, 404)
    owner = buyer.owner(request, create=True)
    level = "ok"
    result = None
    try:
        result = service(sid, owner, buyer.cart_id(request), *args, context=hold_context_for(request, owner))
        if isinstance(result, holds.HoldResult):
            buyer.set_cart(request, result.cart_id)
    except AdmissionRequired as exc:
        return queue_views.admission_refused(request, exc)
    except BookingError as exc:
        status = status_for(exc)
        if status == 404 and selectors.session_version(sid) is None:
            return _error_page(request, exc, 404)
        if status == 400 and (request.htmx or not isinstance(exc, RULES_OF_CHOICE)):
            return _bad_seat_request(request, exc.message)
        notice, level = exc.message, "error"
        if isinstance(exc, CartExpired):
            buyer.forget_cart(request)
    if not request.htmx:
        if notice:
            (messages.error if level == "error" else messages.success)(request, notice)
        return redirect("booking:session", session_id=str(sid))
    if result is not None and result.session is not None and result.cart is not None:
        return _seat_change(request, result, notice, extra)
    cart, expired = _current_cart(request)
    session = selectors.get_session(sid)
    if session is None:
        return _error_page(request, gettext("No such performance."), 404)
    context = {
        **_map_context(request, session, cart),
        **_cart_context(request, cart, expired, [session]),
        "notice": notice,
        "notice_level": level,
        "oob": True,
        **(extra(session, None) if extra else {}),
    }
    response = render(request, "booking/session.html#seat-action", context)
    response["ETag"] = f'"{session["version"]}"'
    return response


def _seat_change(request, result, notice: str, extra=None):
    """The answer to a hold or release that went through, from its own writes: the changed seats
    (swapped by id), the cart and the notice; the map stays. A few KB instead of the whole map:
    other buyers' changes arrive with the next live refresh, which this version number makes
    the page accept (``X-Seatmap-Version``: the map the buyer sees is at least this new)."""
    session, held = result.session, isinstance(result, holds.HoldResult)
    keys = {seat_key(r, c) for r, c in result.seats} if held else set()
    context = {
        **_cart_context(request, result.cart, False, [session]),
        "seat_updates": seatmap_html.seat_updates(
            session, session["layout"], result.seats, HELD if held else FREE, held, keys
        ),
        "notice": notice,
        "notice_level": "ok",
        "oob": True,
        **(extra(session, result) if extra else {}),
    }
    # No context processors: nothing in these partials needs the request (the busiest answer there is).
    response = HttpResponse(render_to_string("booking/session.html#seat-change", context))
    response["X-Seatmap-Version"] = str(session["version"])
    return reswap(response, "none")


def _bad_seat_request(request, message: str):
    if request.htmx:
        return render(request, "booking/session.html#notice", {"notice": message, "notice_level": "error"}, status=400)
    return _error_page(request, message, 400)


def _form_error(form) -> str:
    return " ".join(str(e) for errors in form.errors.values() for e in errors)


@require_POST
def toggle_seat(request, session_id):
    """A click on a seat: hold it, or release it when it is already yours."""
    form = SeatForm(request.POST)
    if not form.is_valid():
        return _bad_seat_request(request, _form_error(form))
    seat, needs_wheelchair = form.cleaned_data["seat"], form.cleaned_data["wheelchair"]
    toggle = partial(holds.toggle_seat, needs_wheelchair=needs_wheelchair)
    return _seat_action(request, session_id, toggle, seat)


@require_POST
def hold(request, session_id):
    """Hold one or more seats (``seats=r:c``, repeated or comma-separated)."""
    form = SeatsForm(request.POST)
    if not form.is_valid():
        return _bad_seat_request(request, _form_error(form))
    seats, needs_wheelchair = form.cleaned_data["seats"], form.cleaned_data["wheelchair"]
    return _seat_action(request, session_id, partial(holds.hold_seats, needs_wheelchair=needs_wheelchair), seats)


@require_POST
def release(request, session_id):
    """Give back seats of your cart (``seats=r:c``)."""
    form = SeatsForm(request.POST)
    if not form.is_valid():
        return _bad_seat_request(request, _form_error(form))

    def give_back(sid, owner, cart_id, seats, *, context):  # a release takes no seat: the context is not needed
        return holds.release_seats(sid, owner, cart_id, seats)

    return _seat_action(request, session_id, give_back, form.cleaned_data["seats"])


@require_POST
def best_available(request, session_id):
    """Best available: ``count`` seats side by side (of one ``category`` when given; ``wheelchair``:
    that many wheelchair spaces with a companion seat each). The answer says which seats in words
    and offers to release them in one click; when no block is left, it offers the engine's split,
    which the buyer takes by posting it back as ``accept``."""
    form = BestAvailableForm(request.POST)
    if not form.is_valid():
        return _bad_seat_request(request, _form_error(form))
    count = form.cleaned_data["count"]
    category = form.cleaned_data["category"] or None
    max_price = form.cleaned_data["max_price"]
    wheelchair = form.cleaned_data["wheelchair"]
    offer: dict = {}

    def pick(sid, owner, cart_id, *, context):
        try:
            return holds.hold_best_available(
                sid,
                owner,
                cart_id,
                count,
                {category} if category else None,
                max_price=max_price,
                wheelchair=wheelchair,
                accept=form.cleaned_data["accept"],
                context=context,
            )
        except NoAdjacentSeats as exc:
            offer["suggestion"], offer["why"] = exc.suggestion, exc.message
            raise

    def best_context(session, result) -> dict:
        asked = {"count": count, "category": category or "", "wheelchair": wheelchair, "max_price": max_price}
        asked["seat_total"] = 2 * count if wheelchair else count
        asked["csrf"] = get_token(request)  # the answer is rendered without the request
        here = {"session_id": str(session["_id"])}
        if result is not None:
            keys = ",".join(seat_key(r, c) for r, c in result.seats)
            return {**here, "best": {**asked, "held": seat_words.describe_seats(session, result.seats), "keys": keys}}
        split = offer.get("suggestion")
        if not split:
            return {**here, "best": {**asked, "none": True}}
        keys = ",".join(seat_key(r, c) for r, c in split)
        words = seat_words.describe_seats(session, split)
        return {**here, "best": {**asked, "offer": words, "keys": keys, "why": offer.get("why", "")}}

    notice = ngettext(
        "Your seat is highlighted on the map and held for you.",
        "Your %(count)s seats are highlighted on the map and held for you.",
        count * 2 if wheelchair else count,
    ) % {"count": count * 2 if wheelchair else count}
    return _seat_action(request, session_id, pick, notice=notice, extra=best_context)


# --- members' presale: an access code unlocks holds for this buyer ---

WRONG_ACCESS_CODE = gettext_noop("That code does not open a presale for this performance.")
TOO_MANY_CODES = gettext_noop("Too many access codes tried from your connection. Please wait a minute and try again.")


@require_POST
def presale_access(request, session_id):
    """Check a members' access code. A right one puts the presale's key in the buyer cookie; a
    wrong one, a session without presale and an unknown id get the same answer after the same
    work (sales.sessions.unlock_presale), and every try is counted (BOOKING_ACCESS_CODE_RATE)."""
    if ratelimits.rate_exceeded(request, "booking.access", settings.BOOKING_ACCESS_CODE_RATE):
        response = _error_page(request, gettext(TOO_MANY_CODES), 429)
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


# --- cart ---


@require_safe
def cart_page(request):
    cart, expired = _current_cart(request)
    if expired:
        buyer.forget_cart(request)
    context = _cart_context(request, cart, expired)
    if request.htmx and not request.htmx.boosted:
        return render(request, "booking/session.html#cart-summary", context)
    return render(request, "booking/cart.html", context)


@require_POST
def cart_remove(request):
    form = RemoveSeatForm(request.POST)
    if not form.is_valid():
        return _error_page(request, _form_error(form), 400)
    try:
        sid = object_id(form.cleaned_data["session"], "performance")
        holds.release_seats(sid, buyer.owner(request) or "", buyer.cart_id(request), [form.cleaned_data["seat"]])
        messages.success(request, gettext("The seat was removed from your cart."))
    except BookingError as exc:
        if status_for(exc) in (400, 404):
            return _error_page(request, exc, status_for(exc))
        messages.error(request, exc.message)
    return redirect("booking:cart")


@require_POST
def cart_cancel(request):
    cart_id = buyer.cart_id(request)
    owner = buyer.owner(request)
    if cart_id and owner:
        outcome = cart_service.give_up_cart(cart_id=cart_id, owner=owner)
        if outcome.paying_ref:  # this browser's cart is being paid for: it stays, the payment page says so
            messages.info(
                request,
                gettext("Your payment has already begun, so nothing was canceled: your seats stay reserved for it."),
            )
            return redirect("booking:order", ref=outcome.paying_ref)
        if outcome.freed:
            messages.success(request, gettext("Your held seats were released."))
    buyer.forget_cart(request)
    return redirect("booking:whats_on")


# --- checkout and orders ---


# The checkout view is booking/presale/views/payment.py's (details, then payment on the same page).


def visible_order(request, ref: str) -> dict | None:
    """The order if this browser bought it or found it by reference and e-mail (the find form, or
    the confirmation mail's link ``?email=``), else None.

    A lookup by e-mail is counted before anything is compared, whether the reference exists or
    not, and takes the same query either way: a real reference and a made-up one get the same
    answers under the same limit (counting only real ones told which exist)."""
    order = selectors.get_order_by_ref(ref)
    owner = buyer.owner(request)
    if order is not None and (
        (owner and order.get("owner") == owner) or order["ref"] in request.session.get("found_orders", [])
    ):
        return order
    email = request.GET.get("email", "")
    if not email:
        return None
    if ratelimits.lookup_rate_exceeded(request):
        raise TooManyLookups()
    found = selectors.find_order(ref, email)
    if found is not None:
        request.session["found_orders"] = [*request.session.get("found_orders", []), found["ref"]][-20:]
    return found


JUST_BOOKED_COOKIE = "just_booked"  # the order checkout just made, read once by its page
NO_SUCH_BOOKING = gettext_noop(
    "We could not find that booking. Use “Find my booking” with its reference and your e-mail."
)


def _order_context(order: dict, request=None) -> dict:
    from booking.presale.views import exchange as exchange_views
    from booking.presale.views.payment import payment_context  # its payment: state, card form, receipt, refunds
    from booking.web.order_history import order_history  # booked, paid, moved, canceled, mailed

    tickets = presenters.order_tickets(order)
    context = {**payment_context(request, order), "order": order, "tickets": tickets, "history": order_history(order)}
    return {**context, **exchange_views.payment_due(order)}  # a dearer exchange the customer pays online


class TooManyLookups(Exception):
    pass


TOO_MANY_LOOKUPS = gettext_noop("Too many booking lookups from your connection. Please wait a minute and try again.")


def too_many_lookups(request):
    response = _error_page(request, gettext(TOO_MANY_LOOKUPS), 429)
    response["Retry-After"] = "60"
    return response


@require_safe
def order_page(request, ref):
    try:
        order = visible_order(request, ref)
    except TooManyLookups:
        return too_many_lookups(request)
    if order is None:
        return _error_page(request, gettext(NO_SUCH_BOOKING), 404)
    from booking.presale.views.payment import refresh_order, stripe_csp  # this is the payment's return page too

    order = refresh_order(order)
    just_booked = request.get_signed_cookie(JUST_BOOKED_COOKIE, default="", salt=JUST_BOOKED_COOKIE, max_age=600)
    context = {**_order_context(order, request), "just_booked": just_booked == order["ref"]}
    response = stripe_csp(render(request, "booking/order.html", context), context)
    if just_booked and order["state"] != "pending_payment":  # read once it is paid (or ended)
        response.delete_cookie(JUST_BOOKED_COOKIE, samesite="Lax")
    return response


@require_safe
def order_tickets(request, ref):
    try:
        order = visible_order(request, ref)
    except TooManyLookups:
        return too_many_lookups(request)
    if order is None:
        return _error_page(request, gettext(NO_SUCH_BOOKING), 404)
    return render(request, "booking/tickets.html", _order_context(order))


@require_safe
def ticket_qr(request, code):
    """The QR code of a ticket code. It encodes only what the URL already says, so it needs no
    lookup; the code itself is the secret and is only shown to the order's owner."""
    svg = io.BytesIO()
    segno.make(code, error="m").save(svg, kind="svg", scale=4, border=2, xmldecl=False)
    response = HttpResponse(svg.getvalue(), content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=86400"
    return response


@require_http_methods(["GET", "HEAD", "POST"])
def find_booking(request):
    form = FindBookingForm(request.POST if request.method == "POST" else None)  # a POST without fields too
    status = 200
    if request.method == "POST":
        if ratelimits.lookup_rate_exceeded(request):
            form.is_valid()
            form.add_error(None, gettext(TOO_MANY_LOOKUPS))
            response = render(request, "booking/find_booking.html", {"form": form}, status=429)
            response["Retry-After"] = "60"
            return response
        if form.is_valid():
            order = selectors.find_order(form.cleaned_data["ref"], form.cleaned_data["email"])
            if order is not None:
                found = request.session.get("found_orders", [])
                request.session["found_orders"] = [*found[-19:], order["ref"]]
                return redirect("booking:order", ref=order["ref"])
            form.add_error(None, gettext("No booking matches that reference and e-mail address."))
        status = 400
    return render(request, "booking/find_booking.html", {"form": form}, status=status)
