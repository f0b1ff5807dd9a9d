"""Exchanges: staff move some or all tickets of a paid order to other seats, of the same session
or another one, and the price difference is refunded (through the order's payment) or taken at
the counter.

The customer must never have both the old and the new seats, nor neither. An exchange is a
record on the order (``exchanges: [{_id, state, tickets, old, new, sessionId, difference, ...}]``,
and ``exchangeOpen: <its id>`` while it runs, one at a time), moved through these states, each
step one conditional update and safe to repeat:

1. ``started``: the record is pushed (conditional on no exchange being open, the tickets still
   in the order and not used at the door). Nothing else has changed.
2. ``taken``: the new seats ``free -> sold`` in one update of the target session, which also pushes
   a marker ``exchangeHolds: {_id: <exchange id>, orderId, seats}``: the seats are the exchange's,
   and a repeat (after a crash) sees the marker instead of taking them twice. A seat no longer
   free: the exchange is ``abandoned`` and nothing changed for the customer.
3. ``switched``: ONE update of the order replaces the old lines by the new ones (conditional on the
   lines being exactly as read), moves the old ones to ``exchangedLines``, and in the same write
   records the money (a refund record ``pending`` for a cheaper seat, or the counter's payment in
   ``topUps`` for a dearer one), the new total and the customer's notice (``changeNotices``). This
   is the moment the tickets change: before it the old tickets are valid, after it the new ones.
4. the marker is pulled (the new seats are the order's lines now), the old seats ``sold -> free``;
   the exchange is ``released``.
5. the refund is asked of the provider (payments/refunds.py: claimed, looked up by its id, retried
   by reconcile); the exchange is ``done`` and ``exchangeOpen`` unset; the notice is queued.

A crash between any two writes leaves a state reconcile rolls forward (``finish_open``); markers of
exchanges that are no longer open (abandoned) are given back (``release_stray_holds``). While an
exchange runs, the invariant checker counts its seats as in flight (booking/upkeep/invariants.py).
Fault points ``exchange.*`` follow every write; booking/tests/sales/test_exchanges.py crashes at each.
"""

import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, cast

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from booking import payments
from booking.core import clock, faults, mongo
from booking.core.domain import (
    SEAT_OWNING_ORDER_STATES,
    ExchangeRecord,
    ExchangeState,
    Order,
    OrderLine,
    OrderSession,
    PaymentRef,
    RefundRecord,
    SalesChannel,
    SessionStatus,
    Theater,
    seats_left,
    within_quota,
)
from booking.core.errors import Conflict, InvalidRequest, NotFound, QuotaReached, SeatsTaken
from booking.core.localized import line_ticket_type, order_categories
from booking.payments import base, credit_notes, money, refunds
from booking.reports import marks
from booking.sales import checkout, offers, outbox, seats_returned, self_service
from booking.sales import orders as order_service
from booking.venues.seat_grid import FREE, SOLD, cell_path, parse_seat_key, seat_cell, seat_name

logger = logging.getLogger("booking.exchanges")

# Its states (booking/core/domain.py), by the short names this module reads best with.
STARTED = ExchangeState.STARTED
TAKEN = ExchangeState.TAKEN
AWAITING = ExchangeState.AWAITING_PAYMENT  # a dearer seat paid through the provider: the customer pays online first
SWITCHED = ExchangeState.SWITCHED
RELEASED = ExchangeState.RELEASED
DONE = ExchangeState.DONE
ABANDONED = ExchangeState.ABANDONED
OPEN_STATES = (STARTED, AWAITING, TAKEN, SWITCHED, RELEASED)
# How a price difference is settled: through the order's own payment (a refund), or at the counter.
PROVIDER = "provider"
COUNTER = "counter"
SETTLEMENTS = (PROVIDER, COUNTER)
MAX_TICKETS = 50


@dataclass(frozen=True)
class Plan:
    """What an exchange would do, for the staff's preview and for ``start``."""

    order: Order
    session: dict
    old: list[OrderLine]
    new: list[OrderLine]
    difference: int  # new minus old, minor units: > 0 the customer pays more, < 0 gets money back
    fee: int = 0  # the theater's fee for swapping subscription tickets, part of ``difference``

    @property
    def currency(self) -> str:
        return self.order.get("currency", settings.BOOKING_CURRENCY)


def _order(order_id: ObjectId) -> Order:
    order = mongo.orders().find_one({"_id": order_id})
    if order is None:
        raise NotFound(_("No such order."))
    return order


def _session_summary(session: dict) -> OrderSession:
    return cast(  # order_categories gives its categories (and categoriesDe), as checkout's summaries
        OrderSession,
        {
            "_id": session["_id"],
            "name": session.get("name"),
            "start": session.get("start"),
            "theaterName": session.get("theaterName"),
            **({"theaterNameDe": session["theaterNameDe"]} if session.get("theaterNameDe") else {}),
            "theaterId": session.get("theaterId"),
            **order_categories(session.get("layout", {}).get("categories")),
        },
    )


