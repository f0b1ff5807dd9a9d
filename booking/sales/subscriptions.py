"""Season subscriptions: the same seat in each of a set of performances, sold in one step.

Staff define a subscription (``create_subscription``): a name in both languages, its performances
(possibly in different halls), a price per category for the whole series (and per ticket type), and
its sale window. A sale (``hold_subscription``) takes the seats in EVERY performance or in none:

1. the sale's intent is stored first (``subscription_sales``, state ``holding``): every seat it
   will take, by performance, and the cart id the holds are made for;
2. per performance, one conditional update takes the seats (the hold's own filter,
   ``holds.seats_free``: every cell free, the performance on sale and not started, the same layout)
   and records the cart's reservation in the same write;
3. the cart is stored with one item per seat and performance, the subscription's price split over
   them (their sum is the subscription's price), marked ``subscription``;
4. the intent becomes ``held``.

If a seat is taken in any performance, the seats taken in the others are given back
(``reservations.settle``) and the intent is ``undone``. A crash between the writes leaves the intent
``holding``: reconcile (``finish_open_sales``) finishes it when the cart was stored (every
performance was held before it) and undoes it otherwise. From step 4 the cart is an ordinary cart:
it expires, is paid through the payment flow (payments/flow.py) or sold at the counter
(sales/counter.py), and its order has a ticket per performance, each line marked with the
subscription (reports/tally.py counts their income apart).

Renewal (``open_renewal``): last season's holders get their seats reserved in the new
subscription's performances (the same sale, in a cart of a renewal owner lasting to the end of the
renewal window) as soon as the subscription is created (in staff's request, else the beat's next
round), not when its own sale opens; ``renewal_link`` is mailed, the buyer claims the cart
(``claim_renewal``) and pays it like any other. A reservation not renewed ends with its cart at the
window's end, and its seats go back on sale. (No seat is ever held twice: every reservation is the
same conditional update.)
"""

import hashlib
import hmac
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext
from pymongo import ReturnDocument

from booking.core import clock, faults, formatting, mongo
from booking.core.domain import (
    Cart,
    CartItem,
    CartState,
    Order,
    OrderState,
    Session,
    SessionStatus,
    Subscription,
    SubscriptionSale,
    SubscriptionSaleState,
    seats_left,
    within_quota,
)
from booking.core.errors import (
    BookingError,
    CartExpired,
    InvalidRequest,
    NotFound,
    QuotaReached,
    SeatsTaken,
    SessionNotOnSale,
    TooManySeats,
)
from booking.core.localized import localized
from booking.sales import carts as cart_service
from booking.sales import client_holds, counter, hold_facts, offers, reservations, selectors
from booking.sales.holds import no_seat_left_alone, parse_seats, refuse_orphans, seats_free, too_many_from_client
from booking.venues.seat_grid import FREE, HELD, SOLD, cell_path, seat_at, seat_cell, seat_key, seat_name

logger = logging.getLogger("booking.subscriptions")

MAX_PERFORMANCES = 30
MAX_NAME = 120
HOLDING = SubscriptionSaleState.HOLDING
HELD_STATE = SubscriptionSaleState.HELD
UNDONE = SubscriptionSaleState.UNDONE
# What a sale reads of each performance: enough to check and price it, never the seat states.
SALE_FIELDS = {"status": 1, "start": 1, "layoutRev": 1, "name": 1, "nameDe": 1, "theaterName": 1, "currency": 1}
RENEWAL_OWNER_PREFIX = "r:"


# --- staff: defining a subscription ---


