"""Credit notes: money given back on an invoiced or receipted order, and an unpaid invoice
called off, each get a credit note with a number of its own (one gap-free series per theater,
``credit:<theaterId>``, payments/number_series.py) that names the invoice or receipt it corrects.

Steps, each safe to repeat:

1. the write that refunds tickets (payments/refunds.py) or cancels an unpaid invoice
   (payments/flow.py) pushes what is owed onto the order in the same update: ``creditNotes:
   [{_id, kind, refunds, tickets, amount, reason, createdOn}]`` with ``creditNoteDue: true``;
2. :func:`issue` writes each owed note into ``credit_notes`` (its ``_id`` is the entry's, so a
   repeat finds it), with the lines, the VAT per rate, the seller and buyer as on the original;
3. the note's number (``creditNo``, ``creditOn``), taken like a receipt's;
4. ``creditNoteDue`` is cleared, if no new note was owed meanwhile.

A crash after 1 leaves ``creditNoteDue`` set: the mail's sender issues the notes before writing
the mail, and reconcile (:func:`issue_due`) finishes every order still marked. A crash inside 3
is finished by the series' log (number_series.finish_all). A note once written never changes.
"""

import logging

from bson import ObjectId
from django.conf import settings
from pymongo.errors import DuplicateKeyError

from booking.core import clock, faults, mongo
from booking.core.domain import CreditNoteOwed, Order, OrderLine
from booking.payments import donations, invoices, money, number_series, receipts

logger = logging.getLogger("booking.credit_notes")

REFUND = "refund"
VOID = "void"  # an unpaid invoice called off: the whole invoice is credited
EXCHANGE = "exchange"  # tickets moved to cheaper seats: the difference refunded is credited
INVOICE = "invoice"
RECEIPT = "receipt"


def documents():
    return mongo.credit_notes()


def series_of(theater_id: ObjectId) -> str:
    return f"credit:{theater_id}"


def credit_label(note: dict) -> str:
    number = note.get("creditNo")
    return f"CN-{number:06d}" if number else ""


def owed_for_refund(order: Order, *, refund_ids: list[str], tickets: list[str], amount: int, reason: str) -> dict:
    """The ``$push``/``$set`` parts a refund's write adds when the order has an invoice or a
    receipt to correct (else nothing): ({field: entry}, {creditNoteDue: True})."""
    if not (order.get("invoice") or order.get("receiptNo")):
        return {}
    entry: CreditNoteOwed = {
        "_id": f"{order['_id']}:{refund_ids[0]}",
        "kind": REFUND,
        "refunds": refund_ids,
        "tickets": tickets,
        "amount": amount,
        "reason": reason,
        "createdOn": clock.now(),
    }
    return {"creditNotes": entry}


def owed_for_void(order: Order, *, reason: str) -> dict:
    """The ``$push`` part of the write that cancels an unpaid order: an invoice issued for it is
    credited in full (a reservation without an invoice: nothing)."""
    if not order.get("invoice"):
        return {}
    entry: CreditNoteOwed = {
        "_id": f"{order['_id']}:void",
        "kind": VOID,
        "refunds": [],
        "tickets": [line["ticket"] for line in order.get("lines", [])],
        "amount": order["total"],
        "reason": reason,
        "createdOn": clock.now(),
    }
    return {"creditNotes": entry}


def owed_for_exchange(
    order: Order, *, refund_ids: list[str], old: list[OrderLine], new: list[OrderLine], amount: int, reason: str
) -> dict:
    """The ``$push`` part of an exchange's switch to cheaper seats when the order has an invoice or
    a receipt: the difference refunded, credited against the old tickets (which the note lists),
    its VAT per rate the old lines' less the new lines' (a kept exchange fee taken off the first)."""
    owed = owed_for_refund(
        order, refund_ids=refund_ids, tickets=[line["ticket"] for line in old], amount=amount, reason=reason
    )
    if not owed:
        return {}
    by_rate: dict[str, int] = {}
    for line, sign in [*((line, 1) for line in old), *((line, -1) for line in new)]:
        rate = str(line.get("vat", settings.BOOKING_VAT_RATE))
        by_rate[rate] = by_rate.get(rate, 0) + sign * money.line_amount(line)
    first = next(iter(by_rate), str(settings.BOOKING_VAT_RATE))
    by_rate[first] = by_rate.get(first, 0) + amount - sum(by_rate.values())
    owed["creditNotes"] |= {"kind": EXCHANGE, "pairs": [[part, rate] for rate, part in by_rate.items() if part]}
    return owed


DUE = {"creditNoteDue": True}  # set with an owed entry


