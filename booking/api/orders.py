"""Orders: the list (the back office's filters, newest first, a cursor per page), one order,
and the writes staff make on the order page, through the same services: a reservation or a
complimentary order (``sales.counter.sell_seats``: the counter's hold and sale), cancel
(``sales.cancels.cancel_order`` confirmed with the fingerprint of the order as read), refund
tickets (``payments.refunds.refund_tickets``), a reservation paid at the box office
(``payments.flow.mark_paid_at_counter``). Every POST takes an ``Idempotency-Key``.

A token sees only the orders with a seat in its theater's performances. The customer's name,
e-mail and phone, and the text search over them, need the scope ``customers:read``."""

import hashlib
import secrets
from datetime import datetime

from django.utils.translation import gettext
from ninja import Field, Query, Router

from booking import payments
from booking.api import schemas
from booking.api.auth import MissingScope, may, needs, token_of
from booking.api.common import NotFoundHere, error_body, idempotent, json_response, path_id
from booking.core import mongo
from booking.core.domain import Order, OrderLine, OrderState, SalesChannel, sales_channel
from booking.core.ids import object_id
from booking.payments import flow as payment_service
from booking.payments import refunds as refund_service
from booking.sales import cancels, counter, order_search
from booking.sales.carts import STAFF_OWNER_PREFIX
from booking.web.api_tokens import READ_CUSTOMERS, READ_ORDERS, WRITE_ORDERS

router = Router(tags=["orders"])
PAYMENT_METHODS = tuple(payments.METHOD_PROVIDER)
NO_SUCH_ORDER = "No such order."


class OrderFilters(schemas.Request):
    q: schemas.Text | None = Field(
        None, max_length=120, description="a booking reference, a customer's name or e-mail (scope customers:read)"
    )
    performance_id: list[schemas.IdText] = Field(default_factory=list, max_length=50)
    placed_from: datetime | None = None
    placed_until: datetime | None = None
    state: list[OrderState] = Field(default_factory=list, max_length=10)
    channel: list[SalesChannel] = Field(default_factory=list, max_length=10)
    payment_method: list[str] = Field(default_factory=list, max_length=10)
    cursor: str | None = Field(None, max_length=200)
    limit: int = Field(50, ge=1, le=200)


def _theater_of(order: Order) -> set:
    """The theaters of the order's performances, as its summaries name them (an order from before
    they carried the theater: read from its sessions, by _id)."""
    named = {s.get("theaterId") for s in order.get("sessions", [])} - {None}
    if named:
        return named
    ids = [s["_id"] for s in order.get("sessions", [])]
    return {s.get("theaterId") for s in mongo.sessions().find({"_id": {"$in": ids}}, {"theaterId": 1})}


def customer_out(request, order: Order) -> dict | None:
    if not may(request, READ_CUSTOMERS):
        return None
    return {"name": order.get("name", ""), "email": order.get("email", ""), "phone": order.get("phone", "")}


def ticket_out(line: OrderLine) -> dict:
    checked = line.get("checkedIn")
    return {
        "ticket": line.get("ticket", ""),
        "performance_id": str(line["sessionId"]),
        "seat_key": line.get("key", ""),
        "row": str(line.get("row", "")),
        "seat": str(line.get("seat", "")),
        "category": line.get("cat", ""),
        "ticket_type": line.get("ticketType") or "full",
        "price": line.get("price", 0),
        "discount": line.get("discount", 0),
        "checked_in": checked["at"] if checked else None,
    }


def summary_out(request, order: Order) -> dict:
    """A list row: what order_search reads (no ticket codes)."""
    return {
        "id": str(order["_id"]),
        "ref": order["ref"],
        "state": order["state"],
        "method": order.get("method", ""),
        "channel": sales_channel(order),
        "total": order.get("total", 0),
        "currency": order.get("currency", ""),
        "created": order["createdOn"],
        "performances": [str(s["_id"]) for s in order.get("sessions", [])],
        "customer": customer_out(request, order),
    }


def order_out(request, order: Order) -> dict:
    return {
        **summary_out(request, order),
        "paid": order.get("paidOn"),
        "tickets": [ticket_out(line) for line in order.get("lines", [])],
        "refunded_tickets": [line.get("ticket", "") for line in order.get("refundedLines", [])],
    }


@router.get("/orders/", response=schemas.OrderPage, **needs(READ_ORDERS), summary="Orders, newest first")
def orders(request, filters: Query[OrderFilters]):
    """A page of the theater's orders (rows without their tickets: GET /orders/{id}/ has them);
    ``next_cursor`` as ``cursor`` gives the next (older) page with the same filters."""
    token = token_of(request)
    if filters.q and not may(request, READ_CUSTOMERS):
        raise MissingScope(READ_CUSTOMERS)
    unknown = [m for m in filters.payment_method if m not in PAYMENT_METHODS]
    if unknown:
        message = gettext("Payment methods are %(methods)s.") % {"methods": ", ".join(PAYMENT_METHODS)}
        return json_response(400, error_body(400, message, {"payment_method": message}))
    search = order_search.OrderFilters(
        text=filters.q or "",
        session_ids=tuple(object_id(i) for i in filters.performance_id),
        theater_id=token["theaterId"],
        placed_from=filters.placed_from,
        placed_until=filters.placed_until,
        states=tuple(filters.state),
        channels=tuple(filters.channel),
        payment_methods=tuple(filters.payment_method),
    )
    try:
        page = order_search.search_orders(filters=search, cursor=filters.cursor, limit=filters.limit)
    except order_search.InvalidCursor:
        message = gettext("This cursor is not one this API gave.")
        return json_response(400, error_body(400, message, {"cursor": message}))
    except ValueError as exc:  # a time without its zone
        return json_response(400, error_body(400, str(exc), {"placed_from": str(exc)}))
    return {"orders": [summary_out(request, o) for o in page.orders], "next_cursor": page.next_cursor}


