"""Holding and releasing seats: the buyer's clicks.

Hold (access pattern C1) is two writes: one conditional update on the session that requires
every requested cell to be free and, in the same update, marks them held and records the
reservation; then the cart records the seats. If the cart write finds the cart no longer active,
the hold is given back at once.
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext as _
from pymongo import ReturnDocument

from booking.core import clock, faults, formatting, mongo
from booking.core.domain import (
    HOLDING_STATES,
    Cart,
    CartItem,
    CartState,
    Layout,
    SalePhase,
    Session,
    SessionStatus,
    is_live,
    is_stale,
    live_cart_filter,
    sale_open_filter,
    sale_phase,
    seats_left,
    within_quota,
)
from booking.core.errors import (
    BookingError,
    CartExpired,
    InvalidRequest,
    NoAdjacentSeats,
    NotFound,
    OrphanSeat,
    QuotaReached,
    SeatsTaken,
    SessionNotOnSale,
    TooManySeats,
    WheelchairSpaceNotDeclared,
)
from booking.sales import cart_expiry, client_holds, hold_facts, offers, reservations, seats_returned, selectors
from booking.sales import carts as cart_service
from booking.sales.admission import check as check_admission  # waiting room: a queued sale needs an admission
from booking.sales.admission import hold_clause as admission_clause
from booking.sales.hold_facts import SaleFacts
from booking.venues.seat_grid import (
    BLOCKED,
    FREE,
    HELD,
    best_available,
    best_split,
    best_wheelchair,
    cell_path,
    longest_block,
    orphans_created,
    seat_at,
    seat_cell,
    seat_key,
    seat_name,
)

logger = logging.getLogger("booking.holds")


@dataclass(frozen=True, slots=True)
class HoldContext:
    """What a hold depends on besides the cart: on whose behalf and under which rules seats are
    taken. The buyer's views build it per request (``presale/views/seats.py``), the staff counter
    uses ``BOX_OFFICE``; the default (worker, shell, load scenario) is a buyer with no address,
    nothing unlocked and no admission."""

    # The client (an IP key such as "ip:203.0.113.7"; ``ratelimits.client_key``). New carts record
    # it, so seats held from one address can be counted; None means no per-client limit.
    client: str | None = None
    # The presale keys the buyer unlocked with an access code (booking/web/buyer.py): the hold's
    # filter lets these presales' holds through.
    presale_keys: frozenset[str] = frozenset()
    # The waiting-room queues whose admission the buyer presented, verified (sales/admission.py).
    admitted_queues: frozenset[ObjectId] = frozenset()
    # Staff selling at the counter may take house seats (blocked by staff): ``blocked -> held`` in
    # the same conditional write, remembered in the reservation's ``house`` and the cart item's
    # ``house``, so a release or an expiry puts them back to blocked, never on sale.
    house_seats: bool = False
    # Staff selling at the counter (``booking.sell_at_counter``) keep the box office's hours, not
    # the online shop's: before the online on-sale, after the online off-sale, until the
    # performance starts (plus ``BOOKING_COUNTER_SALE_AFTER_START_SECONDS``), and never through a
    # waiting room. Still only a performance on sale (not draft, not canceled), and the hold's
    # write still requires every seat free (or a house seat): another cart's seats stay theirs.
    box_office: bool = False

    @property
    def staff_rules(self) -> bool:
        """The box office's hours or house seats: rules for staff carts only."""
        return self.house_seats or self.box_office


ONLINE = HoldContext()  # a buyer with no address, nothing unlocked and no admission
# The staff counter: house seats choosable, the box office's hours, and no per-address limit on
# the box office's till.
BOX_OFFICE = HoldContext(house_seats=True, box_office=True)


# "The caller has not read the cart": hold and release read it themselves.
UNREAD = object()

Coords = list[tuple[int, int]]


@dataclass
class HoldResult:
    cart_id: ObjectId
    seats: Coords
    expires_at: datetime
    # The session (summary fields, ``version`` after the write, ``layout``; no seat states) and the
    # cart as the hold's own writes left them, so the answer needs no re-read.
    session: dict | None = None
    cart: Cart | None = None


@dataclass
class ReleaseResult:
    seats: Coords
    # As for HoldResult; ``session`` is None when the session's write found nothing to free.
    session: dict | None = None
    cart: Cart | None = None


def parse_seats(raw_keys) -> Coords:
    """Seat keys from a request ('3:12') -> coordinates; duplicates and junk are refused."""
    if not isinstance(raw_keys, (list, tuple)) or not raw_keys:
        raise InvalidRequest(gettext("Choose at least one seat."))
    if len(raw_keys) > settings.BOOKING_MAX_SEATS_PER_CART:
        raise TooManySeats(
            gettext("You can hold at most %(max)d seats at once.") % {"max": settings.BOOKING_MAX_SEATS_PER_CART}
        )
    coords = []
    for raw in raw_keys:
        try:
            row, col = (int(part) for part in str(raw).split(":"))
        except ValueError:
            raise InvalidRequest(gettext("'%(seat)s' is not a seat.") % {"seat": str(raw)[:20]}) from None
        if row < 0 or col < 0:
            raise InvalidRequest(gettext("'%(seat)s' is not a seat.") % {"seat": str(raw)[:20]})
        if (row, col) in coords:
            raise InvalidRequest(gettext("The same seat was asked for twice."))
        coords.append((row, col))
    return coords


def load_session_for_sale(
    session_id: ObjectId, now: datetime, *, context: HoldContext, read=selectors.get_session
) -> Session:
    session = read(session_id)
    if session is None or session.get("status") == SessionStatus.DRAFT:
        raise NotFound(gettext("No such performance."))
    refuse_outside_sale_window(session, now, context=context)
    _check_queue(session, context)  # waiting room: a queued sale needs the buyer's admission
    return session


