"""Takings: the money itself, as an accountant counts it: every amount taken or given back, when,
how (payment method) and by whom (the seller; "online" for the buyer's own checkout), read from
the orders that hold it:

* a sale's payment (``paidWith``, at its ``on``): the counter's cash, card terminal or
  complimentary sale, an online card payment, an invoice or a box-office reservation paid later
  (by the means staff recorded: cash, card terminal, bank transfer = "invoice");
* an exchange's top-up (``topUps``, at its ``on``), counted where it was taken: at the counter by
  the staff member who took it, online by card;
* a refund (``refunds``, at its ``createdOn``), through the payment it goes back through: handed
  back at the counter by the staff member who recorded it, or to the card.

Refunds of payments no seat was sold for (``extraPayments``) are left out, as those payments are.
A gift voucher sold at the counter (``vouchers``, at its ``issuedOn``) is money taken too, by its
seller in cash or by the card terminal (so it is in their till), and counted apart as "gift
vouchers sold": it is no performance's income. A voucher that pays an order is a payment method of
its own ("gift voucher redeemed"), so a voucher's money appears once as sold and once as a tender.
Donations (payments/donations.py) are in the money taken, and counted apart as well, by payment
method: the sale's payment carries the order's donation, a refund of the whole order gives it back.
Amounts are integer minor units. Each part is one indexed read of the orders in the time range
(``paid_on``, ``top_up_on``, ``refund_created``).
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from booking.core import mongo
from booking.core.domain import Order
from booking.payments import counter, refunds, vouchers
from booking.reports.exports import Table, amount

CASH = counter.CASH
CARD_TERMINAL = counter.CARD_TERMINAL
ONLINE_CARD = "online_card"
INVOICE = counter.INVOICE  # paid by bank transfer
COMPLIMENTARY = counter.COMPLIMENTARY
VOUCHER = vouchers.PROVIDER  # a gift voucher paying an order (a row only when one did)
METHODS = (CASH, CARD_TERMINAL, ONLINE_CARD, INVOICE, COMPLIMENTARY)
METHOD_LABELS = {
    CASH: _("Cash"),
    CARD_TERMINAL: _("Card terminal"),
    ONLINE_CARD: _("Online card"),
    INVOICE: _("Invoice (bank transfer)"),
    COMPLIMENTARY: _("Complimentary"),
    VOUCHER: _("Gift voucher redeemed"),
}
ONLINE = ""  # the seller of what buyers paid themselves
HOUSE = ("box_office", "counter")  # providers whose money staff take and hand back
SALE = "sale"
TOP_UP = "top_up"
REFUND = "refund"
VOUCHER_SALE = "voucher_sale"
MAX_DAYS = 366  # the longest range one report reads


@dataclass(frozen=True)
class Movement:
    at: datetime
    kind: str  # SALE, TOP_UP, REFUND, VOUCHER_SALE
    method: str
    seller: str  # a login, ONLINE for the buyer's own
    amount: int  # money in: positive; given back: negative
    ref: str
    order_id: object
    donation: int = 0  # of ``amount``: what was given (positive) or given back (negative) as a donation
    part: str = ""  # where it is kept: PAID_WITH, TOP_UPS, REFUNDS (of the order) or VOUCHERS, with the entry's id
    part_id: str = ""
    closing: str = ""  # the till closing that counted it (reports/tills.py), if one did


PAID_WITH, TOP_UPS, REFUNDS, VOUCHERS = "paidWith", "topUps", "refunds", "vouchers"


def _means_method(means: str) -> str:
    return {counter.BANK_TRANSFER: INVOICE, CASH: CASH, CARD_TERMINAL: CARD_TERMINAL}.get(means, CASH)


def payment_method(order: Order, payment: dict) -> str:
    """How one payment of the order was taken, in the report's words."""
    if payment.get("provider") == VOUCHER:
        return VOUCHER
    if payment.get("provider") not in HOUSE:
        return ONLINE_CARD
    if payment is order.get("paidWith") and order.get("method") in (CASH, CARD_TERMINAL, COMPLIMENTARY):
        return order["method"]
    return _means_method(payment.get("means", CASH))  # paid later (or a top-up at the counter)


def _seller(order: Order, payment: dict) -> str:
    if payment.get("provider") not in HOUSE:
        return ONLINE
    return payment.get("by") or (order.get("soldBy") or {}).get("name") or ""


