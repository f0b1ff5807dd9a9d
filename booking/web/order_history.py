"""What happened to an order, in time order, for the buyer's and the staff's order pages: booked,
paid, tickets moved (exchanges), tickets canceled and refunded, paid at the counter, the mails
sent about it. Read from the order document alone (no query)."""

from dataclasses import dataclass
from datetime import datetime

from django.utils.translation import gettext as _

from booking.core.domain import ExchangeState, Order, RefundRecord
from booking.core.formatting import format_money


@dataclass(frozen=True)
class Event:
    when: datetime
    what: str
    detail: str = ""
    by: str = ""  # staff only: who did it
    state: str = ""  # e.g. a refund's or a mail's status
    mail: bool = False  # an e-mail to the customer (the buyer's page shows those sent only)


def _seats(lines) -> str:
    return ", ".join(f"{line['row']}{line['seat']}" for line in lines)


def order_history(order: Order) -> list[Event]:
    currency = order.get("currency", "")
    events = [Event(order["createdOn"], _("Booked"))]
    if order.get("paidOn"):
        events.append(
            Event(
                order["paidOn"],
                _("Paid"),
                format_money(paid["amount"] if (paid := order.get("paidWith")) else 0, currency),
            )
        )
    by_ticket = {line["ticket"]: line for line in [*order.get("refundedLines", []), *order.get("lines", [])]}
    for edit in order.get("customerEdits", []):
        old, new = edit["old"], edit["new"]
        detail = f"{old['name']} <{old['email']}> → {new['name']} <{new['email']}>"
        events.append(Event(edit["at"], _("Customer's name or e-mail corrected"), detail, edit.get("by", "")))
    for record in order.get("exchanges", []):
        moved = ", ".join(
            f"{o['row']}{o['seat']} → {n['row']}{n['seat']}" for o, n in zip(record["old"], record["new"], strict=False)
        )
        diff = record.get("difference", 0)
        money = ""
        if diff < 0:
            money = _("%(amount)s back") % {"amount": format_money(-diff, currency)}
        elif diff > 0 and record.get("paidDifference"):
            money = _("%(amount)s paid by card") % {"amount": format_money(diff, currency)}
        elif diff > 0 and record.get("payment"):
            money = _("%(amount)s to pay online") % {"amount": format_money(diff, currency)}
        elif diff > 0:
            money = _("%(amount)s paid at the counter") % {"amount": format_money(diff, currency)}
        detail = " · ".join(p for p in (moved, record["session"]["name"] or "", money) if p)
        state = {
            ExchangeState.DONE: "",
            ExchangeState.ABANDONED: record["state"],
            ExchangeState.AWAITING_PAYMENT: _("waiting for payment"),
        }.get(record["state"], _("under way"))
        if record["state"] == ExchangeState.ABANDONED:
            detail += f" — {record.get('failure', '')}"
        what = {
            ExchangeState.AWAITING_PAYMENT: _("New seats offered"),
            ExchangeState.ABANDONED: _("Move of tickets not done"),
        }.get(record["state"], _("Tickets moved"))
        events.append(Event(record["createdOn"], what, detail, record.get("by", ""), state))
    for refund in order.get("refunds", []):
        if refund.get("exchange"):
            continue  # shown with its exchange
        seats = _seats([by_ticket[t] for t in refund.get("tickets", []) if t in by_ticket])
        what = _("Tickets canceled and refunded") if seats else _("Refund")
        detail = " · ".join(p for p in (seats, format_money(refund["amount"], currency), _reason(refund)) if p)
        events.append(Event(refund["createdOn"], what, detail, refund.get("by", ""), refund["status"]))
    if order.get("canceledOn") and not order.get("refunds"):
        events.append(
            Event(order["canceledOn"], _("Canceled"), order.get("cancelReason", ""), order.get("canceledBy", ""))
        )
    kinds = {
        "exchange": _("new seats"),
        "cancel": _("tickets canceled"),
        "session_canceled": _("performance canceled"),
        "reservation": _("reserved: pay at the box office"),
        "reservation_lapsed": _("reservation lapsed unpaid"),
    }
    for notice in order.get("changeNotices", []):
        events.append(
            Event(
                notice["createdOn"],
                _("E-mail to the customer"),
                kinds.get(notice["kind"], notice["kind"])
                + (f" — {notice['failure']}" if notice.get("failure") else ""),
                state=notice["state"],
                mail=True,
            )
        )
    return sorted(events, key=lambda e: e.when)


def _reason(refund: RefundRecord) -> str:
    """A refund's reason is stored in English; one the code wrote is translated (staff's own text stays)."""
    reason = refund["reason"]
    return _(reason) if reason else ""
