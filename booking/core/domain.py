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


class RefundStatus(StrEnum):
    """A refund record (payments/refunds.py): ``pending -> succeeded``, ``pending -> failed``,
    ``failed -> succeeded | failed`` (retried by reconcile or staff)."""

    PENDING = "pending"  # written before the provider is asked, or the provider is still working on it
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # retried at retryAt; after BOOKING_REFUND_MAX_TRIES only by staff


class ExchangeState(StrEnum):
    """An exchange of tickets (sales/exchanges.py): ``started -> taken -> switched -> released ->
    done``; ``started -> awaiting_payment -> taken`` (a dearer seat paid online); ``started |
    awaiting_payment | taken -> abandoned``."""

    STARTED = "started"
    AWAITING_PAYMENT = "awaiting_payment"
    TAKEN = "taken"
    SWITCHED = "switched"
    RELEASED = "released"
    DONE = "done"
    ABANDONED = "abandoned"


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


class ExchangeHold(TypedDict):
    """The seats an exchange took in this session, until its order's lines have them (sales/exchanges.py)."""

    _id: str  # the exchange's id
    orderId: ObjectId
    seats: list[str]  # "row:col" keys
    on: datetime


class WebhookEventEntry(TypedDict):
    """An event still to be handed to the webhook endpoints, pushed in the change's write
    (sales/outbox.py, webhooks/)."""

    _id: str
    type: str
    at: datetime
    refund: NotRequired[str]  # what the payload names beyond the document
    exchange: NotRequired[str]
    transfer: NotRequired[str]
    ticket: NotRequired[str]


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
    waitingList: NotRequired[bool]  # someone joined its waiting list (set before the entry; never unset)
    waitingRoom: NotRequired[dict]  # {queueId, opensAt, onSaleAt, rate, paused, rev}: sales/waiting_room.py
    exchangeHolds: NotRequired[list[ExchangeHold]]
    webhookEvents: NotRequired[list[WebhookEventEntry]]  # a canceled performance's (sales/session_cancel.py)
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


class StaffMember(TypedDict, total=False):
    """Who sold it at the counter (sales/counter.py); an order of a counter cart without one keeps {}."""

    id: int | None  # the staff user's id
    name: str


class CanceledShow(TypedDict):
    """A performance canceled while the cart held seats in it (sales/carts.py): the buyer is told."""

    sessionId: ObjectId
    name: str
    start: datetime | None
    seats: int


class Comp(TypedDict):
    reason: str  # why staff gave the tickets away (sales/counter.py)


class BillingAddress(TypedDict):
    """An invoice's buyer as staff typed it at the counter (payments/invoices.py)."""

    company: str
    address: str
    vatId: str


class SubscriptionRef(TypedDict):
    """The subscription a cart or order is for (sales/subscriptions.py)."""

    _id: ObjectId
    name: str
    nameDe: NotRequired[str]
    renewalOf: NotRequired[ObjectId]  # the holder's order of last season, when renewing


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
    canceledShows: NotRequired[list[CanceledShow]]
    promo: NotRequired[dict]  # the promo code applied (sales/promos.py)
    orderRef: NotRequired[str]
    payMethod: NotRequired[str]
    channel: NotRequired[SalesChannel]  # a staff cart's (sales/counter.py)
    soldBy: NotRequired[StaffMember]  # a staff cart's (sales/counter.py)
    comp: NotRequired[Comp]
    subscription: NotRequired[SubscriptionRef]  # a subscription's cart
    voucherCode: NotRequired[str]  # the gift voucher checkout named (payments/vouchers.py)
    donation: NotRequired[int]  # what the buyer gives on top, in minor units (payments/donations.py)
    billing: NotRequired[BillingAddress]  # an invoice's buyer at the counter


class CheckIn(TypedDict):
    """A ticket let in at the door (sales/checkin.py): set once, by one conditional update."""

    at: datetime  # when it was scanned (an offline door's own clock, within bounds)
    door: str
    by: str  # the staff member's login
    scanId: str  # made by the door's phone: a repeated request or sync is recognised
    offline: bool  # decided on the phone without network, synced later
    recordedOn: datetime


class TicketHolder(TypedDict):
    """The person a buyer handed a ticket on to (sales/buyer_changes.py)."""

    name: str
    email: str
    language: str


class TopUpPart(TypedDict):
    """The part of a new line's price taken at the counter for a dearer exchange: the sales
    reports count it where it was taken (sales/exchanges.py)."""

    amount: int
    channel: str  # a SalesChannel value


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
    holder: NotRequired[TicketHolder]  # handed on by the buyer (sales/buyer_changes.py)
    topUpPart: NotRequired[TopUpPart]  # a dearer exchange's difference taken at the counter (sales/exchanges.py)
    exchange: NotRequired[str]  # in ``exchangedLines``: the exchange that replaced it
    transfer: NotRequired[str]  # in ``transferredLines``: the transfer that handed it on


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


# --- an order's sub-documents ---