def create_subscription(
    *,
    name: str,
    name_de: str = "",
    session_ids: Sequence[ObjectId],
    prices: Mapping[str, int],
    type_prices: Mapping[str, Mapping[str, int]] | None = None,
    sale_opens: datetime,
    sale_closes: datetime,
    renews: ObjectId | None = None,
    renewal_closes: datetime | None = None,
) -> Subscription:
    """Store a subscription after checking it: a name, 1..MAX_PERFORMANCES distinct performances
    published and not started, a whole-cent price for every seat category of every performance,
    other ticket types only where the first performance offers them, and a sale window that opens
    before it closes and closes before the first performance. ``renews``: last season's
    subscription whose holders get ``renewal_closes`` to renew their seats."""
    name = " ".join(str(name or "").split())
    name_de = " ".join(str(name_de or "").split())
    if not name or len(name) > MAX_NAME or len(name_de) > MAX_NAME:
        raise InvalidRequest(
            gettext("Give the subscription a name of at most %(max)d characters.") % {"max": MAX_NAME},
            fields={"name": gettext("1-%(max)d characters.") % {"max": MAX_NAME}},
        )
    ids = list(dict.fromkeys(session_ids))
    if not 1 <= len(ids) <= MAX_PERFORMANCES or len(ids) != len(session_ids):
        raise InvalidRequest(
            gettext("Choose between 1 and %(max)d different performances.") % {"max": MAX_PERFORMANCES},
            fields={"sessions": gettext("1-%(max)d performances.") % {"max": MAX_PERFORMANCES}},
        )
    now = clock.now()
    found = {s["_id"]: s for s in mongo.sessions().find({"_id": {"$in": ids}}, {"seats": 0, "reservations": 0})}
    sessions = [found[i] for i in ids if i in found]
    if len(sessions) != len(ids) or any(
        s.get("status") != SessionStatus.ON_SALE or s["start"] <= now for s in sessions
    ):
        raise InvalidRequest(
            gettext("Every performance must be published and still to come."),
            fields={"sessions": gettext("Published performances still to come only.")},
        )
    sessions.sort(key=lambda s: s["start"])
    categories = {cell["cat"] for s in sessions for row in s["layout"]["rows"] for cell in row["cells"] if cell}
    cleaned = _clean_prices(prices, categories)
    types = offers.ticket_types(sessions[0])
    cleaned_types = offers.clean_type_prices(dict(type_prices or {}), types, categories)
    if not isinstance(sale_opens, datetime) or not isinstance(sale_closes, datetime) or sale_opens >= sale_closes:
        raise InvalidRequest(
            gettext("The sale must open before it closes."), fields={"sale": gettext("Opens before it closes.")}
        )
    if sale_closes > sessions[0]["start"]:
        raise InvalidRequest(
            gettext("The sale must close by the first performance."),
            fields={"sale": gettext("Closes by the first performance.")},
        )
    doc: dict[str, Any] = {
        "_id": ObjectId(),
        "name": name,
        "sessionIds": [s["_id"] for s in sessions],
        "prices": cleaned,
        "saleOpens": sale_opens,
        "saleCloses": sale_closes,
        "currency": settings.BOOKING_CURRENCY,
        "createdOn": now,
    }
    if name_de:
        doc["nameDe"] = name_de
    if cleaned_types:
        doc["typePrices"] = cleaned_types
    if len(types) > 1:
        doc["ticketTypes"] = types
    if renews is not None:
        if mongo.subscriptions().count_documents({"_id": renews}, limit=1) == 0:
            raise InvalidRequest(gettext("No such subscription to renew."))
        if not isinstance(renewal_closes, datetime) or not sale_opens <= renewal_closes <= sale_closes:
            raise InvalidRequest(
                gettext("The renewal window must end within the sale window."),
                fields={"renewal": gettext("Within the sale window.")},
            )
        doc["renews"] = renews
        doc["renewalCloses"] = renewal_closes
    mongo.subscriptions().insert_one(doc)
    return Subscription(**doc)  # type: ignore[typeddict-item]


def _clean_prices(prices: Mapping[str, int], categories: set[str]) -> dict[str, int]:
    if not isinstance(prices, Mapping):
        raise InvalidRequest(gettext("Give a price for every seat category."))
    cleaned: dict[str, int] = {}
    for cat in sorted(categories):
        cents = prices.get(cat)
        if not isinstance(cents, int) or isinstance(cents, bool) or not 0 <= cents <= 10_000_000:
            raise InvalidRequest(
                gettext("Give category %(cat)s a price between 0 and 100,000.") % {"cat": cat},
                fields={f"price_{cat}": gettext("0-100,000.")},
            )
        cleaned[cat] = cents
    unknown = set(prices) - categories
    if unknown:
        raise InvalidRequest(gettext("Unknown seat category '%(cat)s'.") % {"cat": str(sorted(unknown)[0])[:5]})
    return cleaned


# --- reads ---


def get_subscription(subscription_id: ObjectId | None) -> Subscription | None:
    if subscription_id is None:
        return None
    return mongo.subscriptions().find_one({"_id": subscription_id})


def on_sale(now: datetime | None = None) -> list[Subscription]:
    """Subscriptions whose sale has not closed, soonest-closing first (the sale_closes index)."""
    now = now or clock.now()
    return list(mongo.subscriptions().find({"saleCloses": {"$gt": now}}).sort("saleCloses", 1).limit(100))


def all_subscriptions() -> list[Subscription]:
    """Every subscription, newest sale first (staff's list; a few dozen a season)."""
    return list(mongo.subscriptions().find().sort("saleCloses", -1).limit(500))


