"""Buyers change their own paid bookings within the theater's rules (sales/self_service.py):
cancel some or all tickets, exchange tickets for other seats of the same show, hand a ticket to
someone else. Each reuses the engine staff use, so there is one path per change:

- cancel: ``cancels.cancel_tickets`` (payments/refunds.py: the order first, the seats free at
  once, then the refund through the provider, the fee kept);
- exchange: ``exchanges.exchange`` with the fee added to the difference (a dearer move waits for
  the buyer's card on the order page, a cheaper one refunds through the provider);
- transfer (``transfer_ticket``): ONE conditional update of the order replaces the ticket's code
  by a new one held by the new holder, moves the old line to ``transferredLines`` (the door,
  online and offline after its next list download, refuses it saying why) and stores both mails
  (the buyer's, the holder's with their ticket). The filter requires the old ticket unused and
  fewer transfers than the limit, so a door scan and a transfer racing for the same ticket are
  serialised by MongoDB on the one document: one of them wins, never both.

Every input is a keyword argument, ``now`` included; refusals are BookingErrors whose message
says why (out of the window, over the limit, not allowed online).
"""

import logging
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from bson import ObjectId
from django.conf import settings
from django.utils.translation import gettext, gettext_noop, ngettext

from booking import payments
from booking.accounts.buyers import clean_email
from booking.core import faults, mongo
from booking.core.domain import Order, OrderLine, OrderState, SessionStatus, TicketHolder, Transfer
from booking.core.errors import Conflict, InvalidRequest, NotFound
from booking.core.text_checks import has_invisible_characters
from booking.sales import cancels, checkout, exchanges, outbox
from booking.sales import orders as order_service
from booking.sales import self_service as rules_of
from booking.sales.self_service import CANCEL, EXCHANGE, TRANSFER, Rules

logger = logging.getLogger("booking.buyer_changes")

BY_BUYER = "buyer (online)"
CANCELED_ONLINE = gettext_noop("Canceled online by the buyer")
EXCHANGED_ONLINE = gettext_noop("Exchanged online by the buyer")
ADMITTING = (OrderState.PAID, OrderState.PARTIALLY_REFUNDED)
NAME_MAX = 200
MAX_TICKETS = 50


def _order(order_id: ObjectId) -> Order:
    order = mongo.orders().find_one({"_id": order_id})
    if order is None:
        raise NotFound(gettext("No such booking."))
    return order


def _paid_online(order: Order) -> None:
    """Only a booking paid through the payment provider is changed online: its money can go back
    (and a difference be charged) there."""
    if order["state"] not in ADMITTING:
        raise Conflict(gettext("Only a paid booking can be changed."))
    paid_with = order.get("paidWith")
    if not paid_with or not payments.provider(paid_with["provider"]).online:
        raise Conflict(gettext("This booking was paid at the box office; please change it there."))
    if order.get("exchangeOpen"):
        raise Conflict(gettext("A change of this booking is still under way; look again in a moment."))


def _chosen(order: Order, tickets: Sequence[str] | None) -> list[OrderLine]:
    if tickets is None:
        return list(order["lines"])
    if not isinstance(tickets, list | tuple) or not all(isinstance(t, str) for t in tickets):
        raise InvalidRequest(gettext("Choose tickets of this booking."))
    if not tickets or len(tickets) > MAX_TICKETS or len(set(tickets)) != len(tickets):
        raise InvalidRequest(gettext("Choose the tickets, each once."))
    by_code = {line["ticket"]: line for line in order["lines"]}
    if any(code not in by_code for code in tickets):
        raise InvalidRequest(gettext("Choose tickets of this booking."))
    return [by_code[code] for code in tickets]


def _starts(order: Order) -> dict[ObjectId, datetime]:
    return {s["_id"]: start for s in order.get("sessions", []) if (start := s.get("start"))}