def _new_line(
    order: Order, old: Mapping[str, Any], session: Mapping[str, Any], key: str, theater: Theater | None
) -> OrderLine:
    """The ticket for ``key`` replacing ``old``: same ticket type if the session offers it in the
    seat's category (else full price), today's price, a new ticket code, the same holder."""
    r, c = parse_seat_key(key)
    cell = seat_cell(session["layout"], r, c)
    assert cell is not None
    row = offers.offers_for(session, cell["cat"])
    offer = next((o for o in row if o["code"] == old.get("ticketType", offers.FULL)), None)
    offer = offer or next((o for o in row if o["code"] == offers.FULL), None)
    if offer is None:
        raise InvalidRequest(
            _("Seat %(seat)s has no price in this session.") % {"seat": seat_name(session["layout"], r, c)}
        )
    line = {
        "sessionId": session["_id"],
        "key": key,
        "row": session["layout"]["rows"][r]["label"],
        "seat": cell["label"],
        "cat": cell["cat"],
        "price": offer["price"],
        **line_ticket_type(offer),
        "vat": money.ticket_rate(theater, cell["cat"]),
        "ticket": checkout.new_ticket_code(order["ref"]),
    }
    if old.get("holder"):
        line["holder"] = old["holder"]  # a ticket handed on stays the new holder's on its new seat
    if old.get("subscription"):
        # a subscriber swapping a date keeps the subscription's price (and stays counted as one)
        line.update(price=old["price"], subscription=old["subscription"])
        line.update({k: old[k] for k in ("ticketType", "ticketTypeName") if k in old})
    return cast(OrderLine, line)  # line_ticket_type's keys are OrderLine's ticketType* fields


def plan(
    order_id: ObjectId,
    tickets: Sequence[str],
    session_id: ObjectId,
    keys: Sequence[str],
    *,
    seats_of: ObjectId | None = None,
) -> Plan:
    """Check an exchange and price it, without writing anything (the staff's preview).
    ``seats_of``: the performance whose seat map the seats were ticked on, when staff ticked them
    on a page; a seat key is only a row and a column, so seats ticked on another map are refused."""
    if seats_of is not None and seats_of != session_id:
        raise InvalidRequest(
            _(
                "The new seats were ticked on the seat map of another performance than the one chosen "
                "in the list; tick them again on the map of the chosen performance."
            ),
            fields={"seats": _("Tick the seats on the map of the chosen performance.")},
        )
    order = _order(order_id)
    if order["state"] not in SEAT_OWNING_ORDER_STATES or not order.get("paidWith"):
        raise Conflict(_("Order %(ref)s is not paid; only paid tickets can be exchanged.") % {"ref": order["ref"]})
    if order.get("settling"):
        raise Conflict(_("Order %(ref)s is still being completed; try again in a moment.") % {"ref": order["ref"]})
    if order.get("exchangeOpen"):
        raise Conflict(_("Another exchange of this order is still under way; look again in a moment."))
    tickets, keys = list(tickets), list(keys)
    if not tickets or len(tickets) > MAX_TICKETS or len(set(tickets)) != len(tickets):
        raise InvalidRequest(_("Choose the tickets to exchange, each once."))
    by_code = {line["ticket"]: line for line in order["lines"]}
    if any(code not in by_code for code in tickets):
        raise InvalidRequest(_("Choose tickets of this order."))
    old = [by_code[code] for code in tickets]
    used = [f"{line['row']}{line['seat']}" for line in old if line.get("checkedIn")]
    if used:
        raise Conflict(_("Ticket(s) %(seats)s were already used at the door.") % {"seats": ", ".join(used)})
    if len(keys) != len(tickets):
        raise InvalidRequest(
            _("Choose as many new seats as tickets to exchange (%(n)d).") % {"n": len(tickets)},
            fields={"seats": _("Choose %(n)d seats.") % {"n": len(tickets)}},
        )
    if len(set(keys)) != len(keys):
        raise InvalidRequest(_("The same seat was chosen twice."))
    session = mongo.sessions().find_one({"_id": session_id})
    if session is None:
        raise NotFound(_("No such session."))
    if session.get("status") != SessionStatus.ON_SALE or session["start"] <= clock.now() or "seats" not in session:
        raise Conflict(_("Tickets can only be moved to a performance that is on sale and has not started."))
    for key in keys:
        try:
            r, c = parse_seat_key(key)
        except ValueError:
            raise InvalidRequest(_("That is not a seat of this session.")) from None
        if seat_cell(session["layout"], r, c) is None:
            raise InvalidRequest(_("That is not a seat of this session."))
    taken = [seat_name(session["layout"], *parse_seat_key(k)) for k in keys if _cell(session, k) != FREE]
    if taken:
        raise SeatsTaken(taken)
    if seats_left(session) < quota_taking(old, session_id, len(keys)):
        raise QuotaReached()
    swapped_show = {s["_id"]: s.get("name") for s in order.get("sessions", [])}
    if any(line.get("subscription") and swapped_show.get(line["sessionId"]) != session.get("name") for line in old):
        raise InvalidRequest(_("A subscription ticket can only move to another date of the same show."))
    fee = subscription_swap_fee(order, old, clock.now())
    theater = mongo.theaters().find_one({"_id": session.get("theaterId")}, {"vatRate": 1, "vatRates": 1})
    new = [_new_line(order, line, session, key, theater) for line, key in zip(old, keys, strict=True)]
    difference = sum(money.line_amount(n) for n in new) - sum(money.line_amount(o) for o in old) + fee
    return Plan(order=order, session=session, old=old, new=new, difference=difference, fee=fee)