def performances(subscription: Mapping[str, Any]) -> list[Session]:
    """The subscription's performances with their seat states, in order of their start."""
    found = {s["_id"]: s for s in mongo.sessions().find({"_id": {"$in": subscription["sessionIds"]}})}
    return [found[i] for i in subscription["sessionIds"] if i in found]


def price_of(subscription: Mapping[str, Any], cat: str, ticket_type: str = offers.FULL) -> int | None:
    """The whole subscription's price of a seat of ``cat`` for ``ticket_type`` (None: not offered)."""
    if ticket_type == offers.FULL:
        return subscription["prices"].get(cat)
    return ((subscription.get("typePrices") or {}).get(ticket_type) or {}).get(cat)


def ticket_type_choices(subscription: Mapping[str, Any]) -> list[dict]:
    """The ticket types this subscription is sold at (full price first), each with its name."""
    offered = set(subscription.get("typePrices") or {}) | {offers.FULL}
    return [t for t in offers.ticket_types(subscription) if t["code"] in offered]


def prices_for_type(subscription: Mapping[str, Any], ticket_type: str) -> dict[str, int]:
    """The subscription's price per category at this ticket type (full price where it has none)."""
    return {cat: price_of(subscription, cat, ticket_type) or full for cat, full in subscription["prices"].items()}


def common_map(
    subscription: Mapping[str, Any], sessions: Sequence[Mapping[str, Any]], *, ticket_type: str = offers.FULL
) -> dict:
    """One map for the whole subscription: the first performance's layout, a seat free only where
    it is a seat of that category and free in EVERY performance (else shown sold), the
    subscription's prices at ``ticket_type`` (a renewing holder's). Its ``version`` is the sum of
    the performances' versions (it changes whenever one of them does), ``_id`` the subscription's
    (with the ticket type, other than full): the seat map's HTML is kept per (id, version) like a
    session's (web/seatmap_html.py)."""
    if not sessions:
        raise NotFound(gettext("No such subscription."))
    first = sessions[0]
    layout = first["layout"]
    grid = [list(row) for row in first["seats"]]
    for r, row in enumerate(layout["rows"]):
        for c, cell in enumerate(row["cells"]):
            if cell is None or grid[r][c] != FREE:
                continue
            for other in sessions[1:]:
                theirs = seat_cell(other["layout"], r, c)
                if theirs is None or theirs.get("cat") != cell["cat"] or other["seats"][r][c] != FREE:
                    grid[r][c] = SOLD
                    break
    return {
        "_id": subscription["_id"] if ticket_type == offers.FULL else (subscription["_id"], ticket_type),
        "version": sum(s.get("version", 0) for s in sessions),
        "layout": layout,
        "seats": grid,
        "prices": prices_for_type(subscription, ticket_type),
        "currency": subscription.get("currency"),
        "status": SessionStatus.ON_SALE,
        "front": first.get("front"),
        "seatsAvailable": sum(1 for row in grid for state in row if state == FREE),
    }


# --- selling: the intent, a hold per performance, the cart ---


@dataclass(frozen=True)
class SaleRequest:
    """One subscription sale: on whose behalf and under which rules."""

    owner: str
    ticket_type: str = offers.FULL
    client: str | None = None  # the buyer's address key, kept on the cart (sales/client_holds.py)
    box_office: bool = False  # staff at the counter: the sale window does not apply (a staff owner only)
    until: datetime | None = None  # the hold's end (a renewal's window); default: a cart's hold
    renewal_of: ObjectId | None = None  # the renewing holder's order
    seat_types: Mapping[str, str] | None = None  # a ticket type per seat key (a renewal's), else ticket_type
    # a renewal reserving the seats its holder had: exempt from the orphan rule (reserving the
    # holders one by one would otherwise refuse a holder whose neighbour renews after them)
    keeps_seats: bool = False

    def type_of(self, key: str) -> str:
        return (self.seat_types or {}).get(key, self.ticket_type)


