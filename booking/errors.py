"""Domain errors: each carries a message a person understands.

Views turn them into 4xx responses or inline messages; nothing here knows about HTTP.
"""


class BookingError(Exception):
    code = "booking_error"

    def __init__(self, message: str, **details):
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidLayout(BookingError):
    code = "invalid_layout"

    def __init__(self, message: str, *, row: int | None = None, column: int | None = None):
        where = ""
        if row is not None:
            where = f"Row {row + 1}" + (f", column {column + 1}" if column is not None else "") + ": "
        super().__init__(where + message, row=row, column=column)


class InvalidRequest(BookingError):
    """Input that can never be right: seats off the map, duplicates, malformed ids, bad names."""

    code = "invalid_request"


class NotFound(BookingError):
    code = "not_found"


class SessionNotOnSale(BookingError):
    code = "not_on_sale"


class SeatsTaken(BookingError):
    code = "seats_taken"

    def __init__(self, seat_names: list[str]):
        names = ", ".join(seat_names)
        verb = "was" if len(seat_names) == 1 else "were"
        super().__init__(f"Sorry, {names} {verb} just taken by someone else.", seats=seat_names)
        self.seat_names = seat_names


class TooManySeats(BookingError):
    code = "too_many_seats"


class OrphanSeat(BookingError):
    code = "orphan_seat"


class NoAdjacentSeats(BookingError):
    code = "no_adjacent_seats"

    def __init__(self, message: str, suggestion: list[tuple[int, int]] | None = None):
        super().__init__(message, suggestion=suggestion or [])
        self.suggestion = suggestion or []


class CartExpired(BookingError):
    code = "cart_expired"


class CheckoutFailed(BookingError):
    code = "checkout_failed"


class Conflict(BookingError):
    """A state change lost a race it cannot retry (e.g. the session changed under an admin edit)."""

    code = "conflict"
