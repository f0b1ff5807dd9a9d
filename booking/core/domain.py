"""The booking domain's words, each written once: the states of carts, sessions, orders and mails,
the answers of the mail services, the rule "is this cart live?", and the shape of each document.

The states are ``StrEnum``s: their values are the strings stored in MongoDB (a member *is* that
string), so documents, queries and templates see exactly what they saw before. The ``TypedDict``s
below are the documents' fields in one place (docs/architecture.md explains them): the public
selectors and services of the domains take and return them. A read with a projection returns
fewer fields than its type names; the reader asked for the ones it uses.
"""

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, NotRequired, TypedDict, TypeGuard

from bson import ObjectId

# --- states ---


class CartState(StrEnum):
    """``active -> paying -> done``; ``active -> expired | canceled``; ``paying -> expired | canceled``;
    ``expired -> done`` (paid late, seats still free)."""

    ACTIVE = "active"  # taking seats until expiresAt
    PAYING = "paying"  # its order waits for payment: the hold lasts to the payment window (payments/flow.py)
    DONE = "done"  # bought: its order is paid
    EXPIRED = "expired"  # its hold ran out
    CANCELED = "canceled"  # the buyer gave up, or a seat's hold was lost during checkout or payment


# The states in which a cart may hold seats in sessions (a hold of any other cart is dead: reconcile
# releases it, and the invariants call it a breach).
HOLDING_STATES = (CartState.ACTIVE, CartState.PAYING)
# The states whose hold ends at expiresAt (expiry ends them: sales/carts.py).
EXPIRING_STATES = (CartState.ACTIVE, CartState.PAYING)


class SessionStatus(StrEnum):
    """``draft -> on_sale`` (staff publish it), ``on_sale -> draft`` (while nothing is held or sold),
    ``on_sale -> canceled``. ``on_sale`` means published: when seats can be held is its sale window
    (``saleOpens``, ``saleCloses``, ``presale``; see ``sale_phase``)."""

    DRAFT = "draft"  # staff only: not in what's on, 404 to buyers, never held
    ON_SALE = "on_sale"
    CANCELED = "canceled"


class SalePhase(StrEnum):
    """Where a session is in its sale window, for one buyer at one moment (``sale_phase``)."""

    DRAFT = "draft"
    CANCELED = "canceled"
    NOT_YET = "not yet"  # published, sales (and any presale) open later
    PRESALE = "presale"  # members only, and this buyer has not entered the access code
    OPEN = "open"
    CLOSED = "closed"  # past the off-sale time, before the start
    STARTED = "started"


class OrderState(StrEnum):
    """``pending_payment -> paid | expired | canceled``; ``expired -> paid`` (a late payment, seats
    still free); ``paid -> partially_refunded -> refunded``, ``paid -> refunded``
    (payments/flow.py, payments/refunds.py)."""

    PENDING_PAYMENT = "pending_payment"  # its seats are held by its cart until the payment comes
    PAID = "paid"  # its seats are sold; the only state whose mail is (re)sent
    PARTIALLY_REFUNDED = "partially_refunded"  # some tickets refunded: its remaining lines are sold
    REFUNDED = "refunded"  # the money went back; its seats are given back
    EXPIRED = "expired"  # not paid in time; its seats went back (a late payment is still taken)
    CANCELED = "canceled"  # by staff (before payments) or its payment given up; its seats are given back
    FAILED = "failed"  # before payments: checkout lost a seat's hold; nothing is sold


# The orders whose (remaining) lines own sold seats.
SEAT_OWNING_ORDER_STATES = (OrderState.PAID, OrderState.PARTIALLY_REFUNDED)


class SalesChannel(StrEnum):
    """Where an order was sold (the order's ``channel`` field, ``ORDER_CHANNEL_FIELD``). An order
    without the field was sold online (every order from before counter sales). Written by the
    counter sale (staff sell for a customer); read by the reports (booking/reports/)."""

    ONLINE = "online"  # the buyer's own checkout (also when paid later at the box office)
    BOX_OFFICE = "box_office"  # staff sold it at the counter
    PHONE = "phone"  # staff sold it on the phone
    COMPLIMENTARY = "complimentary"  # given away by staff (a reason is required)