def hold_subscription(*, subscription_id: ObjectId, seat_keys, request: SaleRequest) -> Cart:
    """Take these seats in every performance of the subscription, or none (module docstring).
    Returns the new cart holding them, ready for the payment flow or the counter's sale.

    Seats are given as keys ("r:c") of the common map: the same seat in each performance."""
    if request.box_office and not cart_service.is_staff_owner(request.owner):
        raise RuntimeError("the box office's sale rules are for staff carts only")
    coords = parse_seats(seat_keys)
    subscription = get_subscription(subscription_id)
    if subscription is None:
        raise NotFound(gettext("No such subscription."))
    now = clock.now()
    if not request.box_office and request.until is None:
        _refuse_outside_sale_window(subscription, now)
    offered = {t["code"] for t in ticket_type_choices(subscription)}
    if any(request.type_of(seat_key(r, c)) not in offered for r, c in coords):
        raise InvalidRequest(gettext("Unknown ticket type."))
    _refuse_too_many_carts(request, now)
    sessions = _sessions_for_sale(subscription, now)
    keys = [seat_key(r, c) for r, c in coords]
    items = _items(subscription, sessions, coords, request)
    cart_id = ObjectId()
    expires_at = request.until or cart_service.next_expiry(None, now, request.owner)
    seats_held = len(coords) * len(sessions)
    counted_for = _reserve_for_client(request, cart_id, seats_held, expires_at, now)
    sale: SubscriptionSale = {
        "_id": ObjectId(),
        "subscriptionId": subscription["_id"],
        "cartId": cart_id,
        "owner": request.owner,
        "seats": [{"sessionId": s["_id"], "keys": keys} for s in sessions],
        "state": HOLDING,
        "createdOn": now,
    }
    if counted_for:  # given back by ``undo`` when the sale is undone
        sale["client"], sale["clientSeats"] = counted_for, seats_held
    try:
        mongo.subscription_sales().insert_one(sale)
    except BaseException:
        if counted_for:
            client_holds.give_back(counted_for, cart_id, seats_held)
        raise
    faults.point("subscription.after_intent")
    orphan_rule = settings.BOOKING_PREVENT_ORPHAN_SEATS and not request.keeps_seats
    for session in sessions:
        total = sum(i["price"] for i in items if i["sessionId"] == session["_id"])
        if not _take(session, cart_id, request.owner, coords, total, now, orphan_rule=orphan_rule):
            undo(sale)
            _refuse_missed(session, coords, orphan_rule=orphan_rule)
        faults.point("subscription.after_session")
    cart = _store_cart(subscription, cart_id, items, request, now, expires_at)
    faults.point("subscription.after_cart")
    if not _mark(sale["_id"], HELD_STATE, now):
        undo(sale)  # reconcile undid the intent meanwhile (this process was too slow): nothing is held
        raise CartExpired(gettext("Your hold has ended. Please choose your seats again."))
    return cart


def sell_at_counter(
    *, subscription_id: ObjectId, seat_keys, ticket_type: str, sale: counter.CounterSale, owner: str
) -> Order:
    """The box office sells a subscription: the seats held in every performance for the staff
    member's new cart (the box office's hours: outside the online sale window too), then the
    counter's own sale of that cart (sales/counter.py: cash, card terminal, invoice,
    complimentary). If the sale is refused (a customer field, an invoice date), the hold is given
    back: nothing stays held. Returns the order."""
    request = SaleRequest(owner=owner, ticket_type=ticket_type, box_office=True)
    cart = hold_subscription(subscription_id=subscription_id, seat_keys=seat_keys, request=request)
    try:
        return counter.sell(owner, cart["_id"], sale)
    except BookingError:
        cart_service.cancel_cart(cart["_id"], owner)
        raise


def _refuse_outside_sale_window(subscription: Mapping[str, Any], now: datetime) -> None:
    if now < subscription["saleOpens"]:
        raise SessionNotOnSale(
            gettext("Not on sale yet: this subscription can be bought from %(opens)s.")
            % {"opens": formatting.sale_time(subscription["saleOpens"])}
        )
    if now >= subscription["saleCloses"]:
        raise SessionNotOnSale(gettext("The sale of this subscription has closed."))
    renewal_closes = subscription.get("renewalCloses")
    # During the renewal window everyone may buy the seats not reserved for renewal: those are
    # held by the holders' renewal carts, so the sale's own writes keep them off. Only until
    # every holder's seats are reserved (``open_renewal``) is the public sale closed.
    if renewal_closes and now < renewal_closes and not subscription.get("renewalOpenedOn"):
        raise SessionNotOnSale(
            gettext(
                "Last season's subscribers' seats are being set aside for them; "
                "the sale opens in a few minutes. Please try again then."
            )
        )


def _reserve_for_client(
    request: SaleRequest, cart_id: ObjectId, seats: int, until: datetime, now: datetime
) -> str | None:
    """The per-address held-seats limit (sales/client_holds.py), as a hold counts it: a seat held
    in a performance is one seat, so a subscription counts each chosen seat once per performance
    (2 seats of 8 performances: 16), reserved before any performance is written. Staff and
    renewals name no address. Returns the address counted for, or None (no limit, no address)."""
    if not (request.client and client_holds.limit()):
        return None
    held = client_holds.reserve(request.client, cart_id, seats, until, now, owner=request.owner)
    if held is not None:
        raise too_many_from_client(held, client_holds.limit())
    return request.client