def theater_order(request, order_id: str) -> Order:
    """The order the path names, if it has a seat in the token's theater; 404 else."""
    token = request.auth
    found = mongo.orders().find_one({"_id": path_id(order_id, gettext(NO_SUCH_ORDER))})
    if found is None or token["theaterId"] not in _theater_of(found):
        raise NotFoundHere(gettext(NO_SUCH_ORDER))
    return found


@router.get("/orders/{order_id}/", response=schemas.OrderOut, **needs(READ_ORDERS), summary="An order")
def order(request, order_id: str):
    return order_out(request, theater_order(request, order_id))


def _by(request) -> str:
    return f"API token {request.auth['name']}"


def _answer(request, status: int, order: Order) -> tuple[int, dict]:
    return status, schemas.OrderOut.model_validate(order_out(request, order)).model_dump(mode="json")


@router.post(
    "/orders/",
    response={201: schemas.OrderOut, 400: schemas.Error, 409: schemas.Error},
    **needs(WRITE_ORDERS),
    summary="Create a reservation or a complimentary order",
)
def create_order(request, body: schemas.OrderIn):
    """Holds the seats and sells them to the customer as the box office does: a reservation keeps
    them until the end of ``due`` (then they go back unless paid: POST /orders/{id}/mark-paid/); a
    complimentary order is paid at once at no charge. All seats or none."""
    token = token_of(request)
    performance_id = object_id(body.performance_id)
    if mongo.sessions().find_one({"_id": performance_id, "theaterId": token["theaterId"]}, {"_id": 1}) is None:
        raise NotFoundHere(gettext("No such performance."))

    def run() -> tuple[int, dict]:
        sale = counter.CounterSale(
            name=body.customer.name,
            method=counter.INVOICE if body.kind == "reservation" else counter.COMPLIMENTARY,
            channel=body.channel,
            email=body.customer.email,
            phone=body.customer.phone,
            due=body.due,
            reason=body.reason,
            by=_by(request),
        )
        # a cart owner per sale: two calls never share a cart, and a retry with the same
        # Idempotency-Key after a crash finishes the cart its first try left (counter.sell_seats)
        key = request.headers.get("Idempotency-Key")
        one_sale = hashlib.sha256(key.encode()).hexdigest()[:16] if key else secrets.token_hex(8)
        owner = f"{STAFF_OWNER_PREFIX}api-{token['_id']}-{one_sale}"
        made = counter.sell_seats(owner=owner, session_id=performance_id, seat_keys=list(body.seats), sale=sale)
        return _answer(request, 201, made)

    return idempotent(request, run)


@router.post(
    "/orders/{order_id}/cancel/",
    response={200: schemas.OrderOut, 409: schemas.Error},
    **needs(WRITE_ORDERS),
    summary="Cancel an order",
)
def cancel_order(request, order_id: str, body: schemas.CancelIn):
    """As staff's "Cancel order": the seats free again, the money back through its payments (a
    reservation just ends), the customer told. Refused (409) when the order changed meanwhile."""
    found = theater_order(request, order_id)

    def run() -> tuple[int, dict]:
        seen = refund_service.cancel_outcome(found).fingerprint  # what this call decided on
        canceled = cancels.cancel_order(found["_id"], by=_by(request), reason=body.reason, confirmed=seen)
        return _answer(request, 200, canceled)

    return idempotent(request, run)


@router.post(
    "/orders/{order_id}/refund/",
    response={200: schemas.OrderOut, 400: schemas.Error, 409: schemas.Error},
    **needs(WRITE_ORDERS),
    summary="Refund tickets",
)
def refund(request, order_id: str, body: schemas.RefundIn):
    """Refund these tickets of a paid order through its payments; their seats are free again."""
    found = theater_order(request, order_id)

    def run() -> tuple[int, dict]:
        done = refund_service.refund_tickets(
            found["_id"], tickets=list(dict.fromkeys(body.tickets)), reason=body.reason, by=_by(request)
        )
        return _answer(request, 200, done)

    return idempotent(request, run)


@router.post(
    "/orders/{order_id}/mark-paid/",
    response={200: schemas.OrderOut, 409: schemas.Error},
    **needs(WRITE_ORDERS),
    summary="A reservation paid at the box office",
)
def mark_paid(request, order_id: str):
    """The customer paid a reservation: it becomes a sale, its tickets valid."""
    found = theater_order(request, order_id)

    def run() -> tuple[int, dict]:
        paid = payment_service.mark_paid_at_counter(found["_id"], by=_by(request))
        if paid["state"] != OrderState.PAID:
            message = paid.get("failure") or gettext("The order could not be paid.")
            return 409, error_body(409, str(message))
        return _answer(request, 200, paid)

    return idempotent(request, run)