ORDER_CHANNEL_FIELD = "channel"
DEFAULT_CHANNEL = SalesChannel.ONLINE  # what an order without ``channel`` counts as
# An order whose ``method`` is this was given away by staff (the counter's payment method; its
# ``channel`` says where: box office or phone). The reports count it as complimentary, at no revenue.
COMPLIMENTARY_METHOD = "complimentary"


def sales_channel(order: "Order | Mapping[str, Any]") -> str:  # or its projection
    """The channel an order counts under in the reports: complimentary when given away, else its
    ``channel``, else online."""
    if order.get("method") == COMPLIMENTARY_METHOD:
        return SalesChannel.COMPLIMENTARY.value
    return order.get("channel") or DEFAULT_CHANNEL.value  # ORDER_CHANNEL_FIELD


class VoucherState(StrEnum):
    """A gift voucher (payments/vouchers.py): ``pending -> active`` (sold online: once its order is
    paid); sold at the counter it is ``active`` at once."""

    PENDING = "pending"
    ACTIVE = "active"


class MailState(StrEnum):
    """The confirmation mail: ``pending -> sent``, ``pending -> failed``, ``failed -> pending``
    (reconcile's next round, or an operator), ``sent -> pending`` (an operator re-sends)."""

    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"  # the mail server refused the address for good, or a round of retries was used up
    NONE = "none"  # no address: sold at the counter without an e-mail (tickets printed there)


# --- what the mail services answer ---


class SendOutcome(StrEnum):
    """``notifications.send_confirmation``: what happened to the mail."""

    SENT = "sent"
    ALREADY_SENT = "already sent"
    BUSY = "busy"  # another worker is sending it right now
    FAILED = "failed"  # refused for good, or it was failed already
    NO_SUCH_ORDER = "no such order"
    UNKNOWN = "unknown"  # the order has no mail state (never written by checkout)
    INVALID_ID = "invalid id"  # the task was given something that is no order id


class GiveUpOutcome(StrEnum):
    """``notifications.give_up``: what became of a failed round."""

    RETRY_LATER = "retry later"
    GIVEN_UP = "given up"
    NOTHING = ""  # the mail was no longer pending: someone else finished it (falsy, as before)


class ReopenOutcome(StrEnum):
    """``notifications.reopen``: an operator's re-send."""

    REOPENED = "reopened"
    PENDING = "pending"  # pending already: sending it now is safe, the claim decides
    CHANGED = "changed"  # re-sent or changed since the operator looked
    NOT_PAID = "not paid"
    NO_SUCH_ORDER = "no such order"


# --- is this cart live? ---


def is_live(cart: "Cart | None", now: datetime) -> bool:
    """A live cart can still take seats: it is active and its hold has not run out. (A cart past
    its hold that is still ``active`` is not live: whoever finds it expires it.)"""
    return cart is not None and cart["state"] == CartState.ACTIVE and cart["expiresAt"] > now


def is_stale(cart: "Cart | None", now: datetime) -> TypeGuard["Cart"]:
    """Its other side: still active (or paying), but its hold has run out (expiry ends it; until
    then it is neither live nor ended)."""
    return cart is not None and cart["state"] in EXPIRING_STATES and cart["expiresAt"] <= now


def live_cart_filter(now: datetime) -> dict:
    """The same rule as a MongoDB filter (indexed: state+expiresAt, owner+state, client+state+expiresAt)."""
    return {"state": CartState.ACTIVE, "expiresAt": {"$gt": now}}


def is_holding(cart: "Cart | None", now: datetime) -> bool:
    """Its seats are held for it: live, or paying (a card payment's window, a box-office
    reservation's deadline) and not yet past its hold."""
    return cart is not None and cart["state"] in EXPIRING_STATES and cart["expiresAt"] > now


def holding_cart_filter(now: datetime) -> dict:
    """``is_holding`` as a MongoDB filter (indexed: owner+state, state+expiresAt)."""
    return {"state": {"$in": list(EXPIRING_STATES)}, "expiresAt": {"$gt": now}}


def stale_cart_filter(now: datetime) -> dict:
    """``is_stale`` as a MongoDB filter: the carts expiry ends (indexed: state+expiresAt)."""
    return {"state": {"$in": list(EXPIRING_STATES)}, "expiresAt": {"$lte": now}}