def subscription_swap_fee(order: Order, lines: Sequence[Mapping[str, Any]], now: datetime) -> int:
    """What swapping these tickets' subscription dates costs: the theater's fee per ticket of the
    performance given up (sales/self_service.py, whoever swaps: the buyer or the box office); a
    swap after that performance's cut-off is refused (Conflict). Other tickets: 0 here."""
    swapped = [line for line in lines if line.get("subscription")]
    if not swapped:
        return 0
    rules = self_service.rules_of_sessions(line["sessionId"] for line in swapped)
    starts = {s["_id"]: s.get("start") for s in order.get("sessions", [])}
    for line in swapped:
        found, start = rules.get(line["sessionId"], self_service.NOTHING_ONLINE), starts.get(line["sessionId"])
        # no rules set anywhere (NOTHING_ONLINE): the box office swaps up to the start, free
        set_by_theater = found is not self_service.NOTHING_ONLINE
        if set_by_theater and start is not None and now >= found.deadline(start, self_service.EXCHANGE):
            raise Conflict(
                ngettext(
                    "A subscription date can be swapped until %(hours)d hour before the performance.",
                    "A subscription date can be swapped until %(hours)d hours before the performance.",
                    found.hours_before,
                )
                % {"hours": found.hours_before}
            )
    return sum(rules.get(line["sessionId"], self_service.NOTHING_ONLINE).fee for line in swapped)


def _cell(session: dict, key: str) -> int:
    r, c = parse_seat_key(key)
    return session["seats"][r][c]


def exchange(
    order_id: ObjectId,
    tickets: Sequence[str],
    session_id: ObjectId,
    keys: Sequence[str],
    *,
    settle: str = PROVIDER,
    by: str = "",
    reason: str = "",
    seats_of: ObjectId | None = None,
    fee: int = 0,
) -> Order:
    """Move ``tickets`` of the order to ``keys`` of ``session_id``. ``settle``: ``provider``: a
    cheaper seat's difference goes back through the order's payments, a dearer one is paid online
    by the customer (the exchange waits in ``awaiting_payment``: a card cannot be charged again
    without its holder); ``counter``: either is settled in cash or by card terminal at the counter.
    ``seats_of``: as for ``plan``. ``fee``: what the theater charges for the exchange (the buyer's
    online exchange, sales/self_service.py), added to the difference. Returns the order afterwards."""
    if settle not in SETTLEMENTS:
        raise InvalidRequest(_("Choose how the price difference is settled."))
    found = plan(order_id, tickets, session_id, keys, seats_of=seats_of)
    if fee:
        found = replace(found, difference=found.difference + fee, fee=found.fee + fee)
    online = payments.provider(found.order["paidWith"]["provider"]).online and payments.card_available()
    if found.difference > 0 and settle != COUNTER and not online:
        raise InvalidRequest(
            _("The new seats cost %(amount)s more: take the difference at the counter.")
            % {"amount": money.format_money(found.difference, found.currency)},
            fields={"settle": _("Take the difference at the counter.")},
        )
    xid = f"x{secrets.token_hex(6)}"
    record: ExchangeRecord = {
        "_id": xid,
        "state": STARTED,
        "tickets": list(tickets),
        "old": found.old,
        "new": found.new,
        "sessionId": session_id,
        "session": _session_summary(found.session),
        "difference": found.difference,
        "fee": found.fee,
        "settle": settle,
        "by": by,
        "reason": reason,
        "createdOn": clock.now(),
    }
    started = mongo.orders().update_one(
        {
            "_id": order_id,
            "ref": found.order["ref"],
            "state": {"$in": list(SEAT_OWNING_ORDER_STATES)},
            "exchangeOpen": {"$exists": False},
            "settling": {"$exists": False},
            "$and": [{"lines": {"$elemMatch": {"ticket": t, "checkedIn": {"$exists": False}}}} for t in tickets],
        },
        {"$push": {"exchanges": record}, "$set": {"exchangeOpen": xid}},
    )
    if not started.modified_count:
        raise Conflict(_("The order changed meanwhile; please look again."))
    faults.point("exchange.after_start")
    order = finish(order_id)
    current = next(x for x in order.get("exchanges", []) if x["_id"] == xid)
    if current["state"] == AWAITING:
        logger.info("order %s: exchange %s waits for the customer's payment", order["ref"], xid)
        return order
    if current["state"] == ABANDONED:
        raise Conflict(current.get("failure") or _("The new seats were taken meanwhile; nothing was changed."))
    logger.info("order %s: %d tickets exchanged by %s (%+d)", order["ref"], len(tickets), by or "?", found.difference)
    return order


def _open_record(order: Order) -> ExchangeRecord | None:
    xid = order.get("exchangeOpen")
    return next((x for x in order.get("exchanges", []) if x["_id"] == xid), None) if xid else None


def finish(order_id: ObjectId, now: datetime | None = None) -> Order:
    """Roll the order's open exchange forward from wherever it stopped (the request itself, or
    reconcile after a crash). Returns the order afterwards."""
    for _attempt in range(10):
        order = _order(order_id)
        record = _open_record(order)
        if record is None:
            return order
        state = record["state"]
        if state == STARTED:
            _take(order, record)
        elif state == AWAITING:
            if not _check_payment(order, record, now or clock.now()):
                return _order(order_id)  # still waiting for the customer
        elif state == TAKEN:
            _switch(order, record)
        elif state == SWITCHED:
            _release_old(order, record)
        elif state == RELEASED:
            _settle_money_and_close(order, record)
    return _order(order_id)