def counter_sale_ends(session: Session) -> datetime:
    """When the box office stops selling a performance: its start (plus the setting), never after
    its end."""
    ends = session["start"] + timedelta(seconds=settings.BOOKING_COUNTER_SALE_AFTER_START_SECONDS)
    return min(ends, session["end"]) if session.get("end") else ends


def _check_queue(session: Session, context: HoldContext) -> None:
    """The waiting room's gate, which the box office does not pass through."""
    if not context.box_office:
        check_admission(session, admitted=context.admitted_queues)


def _refuse_outside_counter_hours(session: Session, now: datetime) -> None:
    if session.get("status") != SessionStatus.ON_SALE:
        raise SessionNotOnSale(gettext("This performance is not on sale."))
    if counter_sale_ends(session) <= now:
        raise SessionNotOnSale(gettext("This performance has already started; seats can no longer be booked."))


def refuse_outside_sale_window(session: Session, now: datetime, *, context: HoldContext) -> None:
    """SessionNotOnSale, saying when sales open or why they are over, unless this buyer may hold now."""
    if context.box_office:
        return _refuse_outside_counter_hours(session, now)
    phase = sale_phase(session, now, context.presale_keys)
    if phase == SalePhase.OPEN:
        return
    if phase == SalePhase.STARTED:
        raise SessionNotOnSale(gettext("This performance has already started; seats can no longer be booked."))
    if phase == SalePhase.CLOSED:
        raise SessionNotOnSale(gettext("Sales for this performance have closed."))
    if phase == SalePhase.PRESALE:
        raise SessionNotOnSale(
            gettext("On sale to members with an access code until %(opens)s, to everyone from %(opens)s.")
            % {"opens": _when(session["saleOpens"])}
        )
    if phase == SalePhase.NOT_YET:
        raise SessionNotOnSale(
            gettext("Not on sale yet: seats can be booked from %(opens)s.")
            % {"opens": _when(opening_for(session, context=context))}
        )
    raise SessionNotOnSale(gettext("This performance is not on sale."))


def opening_for(session: Session, *, context: HoldContext) -> datetime:
    """When this buyer may first hold: a presale they unlocked, else the public on-sale."""
    presale = session.get("presale")
    if presale and presale["key"] in context.presale_keys:
        return presale["opens"]
    return session["saleOpens"]


def _when(moment: datetime) -> str:
    return formatting.sale_time(moment, seconds=True)


def read_buyer_carts(
    owner: str,
    cart_id: ObjectId | None,
    seats: int,
    now: datetime,
    *,
    client: str | None,
    unless_key: str | None = None,
) -> selectors.BuyerCarts:
    """A hold's read of the buyer's carts (``selectors.buyer_carts``). With the per-address limit
    on and a cart to hold in, the read is the write that also takes ``seats`` of the cart's
    unreturned seats (``client_holds.read_cart_taking_unreturned``; ``unless_key``: as there), so
    a hold after a release writes no reservation on the address's document. Only a cart found
    not live needs the owner's other carts counted: then they are read as well."""
    if cart_id is not None and client and client_holds.limit():
        cart, taken = client_holds.read_cart_taking_unreturned(owner, cart_id, seats, unless_key=unless_key)
        if cart is not None and is_live(cart, now):
            return selectors.BuyerCarts(cart=cart, owner_live=1, unreturned_taken=seats if taken else 0)
    return selectors.buyer_carts(owner, cart_id, now)


def load_live_cart(owner: str, cart_id: ObjectId | None, now: datetime, cart=UNREAD) -> Cart | None:
    """The owner's cart if it is live, else None (a new cart is started); a stale one is expired.
    ``cart``: the caller's read of it (``selectors.get_cart``), spared a second read."""
    if cart is UNREAD:
        cart = selectors.get_cart(owner, cart_id)
    return cart_expiry.live_or_expire(cart, now)


# --- hold: check the request, take the seats in the session, record them in the cart ---


@dataclass(frozen=True, slots=True)
class HoldPlan:
    """What the hold's session write is decided on, handed down its steps as one value."""

    session_id: ObjectId
    cart_id: ObjectId  # the buyer's live cart, or the id the new cart will get
    coords: Coords
    facts: SaleFacts  # layout and prices the seats are taken by (the write's filter names them)
    now: datetime
    allow_orphans: bool
    context: HoldContext = ONLINE  # on whose behalf, under which rules
    house: frozenset[tuple[int, int]] = frozenset()  # blocked seats taken by staff (``context.house_seats``)
    needs_wheelchair: bool = False  # the buyer said they need the wheelchair spaces asked for
    owner: str = ""  # the cart's owner, named in a new reservation (a later hold reads the cart by it)