# --- the sale window: when may seats be held? ---


def sale_phase(session: "Session", now: datetime, access_keys=frozenset()) -> SalePhase:
    """The sale window as the page shows it. ``access_keys``: the presale keys this buyer has
    unlocked with an access code. Fields absent mean what they meant before sale windows: on sale
    when published, off sale at the start. ``sale_open_filter`` is the same rule for the hold's write."""
    status = session.get("status")
    if status == SessionStatus.DRAFT:
        return SalePhase.DRAFT
    if status != SessionStatus.ON_SALE:
        return SalePhase.CANCELED
    if session["start"] <= now:
        return SalePhase.STARTED
    closes = session.get("saleCloses")
    if closes is not None and closes <= now:
        return SalePhase.CLOSED
    opens = session.get("saleOpens")
    if opens is None or opens <= now:
        return SalePhase.OPEN
    presale = session.get("presale")
    if presale and presale["opens"] <= now:
        return SalePhase.OPEN if presale["key"] in access_keys else SalePhase.PRESALE
    return SalePhase.NOT_YET


def sale_open_filter(now: datetime, access_keys=frozenset()) -> dict:
    """``sale_phase(...) == OPEN`` as filter clauses of the hold's write (with ``status`` and
    ``start`` named beside them): on-sale time reached (or a presale this buyer unlocked has
    opened) and off-sale time not reached; an absent field matches as before (``None`` matches a
    missing field)."""
    opened: list[dict] = [{"saleOpens": None}, {"saleOpens": {"$lte": now}}]
    if access_keys:
        opened.append({"presale.key": {"$in": sorted(access_keys)}, "presale.opens": {"$lte": now}})
    return {"$and": [{"$or": opened}, {"$or": [{"saleCloses": None}, {"saleCloses": {"$gt": now}}]}]}


# --- the performance's quota: at most so many seats taken ---


def within_quota(taking: int) -> dict:
    """Filter clause of every write that takes ``taking`` free seats: a session with a quota keeps
    ``quotaFloor`` free seats off sale (``seatsAvailable >= quotaFloor + taking``); one without
    (no ``quotaFloor``) is not limited. Releases raise ``seatsAvailable`` and so make room by
    themselves; blocking or unblocking a free seat moves the floor in the same write."""
    return {
        "$or": [
            {"quotaFloor": {"$exists": False}},
            {"$expr": {"$gte": ["$seatsAvailable", {"$add": ["$quotaFloor", taking]}]}},
        ]
    }


def seats_left(session: Mapping[str, Any]) -> int:
    """The seats buyers may still take: the free seats, less those the quota keeps off sale."""
    free = session.get("seatsAvailable", 0)
    if "quotaFloor" not in session:
        return free
    return max(0, free - session["quotaFloor"])


def quota_taken(session: Mapping[str, Any]) -> int | None:
    """Seats counted against the quota (held or sold, house seats aside), or None: no quota."""
    if session.get("quota") is None or "quotaFloor" not in session:
        return None
    return session["quota"] - (session.get("seatsAvailable", 0) - session["quotaFloor"])


# --- documents (see docs/architecture.md) ---


class Category(TypedDict):
    code: str  # one lowercase letter
    name: str
    nameDe: NotRequired[str]
    color: NotRequired[str]


class Cell(TypedDict):
    label: str
    cat: str  # a Category code
    wheelchair: NotRequired[bool]
    companion: NotRequired[bool]
    releasedFrom: NotRequired[str]  # "wheelchair": a space on general sale since releasedOn (sales/wheelchair.py)
    releasedOn: NotRequired[datetime]


class Row(TypedDict):
    label: str
    cells: list[Cell | None]  # None: a gap (aisle, pillar)


class Layout(TypedDict):
    categories: list[Category]
    rows: list[Row]  # from the stage backwards


class Section(TypedDict):
    name: str
    nameDe: NotRequired[str]
    layout: Layout


class VenueAddress(TypedDict):
    """Where a theater is (``venues/addresses.py``): shown to buyers with their booking."""

    street: str
    postalCode: str
    city: str
    directions: str  # how to get there (may be empty); German pages show directionsDe when set
    directionsDe: str