class Fee(TypedDict):
    """The booking fee (payments/money.py)."""

    amount: int
    vat: str  # its VAT rate, "19.0"


class Donation(TypedDict):
    amount: int  # minor units, no VAT (payments/donations.py)


class PreviousAttempt(TypedDict):
    """A card attempt that was refused, kept when the next one starts (payments/flow.py)."""

    intent: str | None
    failure: str | None


class OrderPayment(TypedDict):
    """The order's current payment attempt (payments/flow.py). ``status`` is a provider status
    (payments/base.py) or ``confirming`` (a request is charging the card)."""

    provider: str
    attempt: int  # 1, 2, ...: a refused card starts the next one
    intent: str | None  # the provider's payment id (None until it is made; "counter-<order id>" at the counter)
    status: str
    until: datetime  # the end of the payment window (or the box-office deadline)
    confirmOn: NotRequired[datetime]  # when the charging request claimed the attempt
    failure: NotRequired[str | None]  # why the last try failed, for the buyer
    checkedOn: NotRequired[datetime]  # when the provider was last asked
    previous: NotRequired[list[PreviousAttempt]]


class PaymentRef(TypedDict):
    """A payment at a provider: what a refund goes back through."""

    provider: str
    id: str


class PaymentAmount(PaymentRef):
    """A payment and what it took (a voucher's part, as ``refunds.allocate`` counts it)."""

    amount: int


class PaymentTaken(PaymentAmount):
    """Money taken for the order: ``paidWith``, ``topUps`` and ``extraPayments`` entries, and an
    exchange's ``paidDifference``."""

    on: datetime
    by: NotRequired[str]  # staff at the counter: who took it, how, and its reference (a slip, a transfer)
    means: NotRequired[str]
    reference: NotRequired[str]
    why: NotRequired[str]  # a top-up's or an extra payment's reason ("exchange", "paid twice", ...)
    tillClosing: NotRequired[str]  # the till closing that counted it (reports/tills.py)


class VoucherPart(TypedDict):
    """The part of an order a gift voucher pays (payments/vouchers.py)."""

    voucherId: ObjectId
    redemption: str  # the redemption's id on the voucher
    id: str  # as a payment: "voucher:<voucher id>:<redemption id>"
    provider: str  # "voucher"
    amount: int
    codeEnd: str  # the code's last four characters, for the receipt


class RefundRecord(TypedDict):
    """One refund through one payment (payments/refunds.py): written ``pending`` before the provider
    is asked, then ``succeeded`` or ``failed`` (retried)."""

    _id: str
    amount: int
    payment: PaymentRef
    reason: str  # stored in English
    tickets: list[str]  # the ticket codes refunded ([] for an exchange's difference or an extra payment)
    status: RefundStatus
    tries: int  # since the last staff retry
    by: str
    createdOn: datetime
    donation: NotRequired[int]  # the donation given back with it (counted apart in the takings)
    keptFee: NotRequired[int]  # what the theater kept of the amount (a buyer's cancellation fee)
    exchange: NotRequired[str]  # an exchange's difference: its id
    claims: NotRequired[int]  # ever: the provider's keys never repeat
    claimedUntil: NotRequired[datetime | None]
    triedOn: NotRequired[datetime]
    providerRef: NotRequired[str]
    retryAt: NotRequired[datetime | None]
    failure: NotRequired[str | None]
    doneOn: NotRequired[datetime]
    tillClosing: NotRequired[str]  # the till closing that counted it (reports/tills.py)


class ExchangePayment(TypedDict):
    """A dearer exchange's difference, paid online by the customer (sales/exchanges.py)."""

    provider: str
    intent: str | None
    until: datetime
    confirmOn: NotRequired[datetime | None]  # the charging request's claim


class ExchangeRecord(TypedDict):
    """One exchange of tickets to other seats (sales/exchanges.py): its states are the module's."""

    _id: str
    state: ExchangeState
    tickets: list[str]
    old: list[OrderLine]
    new: list[OrderLine]
    sessionId: ObjectId
    session: OrderSession
    difference: int  # new minus old, minor units
    fee: int
    settle: str  # "provider" or "counter"
    by: str
    reason: str
    createdOn: datetime
    payment: NotRequired[ExchangePayment]
    paidDifference: NotRequired[PaymentTaken]
    refunds: NotRequired[list[str]]  # a cheaper exchange's refund records
    switchedOn: NotRequired[datetime]
    doneOn: NotRequired[datetime]
    failure: NotRequired[str]  # why it was abandoned


class Transfer(TypedDict):
    """A ticket the buyer handed on (sales/buyer_changes.py)."""

    _id: str
    old: str  # the ticket code it had
    new: OrderLine  # the line with its new code and holder
    name: str
    email: str
    on: datetime