def hold_seats(
    session_id: ObjectId,
    owner: str,
    cart_id: ObjectId | None,
    seat_keys,
    *,
    allow_orphans: bool = False,
    needs_wheelchair: bool = False,
    carts: selectors.BuyerCarts | None = None,
    context: HoldContext = ONLINE,
) -> HoldResult:
    """Hold these seats for the owner's cart (all or nothing). Starts a cart when needed.

    ``allow_orphans``: best available already avoids leaving a seat alone wherever it can.
    ``needs_wheelchair``: the buyer said they need a wheelchair space; without it a wheelchair
    space is held only once it is released to general sale (``wheelchair_clause``). Staff at the
    counter (``context.house_seats``) sell them on the buyer's word.
    ``carts``: the buyer's carts as the caller just read them (``selectors.buyer_carts``), if it did.
    ``context``: on whose behalf and under which rules (``HoldContext``).

    When this process knows the session's layout and prices (``hold_facts.SaleFacts``), the session
    is not read: the write's filter requires everything a read would have been checked for (on
    sale, not started, the same layout and prices, the seats free, no seat left alone), and only a
    write that misses reads the session to tell why (or to try again).
    """
    coords = parse_seats(seat_keys)
    if context.staff_rules and not cart_service.is_staff_owner(owner):
        # the box office's hours and house seats are for staff carts: never a buyer's, however wired
        raise RuntimeError("the box office's hold rules are for staff carts only")
    now = clock.now()
    client = context.client
    if carts is None:
        carts = read_buyer_carts(owner, cart_id, len(coords), now, client=client)
    cart = load_live_cart(owner, cart_id, now, carts.cart)  # first: ending a stale cart frees seats on the map
    # Seats taken from the live cart's unreturned ones are counted for its address already (a
    # stale cart's count ends with its entry). From here on they are given back if the hold fails.
    counted_for = cart["client"] if cart and carts.unreturned_taken and cart.get("client") else None
    entry_cart_id = cart["_id"] if cart else ObjectId()
    try:
        session: Mapping[str, Any] | None = None  # the whole document, or what a write answered
        facts = hold_facts.known_sale_facts(session_id)
        if facts is None or _not_a_seat(facts.layout, coords) or context.house_seats:
            # (staff: which seats are house seats is read, so the write names each cell's state)
            session, facts = _read_for_sale(session_id, now, context)  # an unknown seat may be in a newer layout
        mine = selectors.cart_seat_keys(cart, session_id)
        _check_request(facts.layout, coords, cart, mine, carts)
        plan = HoldPlan(
            session_id,
            entry_cart_id,
            coords,
            facts,
            now,
            allow_orphans,
            context,
            needs_wheelchair=needs_wheelchair or context.staff_rules,
            owner=owner,
        )
        if counted_for is None:
            counted_for = _reserve_for_client(plan, cart, owner, client)
        session, plan = _take_seats(plan, session, cart_has_seats=bool(mine))
        faults.point("hold.after_session")
        cart, expires_at = _record_in_cart(plan, session, cart, owner, client, mine)
    except BookingError:
        if counted_for:  # nothing taken, or the seats taken given back: off the address's count
            client_holds.give_back(counted_for, entry_cart_id, len(coords))
        raise
    faults.point("hold.after_cart")
    return HoldResult(cart_id=plan.cart_id, seats=coords, expires_at=expires_at, session=session, cart=cart)


def _check_request(
    layout: Layout, coords: Coords, cart: Cart | None, mine: set[str], carts: selectors.BuyerCarts
) -> None:
    """Everything refused before a write: no seat there, the limits (seats per cart, carts per
    owner), a seat already in the cart. (Seats per client address: ``_reserve_for_client``.)"""
    _refuse_non_seats(layout, coords)
    if cart and cart.get("subscription"):  # its seats are bought together (sales/subscriptions.py)
        raise InvalidRequest(gettext("Your cart holds a subscription: pay for it or cancel it first."))
    in_cart = len(cart["items"]) if cart else 0
    if in_cart + len(coords) > settings.BOOKING_MAX_SEATS_PER_CART:
        raise TooManySeats(
            gettext("A cart can hold at most %(max)d seats; you have %(count)d already.")
            % {"max": settings.BOOKING_MAX_SEATS_PER_CART, "count": in_cart}
        )
    _check_live_holds_limit(cart, carts.owner_live)
    for row, col in coords:
        if seat_key(row, col) in mine:
            raise InvalidRequest(gettext("%(seat)s is already in your cart.") % {"seat": seat_name(layout, row, col)})


def _record_in_cart(
    plan: HoldPlan, session: Mapping[str, Any], cart: Cart | None, owner: str, client: str | None, mine: set[str]
) -> tuple[Cart, datetime]:
    """The hold's second write: a new cart with the seats, or the seats added to the live cart
    (conditional: still active, unexpired, with room). If the cart ended or filled up meanwhile,
    the seats just taken are given back. Returns the cart as written and its new expiry."""
    items = [_cart_item(session, row, col, house=(row, col) in plan.house) for row, col in plan.coords]
    total = sum(i["price"] for i in items)
    now = plan.now
    expires_at = cart_service.next_expiry(cart, now, owner)
    if cart is None:
        cart = {
            "_id": plan.cart_id,
            "owner": owner,
            "state": CartState.ACTIVE,
            "items": items,
            "total": total,
            "createdOn": now,
            "modifiedOn": now,
            "firstHoldOn": now,
            "expiresAt": expires_at,
        }
        if client:
            cart["client"] = client
        mongo.carts().insert_one(cart)
        return cart, expires_at
    room = settings.BOOKING_MAX_SEATS_PER_CART - len(plan.coords)
    cart = mongo.carts().find_one_and_update(  # one write (findAndModify) that also answers
        {
            "_id": plan.cart_id,
            "owner": owner,
            **live_cart_filter(now),
            f"items.{room}": {"$exists": False},  # the cart limit, checked atomically
        },
        {
            "$push": {"items": {"$each": items}},
            "$inc": {"total": total},
            "$set": {"modifiedOn": now, "expiresAt": expires_at},
        },
        return_document=ReturnDocument.AFTER,
    )
    if cart is None:
        # The cart ended (expired, checked out) or filled up meanwhile: give the seats back.
        reservations.settle(plan.session_id, plan.cart_id, keep=mine)
        raise CartExpired(gettext("Your hold has ended. Please choose your seats again."))
    return cart, expires_at


def _not_a_seat(layout: Layout, coords) -> tuple[int, int] | None:
    """The first of these cells that is no seat in this layout (a gap, or off the map), if any."""
    return next(((row, col) for row, col in coords if seat_cell(layout, row, col) is None), None)


def _refuse_non_seats(layout: Layout, coords) -> None:
    missing = _not_a_seat(layout, coords)
    if missing is not None:
        row, col = missing
        raise InvalidRequest(
            gettext("There is no seat at row %(row)d, position %(column)d in this hall.")
            % {"row": row + 1, "column": col + 1}
        )


def _read_for_sale(session_id: ObjectId, now: datetime, context: HoldContext) -> tuple[Session, SaleFacts]:
    """The hold's read of the session (seat states, no layout, no reservations) and its facts."""
    session = load_session_for_sale(session_id, now, context=context, read=selectors.get_session_for_hold)
    facts = hold_facts.sale_facts(session)
    if facts is None:
        raise NotFound(gettext("No such performance."))
    return session, facts