def _refuse_missed(session: Mapping[str, Any], coords, *, orphan_rule: bool) -> None:
    """Why a performance's write missed, read after it: a seat no longer free (SeatsTaken), a
    free seat it would leave alone (OrphanSeat, the hold's own rule), its quota taken, else the performance
    itself (no longer on sale, started, or its seat map replaced)."""
    layout = session["layout"]
    when = formatting.sale_time(session["start"])
    now_seats = (
        mongo.sessions().find_one({"_id": session["_id"]}, {"seats": 1, "seatsAvailable": 1, "quotaFloor": 1}) or {}
    )
    seats = now_seats.get("seats")
    if seats is not None:
        if any(seats[r][c] != FREE for r, c in coords):
            names = ", ".join(seat_name(layout, r, c) for r, c in coords)
            raise SeatsTaken([f"{names} ({when})"])
        if orphan_rule:
            refuse_orphans(layout, seats, coords, performance=when)
        if "quotaFloor" in now_seats and seats_left(now_seats) < len(coords):
            raise QuotaReached(
                gettext("No more tickets for the performance on %(when)s: its quota is taken.") % {"when": when}
            )
    raise SessionNotOnSale(gettext("A performance of this subscription is no longer on sale."))


def _refuse_too_many_carts(request: SaleRequest, now: datetime) -> None:
    """A buyer keeps at most BOOKING_MAX_LIVE_CARTS_PER_OWNER carts holding seats (as a hold does)."""
    limit = getattr(settings, "BOOKING_MAX_LIVE_CARTS_PER_OWNER", 0)
    if not limit or cart_service.is_staff_owner(request.owner) or request.until is not None:
        return
    if selectors.buyer_carts(request.owner, None, now).owner_live >= limit:
        raise TooManySeats(
            gettext(
                "You already have seats on hold or waiting for payment. Pay for or cancel one of those bookings first."
            )
        )


def _sessions_for_sale(subscription: Mapping[str, Any], now: datetime) -> list[dict]:
    """Every performance, with its layout (kept per process: ``hold_facts.session_layout``); each
    must be on sale and still to come."""
    found = {s["_id"]: s for s in mongo.sessions().find({"_id": {"$in": subscription["sessionIds"]}}, SALE_FIELDS)}
    sessions = []
    for sid in subscription["sessionIds"]:
        session = found.get(sid)
        if session is None or session.get("status") != SessionStatus.ON_SALE or session["start"] <= now:
            raise SessionNotOnSale(gettext("A performance of this subscription is no longer on sale."))
        layout = hold_facts.session_layout(sid, session.get("layoutRev", 0))
        if layout is None:
            raise SessionNotOnSale(gettext("A performance of this subscription is no longer on sale."))
        sessions.append({**session, "layout": layout})
    return sessions


def _items(subscription: Mapping[str, Any], sessions: list[dict], coords, request: SaleRequest) -> list[CartItem]:
    """A cart item per seat and performance; each seat's subscription price split over its
    performances (the first ones take the odd cents), so the cart's total is the subscription's."""
    items: list[CartItem] = []
    first_layout = sessions[0]["layout"]
    choices = ticket_type_choices(subscription)
    for r, c in coords:
        ticket_type = request.type_of(seat_key(r, c))
        type_name = next((t for t in choices if t["code"] == ticket_type), None)
        cell = seat_cell(first_layout, r, c)
        if cell is None:
            raise InvalidRequest(
                gettext("There is no seat at row %(row)d, position %(column)d in this hall.")
                % {"row": r + 1, "column": c + 1}
            )
        price = price_of(subscription, cell["cat"], ticket_type)
        if price is None or type_name is None:
            raise InvalidRequest(gettext("This ticket type is not offered for that seat."))
        shares = split(price, len(sessions))
        for session, share in zip(sessions, shares, strict=True):
            here = seat_cell(session["layout"], r, c)
            if here is None or here["cat"] != cell["cat"]:
                raise InvalidRequest(
                    gettext("%(seat)s is not the same seat in every performance.")
                    % {"seat": seat_name(first_layout, r, c)}
                )
            seat = seat_at(session["layout"], r, c)
            item: CartItem = {
                "sessionId": session["_id"],
                "key": seat_key(r, c),
                "row": session["layout"]["rows"][r]["label"],
                "seat": seat["label"],
                "cat": cell["cat"],
                "price": share,
                "ticketType": ticket_type,
                # the only offer: the buyer cannot change a subscription ticket's type in the cart
                "offers": [{**{k: v for k, v in type_name.items() if k != "companion"}, "price": share}],
                "subscription": subscription["_id"],
            }
            if seat.get("wheelchair"):
                item["wheelchair"] = True
            items.append(item)
    return items