class Theater(TypedDict):
    _id: ObjectId
    name: str
    nameDe: NotRequired[str]
    seatCount: int
    createdOn: datetime
    modifiedOn: datetime
    ticketTypes: NotRequired[list[dict]]  # [{code, name, nameDe?, description, descriptionDe?, companion?}]
    layout: NotRequired[Layout]  # a hall; or
    sections: NotRequired[list[Section]]  # a sectioned venue (a stadium): one session document per section
    front: NotRequired[str]  # what the seats face: "stage" (absent), "pitch", "field", "screen" (venues/venue_front.py)
    vatRate: NotRequired[str]  # "19.0" (payments/settings.py)
    vatRates: NotRequired[dict[str, str]]  # category code -> rate
    address: NotRequired[VenueAddress]
    selfService: NotRequired[dict]  # what buyers may change online by default (sales/self_service.py)


class Reservation(TypedDict):
    """A cart's hold in one session (inside the session document)."""

    _id: ObjectId  # the cart's id
    seats: list[str]  # "row:col" keys
    total: int
    v: str  # a random token renewed on every change: "settle exactly the hold I read"
    modifiedOn: datetime
    owner: NotRequired[str]
    house: NotRequired[bool]


class Presale(TypedDict):
    """Members buy before the public with a shared access code (``sales.sessions``)."""

    opens: datetime  # before the session's saleOpens
    codeHash: str  # HMAC-SHA256 of the code (keyed with SECRET_KEY and salt), hex
    salt: str
    key: str  # random, renewed with the code: what the buyer cookie keeps and the hold's filter names


class SessionSection(TypedDict):
    name: str
    index: int
    count: int


class Session(TypedDict):
    """One performance (of a hall, or of one section of a sectioned venue)."""

    _id: ObjectId
    theaterId: ObjectId
    theaterName: str
    name: str
    description: str
    start: datetime
    end: datetime
    prices: dict[str, int]  # category code -> integer minor units: the "Full price" column
    ticketTypes: NotRequired[list[dict]]  # copied from the theater with the price table (absent: full price only)
    typePrices: NotRequired[dict[str, dict[str, int]]]  # other ticket types: type -> category -> cents
    priceRev: NotRequired[int]  # bumped by every price table change; the hold's filter names it
    currency: str
    status: SessionStatus
    layout: Layout  # copied from the theater
    layoutRev: NotRequired[int]  # bumped when staff copy the theater's layout again (absent: 0)
    saleOpens: NotRequired[datetime]  # holds from then (absent: from publishing)
    saleCloses: NotRequired[datetime]  # holds until then, at the latest the start (absent: the start)
    presale: NotRequired[Presale]
    seats: list[list[int]]  # cell states (seatmap.GAP, FREE, HELD, SOLD, BLOCKED), aligned with layout
    seatsTotal: int
    seatsAvailable: int  # == the number of free cells
    quota: NotRequired[int]  # at most this many seats held or sold (house seats aside); absent: the hall
    quotaFloor: NotRequired[int]  # with quota: free seats kept off sale (``within_quota``)
    reservations: list[Reservation]
    version: int  # bumped by every change: the live map's ETag
    createdOn: datetime
    performanceId: NotRequired[ObjectId]  # sectioned venues: shared by a performance's sections
    section: NotRequired[SessionSection]
    venueName: NotRequired[str]
    front: NotRequired[str]  # copied from the theater: the word at the front of the map (absent: "stage")
    nameDe: NotRequired[str]  # the staff's German texts (core/localized.py)
    descriptionDe: NotRequired[str]
    theaterNameDe: NotRequired[str]
    venueNameDe: NotRequired[str]
    listingDue: NotRequired[datetime]  # sales/listings.py
    listingRev: NotRequired[int]
    boxOffice: NotRequired[dict]  # {enabled, deadlineMinutes}: payments/settings.py
    selfService: NotRequired[dict]  # this performance's own rules for buyers' changes (sales/self_service.py)
    waitingRoom: NotRequired[dict]  # {queueId, opensAt, onSaleAt, rate, paused, rev}: sales/waiting_room.py
    exchangeHolds: NotRequired[list[dict]]  # sales/exchanges.py
    cancelRun: NotRequired[dict]  # sales/session_cancel.py
    detailsChange: NotRequired[dict]  # sales/performance_details.py
    ticketCodesByRef: NotRequired[bool]
    seatSummary: NotRequired[dict[str, int]]  # after the show, instead of seats (sales/retention.py)
    compactedOn: NotRequired[datetime]
    purgeAt: NotRequired[datetime]