def _check_live_holds_limit(cart: Cart | None, owner_live: int) -> None:
    """One client may not keep several carts going at once to get round the per-cart limit; a
    cart being paid for (by card, or at the box office) still holds its seats, so it counts."""
    limit = getattr(settings, "BOOKING_MAX_LIVE_CARTS_PER_OWNER", 0)
    if limit and cart is None and owner_live >= limit:
        raise TooManySeats(
            gettext(
                "You already have seats on hold or waiting for payment. Pay for or cancel one of those bookings first."
            )
        )


def _reserve_for_client(plan: HoldPlan, cart: Cart | None, owner: str, client: str | None) -> str | None:
    """The per-client held-seats limit (BOOKING_MAX_HELD_SEATS_PER_CLIENT): one address may not
    hold more seats than this (in live carts, and in carts being paid for), however many cookies it
    throws away. The seats are
    reserved on the address's document (sales/client_holds.py) in one conditional update
    BEFORE the session write, so racing requests from one address cannot pass the limit together,
    and every command names the document's _id (its shard key). A cart's seats count for the
    address that started it. Returns the address counted for, or None (no limit, no client)."""
    counted_for = (cart.get("client") if cart else None) or client
    if not (client_holds.limit() and counted_for):
        return None
    # to the hold's cap: neither a later release nor a hold taking unreturned seats writes the entry
    until = cart_service.hold_cap(cart, plan.now)
    held = client_holds.reserve(counted_for, plan.cart_id, len(plan.coords), until, plan.now, owner=owner)
    if held is not None:
        raise too_many_from_client(held, client_holds.limit())
    return counted_for


def too_many_from_client(held: int, limit: int) -> TooManySeats:
    return TooManySeats(
        gettext(
            "Too many seats are on hold from your connection right now (%(held)d; at most %(limit)d). "
            "Please finish or cancel a booking first."
        )
        % {"held": held, "limit": limit}
    )


def _take_seats(plan: HoldPlan, session: Mapping[str, Any] | None, *, cart_has_seats: bool) -> tuple[dict, HoldPlan]:
    """The conditional update that takes the seats. Retries once after freeing seats held by
    expired carts (the same code the worker runs), so availability never waits for the worker.

    ``session``: the hold's read (no reservations), or None when the session was not read: then
    the write is tried first and the session read only if it misses. Whether this cart already
    has a reservation in the session is taken from the cart (``cart_has_seats``). Should the two
    disagree (a crash between a hold's two writes), the write's filter does not match and the
    retry reads the whole document.

    Returns the session's summary with ``version`` as the write left it, and the layout: the write
    is a findAndModify (still one write) answering with the new version, so nothing is re-read;
    and the plan as written (its facts, and the house seats it took)."""
    session_id, coords, now = plan.session_id, plan.coords, plan.now
    if session is None:
        written = _send_hold_write(plan, cart_has_seats, SUMMARY_ANSWER_FIELDS)
        if written is not None:
            return {**written, "layout": plan.facts.layout}, plan
        session, facts = _read_for_sale(session_id, now, plan.context)  # missed: find out why, and try again
        _refuse_non_seats(facts.layout, coords)  # the layout may have been replaced meanwhile
        plan = replace(plan, facts=facts)
    layout = plan.facts.layout
    freed_expired = False
    for _attempt in range(4):
        seats = session["seats"]
        blocked = frozenset((r, c) for r, c in coords if seats[r][c] == BLOCKED)
        house = blocked if plan.context.house_seats else frozenset()
        taken = [(r, c) for r, c in coords if seats[r][c] != FREE and (r, c) not in house]
        if taken:
            if not freed_expired:
                full = session if "reservations" in session else selectors.get_session(session_id)
                if full is not None and _free_seats_of_ended_carts(full, taken, now):
                    freed_expired = True
                    session = selectors.get_session(session_id)
                    if session is None:  # deleted meanwhile
                        raise SessionNotOnSale(gettext("This performance is not on sale."))
                    continue
            raise SeatsTaken([seat_name(layout, r, c) for r, c in taken])
        if settings.BOOKING_PREVENT_ORPHAN_SEATS and not plan.allow_orphans:
            refuse_orphans(layout, seats, coords)
        _refuse_undeclared_wheelchair_spaces(plan, session)
        refuse_over_quota(session, len(coords) - len(house))
        if "reservations" in session:
            has_reservation = any(res["_id"] == plan.cart_id for res in session["reservations"])
        else:
            has_reservation = cart_has_seats
        plan = replace(plan, house=house)
        faults.point("hold.before_session")  # tests: staff change the session between this read and the write
        written = _send_hold_write(plan, has_reservation, WRITE_ANSWER_FIELDS)
        if written is not None:
            return _after_write(session, written, layout), plan
        session = selectors.get_session(session_id)  # lost a race (or a stale cart): look again, whole
        if session is None or session.get("status") != SessionStatus.ON_SALE:
            raise SessionNotOnSale(gettext("This performance is not on sale."))
        refuse_outside_sale_window(session, now, context=plan.context)  # the window closed (or was moved) meanwhile
        _check_queue(session, plan.context)  # waiting room: queued since the last read
        if (
            session.get("layoutRev", 0) != plan.facts.layout_rev
            or session["prices"] != plan.facts.prices
            or session.get("priceRev", 0) != plan.facts.price_rev
        ):
            new_facts = hold_facts.sale_facts(session)
            if new_facts is None or _not_a_seat(new_facts.layout, coords):
                raise InvalidRequest(gettext("The seat map of this performance has changed. Please choose again."))
            plan = replace(plan, facts=new_facts)
            layout = new_facts.layout
    raise SeatsTaken([seat_name(layout, r, c) for r, c in coords])


