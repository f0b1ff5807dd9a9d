"""The buyer's clicks on a seat map: hold a seat or release it, hold or release several, the best
available seats.

Seat POSTs answer (htmx) with only the seats the click changed, the cart and the notice; a lost race
on a click is not an error page: the refreshed map and a message come back (htmx), or the buyer is
sent back to the map with a message (plain form post). The answers are listed in booking/presale/urls.py.
"""

from functools import partial

from django.contrib import messages
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_POST
from django_htmx.http import reswap

from booking.core.errors import (
    BookingError,
    CartExpired,
    NoAdjacentSeats,
    NotFound,
    OrphanSeat,
    TooManySeats,
    WheelchairSpaceNotDeclared,
)
from booking.core.ids import object_id
from booking.presale.context import (
    admission_refused,
    admitted_queues,
    cart_context,
    current_cart,
    error_page,
    form_error,
    map_context,
)
from booking.presale.views import ticket_kinds
from booking.sales import holds, selectors
from booking.sales.admission import AdmissionRequired
from booking.venues import seat_words
from booking.venues.seat_grid import FREE, HELD, seat_key
from booking.web import buyer, cart_panel_html, ratelimits, seatmap_html
from booking.web.errors import status_for
from booking.web.forms import BestAvailableForm, SeatForm, SeatsForm

# Refusals a buyer answers by choosing other seats, not bad input: without JavaScript they are
# shown on the map the buyer returns to (htmx shows them in place, with their 400).
RULES_OF_CHOICE = (OrphanSeat, TooManySeats, WheelchairSpaceNotDeclared)


def hold_context_for(request, owner: str | None) -> holds.HoldContext:
    """What the hold service is told of this buyer's request: the client address (its held-seats
    limit), the presales the buyer unlocked, and the waiting-room admissions presented."""
    return holds.HoldContext(
        client=ratelimits.acting_client(request),
        presale_keys=buyer.presale_keys(request),
        admitted_queues=admitted_queues(request, owner),
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
        return error_page(request, exc, 404)
    owner = buyer.owner(request, create=True)
    level = "ok"
    result = None
    try:
        result = service(sid, owner, buyer.cart_id(request), *args, context=hold_context_for(request, owner))
        if isinstance(result, holds.HoldResult):
            buyer.set_cart(request, result.cart_id)
    except AdmissionRequired as exc:
        return admission_refused(request, exc)
    except BookingError as exc:
        status = status_for(exc)
        if status == 404 and selectors.session_version(sid) is None:
            return error_page(request, exc, 404)
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
    cart, expired = current_cart(request)
    session = selectors.get_session(sid)
    if session is None:
        return error_page(request, gettext("No such performance."), 404)
    context = {
        **map_context(request, session, cart),
        **cart_context(request, cart, expired, [session]),
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
        **cart_context(request, result.cart, False, [session]),
        "notice": notice,
        "notice_level": "ok",
        "oob": True,
        **(extra(session, result) if extra else {}),
    }
    seat_updates = seatmap_html.seat_updates(
        session, session["layout"], result.seats, HELD if held else FREE, held, keys
    )
    # Built in Python, not rendered: the busiest answer there is (cart_panel_html's docstring).
    html = cart_panel_html.seat_change(context, seat_updates)
    if context.get("best"):
        html += render_to_string("booking/session.html#best-result", context)
    response = HttpResponse(html)
    response["X-Seatmap-Version"] = str(session["version"])
    return reswap(response, "none")


def _in_chosen_kinds(request, session_id, service):
    """``service``, then the seats it held take the kinds chosen before the map, if any."""
    chosen = ticket_kinds.chosen_kinds(request, session_id)
    if not chosen:
        return service

    def run(sid, owner, cart_id, *args, context):
        result = service(sid, owner, cart_id, *args, context=context)
        if isinstance(result, holds.HoldResult):
            return holds.give_chosen_kinds(held=result, owner=owner, session_id=sid, chosen=chosen)
        return result

    return run


def _bad_seat_request(request, message: str):
    if request.htmx:
        return render(request, "booking/session.html#notice", {"notice": message, "notice_level": "error"}, status=400)
    return error_page(request, message, 400)


@require_POST
def toggle_seat(request, session_id):
    """A click on a seat: hold it, or release it when it is already yours."""
    form = SeatForm(request.POST)
    if not form.is_valid():
        return _bad_seat_request(request, form_error(form))
    seat, needs_wheelchair = form.cleaned_data["seat"], form.cleaned_data["wheelchair"]
    toggle = partial(holds.toggle_seat, needs_wheelchair=needs_wheelchair)
    return _seat_action(request, session_id, _in_chosen_kinds(request, session_id, toggle), seat)


@require_POST
def hold(request, session_id):
    """Hold one or more seats (``seats=r:c``, repeated or comma-separated)."""
    form = SeatsForm(request.POST)
    if not form.is_valid():
        return _bad_seat_request(request, form_error(form))
    seats, needs_wheelchair = form.cleaned_data["seats"], form.cleaned_data["wheelchair"]
    hold_them = partial(holds.hold_seats, needs_wheelchair=needs_wheelchair)
    return _seat_action(request, session_id, _in_chosen_kinds(request, session_id, hold_them), seats)


@require_POST
def release(request, session_id):
    """Give back seats of your cart (``seats=r:c``)."""
    form = SeatsForm(request.POST)
    if not form.is_valid():
        return _bad_seat_request(request, form_error(form))

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
        return _bad_seat_request(request, form_error(form))
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
                kinds=form.cleaned_data["kinds"],
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
            held = [seat_key(r, c) for r, c in result.seats]
            price = selectors.cart_price_of(result.cart, session["_id"], set(held))
            words = seat_words.describe_seats(session, result.seats, price=price)
            return {**here, "best": {**asked, "held": words, "keys": ",".join(held)}}
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