def split(total: int, parts: int) -> list[int]:
    """``total`` cents in ``parts`` whole-cent shares that add up to it, the larger ones first."""
    base, odd = divmod(total, parts)
    return [base + (1 if i < odd else 0) for i in range(parts)]


def _take(
    session: Mapping[str, Any], cart_id: ObjectId, owner: str, coords, total: int, now: datetime, *, orphan_rule: bool
) -> bool:
    """One performance's hold: the seats free, the performance on sale, not started and of the
    layout the seats were checked in, and (``orphan_rule``) no free seat left alone beside them
    (the hold's own guard, ``holds.no_seat_left_alone``), all in the filter; the cells held and
    the cart's reservation recorded in the same write (the reservation's shape:
    sales/reservations.py)."""
    keys = [seat_key(r, c) for r, c in coords]
    rev = session.get("layoutRev", 0)
    query: dict[str, Any] = {
        "_id": session["_id"],
        "status": SessionStatus.ON_SALE,
        "start": {"$gt": now},
        "layoutRev": rev if rev else {"$in": [0, None]},
        "reservations._id": {"$ne": cart_id},
        **seats_free(coords),
    }
    guards = no_seat_left_alone(session["layout"], coords) if orphan_rule else []
    query["$and"] = [*guards, within_quota(len(coords))]
    update = {
        "$set": {cell_path(r, c): HELD for r, c in coords},
        "$inc": {"seatsAvailable": -len(coords), "version": 1},
        "$push": {
            "reservations": {
                "_id": cart_id,
                "seats": keys,
                "total": total,
                "v": reservations.new_token(),
                "modifiedOn": now,
                "owner": owner,
            }
        },
    }
    return mongo.sessions().update_one(query, update).matched_count == 1


def _store_cart(
    subscription: Mapping[str, Any],
    cart_id: ObjectId,
    items: list[CartItem],
    request: SaleRequest,
    now: datetime,
    expires_at: datetime,
) -> Cart:
    cart: dict[str, Any] = {
        "_id": cart_id,
        "owner": request.owner,
        "state": CartState.ACTIVE,
        "items": items,
        "total": sum(i["price"] for i in items),
        "createdOn": now,
        "modifiedOn": now,
        "firstHoldOn": now,
        "expiresAt": expires_at,
        "subscription": {
            "_id": subscription["_id"],
            "name": subscription["name"],
            **({"nameDe": subscription["nameDe"]} if subscription.get("nameDe") else {}),
            **({"renewalOf": request.renewal_of} if request.renewal_of else {}),
        },
    }
    if request.client:
        cart["client"] = request.client
    mongo.carts().insert_one(cart)
    return Cart(**cart)  # type: ignore[typeddict-item]


def _mark(sale_id: ObjectId, state: SubscriptionSaleState, now: datetime) -> bool:
    """The intent ``holding -> state`` (conditional: only one of the sale and reconcile ends it)."""
    result = mongo.subscription_sales().update_one(
        {"_id": sale_id, "state": HOLDING}, {"$set": {"state": state, "endedOn": now}}
    )
    return result.matched_count == 1


def undo(sale: Mapping[str, Any]) -> int:
    """Give back every seat the sale took (each performance's hold of its cart: one conditional
    update each), cancel its cart if it was stored, and end the intent ``undone``. Safe to repeat.
    Returns the seats freed."""
    now = clock.now()
    _mark(sale["_id"], UNDONE, now)
    freed = 0
    for entry in sale["seats"]:
        freed += reservations.settle(entry["sessionId"], sale["cartId"]).freed
    mongo.carts().update_one(
        {"_id": sale["cartId"], "owner": sale["owner"], "state": CartState.ACTIVE},
        {"$set": {"state": CartState.CANCELED, "endedOn": now, "modifiedOn": now}},
    )
    if sale.get("client"):  # after the seats are free; a repeat finds the entry emptied: nothing
        client_holds.give_back(sale["client"], sale["cartId"], sale["clientSeats"])
    return freed


@dataclass
class OpenSales:
    finished: int = 0
    undone: int = 0
    seats_released: int = 0