def undeclared_wheelchair_spaces(plan: HoldPlan) -> Coords:
    """The wheelchair spaces (by the plan's layout) among the seats asked for without the buyer
    saying they need one."""
    if plan.needs_wheelchair:
        return []
    return [(r, c) for r, c in plan.coords if seat_at(plan.facts.layout, r, c).get("wheelchair")]


def wheelchair_clause(plan: HoldPlan, starts_after: datetime) -> dict:
    """The hold's filter on the start: after ``starts_after`` (not started), and when it takes a
    wheelchair space nobody said they need, the space released to general sale by now
    (``start <= now + before``, the release task's own window, so the rule holds at the boundary
    even before the task has run). One filter: the check and the seat's change stay one
    conditional update."""
    if undeclared_wheelchair_spaces(plan):
        return {"$gt": starts_after, "$lte": plan.now + settings.BOOKING_WHEELCHAIR_RELEASE_BEFORE}
    return {"$gt": starts_after}


def _refuse_undeclared_wheelchair_spaces(plan: HoldPlan, session: Mapping[str, Any]) -> None:
    """What the filter's start clause would refuse, said before the write (the session was read)."""
    spaces = undeclared_wheelchair_spaces(plan)
    if not spaces or session["start"] <= plan.now + settings.BOOKING_WHEELCHAIR_RELEASE_BEFORE:
        return
    layout = plan.facts.layout
    names = ", ".join(seat_name(layout, r, c) for r, c in spaces)
    raise WheelchairSpaceNotDeclared(
        ngettext(
            "%(seats)s is a wheelchair space, kept for a buyer who needs it until shortly before the show. "
            "If you need it, say so when you hold it, or use best available's wheelchair option.",
            "%(seats)s are wheelchair spaces, kept for buyers who need them until shortly before the show. "
            "If you need them, say so when you hold them, or use best available's wheelchair option.",
            len(spaces),
        )
        % {"seats": names}
    )


def refuse_over_quota(session: Mapping[str, Any], taking: int) -> None:
    """What the filter's quota clause (``domain.within_quota``) would refuse, said before the write
    (the session was read with its quota fields)."""
    if taking and seats_left(session) < taking and "quotaFloor" in session:
        raise QuotaReached()


def _send_hold_write(plan: HoldPlan, has_reservation: bool, answer: dict) -> dict | None:
    """Send the hold's write; the session as it left it (``answer``'s fields), or None: it missed."""
    query, update, array_filters = _hold_write(plan, has_reservation)
    return mongo.sessions().find_one_and_update(
        query, update, projection=answer, array_filters=array_filters, return_document=ReturnDocument.AFTER
    )


def _hold_write(plan: HoldPlan, has_reservation: bool) -> tuple[dict, dict, list | None]:
    """The hold's one conditional update: (filter, update, array filters).

    The filter requires what the hold was decided on: on sale and not started, inside the sale
    window (``domain.sale_open_filter``: on-sale <= now < off-sale, or a presale the buyer
    unlocked), the layout
    revision and the prices it was priced by, every seat free, no free seat left alone beside
    them (unless allowed), a wheelchair space needed or on general sale (``wheelchair_clause``),
    and this cart's reservation there or not."""
    facts, coords, cart_id, now = plan.facts, plan.coords, plan.cart_id, plan.now
    layout = facts.layout
    keys = [seat_key(r, c) for r, c in coords]
    categories = {seat_at(layout, r, c)["cat"] for r, c in coords}
    price = sum(facts.prices[seat_at(layout, r, c)["cat"]] for r, c in coords)
    house = [seat_key(r, c) for r, c in coords if (r, c) in plan.house]
    counter = plan.context.box_office
    query: dict = {
        "_id": plan.session_id,
        "status": SessionStatus.ON_SALE,
        # not started (the box office: a little after); a wheelchair space: needed, or on general sale
        "start": wheelchair_clause(
            plan, now - timedelta(seconds=settings.BOOKING_COUNTER_SALE_AFTER_START_SECONDS) if counter else now
        ),
        "layoutRev": facts.layout_rev if facts.layout_rev else {"$in": [0, None]},  # None: never replaced
        **{f"prices.{cat}": facts.prices[cat] for cat in sorted(categories)},
        "priceRev": facts.price_rev if facts.price_rev else {"$in": [0, None]},  # the other ticket types' prices
        **seats_free([rc for rc in coords if rc not in plan.house]),
        **{cell_path(r, c): BLOCKED for r, c in sorted(plan.house)},  # staff: these house seats still blocked
    }
    if settings.BOOKING_PREVENT_ORPHAN_SEATS and not plan.allow_orphans:
        guards = no_seat_left_alone(layout, coords)
        if guards:
            query["$and"] = guards
    if not counter:  # the box office keeps its own hours and has no queue
        query["$and"] = [*query.get("$and", []), *sale_open_filter(now, plan.context.presale_keys)["$and"]]
        # waiting room: in no queue, or one the buyer was admitted to
        query["$and"].append(admission_clause(admitted=plan.context.admitted_queues))
    elif settings.BOOKING_COUNTER_SALE_AFTER_START_SECONDS:  # into the performance, never past its end
        query["$and"] = [*query.get("$and", []), {"$or": [{"end": None}, {"end": {"$gt": now}}]}]
    cells = {cell_path(r, c): HELD for r, c in coords}
    taken_free = len(coords) - len(house)  # house seats were not counted as available
    if taken_free:  # the quota counts the seats taken from sale (house seats stay outside it)
        query["$and"] = [*query.get("$and", []), within_quota(taken_free)]
    if has_reservation:
        query["reservations._id"] = cart_id
        update = {
            "$set": {**cells, "reservations.$[r].v": reservations.new_token(), "reservations.$[r].modifiedOn": now},
            "$inc": {"seatsAvailable": -taken_free, "version": 1, "reservations.$[r].total": price},
            "$push": {
                "reservations.$[r].seats": {"$each": keys},
                **({"reservations.$[r].house": {"$each": house}} if house else {}),
            },
        }
        return query, update, [{"r._id": cart_id}]
    query["reservations._id"] = {"$ne": cart_id}
    update = {
        "$set": cells,
        "$inc": {"seatsAvailable": -taken_free, "version": 1},
        "$push": {
            "reservations": {
                "_id": cart_id,
                "seats": keys,
                "total": price,
                "v": reservations.new_token(),
                "modifiedOn": now,
                **({"owner": plan.owner} if plan.owner else {}),  # carts' shard key: _free_seats_of_ended_carts
                **({"house": house} if house else {}),
            }
        },
    }
    return query, update, None


