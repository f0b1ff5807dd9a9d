"""The API's request and answer shapes (pydantic through django-ninja). Every field of a request
is bounded (lengths, ranges, item counts), extra fields are refused, and no text may carry a NUL:
what does not fit answers 400 with the field named, before any service runs."""

from datetime import date, datetime
from typing import Annotated, Literal

from ninja import Schema
from pydantic import AfterValidator, ConfigDict, Field


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


def _object_id_text(value: str) -> str:
    if len(value) != 24 or any(c not in "0123456789abcdefABCDEF" for c in value):
        raise ValueError("must be an id of 24 hexadecimal characters")
    return value.lower()


Text = Annotated[str, AfterValidator(_no_nul)]
IdText = Annotated[str, AfterValidator(_object_id_text)]
SeatKey = Annotated[str, Field(pattern=r"^[0-9]{1,4}:[0-9]{1,4}$", max_length=9)]
TicketCode = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{16,64}$")]


class Request(Schema):
    model_config = ConfigDict(extra="forbid")


# --- errors ---


class Error(Schema):
    error: str = Field(description="machine-readable: invalid, unauthorized, forbidden, not_found, conflict, ...")
    message: str
    fields: dict[str, str] = Field(default_factory=dict, description="per field of the request: what is wrong")


# --- theaters and performances ---


class TheaterOut(Schema):
    id: str
    name: str
    seat_count: int | None = None


class PerformanceOut(Schema):
    id: str
    name: str
    theater_id: str
    theater_name: str
    start: datetime
    end: datetime | None = None
    status: str
    currency: str
    seats_total: int
    seats_available: int
    performance_id: str | None = Field(None, description="a sectioned venue: the performance this section belongs to")
    section: str | None = None


class PerformancePage(Schema):
    performances: list[PerformanceOut]
    next_cursor: str | None = None


class CategoryOut(Schema):
    code: str
    name: str
    price: int | None = Field(None, description="minor units (cents)")
    free: int
    total: int


class SeatOut(Schema):
    key: str = Field(description="row:column in the grid; what POST /orders/ takes")
    row: str
    seat: str
    category: str
    state: Literal["free", "held", "sold", "blocked"]
    wheelchair: bool


class AvailabilityOut(Schema):
    id: str
    status: str
    seats_total: int
    seats_available: int
    version: int = Field(description="changes with every seat change")
    categories: list[CategoryOut]


class PerformanceDetailOut(PerformanceOut):
    version: int
    categories: list[CategoryOut]
    seats: list[SeatOut]


# --- orders ---


class CustomerOut(Schema):
    name: str
    email: str
    phone: str


class TicketOut(Schema):
    ticket: str
    performance_id: str
    seat_key: str
    row: str
    seat: str
    category: str
    ticket_type: str
    price: int
    discount: int
    checked_in: datetime | None = None


class OrderSummaryOut(Schema):
    id: str
    ref: str
    state: str
    method: str
    channel: str
    total: int
    currency: str
    created: datetime
    performances: list[str]
    customer: CustomerOut | None = Field(None, description="only for a token with the scope customers:read")


class OrderOut(OrderSummaryOut):
    paid: datetime | None = None
    tickets: list[TicketOut]
    refunded_tickets: list[str]


class OrderPage(Schema):
    orders: list[OrderSummaryOut]
    next_cursor: str | None = None


class CustomerIn(Request):
    name: Text = Field(min_length=1, max_length=200)
    email: Text = Field("", max_length=254)
    phone: Text = Field("", max_length=40)


class OrderIn(Request):
    performance_id: IdText
    seats: list[SeatKey] = Field(min_length=1, max_length=50, description="seat keys (row:column) from the seat map")
    kind: Literal["reservation", "complimentary"] = Field(
        description="reservation: the seats are held for the customer until `due` (the end of that day), "
        "then go back unless paid (POST /orders/{id}/mark-paid/); complimentary: given away, with a reason"
    )
    customer: CustomerIn
    due: date | None = Field(None, description="reservation: the last day to pay")
    reason: Text = Field("", max_length=200, description="complimentary: why")
    channel: Literal["box_office", "phone"] = "box_office"


class CancelIn(Request):
    reason: Text = Field(min_length=1, max_length=200)


class RefundIn(Request):
    tickets: list[TicketCode] = Field(min_length=1, max_length=100)
    reason: Text = Field(min_length=1, max_length=200)


# --- tickets ---


class CheckInIn(Request):
    performance_id: IdText
    code: TicketCode
    door: Text = Field(min_length=1, max_length=40)
    scan_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{8,64}$")] | None = None


class CheckInOut(Schema):
    status: Literal["admitted", "used", "not_valid", "wrong_session", "unknown"]
    admitted: bool
    message: str
    seat: str | None = None
    used_at: datetime | None = None
    used_door: str | None = None
    replay: bool = False


# --- reports ---


class FiguresOut(Schema):
    key: str
    label: str
    tickets: int
    gross: int
    net: int
    vat: int
    checked_in: int


class SalesReportOut(Schema):
    performance_id: str
    title: str
    theater: str
    currency: str
    seats: dict[str, int]
    totals: FiguresOut
    by_category: list[FiguresOut]
    by_ticket_type: list[FiguresOut]
    by_channel: list[FiguresOut]
    refunds: FiguresOut
    as_of: datetime | None = None