def _allowed(
    order: Order,
    lines: Sequence[Mapping[str, Any]],
    action: str,
    now: datetime,
    *,
    rules: dict[ObjectId, Rules] | None = None,
) -> dict[ObjectId, Rules]:
    """The rules of each chosen ticket's performance, or Conflict with the first reason not."""
    rules = rules if rules is not None else rules_of.rules_of_sessions(line["sessionId"] for line in lines)
    starts = _starts(order)
    for line in lines:
        found = rules.get(line["sessionId"], rules_of.NOTHING_ONLINE)
        why = rules_of.refusal(rules=found, action=action, start=starts[line["sessionId"]], now=now)
        if why:
            raise Conflict(why)
        if line.get("checkedIn"):
            raise Conflict(
                gettext("The ticket for row %(row)s, seat %(seat)s was already used at the door.")
                % {"row": line["row"], "seat": line["seat"]}
            )
        if action != TRANSFER and line.get("holder"):
            raise Conflict(
                gettext("The ticket for row %(row)s, seat %(seat)s was handed to someone else.")
                % {"row": line["row"], "seat": line["seat"]}
            )
    return rules


def fee_of(lines: Sequence[Mapping[str, Any]], rules: dict[ObjectId, Rules]) -> int:
    """The theater's fee for changing these tickets: each performance's fee per ticket."""
    return sum(rules.get(line["sessionId"], rules_of.NOTHING_ONLINE).fee for line in lines)


# --- cancel ---


def cancel_tickets(*, order_id: ObjectId, tickets: Any, confirmed: str | None, now: datetime) -> Order:
    """Cancel these tickets (None: all) with their money back less the fee. ``confirmed``: the
    order's fingerprint the buyer was shown (sales/orders.cancel_fingerprint), or None."""
    order = _order(order_id)
    _paid_online(order)
    lines = _chosen(order, tickets)
    rules = _allowed(order, lines, CANCEL, now)
    fee = fee_of(lines, rules)
    codes = None if tickets is None else [line["ticket"] for line in lines]
    done = cancels.cancel_tickets(
        order_id, tickets=codes, by=BY_BUYER, reason=CANCELED_ONLINE, keep=fee, confirmed=confirmed
    )
    logger.info("order %s: %d tickets canceled online (fee %d)", order["ref"], len(lines), fee)
    return done


# --- exchange ---


def exchange_targets(*, order: Order, now: datetime) -> list[dict]:
    """The performances the order's tickets may move to: the same show (name) in the same
    theater, on sale, not started, allowing exchanges before their deadline."""
    shows = {(s.get("theaterId"), s.get("name")) for s in order.get("sessions", [])}
    found = []
    for theater_id, name in shows:
        query = {"theaterId": theater_id, "name": name, "status": SessionStatus.ON_SALE, "start": {"$gt": now}}
        fields = {"name": 1, "nameDe": 1, "start": 1, "theaterId": 1, "theaterName": 1, "seatsAvailable": 1}
        found += list(mongo.sessions().find(query, fields).sort([("start", 1), ("_id", 1)]).limit(50))
    rules = rules_of.rules_of_sessions(s["_id"] for s in found)
    return [
        s
        for s in found
        if not rules_of.refusal(rules=rules[s["_id"]], action=EXCHANGE, start=s["start"], now=now)
        and rules[s["_id"]].exchange
    ]


def exchange_tickets(
    *, order_id: ObjectId, tickets: Sequence[str], session_id: ObjectId, keys: Sequence[str], now: datetime
) -> Order:
    """Move these tickets to ``keys`` of ``session_id`` (the same show), the fee added to the price
    difference. Through the staff's exchange service: the new seats are the order's before the
    old ones are freed; a dearer move waits for the buyer's card on the order page."""
    order = _order(order_id)
    _paid_online(order)
    if not isinstance(keys, list | tuple) or not all(isinstance(k, str) for k in keys):
        raise InvalidRequest(gettext("Choose the new seats on the map."))
    lines = _chosen(order, tickets)
    rules = _allowed(order, lines, EXCHANGE, now)
    target = mongo.sessions().find_one({"_id": session_id}, {"name": 1, "theaterId": 1, "start": 1, "selfService": 1})
    if target is None:
        raise NotFound(gettext("No such performance."))
    shows = {(s.get("theaterId"), s.get("name")) for s in order.get("sessions", [])}
    if (target.get("theaterId"), target.get("name")) not in shows:
        raise InvalidRequest(gettext("Tickets can only be exchanged for another performance of the same show."))
    theater = mongo.theaters().find_one({"_id": target.get("theaterId")}, {"selfService": 1})
    target_rules = rules_of.effective_rules(session=target, theater=theater)
    why = rules_of.refusal(rules=target_rules, action=EXCHANGE, start=target["start"], now=now)
    if why:
        raise Conflict(why)
    # a subscription ticket's swap fee is charged by the exchange itself (``subscription_swap_fee``)
    fee = fee_of([line for line in lines if not line.get("subscription")], rules)
    done = exchanges.exchange(
        order_id,
        [line["ticket"] for line in lines],
        session_id,
        list(keys),
        settle=exchanges.PROVIDER,
        by=BY_BUYER,
        reason=EXCHANGED_ONLINE,
        fee=fee,
    )
    logger.info("order %s: %d tickets exchanged online (fee %d)", order["ref"], len(lines), fee)
    return done