def movements_of(order: Order) -> Iterator[Movement]:
    """Every amount the order took or gave back."""
    paid = order.get("paidWith")
    taken = {}
    if paid:
        taken[paid["id"]] = paid
        at = paid.get("on") or order.get("paidOn")
        if at is not None:
            method, seller = payment_method(order, paid), _seller(order, paid)
            donated = min((order.get("donation") or {}).get("amount", 0), paid["amount"])
            yield Movement(
                at,
                SALE,
                method,
                seller,
                paid["amount"],
                order["ref"],
                order["_id"],
                donated,
                part=PAID_WITH,
                part_id=paid["id"],
                closing=paid.get("tillClosing", ""),
            )
        part = order.get("voucher") or {}
        if part and part.get("id") != paid["id"]:  # the voucher's part beside the card or the counter
            taken[part["id"]] = part
            if at is not None:
                yield Movement(at, SALE, VOUCHER, ONLINE, part["amount"], order["ref"], order["_id"])
    for top_up in order.get("topUps") or []:
        taken[top_up["id"]] = top_up
        yield Movement(
            top_up["on"],
            TOP_UP,
            payment_method(order, top_up),
            _seller(order, top_up),
            top_up["amount"],
            order["ref"],
            order["_id"],
            part=TOP_UPS,
            part_id=top_up["id"],
            closing=top_up.get("tillClosing", ""),
        )
    for refund in order.get("refunds") or []:
        payment = taken.get(refund["payment"]["id"])
        if payment is None or refund.get("status") == refunds.FAILED:
            continue  # an extra payment's refund, or one that never went through (yet)
        house = refund["payment"]["provider"] in HOUSE
        seller = (refund.get("by") or _seller(order, payment)) if house else ONLINE
        yield Movement(
            refund["createdOn"],
            REFUND,
            payment_method(order, payment),
            seller,
            -refund["amount"],
            order["ref"],
            order["_id"],
            -min(refund.get("donation", 0), refund["amount"]),
            part=REFUNDS,
            part_id=refund["_id"],
            closing=refund.get("tillClosing", ""),
        )


FIELDS = {
    "ref": 1,
    "method": 1,
    "soldBy": 1,
    "paidOn": 1,
    "paidWith": 1,
    "topUps": 1,
    "refunds": 1,
    "donation": 1,
    "voucher": 1,
}


def voucher_sales(start: datetime, end: datetime) -> Iterator[Movement]:
    """Gift vouchers sold at the counter at ``start <= issuedOn < end`` (the issued_newest index)."""
    query = {"issuedOn": {"$gte": start, "$lt": end}, "soldVia": "counter"}
    fields = {"issuedOn": 1, "method": 1, "soldBy": 1, "value": 1, "code": 1, "receiptNo": 1, "tillClosing": 1}
    for voucher in mongo.vouchers().find(query, fields).hint("issued_newest"):
        method = _means_method(voucher.get("method") or CASH)
        label = vouchers.sale_label(voucher)
        yield Movement(
            voucher["issuedOn"],
            VOUCHER_SALE,
            method,
            voucher.get("soldBy", ""),
            voucher["value"],
            label,
            voucher["_id"],
            part=VOUCHERS,
            part_id=str(voucher["_id"]),
            closing=voucher.get("tillClosing", ""),
        )


def movements(start: datetime, end: datetime, *, seller: str | None = None) -> list[Movement]:
    """Every movement at ``start <= at < end`` (of one seller, if named), oldest first."""
    found: dict = {}
    for query, hint in (
        ({"paidOn": {"$gte": start, "$lt": end}}, "paid_on"),
        ({"topUps.on": {"$gte": start, "$lt": end}}, "top_up_on"),
        ({"refunds.createdOn": {"$gte": start, "$lt": end}}, "refund_created"),
    ):
        for order in mongo.orders().find(query, FIELDS).hint(hint):
            found[order["_id"]] = order
    moved = [
        m
        for order in found.values()
        for m in movements_of(order)
        if start <= m.at < end and (seller is None or m.seller == seller)
    ]
    moved += [m for m in voucher_sales(start, end) if seller is None or m.seller == seller]
    return sorted(moved, key=lambda m: (m.at, m.ref, m.kind))


# --- the report ---


@dataclass
class Row:
    key: str
    label: str
    sales: int = 0  # payments and top-ups counted
    taken: int = 0
    given_back: int = 0  # positive: what went back

    @property
    def net(self) -> int:
        return self.taken - self.given_back

    def add(self, m: Movement) -> None:
        if m.amount >= 0 and m.kind != REFUND:
            self.sales += 1
            self.taken += m.amount
        else:
            self.given_back += -m.amount


