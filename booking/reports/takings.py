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

from booking.core import clock, mongo
from booking.core.domain import Order, PaymentTaken, VoucherPart
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


def payment_method(order: Order, payment: PaymentTaken | VoucherPart) -> str:
    """How one payment of the order was taken, in the report's words."""
    if payment["provider"] == VOUCHER or "voucherId" in payment:  # (a voucher part's provider is VOUCHER)
        return VOUCHER
    if payment["provider"] not in HOUSE:
        return ONLINE_CARD
    if payment is order.get("paidWith") and order.get("method") in (CASH, CARD_TERMINAL, COMPLIMENTARY):
        return order["method"]
    return _means_method(payment.get("means", CASH))  # paid later (or a top-up at the counter)


def _seller(order: Order, payment: PaymentTaken | VoucherPart) -> str:
    if payment["provider"] not in HOUSE or "voucherId" in payment:  # (a voucher part's provider is VOUCHER)
        return ONLINE
    return payment.get("by") or (order.get("soldBy") or {}).get("name") or ""


def movements_of(order: Order) -> Iterator[Movement]:
    """Every amount the order took or gave back."""
    paid = order.get("paidWith")
    taken: dict[str, PaymentTaken | VoucherPart] = {}
    if paid:
        taken[paid["id"]] = paid
        at = paid.get("on") or order.get("paidOn")
        if at is not None:
            method, seller = payment_method(order, paid), _seller(order, paid)
            donated = min(donation["amount"] if (donation := order.get("donation")) else 0, paid["amount"])
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
        part = order.get("voucher")
        if part and part["id"] != paid["id"]:  # the voucher's part beside the card or the counter
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


# A tally: money per cell, each cell [sales, taken, given back]. Cells: (ALL, seller, method) for
# every movement, (VOUCHERS_SOLD, "", method) for gift vouchers sold, (DONATIONS, "", method) for
# the donations' part. Tallies of days add up to the tally of the range.
ALL, VOUCHERS_SOLD, DONATIONS = "all", "vouchers", "donations"
Cell = tuple[str, str, str]
Tally = dict[Cell, list[int]]


def _count(tally: Tally, cell: Cell, kind: str, amount: int) -> None:
    sums = tally.get(cell)
    if sums is None:
        sums = tally[cell] = [0, 0, 0]
    if amount >= 0 and kind != REFUND:
        sums[0] += 1
        sums[1] += amount
    else:
        sums[2] += -amount


def tally_of(moves: list[Movement]) -> Tally:
    tally: Tally = {}
    for m in moves:
        _count(tally, (ALL, m.seller, m.method), m.kind, m.amount)
        if m.kind == VOUCHER_SALE:
            _count(tally, (VOUCHERS_SOLD, "", m.method), m.kind, m.amount)
        if m.donation:
            _count(tally, (DONATIONS, "", m.method), m.kind, m.donation)
    return tally


def _add_tally(into: Tally, more: Tally) -> None:
    for cell, (sales, taken, given_back) in more.items():
        sums = into.setdefault(cell, [0, 0, 0])
        sums[0] += sales
        sums[1] += taken
        sums[2] += given_back


def _row(key: str, label: str, sums: list[int]) -> Row:
    return Row(key, label, sales=sums[0], taken=sums[1], given_back=sums[2])


def _method_order(code: str) -> int:
    return METHODS.index(code) if code in METHODS else len(METHODS)


def takings_of(first: date, last: date, tally: Tally, moves: list[Movement]) -> Takings:
    """The report of these days from their tally (and their movements, for the downloads)."""
    methods: dict[str, list[int]] = {code: [0, 0, 0] for code in METHODS}
    sellers: dict[str, list[int]] = {}
    total = [0, 0, 0]
    for (group, seller, method), sums in tally.items():
        if group != ALL:
            continue
        for into in (methods.setdefault(method, [0, 0, 0]), sellers.setdefault(seller, [0, 0, 0]), total):
            for i in range(3):
                into[i] += sums[i]

    def by_method(group: str) -> list[Row]:
        cells = sorted((c for c in tally if c[0] == group), key=lambda c: _method_order(c[2]))
        return [_row(c[2], method_label(c[2]), tally[c]) for c in cells]

    def group_total(group: str, key: str) -> Row:
        sums = [sum(tally[c][i] for c in tally if c[0] == group) for i in range(3)]
        return _row(key, str(_("Total")), sums)

    both = sorted((c for c in tally if c[0] == ALL), key=lambda c: (c[1], c[2]))
    return Takings(
        first=first,
        last=last,
        by_method=[_row(code, method_label(code), sums) for code, sums in methods.items()],
        by_seller=sorted(
            (_row(code, seller_label(code), sums) for code, sums in sellers.items()),
            key=lambda r: (r.key != ONLINE, r.label),
        ),
        by_method_and_seller=[
            _row(f"{seller}:{method}", f"{seller_label(seller)} · {method_label(method)}", tally[(g, seller, method)])
            for g, seller, method in both
        ],
        total=_row("total", str(_("Total")), total),
        moves=moves,
        donations=by_method(DONATIONS),
        donations_total=group_total(DONATIONS, "donations"),
        vouchers_sold=[r for r in by_method(VOUCHERS_SOLD) if r.key in METHODS],
        vouchers_total=group_total(VOUCHERS_SOLD, "vouchers"),
    )


def build(first: date, last: date) -> Takings:
    """The takings of these local days, by payment method, by seller and by both, with every
    movement (the downloads list them)."""
    start, end = day_range(first, last)
    moves = movements(start, end)
    return takings_of(first, last, tally_of(moves), moves)


