"""What a delivery's JSON body says: ``{id, type, occurredAt, apiVersion, data}``, the data read
from the order or performance when the event is handed to its endpoints (normally a moment after
the change; after a crash, when reconcile finds it, so the data may then be newer than the event).

Nothing that lets anyone in or pays: no ticket codes (a ticket is named by a digest of its code),
no buyer's cookie, no payment ids.
"""

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from booking.core.domain import WebhookEventEntry
from booking.sales import outbox

API_VERSION = "1"


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def ticket_id(code: str) -> str:
    """A ticket's stable public id: its code cannot be worked out from it."""
    return "tkt_" + hashlib.sha256(code.encode()).hexdigest()[:24]


def ticket_data(line: Mapping[str, Any]) -> dict:
    checked_in = line.get("checkedIn") or {}
    return {
        "id": ticket_id(line["ticket"]),
        "performanceId": str(line["sessionId"]),
        "row": line.get("row"),
        "seat": line.get("seat"),
        "category": line.get("cat"),
        "ticketType": line.get("ticketType"),
        "price": line.get("price"),
        "discount": line.get("discount", 0),
        "checkedInAt": _time(checked_in.get("at")),
    }


def order_data(order: Mapping[str, Any]) -> dict:  # an Order (the event's document)
    return {
        "id": str(order["_id"]),
        "ref": order["ref"],
        "state": str(order["state"]),
        "channel": order.get("channel", "online"),
        "method": order.get("method"),
        "currency": order.get("currency"),
        "total": order.get("total"),
        "fee": order.get("fee", 0),
        "createdAt": _time(order.get("createdOn")),
        "paidAt": _time(order.get("paidOn")),
        "canceledAt": _time(order.get("canceledOn")),
        "customer": {"name": order.get("name", ""), "email": order.get("email", ""), "language": order.get("language")},
        "tickets": [ticket_data(line) for line in order.get("lines", [])],
        "refundedTickets": [ticket_data(line) for line in order.get("refundedLines", [])],
        "refunds": [
            {"id": r["_id"], "amount": r.get("amount"), "status": r.get("status")} for r in order.get("refunds", [])
        ],
        "performances": [
            {
                "id": str(s["_id"]),
                "name": s.get("name"),
                "start": _time(s.get("start")),
                "theaterId": str(s["theaterId"]) if s.get("theaterId") else None,
                "theaterName": s.get("theaterName"),
            }
            for s in order.get("sessions", [])
        ],
    }


def performance_data(session: dict) -> dict:
    return {
        "id": str(session["_id"]),
        "name": session.get("name"),
        "start": _time(session.get("start")),
        "theaterId": str(session["theaterId"]),
        "theaterName": session.get("theaterName"),
        "status": str(session.get("status")),
        "canceledAt": _time(session.get("canceledOn")),
        # a section of a sectioned venue's performance (a stadium): the performance it belongs to
        "performanceGroupId": str(session["performanceId"]) if session.get("performanceId") else None,
    }


def event_data(event: WebhookEventEntry, document: dict, collection: str) -> dict:
    if collection == outbox.SESSIONS:
        return {"performance": performance_data(document)}
    data: dict = {"order": order_data(document)}
    if event["type"] == outbox.TICKET_CHECKED_IN:
        line = next((x for x in document.get("lines", []) if x["ticket"] == event.get("ticket")), None)
        line = line or next((x for x in document.get("refundedLines", []) if x["ticket"] == event.get("ticket")), None)
        data["ticket"] = ticket_data(line) if line else {"id": ticket_id(event.get("ticket", ""))}
    if event.get("refund"):
        data["refundId"] = event["refund"]
    if event.get("exchange"):
        data["exchangeId"] = event["exchange"]
    return data


def body(event: WebhookEventEntry, document: dict, collection: str) -> str:
    """The JSON text sent (kept with the delivery, so a re-send is the same body)."""
    envelope = {
        "id": event["_id"],
        "type": event["type"],
        "occurredAt": _time(event["at"]),
        "apiVersion": API_VERSION,
        "data": event_data(event, document, collection),
    }
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
