"""Orders of every kind, made through the services, for the order search's and the order list's
tests: the buyer's checkout (card, or pay at the box office) and the counter sale (cash, card
terminal, complimentary, on the phone)."""

from booking.payments import flow as payments
from booking.payments import settings as payment_settings
from booking.sales import counter, holds
from booking.tests.factories import make_session, make_theater
from booking.tests.paying import pay

STAFF = counter.staff_owner(7)
HOUSE_SEATS = holds.HoldContext(house_seats=True)


def online(session, owner, seat, name, *, method="card", paid=False):
    cart = holds.hold_seats(session["_id"], owner, None, [seat])
    order = payments.start(owner, cart.cart_id, name, f"{owner[2:]}@example.com", method)
    return pay(order) if paid else order


def at_counter(session, seat, name, method, channel="box_office"):
    held = holds.hold_seats(session["_id"], STAFF, None, [seat], context=HOUSE_SEATS)
    reason = "press" if method == counter.COMPLIMENTARY else ""
    sale = counter.CounterSale(name=name, method=method, channel=channel, reason=reason, by="anna", by_id=7)
    return counter.sell(STAFF, held.cart_id, sale)


def make_shop() -> dict:
    """Two theaters, three performances, six orders (BOOKING_PREVENT_ORPHAN_SEATS off: one seat
    each, wherever it falls)."""
    theater, other = make_theater(), make_theater(name="Studio")
    hamlet, faust, lear = make_session(theater), make_session(theater, name="Faust", days=2), make_session(other)
    payment_settings.set_box_office(faust["_id"], enabled=True, deadline_minutes=30)
    made = {
        "ada": online(hamlet, "s:ada", "0:0", "Ada Lovelace"),  # pending card payment
        "bob": online(hamlet, "s:bob", "0:1", "Bob Müller", paid=True),
        "cas": at_counter(faust, "0:0", "Grace Hopper", counter.CASH),
        "ter": at_counter(lear, "0:0", "Alan Turing", counter.CARD_TERMINAL, channel="phone"),
        "gift": at_counter(hamlet, "1:0", "Press Desk", counter.COMPLIMENTARY),
        "box": online(faust, "s:box", "1:1", "Barbara Liskov", method="box_office"),
    }
    return {"theater": theater, "other": other, "hamlet": hamlet, "faust": faust, "lear": lear, **made}
