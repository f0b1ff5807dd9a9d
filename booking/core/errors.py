"""Domain errors: each carries a message a person understands.

Views turn them into 4xx responses or inline messages; nothing here knows about HTTP.
"""

from django.utils.translation import gettext, ngettext


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
            if column is not None:
                where = gettext("Row %(row)d, column %(column)d: ") % {"row": row + 1, "column": column + 1}
            else:
                where = gettext("Row %(row)d: ") % {"row": row + 1}
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
        message = ngettext(
            "Sorry, %(names)s was just taken by someone else.",
            "Sorry, %(names)s were just taken by someone else.",
            len(seat_names),
        ) % {"names": names}
        super().__init__(message, seats=seat_names)
        self.seat_names = seat_names


class TooManySeats(BookingError):
    code = "too_many_seats"


class OrphanSeat(BookingError):
    code = "orphan_seat"


class WheelchairSpaceNotDeclared(BookingError):
    """A wheelchair space asked for, before its release to general sale, without the buyer saying
    they need it (sales/holds.py)."""

    code = "wheelchair_not_declared"


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


class QuotaReached(Conflict):
    """The performance's quota is taken (held or sold): no more seats until some are given back."""

    code = "quota_reached"

    def __init__(self, message: str = ""):
        super().__init__(message or gettext("No more tickets for this performance: its quota is taken."))