class CartItem(TypedDict):
    sessionId: ObjectId
    key: str  # "row:col"
    row: str  # labels, as the buyer sees them
    seat: str
    cat: str
    price: int  # locked at hold time (of its ticket type)
    ticketType: NotRequired[str]  # a ticket type code (sales/offers.py); absent: "full"
    offers: NotRequired[list[dict]]  # its category's row of the price table at hold time: [{code, name, ..., price}]
    wheelchair: NotRequired[bool]  # a wheelchair space (the companion rule)
    house: NotRequired[bool]  # a house seat staff took at the counter: released, it goes back to blocked
    subscription: NotRequired[ObjectId]  # sold as part of this subscription (sales/subscriptions.py)


class Customer(TypedDict):
    name: str
    email: str
    language: NotRequired[str]  # the buyer's, for the order's mails
    phone: NotRequired[str]  # given at the counter


class Cart(TypedDict):
    _id: ObjectId
    owner: str  # "s:<random token>" from the buyer cookie (booking/web/buyer.py)
    state: CartState
    items: list[CartItem]
    total: int
    createdOn: datetime
    modifiedOn: datetime
    firstHoldOn: datetime
    expiresAt: datetime  # min(last change + BOOKING_HOLD_SECONDS, firstHoldOn + BOOKING_HOLD_CAP_SECONDS)
    client: NotRequired[str]  # the client address key it was started from (per-client limit)
    customer: NotRequired[Customer]
    checkoutOn: NotRequired[datetime]
    orderId: NotRequired[ObjectId]
    endedOn: NotRequired[datetime]
    canceledShows: NotRequired[list[dict]]  # [{sessionId, name, start, seats}]: performances canceled while held
    promo: NotRequired[dict]  # the promo code applied (sales/promos.py)
    orderRef: NotRequired[str]
    payMethod: NotRequired[str]
    channel: NotRequired[SalesChannel]  # a staff cart's (sales/counter.py)
    soldBy: NotRequired[dict]  # {id, name}: the staff member at the counter (sales/counter.py)
    comp: NotRequired[dict]
    subscription: NotRequired[dict]  # {_id, name, nameDe?}: a subscription's cart (sales/subscriptions.py)
    voucherCode: NotRequired[str]  # the gift voucher checkout named (payments/vouchers.py)
    donation: NotRequired[int]  # what the buyer gives on top, in minor units (payments/donations.py)
    billing: NotRequired[dict]  # {company, address, vatId}: an invoice's buyer at the counter (payments/invoices.py)


class CheckIn(TypedDict):
    """A ticket let in at the door (sales/checkin.py): set once, by one conditional update."""

    at: datetime  # when it was scanned (an offline door's own clock, within bounds)
    door: str
    by: str  # the staff member's login
    scanId: str  # made by the door's phone: a repeated request or sync is recognised
    offline: bool  # decided on the phone without network, synced later
    recordedOn: datetime


class OrderLine(TypedDict):
    sessionId: ObjectId
    key: str
    row: str
    seat: str
    cat: str
    price: int
    ticketType: NotRequired[str]  # code and name of the ticket type, as bought
    ticketTypeName: NotRequired[str]
    ticketTypeNameDe: NotRequired[str]  # the German name, and the condition in both languages, as sold
    ticketTypeDescription: NotRequired[str]
    ticketTypeDescriptionDe: NotRequired[str]
    discount: NotRequired[int]  # the promo code's share of this line
    ticket: str  # 24 random url-safe characters
    checkedIn: NotRequired[CheckIn]
    vat: NotRequired[str]  # its VAT rate as sold, "19.0" (payments/money.py)
    house: NotRequired[bool]
    wheelchair: NotRequired[bool]
    subscription: NotRequired[ObjectId]  # a subscription's ticket: its income is reported apart
    holder: NotRequired[dict]  # {name, email, language}: handed on by the buyer (sales/buyer_changes.py)