def _refers_to(order: Order) -> dict:
    if order.get("invoice"):
        number = order.get("invoiceNo") or invoices.assign(order["_id"], ref=order["ref"])
        return {"kind": INVOICE, "number": number, "label": invoices.invoice_label({"invoiceNo": number})}
    return {"kind": RECEIPT, "number": order.get("receiptNo"), "label": receipts.receipt_label(order)}


def _note(order: Order, entry: CreditNoteOwed, theater_id: ObjectId) -> dict:
    """The credit note as written once: what it corrects, the lines credited, the VAT per rate."""
    tickets = set(entry["tickets"])
    pools = {VOID: order.get("lines", []), EXCHANGE: order.get("exchangedLines", [])}
    lines = [line for line in pools.get(entry["kind"], order.get("refundedLines", [])) if line["ticket"] in tickets]
    if entry.get("pairs"):  # worked out when it was owed (an exchange's difference)
        pairs = [(part, rate) for part, rate in entry["pairs"]]
    else:
        pairs = [(money.line_amount(line), line.get("vat", settings.BOOKING_VAT_RATE)) for line in lines]
        rest = entry["amount"] - sum(amount for amount, _rate in pairs)  # the fee and donation with the last ticket
        fee = order.get("fee")
        if rest > 0 and fee and fee["amount"]:
            # the donation carries no VAT: only the fee's part of the rest is taxed
            pairs.append((min(rest, fee["amount"]) if donations.amount_of(order) else rest, fee["vat"]))
    invoice = order.get("invoice")
    seller = (invoice["seller"] if invoice else None) or invoices.seller_of(
        mongo.theaters().find_one({"_id": theater_id})
    ).as_document()
    return {
        "_id": entry["_id"],
        "orderId": order["_id"],
        "ref": order["ref"],
        "theaterId": theater_id,
        "kind": entry["kind"],
        "refersTo": _refers_to(order),
        "seller": seller,
        "buyer": {
            "name": order.get("name", ""),
            "email": order.get("email", ""),
            **(invoice["buyer"] if invoice else {}),
        },
        "sessions": order.get("sessions", []),
        "lines": lines,
        "amount": entry["amount"],
        "currency": order.get("currency", settings.BOOKING_CURRENCY),
        "vat": [line.as_doc() for line in money.breakdown(pairs)],
        "refunds": entry["refunds"],
        "reason": entry.get("reason", ""),
        "createdOn": entry["createdOn"],
        "language": order.get("language", ""),
    }


def issue(order_id: ObjectId) -> list[dict]:
    """Every credit note the order owes written and numbered (safe to repeat, from anywhere).
    Returns the order's notes."""
    order = mongo.orders().find_one({"_id": order_id})
    if order is None:
        return []
    owed = order.get("creditNotes") or []
    theater_id = receipts.theater_of(order)
    if owed and theater_id is None:
        raise LookupError(f"order {order_id} has no performance, so no theater to number its credit notes")
    for entry in owed:
        assert theater_id is not None  # refused above
        if documents().find_one({"_id": entry["_id"]}, {"_id": 1}) is None:
            try:
                documents().insert_one(_note(order, entry, theater_id))
            except DuplicateKeyError:
                pass  # written by a racing issuer
        faults.point("credit_note.after_write")
        number_series.take(
            series=series_of(theater_id),
            owner=entry["_id"],
            target=number_series.Target(collection="credit_notes", field="creditNo", stamp="creditOn"),
        )
    if order.get("creditNoteDue"):
        mongo.orders().update_one(  # unless another note was owed since this read
            {"_id": order_id, "ref": order["ref"], f"creditNotes.{len(owed)}": {"$exists": False}},
            {"$unset": {"creditNoteDue": ""}},
        )
    return of_order(order_id)


def of_order(order_id: ObjectId) -> list[dict]:
    return list(documents().find({"orderId": order_id}).sort("createdOn", 1))


def get(note_id: str) -> dict | None:
    return documents().find_one({"_id": note_id})


def for_refunds(notes: list[dict], refund_ids) -> list[dict]:
    """The notes of these refunds (a change's mail attaches them)."""
    wanted = set(refund_ids)
    return [n for n in notes if wanted & set(n.get("refunds") or ())]


def issue_due(limit: int = 200) -> int:
    """Reconcile: orders whose credit notes a crash left unwritten or unnumbered."""
    issued = 0
    for order in mongo.orders().find({"creditNoteDue": True}, {"_id": 1}).limit(limit):
        try:
            issue(order["_id"])
        except LookupError:
            logger.exception("credit notes of order %s cannot be issued", order["_id"])
            continue
        issued += 1
    return issued