def _set_state(order: Order, record: ExchangeRecord, state: str, **extra) -> bool:
    sets = {"exchanges.$.state": state, **{f"exchanges.$.{k}": v for k, v in extra.items()}}
    done = mongo.orders().update_one(
        {
            "_id": order["_id"],
            "ref": order["ref"],
            "exchanges": {"$elemMatch": {"_id": record["_id"], "state": record["state"]}},
        },
        {"$set": sets},
    )
    return bool(done.modified_count)


def quota_taking(old: Sequence[Mapping[str, Any]], session_id: ObjectId, new_seats: int) -> int:
    """The seats an exchange takes against the performance's quota: the new ones, less those it
    gives up in the same performance (they come back later in the exchange)."""
    return max(0, new_seats - sum(1 for line in old if line["sessionId"] == session_id))


def _take(order: Order, record: ExchangeRecord) -> None:
    """New seats free -> sold under the exchange's marker (or found taken by it already)."""
    keys = [line["key"] for line in record["new"]]
    cells = [cell_path(*parse_seat_key(k)) for k in keys]
    now = clock.now()
    session_id = record["sessionId"]
    taken = mongo.sessions().update_one(
        {
            "_id": session_id,
            "status": SessionStatus.ON_SALE,
            "start": {"$gt": now},
            "exchangeHolds._id": {"$ne": record["_id"]},
            **{c: FREE for c in cells},
            **within_quota(quota_taking(record["old"], session_id, len(keys))),
        },
        {
            "$set": {c: SOLD for c in cells},
            "$push": {"exchangeHolds": {"_id": record["_id"], "orderId": order["_id"], "seats": keys, "on": now}},
            "$inc": {"seatsAvailable": -len(keys), "version": 1},
        },
    )
    if not taken.modified_count:
        marked = mongo.sessions().find_one({"_id": session_id, "exchangeHolds._id": record["_id"]}, {"_id": 1})
        if marked is None:
            _abandon(order, record, _("The new seats were taken meanwhile; nothing was changed."))
            return
    faults.point("exchange.after_take")
    if record["difference"] > 0 and record["settle"] == PROVIDER:
        until = min(
            now + timedelta(seconds=settings.BOOKING_EXCHANGE_PAYMENT_SECONDS),
            cast(datetime, record["session"]["start"]) - timedelta(hours=1),  # its session was read on sale: it has one
        )
        notice = outbox.new_notice(outbox.EXCHANGE_PAYMENT, ref=record["_id"])
        moved = mongo.orders().update_one(
            {
                "_id": order["_id"],
                "ref": order["ref"],
                "exchanges": {"$elemMatch": {"_id": record["_id"], "state": STARTED}},
            },
            {
                "$set": {
                    "exchanges.$.state": AWAITING,
                    "exchanges.$.payment": {"provider": order["paidWith"]["provider"], "intent": None, "until": until},
                },
                "$push": {"changeNotices": notice},
            },
        )
        if moved.modified_count:
            outbox.queue_change_notices(order["_id"])  # the customer's link to pay
        else:
            release_stray_holds(session_id)
        return
    if not _set_state(order, record, TAKEN):
        # Someone else moved it on (or abandoned it): if it is no longer open, give the seats back.
        release_stray_holds(session_id)


def _abandon(
    order: Order, record: ExchangeRecord, why: str, states: Sequence[str] = (STARTED, AWAITING, TAKEN)
) -> bool:
    """The exchange ends without a switch (one conditional update: still in one of ``states``);
    its seats go back and a difference the customer paid is refunded. False when it had moved on
    (switched, or ended already by someone else).

    A difference the customer paid is recorded for refund (``extraPayments`` and a pending refund,
    ``refundDue``) in the same write that abandons: a crash right after it leaves the refund for
    reconcile to retry, never money kept for a move that did not happen. The write is conditional
    on whether the record has a paid difference, so a payment recorded meanwhile (the webhook,
    ``_paid``) is seen: the write misses and is made again with it."""

    ended, refund = None, None
    for _attempt in range(3):
        paid = record.get("paidDifference")
        refund = refunds.extra_payment_record(paid, "exchange not done") if paid else None
        update: dict = {
            "$set": {"exchanges.$.state": ABANDONED, "exchanges.$.failure": why, "exchanges.$.doneOn": clock.now()},
            "$unset": {"exchangeOpen": ""},
        }
        if paid and refund:
            extra = {"provider": paid["provider"], "id": paid["id"], "amount": paid["amount"], "on": clock.now()}
            update["$push"] = {"extraPayments": {**extra, "why": "exchange not done"}, "refunds": refund}
            update["$set"]["refundDue"] = True
        ended = mongo.orders().update_one(
            {
                "_id": order["_id"],
                "ref": order["ref"],
                "exchangeOpen": record["_id"],
                "exchanges": {
                    "$elemMatch": {
                        "_id": record["_id"],
                        "state": {"$in": list(states)},
                        "paidDifference": {"$exists": bool(paid)},
                    }
                },
                **({"extraPayments.id": {"$ne": paid["id"]}} if paid else {}),
            },
            update,
        )
        if ended.modified_count:
            break
        current = next((x for x in _order(order["_id"]).get("exchanges", []) if x["_id"] == record["_id"]), None)
        if current is None or current["state"] not in states or bool(current.get("paidDifference")) == bool(paid):
            break  # moved on, or ended by someone else (whose write recorded the refund)
        record = current  # paid meanwhile: abandon again, with the refund
    faults.point("exchange.after_abandon")
    release_stray_holds(record["sessionId"])
    if not (ended and ended.modified_count):
        return False
    if refund is not None:  # asked of the provider now; if this fails or dies, reconcile retries it
        refunds.process(order["_id"], refund["_id"])
    return True