# --- past days counted for keeps ---

# A request that took money just before midnight may write it a moment after: a day is counted for
# keeps once it ended this long ago.
SEALED_AFTER = timedelta(minutes=15)


def _failed_refunds(start: datetime, end: datetime) -> dict[str, list[str]]:
    """The ids of the refunds created at ``start <= createdOn < end`` that failed, by local day: a
    failed refund is no money given back, and may go through on a later try, changing its day."""
    found: dict[str, list[str]] = {}
    query = {"refunds.createdOn": {"$gte": start, "$lt": end}, "refunds.status": refunds.FAILED}
    fields = {"refunds._id": 1, "refunds.createdOn": 1, "refunds.status": 1}
    for order in mongo.orders().find(query, fields).hint("refund_created"):
        for refund in order.get("refunds") or []:
            created = refund.get("createdOn")
            if refund.get("status") == refunds.FAILED and created is not None and start <= created < end:
                found.setdefault(timezone.localdate(created).isoformat(), []).append(refund["_id"])
    return {day: sorted(ids) for day, ids in found.items()}


def _day_key(day: date) -> str:
    return f"{timezone.get_current_timezone_name()}:{day.isoformat()}"


def _sealed_tally(day: date, failed_before: list[str]) -> Tally:
    """A past day's tally: the one kept, unless a refund of that day has failed or gone through
    since (``failed_before``: that day's failed refunds now, read before its movements)."""
    kept = mongo.takings_days().find_one({"_id": _day_key(day)})
    if kept is not None and kept["failedRefunds"] == failed_before:
        return {(c[0], c[1], c[2]): [c[3], c[4], c[5]] for c in kept["cells"]}
    start, end = day_range(day, day)
    tally = tally_of(movements(start, end))
    cells = [[*cell, *sums] for cell, sums in tally.items()]
    mongo.takings_days().replace_one(
        {"_id": _day_key(day)},
        {"_id": _day_key(day), "cells": cells, "failedRefunds": failed_before, "countedOn": clock.now()},
        upsert=True,
    )
    return tally


KEEP_DAYS = 7  # the worker checks the last week again each run: its refunds still change
FILL_DAYS = 31  # older days never kept, counted this many per run, the newest first


def first_movement_day() -> date | None:
    """The local day of the oldest money taken (a payment or a counter voucher sale; top-ups and
    refunds come after their order's payment), or None when none was ever taken."""
    firsts = [
        found[key]
        for collection, query, key, hint in (
            (mongo.orders(), {"paidOn": {"$ne": None}}, "paidOn", "paid_on"),
            (mongo.vouchers(), {"soldVia": "counter"}, "issuedOn", "issued_newest"),
        )
        for found in collection.find(query, {key: 1}).hint(hint).sort(key, 1).limit(1)
    ]
    return timezone.localdate(min(firsts)) if firsts else None


def keep_past_days(*, now: datetime, days: int = KEEP_DAYS, fill: int = FILL_DAYS) -> int:
    """Count and keep the last ``days`` days that ended ``SEALED_AFTER`` before ``now`` (those kept
    already are only checked), then up to ``fill`` older days not kept yet, back to the first money
    taken, so that no report of a past week waits for its days; returns how many were looked at."""
    last = timezone.localdate(now - SEALED_AFTER) - timedelta(days=1)
    first = last - timedelta(days=days - 1)
    summary(first, last, now=now)
    oldest = first_movement_day()
    if oldest is None or oldest >= first:
        return days
    keys = {"$gte": _day_key(oldest), "$lt": _day_key(first)}
    kept = {d["_id"] for d in mongo.takings_days().find({"_id": keys}, {"_id": 1})}
    missing = [
        day
        for day in (first - timedelta(days=n) for n in range(1, (first - oldest).days + 1))
        if _day_key(day) not in kept
    ][:fill]
    for day in missing:
        _sealed_tally(day, _failed_refunds(*day_range(day, day)).get(day.isoformat(), []))
    return days + len(missing)


def summary(first: date, last: date, *, now: datetime) -> Takings:
    """The takings of these local days, their sums only (the page): each day that ended
    ``SEALED_AFTER`` before ``now`` counted once and kept, the rest read from the orders."""
    tally: Tally = {}
    day = first
    sealed_until = first
    while sealed_until <= last and day_range(sealed_until, sealed_until)[1] + SEALED_AFTER <= now:
        sealed_until += timedelta(days=1)
    if sealed_until > first:
        failed = _failed_refunds(*day_range(first, sealed_until - timedelta(days=1)))
        while day < sealed_until:
            _add_tally(tally, _sealed_tally(day, failed.get(day.isoformat(), [])))
            day += timedelta(days=1)
    if day <= last:
        _add_tally(tally, tally_of(movements(*day_range(day, last))))
    return takings_of(first, last, tally, [])


def tables(takings: Takings) -> list[Table]:
    """The report as tables for the CSV download (reports/exports.py): each movement, then the sums."""
    kinds = {
        SALE: str(_("Sale")),
        TOP_UP: str(_("Exchange top-up")),
        REFUND: str(_("Refund")),
        VOUCHER_SALE: str(_("Gift voucher sold")),
    }
    # each label translated once, not once per movement
    methods: dict[str, str] = {}
    sellers: dict[str, str] = {}
    zone = timezone.get_current_timezone()
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
                timezone.localtime(m.at, zone).replace(tzinfo=None),
                m.ref,
                kinds[m.kind],
                methods.get(m.method) or methods.setdefault(m.method, method_label(m.method)),
                sellers.get(m.seller) or sellers.setdefault(m.seller, seller_label(m.seller)),
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