@dataclass
class Takings:
    first: date
    last: date
    by_method: list[Row]
    by_seller: list[Row]
    by_method_and_seller: list[Row]
    total: Row
    moves: list[Movement] = field(default_factory=list)
    vouchers_sold: list[Row] = field(default_factory=list)  # of the money above, by payment method
    vouchers_total: Row = field(default_factory=lambda: Row("vouchers", str(_("Total"))))
    donations: list[Row] = field(default_factory=list)  # of the money above, by payment method
    donations_total: Row = field(default_factory=lambda: Row("donations", str(_("Total"))))


def day_range(first: date, last: date) -> tuple[datetime, datetime]:
    zone = timezone.get_current_timezone()
    return datetime.combine(first, time.min, tzinfo=zone), datetime.combine(
        last + timedelta(days=1), time.min, tzinfo=zone
    )


def method_label(code: str) -> str:
    return str(METHOD_LABELS.get(code, code))


def seller_label(code: str) -> str:
    return code or str(_("Online"))


def build(first: date, last: date) -> Takings:
    """The takings of these local days, by payment method, by seller and by both."""
    start, end = day_range(first, last)
    moves = movements(start, end)
    methods = {code: Row(code, method_label(code)) for code in METHODS}
    sellers: dict[str, Row] = {}
    both: dict[tuple[str, str], Row] = {}
    total = Row("total", str(_("Total")))
    given: dict[str, Row] = {}
    given_total = Row("donations", str(_("Total")))
    sold: dict[str, Row] = {}
    sold_total = Row("vouchers", str(_("Total")))
    for m in moves:
        if m.kind == VOUCHER_SALE:
            sold.setdefault(m.method, Row(m.method, method_label(m.method))).add(m)
            sold_total.add(m)
        if m.donation:
            part = Movement(m.at, m.kind, m.method, m.seller, m.donation, m.ref, m.order_id, m.donation)
            given.setdefault(m.method, Row(m.method, method_label(m.method))).add(part)
            given_total.add(part)
        methods.setdefault(m.method, Row(m.method, method_label(m.method))).add(m)
        sellers.setdefault(m.seller, Row(m.seller, seller_label(m.seller))).add(m)
        pair = (m.seller, m.method)
        both.setdefault(
            pair, Row(f"{m.seller}:{m.method}", f"{seller_label(m.seller)} · {method_label(m.method)}")
        ).add(m)
        total.add(m)
    return Takings(
        first=first,
        last=last,
        by_method=list(methods.values()),
        by_seller=sorted(sellers.values(), key=lambda r: (r.key != ONLINE, r.label)),
        by_method_and_seller=[both[k] for k in sorted(both)],
        total=total,
        moves=moves,
        donations=[given[code] for code in sorted(given, key=lambda c: METHODS.index(c) if c in METHODS else 99)],
        donations_total=given_total,
        vouchers_sold=[sold[code] for code in METHODS if code in sold],
        vouchers_total=sold_total,
    )


def tables(takings: Takings) -> list[Table]:
    """The report as tables for the CSV download (reports/exports.py): each movement, then the sums."""
    kinds = {
        SALE: str(_("Sale")),
        TOP_UP: str(_("Exchange top-up")),
        REFUND: str(_("Refund")),
        VOUCHER_SALE: str(_("Gift voucher sold")),
    }
    moves = Table(
        title=str(_("Movements")),
        header=[
            str(_("Time")),
            str(_("Booking")),
            str(_("Kind")),
            str(_("Payment method")),
            str(_("Seller")),
            str(_("Amount")),
            str(_("Of it donation")),
        ],
        rows=[
            [
                timezone.localtime(m.at).replace(tzinfo=None),
                m.ref,
                kinds[m.kind],
                method_label(m.method),
                seller_label(m.seller),
                amount(m.amount),
                amount(m.donation),
            ]
            for m in takings.moves
        ],
    )
    header = [str(_("Sales")), str(_("Taken")), str(_("Given back")), str(_("Net"))]

    def sums(title: str, first: str, rows: list[Row], total: Row | None = None) -> Table:
        return Table(
            title=title,
            header=[first, *header],
            rows=[
                [r.label, r.sales, amount(r.taken), amount(r.given_back), amount(r.net)]
                for r in [*rows, total or takings.total]
            ],
        )

    return [
        moves,
        sums(str(_("By payment method")), str(_("Payment method")), takings.by_method),
        sums(str(_("By seller")), str(_("Seller")), takings.by_seller),
        sums(str(_("By seller and method")), str(_("Seller")), takings.by_method_and_seller),
        sums(str(_("Gift vouchers sold")), str(_("Payment method")), takings.vouchers_sold, takings.vouchers_total),
        sums(
            str(_("Donations by payment method")),
            str(_("Payment method")),
            takings.donations,
            takings.donations_total,
        ),
    ]
