"""Domain errors as HTTP statuses, in one place: the buyer's pages, the staff counter and the API
answer the same error with the same status."""

from booking.core.errors import (
    BookingError,
    CartExpired,
    CheckoutFailed,
    Conflict,
    InvalidRequest,
    NoAdjacentSeats,
    NotFound,
    OrphanSeat,
    SeatsTaken,
    SessionNotOnSale,
    TooManySeats,
    WheelchairSpaceNotDeclared,
)
from booking.sales.admission import AdmissionRequired

STATUS_FOR = {
    NotFound: 404,
    InvalidRequest: 400,
    TooManySeats: 400,
    OrphanSeat: 400,
    SeatsTaken: 409,
    NoAdjacentSeats: 409,
    CartExpired: 409,
    Conflict: 409,
    SessionNotOnSale: 409,
    CheckoutFailed: 409,
    AdmissionRequired: 403,  # a queued sale: the waiting room's admission is missing or ended
    WheelchairSpaceNotDeclared: 400,  # nothing changed; the message says how to ask for the space
}


def status_for(error: BookingError) -> int:
    for cls in type(error).__mro__:
        if cls in STATUS_FOR:
            return STATUS_FOR[cls]
    return 400