class ChangeNotice(TypedDict):
    """A mail to send about a change, pushed in the change's write (sales/outbox.py,
    notifications/change_notices.py)."""

    _id: str
    kind: str
    ref: str  # the exchange, transfer or (first) refund it tells of
    state: MailState  # pending, sent or failed
    createdOn: datetime
    refunds: NotRequired[list[str]]
    to: NotRequired[str]  # a mail to someone else than the buyer (a ticket's new holder)
    language: NotRequired[str]
    claimedUntil: NotRequired[datetime]
    triedOn: NotRequired[datetime]
    doneOn: NotRequired[datetime]
    failure: NotRequired[str]


class SentMail(TypedDict):
    """A mail sent about the order, kept with its text (notifications/sent_mails.py)."""

    at: datetime
    kind: str
    to: list[str]
    subject: str
    body: str


class CustomerName(TypedDict):
    name: str
    email: str


class CustomerEdit(TypedDict):
    """Staff changed the customer's name or address (sales/customer_edits.py)."""

    at: datetime
    by: str
    old: CustomerName
    new: CustomerName


class Invoice(TypedDict):
    """An invoice from the counter, as the sale made it (payments/invoices.py)."""

    seller: dict  # the theater's seller data at the sale
    buyer: BillingAddress
    due: str  # ISO date


class CreditNoteOwed(TypedDict):
    """A credit note owed, pushed in the write that refunds or voids (payments/credit_notes.py)."""

    _id: str
    kind: str  # "refund", "void" or "exchange"
    refunds: list[str]
    tickets: list[str]
    amount: int
    reason: str
    createdOn: datetime
    pairs: NotRequired[list[list]]  # an exchange's [amount, VAT rate] per rate


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
    expiredOn: NotRequired[datetime]  # not paid in time (payments/flow.py)
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
    fee: NotRequired[Fee]
    method: NotRequired[str]
    soldBy: NotRequired[StaffMember]  # the staff member at the counter (sales/counter.py)
    phone: NotRequired[str]
    compReason: NotRequired[str]
    # the money (payments/flow.py, payments/refunds.py)
    payment: NotRequired[OrderPayment]
    paidWith: NotRequired[PaymentTaken]
    voucher: NotRequired[VoucherPart]
    voucherCode: NotRequired[str]  # the voucher checkout named, until its part is written (payments/vouchers.py)
    paidOn: NotRequired[datetime]
    lateAfter: NotRequired[OrderState | None]  # paid after it had ended: the state it had (None: paid while pending)
    settling: NotRequired[bool]
    extraPayments: NotRequired[list[PaymentTaken]]
    topUps: NotRequired[list[PaymentTaken]]
    refunds: NotRequired[list[RefundRecord]]
    refundDue: NotRequired[bool]
    refundedLines: NotRequired[list[OrderLine]]
    lostSeats: NotRequired[bool]
    holdReleased: NotRequired[bool]
    receiptNo: NotRequired[int]
    receiptOn: NotRequired[datetime]
    receiptTheater: NotRequired[ObjectId]
    # changes after the sale (sales/exchanges.py, sales/outbox.py)
    exchangedLines: NotRequired[list[OrderLine]]
    exchanges: NotRequired[list[ExchangeRecord]]
    exchangeOpen: NotRequired[str]
    transfers: NotRequired[list[Transfer]]
    transferredLines: NotRequired[list[OrderLine]]
    changeNotices: NotRequired[list[ChangeNotice]]
    noticeMail: NotRequired[MailState]  # the payment notice (notifications/payment_notices.py)
    noticeClaimedUntil: NotRequired[datetime]
    reportStale: NotRequired[list[dict]]  # reports/marks.py
    purgeAt: NotRequired[datetime]  # core/order_retention.py
    subscription: NotRequired[SubscriptionRef]  # a subscription's order
    donation: NotRequired[Donation]  # given with the order (sales/counter.py, payments/flow.py)
    # an invoice from the counter and the credit notes that correct it (payments/invoices.py, payments/credit_notes.py)
    invoice: NotRequired[Invoice]
    invoiceNo: NotRequired[int]
    invoiceOn: NotRequired[datetime]
    invoiceTheater: NotRequired[ObjectId]
    creditNotes: NotRequired[list[CreditNoteOwed]]
    creditNoteDue: NotRequired[bool]
    amountRefunded: NotRequired[int]  # the refunds that went through, summed (payments/refunds.py)
    sentMails: NotRequired[list[SentMail]]  # the newest (notifications/sent_mails.py)
    customerEdits: NotRequired[list[CustomerEdit]]
    webhookEvents: NotRequired[list[WebhookEventEntry]]


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


class VoucherRefund(TypedDict):
    """Money back onto a voucher (payments/vouchers.py): an order's refund through it (``redemption``),
    or an open redemption given back (its order never paid: ``orderId``, ``ref``)."""

    _id: str  # the order's refund id, or "back-<redemption id>"
    amount: int
    at: datetime
    why: str
    redemption: NotRequired[str]
    orderId: NotRequired[ObjectId]
    ref: NotRequired[str]


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
    refunds: list[VoucherRefund]  # refunds of orders, and redemptions given back
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
    tillClosing: NotRequired[str]  # sold at the counter: the till closing that counted it (reports/tills.py)