def finish_open_sales(older_than: datetime) -> OpenSales:
    """Reconcile's step: sales a crash left ``holding`` (begun before ``older_than``). Their cart
    was stored only after every performance was held, so a stored cart is finished (``held``; the
    cart lives and ends like any other); without one, what was taken is given back."""
    report = OpenSales()
    for sale in mongo.subscription_sales().find({"state": HOLDING, "createdOn": {"$lt": older_than}}).limit(1000):
        cart = mongo.carts().find_one({"_id": sale["cartId"], "owner": sale["owner"]}, {"_id": 1})
        if cart is not None:
            if _mark(sale["_id"], HELD_STATE, clock.now()):
                report.finished += 1
            continue
        report.seats_released += undo(sale)
        report.undone += 1
    return report


# --- renewal: last season's holders keep their seats for a while ---


def holders(subscription_id: ObjectId) -> list[dict]:
    """Last season's holders: every paid order of the subscription with its seat keys (the
    subscription index on orders)."""
    found = []
    for order in mongo.orders().find(
        {"subscription._id": subscription_id, "state": {"$in": [OrderState.PAID, OrderState.PARTIALLY_REFUNDED]}},
        {"ref": 1, "name": 1, "email": 1, "language": 1, "lines": 1},
    ):
        lines = [line for line in order["lines"] if line.get("subscription") == subscription_id]
        types = {line["key"]: offers.item_type(line) for line in lines}  # each seat's type, as sold
        if types:
            found.append({**order, "keys": sorted(types), "types": types})
    return found


def renewal_owner(order_id: ObjectId, subscription_id: ObjectId) -> str:
    """The renewal cart's owner: derived from the holder's order and the new subscription, signed
    with SECRET_KEY, so the mailed link names it and nobody can guess another holder's."""
    message = f"{order_id}:{subscription_id}".encode()
    digest = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()[:32]
    return f"{RENEWAL_OWNER_PREFIX}{digest}"


@dataclass
class RenewalOpened:
    reserved: int = 0
    already: int = 0
    lost: list[str] | None = None  # holders whose seat was taken in a new performance


def open_renewal(subscription_id: ObjectId) -> RenewalOpened:
    """Reserve each holder's seats of the subscription it renews in the new performances, until the
    renewal window closes (a subscription sale each, in a cart of the holder's renewal owner).
    Run again, it reserves only for holders not yet reserved (the renewal owner's carts).

    It runs as soon as it can, not when the subscription's own sale opens: the performances'
    single sale may be open already, and a holder's seat is kept only once it is held for them."""
    subscription = get_subscription(subscription_id)
    if subscription is None or not subscription.get("renews"):
        raise NotFound(gettext("No such subscription."))
    opened = RenewalOpened(lost=[])
    for holder in holders(subscription["renews"]):
        owner = renewal_owner(holder["_id"], subscription_id)
        if mongo.carts().count_documents({"owner": owner, "subscription._id": subscription_id}, limit=1):
            opened.already += 1
            continue
        request = SaleRequest(
            owner=owner,
            seat_types=renewal_types(subscription, holder["types"]),
            until=subscription["renewalCloses"],
            renewal_of=holder["_id"],
            keeps_seats=True,
        )
        try:
            hold_subscription(subscription_id=subscription_id, seat_keys=holder["keys"], request=request)
            opened.reserved += 1
        except (SeatsTaken, InvalidRequest) as exc:
            logger.warning("renewal of %s: seats not reserved: %s", holder["ref"], exc)
            opened.lost.append(holder["ref"])  # type: ignore[union-attr]
    mongo.subscriptions().update_one({"_id": subscription_id}, {"$set": {"renewalOpenedOn": clock.now()}})
    return opened


def renewal_types(subscription: Mapping[str, Any], types: Mapping[str, str]) -> dict[str, str]:
    """Each seat's ticket type for its renewal: the one its holder had (a reduced subscriber
    renews reduced), or full price where the new subscription does not offer that type."""
    offered = set(subscription.get("typePrices") or {}) | {offers.FULL}
    return {key: code if code in offered else offers.FULL for key, code in types.items()}


def due_renewals(now: datetime) -> list[Subscription]:
    """Renewing subscriptions whose holders' seats are not reserved yet and whose renewal window has
    not closed, whether their own sale has opened or not."""
    return list(
        mongo.subscriptions().find(
            {
                "renewalCloses": {"$gt": now},
                "renews": {"$exists": True},
                "renewalOpenedOn": {"$exists": False},  # set once every holder was tried
            }
        )
    )


def open_due_renewals(*, now: datetime) -> int:
    """``open_renewal`` for every due renewal; returns how many holders were reserved."""
    return sum(open_renewal(s["_id"]).reserved for s in due_renewals(now))