def _difference_payment(order: Order, record: ExchangeRecord) -> dict:
    """What the provider is asked to charge: the difference, under the order's id and reference
    (its webhook finds the order; ``settle`` hands it to ``difference_paid``)."""
    return {"_id": order["_id"], "ref": order["ref"], "total": record["difference"], "currency": order["currency"]}


def ensure_intent(order: Order, record: ExchangeRecord) -> str:
    """The exchange's payment at the provider (made once: its idempotency key is the exchange's)."""
    pay = record["payment"]
    if pay["intent"]:
        return pay["intent"]
    started = payments.provider(pay["provider"]).start(
        _difference_payment(order, record), idempotency_key=f"exchange-{record['_id']}"
    )
    mongo.orders().update_one(
        {
            "_id": order["_id"],
            "ref": order["ref"],
            "exchanges": {"$elemMatch": {"_id": record["_id"], "payment.intent": None}},
        },
        {"$set": {"exchanges.$.payment.intent": started.id}},
    )
    faults.point("exchange.after_intent")
    return started.id


def _check_payment(order: Order, record: ExchangeRecord, now: datetime) -> bool:
    """An exchange waiting for the customer's payment: paid -> it goes on (True); the time to pay
    is over -> the payment is canceled at the provider (unless it succeeded meanwhile) and the
    exchange abandoned, the new seats given back. Returns True when it moved on."""
    provider = payments.provider(record["payment"]["provider"])
    intent = record["payment"].get("intent")
    if intent is None:
        if record["payment"]["until"] <= now:
            _abandon(order, record, _("The difference was not paid in time; nothing was changed."))
            return True
        try:
            ensure_intent(order, record)
        except base.ProviderError as exc:  # the customer's page (or reconcile) makes it later
            logger.warning("exchange %s: could not start its payment: %s", record["_id"], exc)
        return False
    try:
        payment = provider.retrieve(intent)
        if payment.status != base.SUCCEEDED and record["payment"]["until"] <= now:
            payment = provider.cancel(intent)
            if payment.status != base.SUCCEEDED:
                _abandon(order, record, _("The difference was not paid in time; nothing was changed."))
                return True
    except base.ProviderError as exc:
        logger.warning("exchange %s: could not ask about its payment: %s", record["_id"], exc)
        return False
    if payment.status == base.SUCCEEDED:
        return _paid(order, record, payment)
    return False


def _paid(order: Order, record: ExchangeRecord, payment: base.Payment) -> bool:
    """The customer paid the difference: the exchange goes on to the switch (the payment becomes
    a top-up there)."""
    done = mongo.orders().update_one(
        {
            "_id": order["_id"],
            "ref": order["ref"],
            "exchanges": {"$elemMatch": {"_id": record["_id"], "state": AWAITING}},
        },
        {
            "$set": {
                "exchanges.$.state": TAKEN,
                "exchanges.$.paidDifference": {
                    "provider": payment.provider,
                    "id": payment.id,
                    "amount": payment.amount,
                    "on": clock.now(),
                },
            }
        },
    )
    faults.point("exchange.after_paid")
    return bool(done.modified_count)


def difference_paid(order: Order, payment: base.Payment) -> Order | None:
    """``payments.settle`` found a succeeded payment of this order that is an exchange's
    difference: the exchange goes on. None when the payment is no exchange's (settle goes on)."""
    record = next(
        (x for x in order.get("exchanges", []) if (pay := x.get("payment")) and pay["intent"] == payment.id), None
    )
    if record is None:
        return None
    if record["state"] == AWAITING:
        _paid(order, record, payment)
        return finish(order["_id"])
    if record["state"] == ABANDONED:
        return refunds.refund_extra_payment(order["_id"], payment, "exchange given up")
    return _order(order["_id"])