def seats_free(coords) -> dict:
    """Filter clauses that hold only while every one of these cells is free: what stops a seat
    being sold twice. (The chaos harness's control run replaces this function, in its own web
    processes only, to prove that it catches double selling: chaos/control_wsgi.py.)"""
    return {cell_path(r, c): FREE for r, c in coords}


def refuse_orphans(layout: Layout, seats: list[list[int]], coords, *, performance: str = "") -> None:
    """OrphanSeat naming the free seats taking these would leave alone in their row (the orphan
    rule, ``seat_grid.orphans_created``); ``performance`` names where, when a sale spans several."""
    alone = orphans_created(seats, coords)
    if alone:
        names = ", ".join(seat_name(layout, r, c) for r, c in alone)
        if performance:
            names = f"{names} ({performance})"
        raise OrphanSeat(
            gettext("That would leave %(seat)s on its own. Please choose seats next to each other.") % {"seat": names}
        )


def no_seat_left_alone(layout: Layout, coords) -> list[dict]:
    """Filter clauses that hold only if taking these seats leaves no free seat alone in its row:
    the orphan rule (``seat_grid.orphans_created``) checked by the write itself, on the seat states
    at that moment. For each seat beside the ones taken: it is not free, or one of its own
    neighbours (a seat, not one being taken) is."""
    taking = set(coords)
    guards = []
    looked_at = set()
    for row, col in coords:
        for beside in (col - 1, col + 1):
            if (row, beside) in taking or (row, beside) in looked_at or seat_cell(layout, row, beside) is None:
                continue
            looked_at.add((row, beside))
            alternatives: list[dict] = [{cell_path(row, beside): {"$ne": FREE}}]
            for other in (beside - 1, beside + 1):
                if (row, other) not in taking and seat_cell(layout, row, other) is not None:
                    alternatives.append({cell_path(row, other): FREE})
            guards.append({"$or": alternatives} if len(alternatives) > 1 else alternatives[0])
    return guards


# What a seat write answers with: the change counter and the count of free seats after it; and,
# when nothing was read before the write (a hold that knew the session, a release), the summary
# the answer shows.
WRITE_ANSWER_FIELDS = {"version": 1, "seatsAvailable": 1}
SUMMARY_ANSWER_FIELDS = {**selectors.SUMMARY_FIELDS, **WRITE_ANSWER_FIELDS, "layoutRev": 1}
# a release also learns whether anyone ever joined the waiting list (sales/waiting_list.py ``join``)
RELEASE_ANSWER_FIELDS = {**SUMMARY_ANSWER_FIELDS, "waitingList": 1}


def _after_write(session: Mapping[str, Any], written: dict, layout: Layout) -> dict:
    """The session as a seat write left it, for the answer: summary fields, new version, layout."""
    summary = {k: v for k, v in session.items() if k not in ("seats", "reservations", "layout")}
    return {**summary, **written, "layout": layout}


def _free_seats_of_ended_carts(session: Mapping[str, Any], taken, now: datetime) -> bool:
    """Seats held by a cart whose hold has ended count as free: end that cart now."""
    taken_keys = {seat_key(r, c) for r, c in taken}
    holding = [res for res in session.get("reservations", []) if taken_keys & set(res["seats"])]
    if not holding:
        return False
    which: dict = {"_id": {"$in": [res["_id"] for res in holding]}}
    if all(res.get("owner") for res in holding):  # by owner too (carts' shard key): one shard each
        which["owner"] = {"$in": sorted({res["owner"] for res in holding})}
    # (a reservation made before they named their owner is read by _id alone: every shard)
    freed = False
    fields = {"state": 1, "expiresAt": 1, "owner": 1, "orderRef": 1, "items.sessionId": 1}
    for holder in mongo.carts().find(which, fields):
        if is_stale(holder, now):  # active or paying (payments/flow.py) past its hold
            expired = cart_expiry.expire_ended(holder, now).freed
            if expired is None:
                continue  # extended, checked out or paid meanwhile: still live
            freed |= bool(expired)
        elif holder["state"] in HOLDING_STATES:
            continue
        # this session's hold of the ended cart, also when the cart never recorded it
        freed |= bool(reservations.settle(session["_id"], holder["_id"]).freed)
    return freed


def _cart_item(session: Mapping[str, Any], row: int, col: int, *, house: bool = False) -> CartItem:
    """``session``: with summary fields (prices, the price table) and its layout, as the hold's
    write matched them. The item locks its price and keeps its category's row of the price table
    (``offers``): a later choice of ticket type is priced from it, not from the table as it is then."""
    layout = session["layout"]
    cell = seat_at(layout, row, col)
    item: CartItem = {
        "sessionId": session["_id"],
        "key": seat_key(row, col),
        "row": layout["rows"][row]["label"],
        "seat": cell["label"],
        "cat": cell["cat"],
        "price": session["prices"][cell["cat"]],
        "ticketType": offers.FULL,
        "offers": offers.offers_for(session, cell["cat"]),
    }
    if cell.get("wheelchair"):
        item["wheelchair"] = True
    if house:
        item["house"] = True  # a house seat staff took: released, it goes back to blocked
    return item


