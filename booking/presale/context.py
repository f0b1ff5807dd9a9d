"""What the buyer's views share (booking/presale/views/): who is asking and their cart, engine
errors as statuses and error pages, the seat map's context, the waiting room's gates, the order a
browser may see, and the payment panel of an order.

The views import this module and never each other, so no view module depends on another's page.
Engine errors become statuses in one place (``booking/web/errors.py``).
"""

import textwrap
from collections.abc import Iterable
from datetime import datetime
from typing import cast
from urllib.parse import urlsplit

from bson import ObjectId
from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.csp import CSP
from django.utils.translation import gettext, gettext_noop

from booking import payments
from booking.accounts import buyers
from booking.core import clock, formatting
from booking.core.domain import (
    Cart,
    CartState,
    Order,
    OrderState,
    SalePhase,
    Session,
    SessionStatus,
    sale_phase,
    seats_left,
)
from booking.core.errors import (
    BookingError,
    NotFound,
)
from booking.core.ids import object_id
from booking.core.localized import order_state_label
from booking.payments import base, money, receipts
from booking.payments import flow as payment_service
from booking.payments.stripe_provider import TEST_CARDS, in_test_mode, time_in_stripe_ms
from booking.presale import queue_panel
from booking.sales import admission, cart_expiry, exchanges, pricing, selectors, waiting_room
from booking.sales import carts as cart_service
from booking.venues import venue_front
from booking.web import buyer, presenters, ratelimits, seatmap_html

# --- engine errors as statuses and error pages ---


def error_page(request, error: BookingError | str, status: int):
    message = error.message if isinstance(error, BookingError) else error
    template = "404.html" if status == 404 else "400.html"
    return render(request, template, {"message": message}, status=status)


def form_error(form) -> str:
    return " ".join(str(e) for errors in form.errors.values() for e in errors)


# --- who is asking: the owner token and cart id, in the buyer cookie (booking/web/buyer.py) ---


def current_cart(request) -> tuple[Cart | None, bool]:
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


def cart_context(request, cart: Cart | None, expired: bool, known_sessions=()) -> dict:
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


# --- a session's seat map: its page, its live partial and the seat actions' answers ---

LIVE_REFRESH_SECONDS = 2


def _load_session(session_id: str) -> Session:
    session = selectors.get_session(object_id(session_id, "performance"))
    if session is None:
        raise NotFound(gettext("No such performance."))
    return session


def sale_notice(session: Session, access=frozenset()) -> str:
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
    if seats_left(session) <= 0:  # free seats, or a quota taken
        return gettext("This performance is sold out.")
    return ""


def _opening(session: Session, access) -> datetime:
    """When this viewer may first hold: a presale they unlocked, else the public on-sale."""
    presale = session.get("presale")
    return presale["opens"] if presale and presale["key"] in access else session["saleOpens"]


def _sale_clock(session: Session, access) -> dict:
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


def drop_canceled(cart: Cart | None, session: Session) -> bool:
    """A performance canceled while this buyer held seats in it: the cart lets them go and says why
    (the cancelation drops them itself; this covers a cancelation interrupted before it got there)."""
    if cart is None or session.get("status") != SessionStatus.CANCELED:
        return False
    if not any(i["sessionId"] == session["_id"] for i in cart["items"]):
        return False
    cart_service.drop_canceled_session(cart["_id"], session)
    return True


def load_session_head(session_id: str) -> Session:
    """The session without its big parts (seat states, layout rows, reservations): enough to
    send a buyer on (a waiting room, a canceled show) before the map is looked at. One small read."""
    session = selectors.get_session_head(object_id(session_id, "performance"))
    if session is None or session.get("status") == SessionStatus.DRAFT:
        raise NotFound(gettext("No such performance."))  # a draft is for staff only
    return session


def load_seat_map(head: Session) -> tuple[Session, seatmap_html.SeatMapHtml]:
    """The session and its built map. When this process has built the map of the head's version,
    the head serves; otherwise a full read builds it."""
    shared = seatmap_html.cached_seat_map(head["_id"], head["version"])
    if shared is not None:
        return head, shared
    session = _load_session(str(head["_id"]))
    return session, seatmap_html.seat_map_html(session)


def map_context(request, session: Session, cart: Cart | None, picked=(), shared=None) -> dict:
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
        "sale_notice": sale_notice(session, access),
        "front": venue_front.front_word(session),
    }


# --- the waiting room's gates (the queue is sales/waiting_room.py, its pages views/queue.py) ---


def queue_url(queue_id) -> str:
    return reverse("booking:queue", args=[str(queue_id)])


def has_admission(request, queue_id) -> bool:
    owner = buyer.owner(request)
    return admission.verify(request.COOKIES.get(admission.cookie_name(queue_id)), queue_id, owner)


# The queue sends a buyer on with this when its room has ended: the seat map then reads the session
# rather than trust a process's kept note that it is queued (which would send the buyer back).
ROOM_ENDED_QUERY = "room=ended"