def pay_difference(order_id: ObjectId, means: str) -> tuple[str, Order, str]:
    """The customer's card form (the order page): charge the difference. Returns (status, order,
    message): "paid" (the exchange went on, now or before), "processing" (another request is
    charging a card for it right now, or the bank is still deciding), "action" (3-D Secure: the
    client secret is the message), "failed" (declined; try again), or "done" when no exchange
    waits for a payment.

    The request that charges is the one that claims the exchange's payment (one conditional
    update, as a card payment's attempt is claimed): a second Pay pressed meanwhile, in another
    tab or with another card, charges nothing and is told it is under way."""
    order = _order(order_id)
    record = _open_record(order)
    if record is None or record["state"] != AWAITING:
        return _how_it_ended(order), order, ""
    if not isinstance(means, str) or not means or len(means) > 255:
        raise InvalidRequest(_("The card details did not arrive. Please try again."))
    intent = ensure_intent(order, record)
    claimed_on = clock.now()
    if not _claim_payment(order, record, claimed_on):
        current = _order(order_id)
        waiting = awaiting_payment(current)
        return ("processing" if waiting else _how_it_ended(current)), current, ""
    faults.point("exchange.after_claim")
    provider = payments.provider(record["payment"]["provider"])
    try:
        payment = provider.confirm(intent, means, idempotency_key=f"exchange-{record['_id']}-{means}")
    except base.PaymentDeclined as exc:
        _end_claim(order, record, claimed_on)
        return "failed", order, exc.message
    except base.ProviderError:
        _end_claim(order, record, claimed_on)
        payment = provider.retrieve(intent)  # the charge may have gone through; raises if still unreachable
        if payment.status not in (base.SUCCEEDED, base.PROCESSING):
            raise
    if payment.status == base.SUCCEEDED:
        _paid(order, record, payment)
        return "paid", finish(order_id), ""
    _end_claim(order, record, claimed_on)
    if payment.status == base.ACTION:
        return "action", order, payment.client_secret
    return payment.status, order, payment.failure


def _claim_payment(order: Order, record: ExchangeRecord, now: datetime) -> bool:
    """The exchange's payment is this request's to charge: no other request claimed it within the
    time a charge can take (a claim left by a crash lapses then)."""
    lapsed = now - timedelta(seconds=base.confirm_claim_seconds())
    claimed = mongo.orders().update_one(
        {
            "_id": order["_id"],
            "ref": order["ref"],
            "exchanges": {
                "$elemMatch": {"_id": record["_id"], "state": AWAITING, "payment.confirmOn": {"$not": {"$gt": lapsed}}}
            },
        },
        {"$set": {"exchanges.$.payment.confirmOn": now}},
    )
    return bool(claimed.modified_count)


def _end_claim(order: Order, record: ExchangeRecord, claimed_on: datetime) -> None:
    """This request's charge is over (declined, 3-D Secure asked, no answer): the next Pay may try."""
    mongo.orders().update_one(
        {
            "_id": order["_id"],
            "ref": order["ref"],
            "exchanges": {"$elemMatch": {"_id": record["_id"], "payment.confirmOn": claimed_on}},
        },
        {"$set": {"exchanges.$.payment.confirmOn": None}},
    )


def _how_it_ended(order: Order) -> str:
    """What a Pay pressed after the order's last exchange stopped waiting is told: "paid" when the
    customer's payment moved it on, else "done" (nothing to pay: called off or not paid in time)."""
    made = order.get("exchanges") or []
    last = made[-1] if made else None  # pushed in the order they were made
    return "paid" if last and last.get("paidDifference") and last["state"] != ABANDONED else "done"


def call_off(order_id: ObjectId, *, by: str = "", why: str = "") -> Order:
    """Staff: give up an exchange that waits for the customer's payment (the customer changed
    their mind, or staff want to do something else with the order). The payment is canceled at
    the provider first; one that succeeded meanwhile lets the exchange go on instead."""
    order = _order(order_id)
    record = _open_record(order)
    if record is None or record["state"] != AWAITING:
        raise Conflict(_("No exchange of this order is waiting for a payment."))
    intent = record["payment"].get("intent")
    if intent:
        try:
            payment = payments.provider(record["payment"]["provider"]).cancel(intent)
        except base.ProviderError as exc:
            raise Conflict(_("The payment service did not answer; try again in a moment.")) from exc
        if payment.status == base.SUCCEEDED:
            _paid(order, record, payment)
            return finish(order_id)
    _abandon(order, record, why or _("Called off by %(by)s.") % {"by": by or "staff"})
    return _order(order_id)


def awaiting_payment(order: Order) -> ExchangeRecord | None:
    """The exchange of this order that waits for the customer's payment, if any (the order page)."""
    record = _open_record(order)
    return record if record is not None and record["state"] == AWAITING else None