def _with_kinds(held: HoldResult, owner: str, session_id: ObjectId, kinds: Mapping[str, int]) -> HoldResult:
    """The seats just held, given the kinds the buyer asked for in seat order (each one
    conditional update on the cart); a seat its category offers no such kind for stays full price."""
    wanted = [code for code, n in kinds.items() for _ in range(n) if code != offers.FULL]
    for (row, col), code in zip(held.seats, wanted, strict=False):
        try:
            held.cart = offers.choose_ticket_type(owner, held.cart_id, session_id, seat_key(row, col), code)
        except InvalidRequest:
            logger.info("seat %s:%s of cart %s keeps full price: %s is not offered there", row, col, held.cart_id, code)
    return held


def give_chosen_kinds(
    *, held: HoldResult, owner: str, session_id: ObjectId, chosen: list[tuple[str, int]]
) -> HoldResult:
    """Seats clicked one by one after the buyer chose how many of which kinds before the map: each
    seat just held takes the next kind of ``chosen`` (in its order, e.g. 2 full price then 1
    reduced) not yet taken by a seat the cart holds here. Once the chosen count is used up, more
    seats are full price: the buyer who wants one more gets it and can change its kind in the
    cart, where every seat's kind and price show."""
    new_keys = {seat_key(r, c) for r, c in held.seats}
    taken: dict[str, int] = {}
    for item in held.cart["items"] if held.cart else []:
        if item["sessionId"] == session_id and item["key"] not in new_keys:
            code = item.get("ticketType", offers.FULL)
            taken[code] = taken.get(code, 0) + 1
    left = []
    for code, count in chosen:
        skip = min(count, taken.get(code, 0))
        taken[code] = taken.get(code, 0) - skip
        left += [code] * (count - skip)
    for (row, col), code in zip(held.seats, left, strict=False):
        if code == offers.FULL:
            continue  # held at full price already
        try:
            held.cart = offers.choose_ticket_type(owner, held.cart_id, session_id, seat_key(row, col), code)
        except InvalidRequest:
            logger.info("seat %s:%s of cart %s keeps full price: %s is not offered there", row, col, held.cart_id, code)
    return held


def release_seats(
    session_id: ObjectId, owner: str, cart_id: ObjectId | None, seat_keys, *, cart=UNREAD
) -> ReleaseResult:
    """Give back seats of the owner's cart (C2: session, then cart). ``cart``: as the caller
    just read it (``selectors.get_cart``), if it did."""
    coords = parse_seats(seat_keys)
    keys = [seat_key(r, c) for r, c in coords]
    now = clock.now()
    if cart is UNREAD:
        cart = selectors.get_cart(owner, cart_id)
    if cart is None or cart_id is None or cart["_id"] != cart_id or cart["owner"] != owner:
        raise NotFound(gettext("You have no seats on hold."))
    if not is_live(cart, now):
        raise CartExpired(gettext("Your hold has ended. Please choose your seats again."))
    if cart.get("subscription"):  # all its performances or none: the whole cart is canceled instead
        raise InvalidRequest(gettext("A subscription's seats go together: cancel the whole cart instead."))
    items = [i for i in cart["items"] if i["sessionId"] == session_id and i["key"] in keys]
    if len(items) != len(keys):
        raise InvalidRequest(gettext("Those seats are not in your cart."))
    price = sum(i["price"] for i in items)
    house = sorted(i["key"] for i in items if i.get("house"))  # staff's house seats go back to blocked
    freed = {cell_path(r, c): BLOCKED if seat_key(r, c) in house else FREE for r, c in coords}
    back_on_sale = len(keys) - len(house)
    house_held = {"house": {"$all": house}} if house else {}
    written = None
    if len(keys) == len(selectors.cart_seat_keys(cart, session_id)):
        # The cart's last seats here: the reservation goes too (as settle does), so a later hold
        # knows from the cart alone whether it has a reservation in this session.
        written = mongo.sessions().find_one_and_update(
            {
                "_id": session_id,
                "reservations": {
                    "$elemMatch": {"_id": cart_id, "seats": {"$all": keys, "$size": len(keys)}, **house_held}
                },
            },
            {
                "$set": freed,
                "$inc": {"seatsAvailable": back_on_sale, "version": 1},
                "$pull": {"reservations": {"_id": cart_id}},
            },
            projection=RELEASE_ANSWER_FIELDS,
            return_document=ReturnDocument.AFTER,
        )
    if written is None:
        written = mongo.sessions().find_one_and_update(  # one write that also answers with the new version
            {
                "_id": session_id,
                "reservations": {"$elemMatch": {"_id": cart_id, "seats": {"$all": keys}, **house_held}},
            },
            {
                "$set": {**freed, "reservations.$[r].v": reservations.new_token(), "reservations.$[r].modifiedOn": now},
                "$inc": {"seatsAvailable": back_on_sale, "version": 1, "reservations.$[r].total": -price},
                "$pull": {
                    "reservations.$[r].seats": {"$in": keys},
                    **({"reservations.$[r].house": {"$in": house}} if house else {}),
                },
            },
            projection=RELEASE_ANSWER_FIELDS,
            array_filters=[{"r._id": cart_id}],
            return_document=ReturnDocument.AFTER,
        )
    faults.point("release.after_session")
    if written is not None and back_on_sale:
        seats_returned.offer_to_waiting_list(session_id, ever_listed=bool(written.get("waitingList")))
    expires_at = cart_service.next_expiry(cart, now, owner)
    # Freed in the session: the address keeps counting them as the cart's unreturned seats, added
    # by the cart's own write (its next hold takes them again; sales/client_holds.py). Its entry
    # lasts to the hold's cap, which the new expiry never passes.
    unreturned = len(keys) if written is not None and cart.get("client") and client_holds.limit() else 0
    cart = mongo.carts().find_one_and_update(
        {"_id": cart_id, "owner": owner, "state": CartState.ACTIVE},
        {
            "$pull": {"items": {"sessionId": session_id, "key": {"$in": keys}}},
            "$inc": {"total": -price, **({client_holds.UNRETURNED: unreturned} if unreturned else {})},
            "$set": {"modifiedOn": now, "expiresAt": expires_at},
        },
        return_document=ReturnDocument.AFTER,
    )
    session = None
    if written is not None:
        layout = hold_facts.session_layout(session_id, written.get("layoutRev", 0))
        session = _after_write(written, {}, layout) if layout is not None else None
    return ReleaseResult(seats=coords, session=session, cart=cart)