# --- transfer ---


def clean_holder(*, name: str, email: str, language: str) -> tuple[str, str, str]:
    """The new holder's name (spaces collapsed), address (lower case) and language ("" unknown)."""
    name = " ".join(str(name or "").split())
    if not name:
        raise InvalidRequest(
            gettext("Please enter the name of the person you hand the ticket to."), fields={"name": ""}
        )
    if len(name) > NAME_MAX or has_invisible_characters(name):
        raise InvalidRequest(
            gettext("A name is at most %(max)d visible characters.") % {"max": NAME_MAX}, fields={"name": ""}
        )
    email = clean_email(email)
    codes = {code for code, _name in settings.LANGUAGES}
    language = language if language in codes else ""
    return name, email, language


def _holder_language(email: str, fallback: str) -> str:
    """The new holder's language: the one they last booked in, else the buyer's."""
    earlier = mongo.orders().find_one({"email": email, "language": {"$exists": True}}, {"language": 1})
    return (earlier or {}).get("language") or fallback or settings.LANGUAGE_CODE


def transfer_ticket(*, order_id: ObjectId, ticket: str, name: str, email: str, now: datetime) -> Order:
    """Hand one ticket to someone else: the old code stops admitting in the same write that gives
    the new holder their code, and both mails are stored with it. Returns the order afterwards."""
    if not isinstance(ticket, str) or not ticket:
        raise InvalidRequest(gettext("Choose the ticket to hand on."))
    name, email, _unused = clean_holder(name=name, email=email, language="")
    order = _order(order_id)
    _paid_online(order)
    [line] = _chosen(order, [ticket])
    rules = _allowed(order, [line], TRANSFER, now)
    limit = rules[line["sessionId"]].max_transfers
    made = len(order.get("transfers") or [])
    if made >= limit:
        raise Conflict(
            ngettext(
                "This booking's tickets may be handed on %(max)d time; that is used up.",
                "This booking's tickets may be handed on %(max)d times; that is used up.",
                limit,
            )
            % {"max": limit}
        )
    if email == (held_by["email"] if (held_by := line.get("holder")) else order.get("email")):
        raise InvalidRequest(gettext("That person holds this ticket already."), fields={"email": ""})
    language = _holder_language(email, order.get("language", ""))
    tid = f"t{secrets.token_hex(6)}"
    new_code = checkout.new_ticket_code(order["ref"])
    holder: TicketHolder = {"name": name, "email": email, "language": language}
    # the line's own fields, its new code and holder (built by key: the stored order of the fields as before)
    new_line = cast(
        OrderLine, {**{k: v for k, v in line.items() if k != "ticket"}, "ticket": new_code, "holder": holder}
    )
    record: Transfer = {"_id": tid, "old": line["ticket"], "new": new_line, "name": name, "email": email, "on": now}
    faults.point("transfer.before_write")
    changed = mongo.orders().update_one(
        {
            "_id": order_id,
            "ref": order["ref"],
            "state": {"$in": list(ADMITTING)},
            "exchangeOpen": {"$exists": False},
            "lines": {"$elemMatch": {"ticket": line["ticket"], "checkedIn": {"$exists": False}}},
            # the limit, in the write itself: two transfers racing cannot both be under it
            f"transfers.{limit - 1}": {"$exists": False},
        },
        {
            "$set": {"lines.$[l].ticket": new_code, "lines.$[l].holder": holder},
            "$push": {
                "transferredLines": {**line, "transfer": tid},
                "transfers": record,
                "changeNotices": {
                    "$each": [
                        outbox.new_notice(outbox.TRANSFER, ref=tid),
                        outbox.new_notice(outbox.TRANSFER_TICKET, ref=tid, to=email, language=language),
                    ]
                },
                "webhookEvents": outbox.webhook_event(outbox.ORDER_CHANGED, transfer=tid),
            },
        },
        array_filters=[{"l.ticket": line["ticket"], "l.checkedIn": {"$exists": False}}],
    )
    if not changed.modified_count:
        current = _order(order_id)
        used = next((x for x in current["lines"] if x["ticket"] == line["ticket"] and x.get("checkedIn")), None)
        if used is not None:
            raise Conflict(gettext("This ticket was used at the door meanwhile; it can no longer be handed on."))
        raise Conflict(gettext("The booking changed meanwhile; nothing was handed on. Please look again."))
    faults.point("transfer.after_write")
    outbox.queue_webhook_events(outbox.ORDERS, order)
    outbox.queue_change_notices(order_id)
    logger.info("order %s: ticket %s handed on (%s)", order["ref"], line["key"], tid)
    return _order(order_id)