def _switch(order: Order, record: ExchangeRecord) -> None:
    """The one write that swaps the tickets, with the money and the customer's notice."""
    tickets = set(record["tickets"])
    present = [line for line in order["lines"] if line["ticket"] in tickets]
    if len(present) != len(tickets) or any(line.get("checkedIn") for line in present):
        _abandon(order, record, _("The tickets changed meanwhile (refunded or used); nothing was changed."))
        return
    target = mongo.sessions().find_one({"_id": record["sessionId"]}, {"status": 1})
    if target is None or target.get("status") != SessionStatus.ON_SALE:
        _abandon(order, record, _canceled_meanwhile())
        return
    # The session may be canceled right here, after this read: the switch below is conditional on
    # the exchange still being ``taken``, and the cancel's run abandons every exchange into its
    # session by a conditional write on the same order (``stop_into``), so one of the two wins.
    faults.point("exchange.before_switch")
    remaining = [line for line in order["lines"] if line["ticket"] not in tickets]
    difference = record["difference"]
    new_lines = remaining + _with_counter_part(record, difference)
    now = clock.now()
    sets: dict = {
        "lines": new_lines,
        "total": order["total"] + difference,
        "exchanges.$.state": SWITCHED,
        "exchanges.$.switchedOn": now,
    }
    pushes: dict = {
        "exchangedLines": {"$each": [{**line, "exchange": record["_id"]} for line in record["old"]]},
        "changeNotices": outbox.new_notice(outbox.EXCHANGE, ref=record["_id"]),
        **marks.push([*marks.sessions_of(order), record["sessionId"]]),  # the sales reports of both
        "webhookEvents": outbox.webhook_event(outbox.ORDER_CHANGED, exchange=record["_id"]),
    }
    if not any(s["_id"] == record["sessionId"] for s in order.get("sessions", [])):
        pushes["sessions"] = record["session"]
    if difference < 0:
        records = _refund_records(order, record, -difference)
        pushes["refunds"] = {"$each": records}
        sets["refundDue"] = True
        sets["exchanges.$.refunds"] = [r["_id"] for r in records]
        owed = credit_notes.owed_for_exchange(
            order,
            refund_ids=[r["_id"] for r in records],
            old=record["old"],
            new=record["new"],
            amount=-difference,
            reason=record.get("reason") or "Exchange: price difference",
        )
        if owed:
            pushes.update(owed)
            sets.update(credit_notes.DUE)
    elif difference > 0 and record.get("paidDifference"):
        pushes["topUps"] = {**record["paidDifference"], "why": "exchange"}  # paid online by the customer
    elif difference > 0:
        pushes["topUps"] = {
            "provider": "box_office",
            "id": f"counter-{record['_id']}",
            "amount": difference,
            "on": now,
            "by": record.get("by", ""),
            "why": "exchange",
        }
    switched = mongo.orders().update_one(
        {
            "_id": order["_id"],
            "ref": order["ref"],
            "exchangeOpen": record["_id"],
            "lines": order["lines"],  # exactly as read: a check-in or refund meanwhile makes this miss
            "exchanges": {"$elemMatch": {"_id": record["_id"], "state": TAKEN}},
        },
        {"$set": sets, "$push": pushes},
    )
    if switched.modified_count:
        faults.point("exchange.after_switch")
        outbox.queue_webhook_events(outbox.ORDERS, order)
        if sets.get("creditNoteDue"):
            refunds.issue_credit_notes(order["_id"])


def _with_counter_part(record: ExchangeRecord, difference: int) -> list[OrderLine]:
    """The new lines, each with the part of its price taken at the counter for a dearer exchange
    settled there (``topUpPart``): the sales reports count that part where it was taken, not
    under the order's channel."""
    if difference <= 0 or record.get("paidDifference") or record.get("settle") != COUNTER:
        return list(record["new"])
    lines: list[OrderLine] = []
    left = difference
    for line in record["new"]:
        part = min(left, money.line_amount(line))
        left -= part
        lines.append(
            {**line, "topUpPart": {"amount": part, "channel": SalesChannel.BOX_OFFICE.value}} if part else line
        )
    return lines


def _refund_records(order: Order, record: ExchangeRecord, amount: int) -> list[RefundRecord]:
    """The difference goes back in cash at the counter, or through the order's payments (the card
    first, then earlier top-ups: payments/refunds.allocate)."""

    if record["settle"] == COUNTER:
        counter: PaymentRef = {"provider": "box_office", "id": f"counter-{record['_id']}"}
        parts = [(counter, amount)]
    else:
        parts = refunds.allocate(order, amount)
    return [
        {
            "_id": f"r{secrets.token_hex(6)}",
            "amount": part,
            "payment": payment,
            "reason": record.get("reason") or "Exchange: price difference",
            "tickets": [],
            "exchange": record["_id"],
            "status": refunds.PENDING,
            "tries": 0,
            "by": record.get("by", ""),
            "createdOn": clock.now(),
        }
        for payment, part in parts
    ]


def _release_old(order: Order, record: ExchangeRecord) -> None:
    """The marker goes (the new seats are the order's lines now), then the old seats are freed."""
    mongo.sessions().update_one({"_id": record["sessionId"]}, {"$pull": {"exchangeHolds": {"_id": record["_id"]}}})
    faults.point("exchange.after_unmark")
    free_seats(order["_id"], record["old"])
    faults.point("exchange.after_release")
    _set_state(order, record, RELEASED)


def free_seats(order_id: ObjectId, lines: Sequence[Mapping[str, Any]]) -> int:
    """``sold -> free`` (a house seat ``sold -> blocked``) for these seats an order gave up, one
    seat at a time, never a seat another paid order has in its lines or an exchange has just taken
    (its marker)."""
    freed = 0
    by_session: dict[ObjectId, list[str]] = {}
    for line in lines:
        by_session.setdefault(line["sessionId"], []).append(line["key"])
    for session_id, keys in by_session.items():
        others = mongo.orders().find(
            {
                "state": {"$in": list(SEAT_OWNING_ORDER_STATES)},
                "lines": {"$elemMatch": {"sessionId": session_id, "key": {"$in": keys}}},
            },
            {"lines": 1},
        )
        taken = {line["key"] for o in others for line in o["lines"] if line["sessionId"] == session_id}
        house = {line["key"] for line in lines if line["sessionId"] == session_id and line.get("house")}
        on_sale_again = 0
        for key in keys:
            if key in taken:
                continue
            path = cell_path(*parse_seat_key(key))
            result = mongo.sessions().update_one(
                {"_id": session_id, path: SOLD, "exchangeHolds.seats": {"$ne": key}},
                order_service.give_back(key, house=key in house),  # a house seat: blocked again
            )
            freed += result.modified_count
            if result.modified_count and key not in house:
                on_sale_again += 1
        if on_sale_again:
            seats_returned.offer_to_waiting_list(session_id)
    return freed