def toggle_seat(
    session_id: ObjectId,
    owner: str,
    cart_id: ObjectId | None,
    key: str,
    *,
    needs_wheelchair: bool = False,
    context: HoldContext = ONLINE,
) -> HoldResult | ReleaseResult:
    """A click on a seat: release it when the owner's live cart holds it, else hold it. One read
    of carts serves the choice and the action. ``needs_wheelchair``, ``context``: as for ``hold_seats``."""
    carts = read_buyer_carts(owner, cart_id, 1, clock.now(), client=context.client, unless_key=key)
    if key in selectors.cart_seat_keys(selectors.live_cart_or_none(carts.cart), session_id):
        return release_seats(session_id, owner, cart_id, [key], cart=carts.cart)
    return hold_seats(
        session_id, owner, cart_id, [key], carts=carts, needs_wheelchair=needs_wheelchair, context=context
    )


def release_reservation(session_id: ObjectId, owner: str, cart_id: ObjectId | None) -> int:
    """Give back every seat the owner's cart holds in one session (same two writes as one seat)."""
    cart = mongo.carts().find_one({"_id": cart_id, "owner": owner}, {"items": 1}) if cart_id else None
    if cart is None:
        raise NotFound(gettext("You have no seats on hold."))
    keys = [i["key"] for i in cart["items"] if i["sessionId"] == session_id]
    if not keys:
        raise InvalidRequest(gettext("You have no seats on hold for this performance."))
    return len(release_seats(session_id, owner, cart_id, keys).seats)


def hold_best_available(
    session_id: ObjectId,
    owner: str,
    cart_id: ObjectId | None,
    count: int,
    categories: set[str] | None = None,
    *,
    wheelchair: bool = False,
    accept: list[str] | None = None,
    max_price: int | None = None,
    context: HoldContext = ONLINE,
    kinds: Mapping[str, int] | None = None,
) -> HoldResult:
    """Hold the best ``count`` seats side by side, of ``categories`` only when given (never a
    category the buyer did not choose), and nothing else: the cart gains exactly these seats.

    When no row has them, NoAdjacentSeats carries the split the engine suggests (its message true
    for a hall that never had such a block). ``accept``: the buyer takes that suggestion; it is
    held only if it is still the suggestion now (else a fresh one is offered), so this endpoint
    cannot hold seats of the buyer's choosing past the orphan rule.
    ``wheelchair``: ``count`` wheelchair spaces, each with a companion seat beside it.
    ``max_price``: only categories whose (full) price is at most this many minor units.
    ``context``: as for ``hold_seats``.
    ``kinds``: how many of the seats are of which ticket type ({"reduced": 1}), the rest full
    price: each set after the hold as the buyer would in the cart (``offers.choose_ticket_type``);
    a seat whose category does not offer the kind stays full price."""
    if not isinstance(count, int) or not 1 <= count <= settings.BOOKING_MAX_SEATS_PER_CART:
        raise InvalidRequest(_("Choose between 1 and %(max)s seats.") % {"max": settings.BOOKING_MAX_SEATS_PER_CART})
    if wheelchair and 2 * count > settings.BOOKING_MAX_SEATS_PER_CART:
        raise InvalidRequest(_("Each wheelchair space comes with a companion seat: choose fewer spaces."))
    for _attempt in range(3):
        session = load_session_for_sale(session_id, clock.now(), context=context)
        if categories and not categories <= set(session["prices"]):
            raise InvalidRequest(_("Unknown seat category."))
        if max_price is not None:
            affordable = {code for code, price in session["prices"].items() if price <= max_price}
            categories = affordable if categories is None else categories & affordable
            if not categories:
                raise NoAdjacentSeats(_("No seats of this category are offered at that price."))
        layout, grid = session["layout"], session["seats"]
        if wheelchair:
            seats = best_wheelchair(layout, grid, count, categories)
            if seats is None:
                raise NoAdjacentSeats(
                    ngettext(
                        "There is no free wheelchair space with a companion seat left.",
                        "There are not %(count)s free wheelchair spaces with companion seats left.",
                        count,
                    )
                    % {"count": count}
                )
        else:
            seats = best_available(layout, grid, count, categories)
        if seats is None:
            split = best_split(layout, grid, count, categories)
            if split and accept is not None and sorted(accept) == sorted(seat_key(r, c) for r, c in split):
                seats = split
            elif split:
                if longest_block(layout, categories) < count:
                    message = _("There are no %(count)s seats side by side in this hall.")
                else:
                    message = _("There are no %(count)s seats together any more.")
                raise NoAdjacentSeats(
                    str(message % {"count": count}) + " " + str(_("The best we can offer is split across rows.")),
                    suggestion=split,
                )
            else:
                raise NoAdjacentSeats(_("There are not %(count)s seats left.") % {"count": count})
        if kinds and not set(kinds) <= {t["code"] for t in offers.ticket_types(session)}:
            raise InvalidRequest(_("That ticket type is not offered for this performance."))
        try:
            keys = [seat_key(r, c) for r, c in seats]
            # asking for wheelchair spaces is saying one needs them; other picks skip the spaces
            held = hold_seats(
                session_id, owner, cart_id, keys, allow_orphans=True, needs_wheelchair=wheelchair, context=context
            )
            return _with_kinds(held, owner, session_id, kinds or {})
        except SeatsTaken:
            continue  # someone was faster: pick again from a fresh map
    raise SeatsTaken(["the seats we picked"])