def arrival_gate(request, session_id: str) -> HttpResponse | None:
    """For a session's page, before any read: a redirect to the queue for a buyer without
    admission when this process read the session as queued moments ago (in an on-sale rush every
    arrival comes here first). None: the page reads the session, and ``session_gate`` decides."""
    if request.META.get("QUERY_STRING") == ROOM_ENDED_QUERY or not ObjectId.is_valid(session_id):
        return None
    queue_id = waiting_room.kept_queue_of(ObjectId(session_id))
    if queue_id is None or has_admission(request, queue_id):
        return None
    return redirect(queue_url(queue_id))


def session_gate(request, session: Session):
    """For a session's page: None when it is not queued; a redirect to the queue when the buyer
    has no admission; else the admission's details for the page (seconds left)."""
    queue_id = waiting_room.keep_queue_of(session)
    if queue_id is None:
        return None
    token = request.COOKIES.get(admission.cookie_name(queue_id))
    if not admission.verify(token, queue_id, buyer.owner(request)):
        return redirect(queue_url(queue_id))
    expires_ms = admission.expiry_ms(token)
    if expires_ms is None:  # cannot happen: verify() passed, so the token is ours and well formed
        return redirect(queue_url(queue_id))
    seconds_left = max(0, (expires_ms - admission.clock_ms()) // 1000)
    return {"queue_id": queue_id, "seconds_left": seconds_left, "countdown": queue_panel.countdown(seconds_left)}


def performance_gate(request, sections: list[Session]):
    """For a sectioned performance's overview (its section documents as read, with
    ``waitingRoom.queueId``): a redirect to its queue when the buyer needs one. No read of its own."""
    queue_id = next((q for q in map(waiting_room.queue_of, sections) if q is not None), None)
    if queue_id is None or has_admission(request, queue_id):
        return None
    return redirect(queue_url(queue_id))


def admitted_queues(request, owner: str | None) -> frozenset[ObjectId]:
    """The queues whose admission this request presents for ``owner`` (verified), for the hold service."""
    return admission.verified_queues(owner, admission.tokens_in(request.COOKIES))


def admission_refused(request, error: admission.AdmissionRequired) -> HttpResponse:
    """A hold on a queued sale without admission: 403 and the way to the queue."""
    # htmx swaps the notice area of the seat map it came from; a plain request gets the whole page
    template = "booking/queue_required.html#notice" if request.htmx else "booking/queue_required.html"
    html = render_to_string(template, {"message": error.message, "url": error.queue_url}, request=request)
    return HttpResponse(html, status=403)


# --- the order this browser may see ---


class TooManyLookups(Exception):
    pass


TOO_MANY_LOOKUPS = gettext_noop("Too many booking lookups from your connection. Please wait a minute and try again.")
NO_SUCH_BOOKING = gettext_noop(
    "We could not find that booking. Use “Find my booking” with its reference and your e-mail."
)
JUST_BOOKED_COOKIE = "just_booked"  # the order checkout just made, read once by its page


def visible_order(request, ref: str) -> Order | None:
    """The order if this browser bought it, found it by reference and e-mail (the find form, or
    the confirmation mail's link ``?email=``), or is signed in with its e-mail address, else None.

    A lookup by e-mail is counted before anything is compared, whether the reference exists or
    not, and takes the same query either way: a real reference and a made-up one get the same
    answers under the same limit (counting only real ones told which exist)."""
    order = selectors.get_order_by_ref(ref)
    owner = buyer.owner(request)
    if order is not None and (
        (owner and order.get("owner") == owner)
        or order["ref"] in request.session.get("found_orders", [])
        or (order.get("email") and order.get("email") == buyers.buyer_email(request.user))  # a signed-in buyer's
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


def too_many_lookups(request):
    response = error_page(request, gettext(TOO_MANY_LOOKUPS), 429)
    response["Retry-After"] = "60"
    return response


def no_such_booking(request):
    return render(request, "404.html", {"message": gettext(NO_SUCH_BOOKING)}, status=404)


# --- an order's payment: the panel (``_payment.html``) of the checkout and the order page ---

CARD_FORM_STATES = (base.OPEN, base.FAILED, base.CANCELED, base.ACTION, None)  # the buyer (re)enters a card


def state_label(order: Order) -> str:
    if order.get("method") == payments.BOX_OFFICE and order["state"] == OrderState.PENDING_PAYMENT:
        return gettext("Reserved: pay at the box office")
    return order_state_label(order["state"])


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def stripe_csp(response, context: dict):
    """A page that loads Stripe.js lets it in (and lets it reach Stripe's API and show 3-D Secure
    in Stripe's frames); the rest of the site's policy stays as it is (settings.SECURE_CSP)."""
    if not context.get("stripe_js"):
        return response
    origins = sorted({o for o in (_origin(settings.STRIPE_JS_URL), _origin(settings.STRIPE_API_BASE)) if o})
    frames = [*origins, "https://hooks.stripe.com"] if "stripe.com" in settings.STRIPE_JS_URL else origins
    policy = {key: list(cast(Iterable[str], value)) for key, value in settings.SECURE_CSP.items()}
    for directive, extra in (("script-src", origins), ("connect-src", origins), ("frame-src", frames)):
        policy[directive] = [*policy.get(directive, [CSP.SELF]), *extra]
    response._csp_config = policy  # what django.views.decorators.csp.csp_override sets
    return response


def stripe_timing(view):
    """Server-Timing: stripe;dur=<ms> on the answer: the time this request waited for Stripe."""

    def wrapped(request, *args, **kwargs):
        time_in_stripe_ms(reset=True)
        response = view(request, *args, **kwargs)
        response["Server-Timing"] = f"stripe;dur={time_in_stripe_ms(reset=True):.1f}"
        return response

    wrapped.__name__, wrapped.__doc__ = view.__name__, view.__doc__
    return wrapped


def order_quote(order: Order) -> dict:
    return {
        "tickets": sum(line["price"] for line in order.get("lines", [])),
        "discount": sum(line.get("discount", 0) for line in order.get("lines", [])),
        "fee": fee["amount"] if (fee := order.get("fee")) else 0,
        "donation": donation["amount"] if (donation := order.get("donation")) else 0,
        "total": order["total"],
        "vat": money.order_breakdown(order),
        "voucher": money.voucher_part(order),
        "due": money.amount_due(order),
    }


def payment_context(request, order: Order) -> dict:
    """What the payment panel (``_payment.html``) and the order page need about the payment."""
    pay = order.get("payment")
    status = pay["status"] if pay else None
    until = pay["until"] if pay else None
    failure = pay.get("failure") if pay else None
    now = clock.now()
    is_buyer = request is not None and buyer.owner(request) == order.get("owner")
    pending = order["state"] == OrderState.PENDING_PAYMENT
    card = order.get("method") == payments.CARD and is_buyer  # paid from the browser that booked
    context = {
        "order": order,
        "is_buyer": is_buyer,
        "state_label": state_label(order),
        "pay_status": status,
        "pay_failure": gettext(failure) if failure else "",  # stored in English
        "card_form": pending and card and status in CARD_FORM_STATES,
        "processing": pending and card and status in (base.PROCESSING, payment_service.CONFIRMING),
        "seconds_left": presenters.seconds_left(until, now) if pending and until else 0,
        "until": until,
        "quote": order_quote(order) if order.get("lines") else None,
        "due": money.amount_due(order),
        "tickets": presenters.order_tickets(order),
        "refunded_tickets": presenters.order_tickets({**order, "lines": order.get("refundedLines", [])}),
        "stripe_key": settings.STRIPE_PUBLISHABLE_KEY,
        "stripe_js": settings.STRIPE_JS_URL if pending and card else "",
        "test_cards": test_cards() if pending and card else [],
        "receipt": order["state"] in (OrderState.PAID, OrderState.PARTIALLY_REFUNDED, OrderState.REFUNDED)
        and bool(order.get("receiptNo")),
        "receipt_label": receipts.receipt_label(order),
        "refunded": sum(r["amount"] for r in order.get("refunds", []) if r["status"] == base.SUCCEEDED),
        "paid_by": receipts.payment_label(order),
        "money": receipts.paid_and_refunded(order),
        "refund_pending": any(r["status"] != base.SUCCEEDED for r in order.get("refunds", [])),
    }
    return context


def test_cards() -> list[tuple[str, str]]:
    """The test cards and what each does (number in groups of four), in test mode only."""
    if not in_test_mode():
        return []
    return [(" ".join(textwrap.wrap(number, 4)), gettext(label)) for number, _status, label in TEST_CARDS]


def refresh_order(order: Order) -> Order:
    """The order page is the return page: a payment still being decided is asked about."""
    pay = order.get("payment")
    waiting = (
        order["state"] in (OrderState.PENDING_PAYMENT, OrderState.EXPIRED)
        and pay is not None
        and pay["status"] in payment_service.AT_THE_BANK
    )
    if waiting and order.get("method") == payments.CARD:
        return payment_service.check(order["_id"], quiet=True)
    if order.get("settling"):
        return payment_service.finish_paid(order["_id"]) or order
    return order


def exchange_payment_due(order: Order) -> dict:
    """The order page's part: an exchange waiting for the customer's payment (views/exchange.py
    takes it), and Stripe.js for its card form (the page then lets Stripe in: ``stripe_csp``)."""
    record = exchanges.awaiting_payment(order)
    if record is None:
        return {}
    moved = [
        {"old": f"{o['row']}{o['seat']}", "new": f"{n['row']}{n['seat']}"}
        for o, n in zip(record["old"], record["new"], strict=False)
    ]
    due = {"amount": record["difference"], "until": record["payment"]["until"], "moved": moved}
    return {"exchange_due": due, "stripe_js": settings.STRIPE_JS_URL, "stripe_key": settings.STRIPE_PUBLISHABLE_KEY}