class OrderSession(TypedDict):
    """What an order keeps of each of its sessions, for its pages and mail."""

    _id: ObjectId
    name: str | None
    start: datetime | None
    theaterName: str | None
    categories: dict[str, str]  # code -> name
    nameDe: NotRequired[str]
    theaterNameDe: NotRequired[str]
    categoriesDe: NotRequired[dict[str, str]]
    theaterId: NotRequired[ObjectId | None]  # its theater's, for the receipt sequence (None: the session was gone)


class Order(TypedDict):
    _id: ObjectId
    cartId: ObjectId  # unique
    ref: str  # unique booking reference
    owner: str
    name: str
    email: str
    lines: list[OrderLine]
    sessions: list[OrderSession]
    total: int
    subtotal: NotRequired[int]  # with a promo code: the lines' prices, before its discount
    discount: NotRequired[int]
    promo: NotRequired[dict]  # the code and its terms as redeemed (sales/promos.py)
    currency: str
    state: OrderState
    mail: NotRequired[MailState]  # absent while a sale's order waits for its payment (payments/flow.py)
    createdOn: datetime
    failure: NotRequired[str]  # why a failed order failed
    seatsReleased: NotRequired[bool]  # canceled or failed: its seats were given back
    canceledOn: NotRequired[datetime]
    canceledBy: NotRequired[str]
    cancelReason: NotRequired[str]
    mailClaimedUntil: NotRequired[datetime]
    mailTriedOn: NotRequired[datetime]
    mailQueued: NotRequired[int]
    mailDoneOn: NotRequired[datetime]
    mailFailure: NotRequired[str]
    mailFailures: NotRequired[int]
    mailRetryAt: NotRequired[datetime]
    mailRound: NotRequired[int]
    channel: NotRequired[SalesChannel]  # absent: online (DEFAULT_CHANNEL)
    nameKeys: NotRequired[list[str]]  # core/names.py
    language: NotRequired[str]
    fee: NotRequired[dict]  # {amount, vat}: payments/money.py
    method: NotRequired[str]
    soldBy: NotRequired[dict]  # {id, name}: the staff member at the counter (sales/counter.py)
    phone: NotRequired[str]
    compReason: NotRequired[str]
    # the money (payments/flow.py, payments/refunds.py)
    payment: NotRequired[dict]  # {provider, attempt, intent, status, until, previous}
    paidWith: NotRequired[dict]
    voucher: NotRequired[dict]  # the part a gift voucher pays: {voucherId, redemption, id, provider, amount, codeEnd}
    voucherCode: NotRequired[str]  # the voucher checkout named, until its part is written (payments/vouchers.py)
    paidOn: NotRequired[datetime]
    lateAfter: NotRequired[OrderState | None]  # paid after it had ended: the state it had (None: paid while pending)
    settling: NotRequired[bool]
    extraPayments: NotRequired[list[dict]]
    topUps: NotRequired[list[dict]]
    refunds: NotRequired[list[dict]]
    refundDue: NotRequired[bool]
    refundedLines: NotRequired[list[OrderLine]]
    lostSeats: NotRequired[bool]
    holdReleased: NotRequired[bool]
    receiptNo: NotRequired[int]
    receiptOn: NotRequired[datetime]
    receiptTheater: NotRequired[ObjectId]
    # changes after the sale (sales/exchanges.py, sales/outbox.py)
    exchangedLines: NotRequired[list[OrderLine]]
    exchanges: NotRequired[list[dict]]
    exchangeOpen: NotRequired[str]
    transfers: NotRequired[list[dict]]  # tickets the buyer handed on (sales/buyer_changes.py)
    transferredLines: NotRequired[list[OrderLine]]
    changeNotices: NotRequired[list[dict]]
    noticeMail: NotRequired[dict]
    reportStale: NotRequired[list[dict]]  # reports/marks.py
    purgeAt: NotRequired[datetime]  # core/order_retention.py
    subscription: NotRequired[dict]  # {_id, name, nameDe?}: a subscription's order (sales/subscriptions.py)
    donation: NotRequired[dict]  # {amount}: given with the order, no VAT (sales/counter.py, payments/flow.py)
    # an invoice from the counter and the credit notes that correct it (payments/invoices.py, payments/credit_notes.py)
    invoice: NotRequired[dict]
    invoiceNo: NotRequired[int]
    invoiceOn: NotRequired[datetime]
    invoiceTheater: NotRequired[ObjectId]
    creditNotes: NotRequired[list[dict]]  # the credit notes owed: [{_id, kind, refunds, tickets, amount, ...}]
    creditNoteDue: NotRequired[bool]
    amountRefunded: NotRequired[int]  # the refunds that went through, summed (payments/refunds.py)
    sentMails: NotRequired[list[dict]]  # [{at, kind, to, subject, body}], the newest (notifications/sent_mails.py)
    customerEdits: NotRequired[list[dict]]  # [{at, by, old, new}] (sales/customer_edits.py)
    webhookEvents: NotRequired[list[dict]]  # [{_id, type, at, ...}] still to be delivered (webhooks/)