# --- what the buyer's page offers ---


def change_options(*, order: Order, now: datetime) -> dict:
    """What the buyer may change on this order now, ticket by ticket, with the reason where not
    (the order page). Empty when the order cannot be changed online at all."""
    try:
        _paid_online(order)
    except Conflict:
        return {}
    if not order.get("lines"):
        return {}
    rules = rules_of.rules_of_sessions(line["sessionId"] for line in order["lines"])
    if not any(r.anything for r in rules.values()):
        return {}
    starts = _starts(order)
    names = {s["_id"]: s for s in order.get("sessions", [])}
    made = len(order.get("transfers") or [])
    tickets: list[dict] = []
    for line in order["lines"]:
        found = rules.get(line["sessionId"], rules_of.NOTHING_ONLINE)
        start = starts[line["sessionId"]]
        why = {a: rules_of.refusal(rules=found, action=a, start=start, now=now) for a in (CANCEL, EXCHANGE, TRANSFER)}
        if line.get("checkedIn"):
            why = dict.fromkeys(why, gettext("Used at the door."))
        elif line.get("holder"):
            why[CANCEL] = why[EXCHANGE] = gettext("Handed to someone else.")
        if not why[TRANSFER] and made >= found.max_transfers:
            why[TRANSFER] = gettext("No more tickets of this booking may be handed on.")
        tickets.append(
            {
                "ticket": line["ticket"],
                "row": line["row"],
                "seat": line["seat"],
                "session": names.get(line["sessionId"], {}),
                "start": start,
                "fee": found.fee,
                "holder": held_by["name"] if (held_by := line.get("holder")) else "",
                "cancel": why[CANCEL],
                "exchange": why[EXCHANGE],
                "transfer": why[TRANSFER],
                "cancel_until": found.deadline(start, CANCEL),
                "transfer_until": found.deadline(start, TRANSFER),
            }
        )
    return {
        "tickets": tickets,
        "cancel": [t for t in tickets if not t["cancel"]],
        "exchange": [t for t in tickets if not t["exchange"]],
        "transfer": [t for t in tickets if not t["transfer"]],
        "fingerprint": order_fingerprint(order),
    }


def exchange_fees(order: Order) -> int:
    """The fees of the order's exchanges that moved its tickets: part of its total, in no line."""
    moved = (exchanges.SWITCHED, exchanges.RELEASED, exchanges.DONE)
    return sum(x.get("fee", 0) for x in order.get("exchanges") or [] if x.get("state") in moved)


def order_fingerprint(order: Order) -> str:
    return order_service.cancel_fingerprint(order)