def _settle_money_and_close(order: Order, record: ExchangeRecord) -> None:

    for refund_id in record.get("refunds") or []:
        refunds.process(order["_id"], refund_id)  # failed: reconcile retries it (refundDue)
        faults.point("exchange.after_money")
    closed = mongo.orders().update_one(
        {
            "_id": order["_id"],
            "ref": order["ref"],
            "exchangeOpen": record["_id"],
            "exchanges": {"$elemMatch": {"_id": record["_id"], "state": RELEASED}},
        },
        {"$set": {"exchanges.$.state": DONE, "exchanges.$.doneOn": clock.now()}, "$unset": {"exchangeOpen": ""}},
    )
    if closed.modified_count:
        outbox.queue_change_notices(order["_id"])


def release_stray_holds(session_id: ObjectId) -> int:
    """Seats an exchange took whose exchange is no longer open before its switch (abandoned, or its
    order gone): given back. Returns the seats freed."""
    session = mongo.sessions().find_one({"_id": session_id}, {"exchangeHolds": 1})
    freed = 0
    for hold in (session or {}).get("exchangeHolds", []):
        order = mongo.orders().find_one({"_id": hold["orderId"]}, {"exchangeOpen": 1, "exchanges": 1})
        record = next((x for x in (order or {}).get("exchanges", []) if x["_id"] == hold["_id"]), None)
        if record is not None and record["state"] in OPEN_STATES:
            continue  # still running: its own steps finish it
        if record is not None and record["state"] == DONE:
            # Switched and finished, only the marker left behind: the seats are the order's now.
            mongo.sessions().update_one({"_id": session_id}, {"$pull": {"exchangeHolds": {"_id": hold["_id"]}}})
            continue
        cells = [cell_path(*parse_seat_key(k)) for k in hold["seats"]]
        result = mongo.sessions().update_one(
            {"_id": session_id, "exchangeHolds._id": hold["_id"]},
            {
                "$set": {c: FREE for c in cells},
                "$pull": {"exchangeHolds": {"_id": hold["_id"]}},
                "$inc": {"seatsAvailable": len(cells), "version": 1},
            },
        )
        freed += len(cells) if result.modified_count else 0
    return freed


def finish_open(now: datetime | None = None, grace: timedelta | None = None) -> int:
    """Reconcile: roll forward exchanges a crash left open (started more than ``grace`` ago), and
    give back seats of abandoned ones. Returns how many it finished."""
    now = now or clock.now()
    grace = timedelta(seconds=settings.BOOKING_RECONCILE_GRACE_SECONDS) if grace is None else grace
    finished = 0
    # ids are non-empty strings: ``$gt ""`` is a range on the sparse index holding just these
    for order in mongo.orders().find({"exchangeOpen": {"$gt": ""}}, {"exchangeOpen": 1, "exchanges": 1}).limit(500):
        record = _open_record(order)
        if record is not None and record["createdOn"] > now - grace:
            continue  # its request may still be running
        finish(order["_id"], now)
        finished += 1
    for session in mongo.sessions().find({"exchangeHolds._id": {"$gt": ""}}, {"_id": 1}).limit(500):
        release_stray_holds(session["_id"])
    return finished


def _canceled_meanwhile() -> str:
    return _("The new performance was canceled meanwhile; nothing was changed.")


def stop_into(session_id: ObjectId) -> int:
    """A canceled session: every exchange still moving tickets into it is stopped. Called by the
    cancel's run after the status flipped (``cancels.cancel_session_orders``). Markers (``exchangeHolds``) can
    no longer be added (``_take`` requires the session on sale), so the markers read now name
    every exchange that could still switch into it. Each is abandoned by one conditional update
    of its order (``started`` or ``taken`` -> ``abandoned``), which serializes with the switch
    (conditional on ``taken``, same document): either the switch came first and the order has the
    tickets (the run then refunds them), or the switch misses. One waiting for the customer's
    payment is called off (the payment canceled at the provider first). Each is then rolled
    forward to its end, so the run finds a switched order finished and refundable. Returns how
    many were stopped."""
    session = mongo.sessions().find_one({"_id": session_id}, {"exchangeHolds": 1})
    stopped = 0
    for hold in (session or {}).get("exchangeHolds", []):
        order = mongo.orders().find_one({"_id": hold["orderId"]})
        record = _open_record(order) if order else None
        if order is None or record is None or record["_id"] != hold["_id"]:
            continue
        if record["state"] == AWAITING:
            try:
                call_off(order["_id"], why=_canceled_meanwhile())
            except Conflict:
                pass  # moved on meanwhile (or the provider did not answer): finished or retried below
        elif record["state"] in (STARTED, TAKEN):
            stopped += _abandon(order, record, _canceled_meanwhile(), states=(STARTED, TAKEN))
        finish(order["_id"])
    release_stray_holds(session_id)
    return stopped