def renewals_to_mail(now: datetime) -> list[dict]:
    """Reserved renewals whose holder has not been mailed yet: the cart, and the holder's order
    (name, e-mail, language) the mail goes to."""
    pending = []
    query = {"owner": {"$regex": f"^{RENEWAL_OWNER_PREFIX}"}, "state": CartState.ACTIVE, "expiresAt": {"$gt": now}}
    for cart in mongo.carts().find({**query, "renewalMailedOn": {"$exists": False}}).limit(500):
        order = mongo.orders().find_one(
            {"_id": cart["subscription"].get("renewalOf")}, {"ref": 1, "name": 1, "email": 1, "language": 1}
        )
        if order is not None and order.get("email"):
            pending.append({"cart": cart, "order": order})
    return pending


def mark_mailed(cart_id: ObjectId, owner: str) -> None:
    """The renewal mail went out (written after the mail server took it: at worst sent twice)."""
    mongo.carts().update_one({"_id": cart_id, "owner": owner}, {"$set": {"renewalMailedOn": clock.now()}})


def renewal_cart(owner: str) -> Cart | None:
    """A renewal's cart by its owner, live or not (None: no such renewal)."""
    if not owner.startswith(RENEWAL_OWNER_PREFIX):
        return None
    return mongo.carts().find_one({"owner": owner, "subscription": {"$exists": True}}, sort=[("createdOn", -1)])


def change_renewal_seat(*, owner: str, seat_keys) -> Cart:
    """The holder moves to other seats, free in every performance: the new seats are taken first (a
    new sale in a new cart of the same owner and window), then the old reservation is given back.
    If the new seats are not free, the old ones stay reserved."""
    old = renewal_cart(owner)
    now = clock.now()
    if old is None or old["state"] != CartState.ACTIVE or old["expiresAt"] <= now:
        raise CartExpired(gettext("The renewal window has closed."))
    sub = old["subscription"]
    # the holder's types move with them: seat by seat in order, further seats as the first
    had = list({item["key"]: offers.item_type(item) for item in old["items"]}.values())
    keys = [seat_key(r, c) for r, c in parse_seats(seat_keys)]
    request = SaleRequest(
        owner=owner,
        seat_types={key: had[i] if i < len(had) else had[0] for i, key in enumerate(keys)},
        until=old["expiresAt"],
        renewal_of=sub.get("renewalOf"),
    )
    cart = hold_subscription(subscription_id=sub["_id"], seat_keys=seat_keys, request=request)
    cart_service.cancel_cart(old["_id"], owner)
    return cart


def renewal_token(owner: str) -> str:
    """The renewal link's token (presale/views/subscriptions.py): the owner without its prefix."""
    return owner[len(RENEWAL_OWNER_PREFIX) :]


def subscription_name(subscription: Mapping[str, Any]) -> str:
    """The subscription's name in the active language."""
    return localized(subscription, "name")


def end_renewal_carts(now: datetime | None = None) -> int:
    """Renewal reservations past their window are ended (their seats go back on general sale):
    the cart expiry the worker runs for every cart, asked for these by name."""
    now = now or clock.now()
    ended = 0
    for cart in (
        mongo.carts()
        .find(
            {"owner": {"$regex": f"^{RENEWAL_OWNER_PREFIX}"}, "state": CartState.ACTIVE, "expiresAt": {"$lte": now}},
            {"_id": 1, "owner": 1},
        )
        .limit(1000)
    ):
        if cart_service.expire_cart(cart["_id"], now, owner=cart["owner"]) is not None:
            ended += 1
    return ended


def renewal_cart_for_claim(owner: str, now: datetime) -> Cart:
    """A holder's renewal cart while its window is open (the mailed link's page)."""
    cart = renewal_cart(owner)
    if cart is None:
        raise NotFound(gettext("No such renewal."))
    if cart["state"] != CartState.ACTIVE or cart["expiresAt"] <= now:
        raise CartExpired(gettext("The renewal window has closed."))
    return cart


def start_renewal_payment(cart_id: ObjectId, owner: str, now: datetime) -> Cart | None:
    """A renewal cart's first hold is now: the payment window's cap counts from the click, not
    from when the reservation was made weeks ago (payments.flow.payment_window_end)."""
    return mongo.carts().find_one_and_update(
        {"_id": cart_id, "owner": owner, "state": CartState.ACTIVE, "expiresAt": {"$gt": now}},
        {"$set": {"firstHoldOn": now, "modifiedOn": now}},
        return_document=ReturnDocument.AFTER,
    )
