"""The e-mails of "reserve now, pay at the box office" (payments/flow.py): one when the seats
are reserved (the reference, the seats, the amount due, the deadline and where to pay) and one
when the reservation lapsed unpaid at its deadline. Paid at the counter, the buyer gets the
confirmation mail with the receipt instead (notifications/confirmations.py, like every paid order).

Both are change notices (notifications/change_notices.py), so they are sent exactly like the others:
the notice is written in the same write as the reservation (the order's insert) or its lapse
(the order's ``pending_payment -> expired``), the worker claims it before sending and marks it
sent right after (one mail however often the task runs), retries while the mail server is away,
and reconcile queues it again when Redis lost the task. In the language the buyer booked in.
"""

from django.conf import settings

from booking.core.domain import Order
from booking.core.formatting import format_money_code, mail_time
from booking.core.localized import localized


def reservation_context(order: Order) -> dict:
    """What the reservation mails say besides the order's lines (confirmation_context)."""
    until = pay["until"] if (pay := order.get("payment")) else None
    theaters = sorted({localized(s, "theaterName") for s in order.get("sessions", [])} - {""})  # German mails: German
    return {
        "due": format_money_code(order["total"], order.get("currency", settings.BOOKING_CURRENCY)),
        "pay_until": mail_time(until) if until else "",
        "theaters": ", ".join(theaters),
    }
