"""Season subscriptions for buyers: the list, one map of the seats free in every performance, the
sale, and a holder's renewal.

GET  /subscriptions/                    the subscriptions on sale
GET  /subscriptions/<id>/               its performances and the common seat map
POST /subscriptions/<id>/buy            seat=r:c (one, or repeated), ticket_type=<code> -> the seat in
                                        every performance is held in a new cart, 303 to /checkout/
                                        (the payment flow of every cart); a seat taken meanwhile or a
                                        closed sale: 409 with the page and the message; bad input
                                        (no seat, off the map, unknown type): 400; unknown id: 404
GET  /subscriptions/renew/<token>/      a holder's reserved seats (the mailed link)
POST /subscriptions/renew/<token>/      renew: the reservation becomes the buyer's cart, 303 to
                                        /checkout/; with seat=r:c, move to that seat first (free in
                                        every performance, else 409 and the old seat stays reserved)
"""

import re

from django.conf import settings
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST, require_safe

from booking.core import clock
from booking.core.errors import BookingError, InvalidRequest, NotFound
from booking.core.ids import object_id
from booking.presale.context import error_page
from booking.sales import offers, subscriptions
from booking.sales.subscriptions import SaleRequest
from booking.web import buyer, presenters, ratelimits, seatmap_html
from booking.web.errors import status_for

TOKEN_RE = re.compile(r"^[0-9a-f]{32}$")


@require_safe
def subscription_list(request):
    rows = [
        {
            "id": str(sub["_id"]),
            "name": subscriptions.subscription_name(sub),
            "count": len(sub["sessionIds"]),
            "closes": sub["saleCloses"],
        }
        for sub in subscriptions.on_sale()
    ]
    return render(request, "booking/subscriptions.html", {"subscriptions": rows})


def _page(request, subscription_id, *, notice: str = "", status: int = 200, renewal: dict | None = None):
    subscription = subscriptions.get_subscription(object_id(subscription_id, "subscription"))
    if subscription is None:
        raise NotFound(gettext("No such subscription."))
    sessions = subscriptions.performances(subscription)
    ticket_type = renewal["ticket_type"] if renewal else "full"  # a renewal: the map at the holder's price
    common = subscriptions.common_map(subscription, sessions, ticket_type=ticket_type)
    shared = seatmap_html.seat_map_html(common)
    context = {
        "subscription_id": str(subscription["_id"]),
        "name": subscriptions.subscription_name(subscription),
        "performances": [presenters.session_card(s) for s in sessions],
        "map_html": shared.for_viewer(),
        "map_width": shared.width,
        "category_css": seatmap_html.category_css(common),
        "legend": seatmap_html.legend(common),
        "ticket_types": subscriptions.ticket_type_choices(subscription),
        "free": common["seatsAvailable"],
        "notice": notice,
        "renewal": renewal,
        "max_seats": settings.BOOKING_MAX_SEATS_PER_CART,
    }
    return render(request, "booking/subscription.html", context, status=status)


@require_safe
def subscription_page(request, subscription_id):
    try:
        return _page(request, subscription_id)
    except NotFound as exc:
        return error_page(request, exc, 404)


def _seat_keys(request) -> list[str]:
    """The seats posted (``seat``, repeated or comma-separated), bounded before parsing."""
    raw = [part for value in request.POST.getlist("seat")[:50] for part in str(value).split(",")[:50]]
    keys = [part.strip() for part in raw if part.strip()]
    if not keys:
        raise InvalidRequest(gettext("Choose at least one seat."))
    return keys


def _ticket_type(request) -> str:
    code = str(request.POST.get("ticket_type") or "full")[:20]
    if not re.match(r"^[a-z0-9][a-z0-9_-]{0,19}$", code):
        raise InvalidRequest(gettext("Unknown ticket type."))
    return code


@require_POST
def buy(request, subscription_id):
    try:  # (rate-limited as a hold: ratelimits.HOLD_VIEWS)
        sid = object_id(subscription_id, "subscription")
        keys, ticket_type = _seat_keys(request), _ticket_type(request)
        owner = str(buyer.owner(request, create=True))
        request_for = SaleRequest(owner=owner, ticket_type=ticket_type, client=ratelimits.acting_client(request))
        cart = subscriptions.hold_subscription(subscription_id=sid, seat_keys=keys, request=request_for)
    except BookingError as exc:
        status = status_for(exc)
        if status == 409:
            try:
                return _page(request, subscription_id, notice=exc.message, status=409)
            except NotFound as gone:
                return error_page(request, gone, 404)
        return error_page(request, exc, status)
    buyer.set_cart(request, cart["_id"])
    return redirect("booking:checkout", permanent=False)


def _renewal_owner(token: str) -> str:
    if not TOKEN_RE.match(token or ""):
        raise Http404
    return subscriptions.RENEWAL_OWNER_PREFIX + token


def renew(request, token):
    """The mailed link: the reserved seats, and one click to renew and pay."""
    owner = _renewal_owner(token)
    now = clock.now()
    try:
        cart = subscriptions.renewal_cart_for_claim(owner, now)
    except BookingError as exc:
        return error_page(request, exc, status_for(exc))
    if request.method not in ("GET", "HEAD", "POST"):
        return error_page(request, gettext("Not allowed."), 405)
    if request.method == "POST":
        try:
            if request.POST.get("seat"):
                cart = subscriptions.change_renewal_seat(owner=owner, seat_keys=_seat_keys(request))
            subscriptions.start_renewal_payment(cart["_id"], owner, clock.now())
        except BookingError as exc:
            status = status_for(exc)
            if status != 409:
                return error_page(request, exc, status)
            return _page(
                request, cart["subscription"]["_id"], notice=exc.message, status=409, renewal=_renewal(token, cart)
            )
        buyer.adopt(request, owner, cart["_id"])
        return redirect("booking:checkout", permanent=False)
    return _page(request, cart["subscription"]["_id"], renewal=_renewal(token, cart))


def _renewal(token: str, cart) -> dict:
    """The holder's reserved seats, each with the ticket type it renews at (the one they had)."""
    kinds = {(i["row"], i["seat"]): presenters.type_shown(offers.item_offer(i))["name"] for i in cart["items"]}
    seats = [(row, seat, kinds[row, seat]) for row, seat in sorted(kinds)]
    first = cart["items"][0].get("ticketType") or "full"
    return {"token": token, "seats": seats, "until": cart["expiresAt"], "total": cart["total"], "ticket_type": first}