class SubscriptionSaleState(StrEnum):
    """``holding -> held`` (every performance's seats taken, the cart written) or ``holding ->
    undone`` (a seat was taken, or a crash: reconcile undoes what was taken)."""

    HOLDING = "holding"
    HELD = "held"
    UNDONE = "undone"


class Subscription(TypedDict):
    """A season subscription staff define (sales/subscriptions.py): the same seat in each of its
    performances, at one price per category and ticket type."""

    _id: ObjectId
    name: str
    nameDe: NotRequired[str]
    sessionIds: list[ObjectId]  # its performances, in order of their start
    prices: dict[str, int]  # category -> cents for the whole subscription (full price)
    typePrices: NotRequired[dict[str, dict[str, int]]]  # other ticket types: type -> category -> cents
    saleOpens: datetime
    saleCloses: datetime
    currency: str
    createdOn: datetime
    renews: NotRequired[ObjectId]  # last season's subscription whose holders may renew
    renewalCloses: NotRequired[datetime]  # until then the holders' seats are reserved for them


class SubscriptionSale(TypedDict):
    """The intent of one subscription sale, written before any seat is taken: every seat it will
    hold, so a crash between the performances' writes is finished or undone (upkeep/reconcile.py)."""

    _id: ObjectId
    subscriptionId: ObjectId
    cartId: ObjectId
    owner: str
    seats: list[dict]  # [{sessionId, keys: ["r:c", ...]}]
    state: SubscriptionSaleState
    createdOn: datetime
    endedOn: NotRequired[datetime]
    client: NotRequired[str]  # the buyer's address its seats count for (sales/client_holds.py)
    clientSeats: NotRequired[int]  # how many: each seat once per performance


class VoucherRedemption(TypedDict):
    _id: str
    orderId: ObjectId
    ref: str
    amount: int
    at: datetime
    state: str  # "open" (its order not paid yet), "spent", "returned" (given back: never paid)


class Voucher(TypedDict):
    """A gift voucher (payments/vouchers.py): balance == value - redemptions + refunds."""

    _id: ObjectId
    code: str  # 16 characters of payments/vouchers.ALPHABET: unique, what the holder types
    value: int
    balance: int
    currency: str
    state: VoucherState
    issuedOn: datetime
    expiresAt: datetime
    soldVia: str  # "counter" or "online"
    soldBy: str  # the staff member's login at the counter
    buyer: str
    method: str  # how it was paid for (cash, card terminal, card)
    orderRef: str  # sold online: the order that pays for it
    redemptions: list[VoucherRedemption]
    refunds: list[dict]  # {_id, amount, at, why}: refunds of orders, and redemptions given back
    receiptNo: NotRequired[int]  # a counter sale's receipt (payments/voucher_sales.py)
    receiptOn: NotRequired[datetime]
    # bought online (payments/voucher_purchases.py): the buyer's address and language, the theater,
    # the card payment ({token, intent, status, until, attempt, previous, paidOn}) and its mail
    email: NotRequired[str]
    language: NotRequired[str]
    theaterId: NotRequired[ObjectId]
    purchase: NotRequired[dict]
    mail: NotRequired[str]  # pending, sent or failed
    mailDueOn: NotRequired[datetime]
