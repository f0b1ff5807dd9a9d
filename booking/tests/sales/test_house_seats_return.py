"""House seats stay house seats: a seat staff blocked and then sold at the counter goes
back to blocked, not on sale, on every path that ends its sale: a partial refund, a whole cancel,
an exchange moving the customer elsewhere, a canceled session, and the end of an unpaid counter
reservation. An ordinary seat of the same order goes back to free. Invariants after each."""

from datetime import timedelta

from booking.core import mongo
from booking.payments import refunds
from booking.sales import cancels, cart_expiry, counter, exchanges, holds, orders, session_cancel
from booking.sales import sessions as session_service
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import BLOCKED, FREE, HELD, SOLD

STAFF = counter.staff_owner(7)
HOUSE, PLAIN = "0:0", "0:1"


def cells(session, keys):
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    return [seats[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


def available(session):
    return mongo.sessions().find_one({"_id": session["_id"]})["seatsAvailable"]


def sold_at_counter(method=counter.CASH, days=1, **fields):
    """An order of a house seat (0:0, blocked by staff) and a free one (0:1), sold at the counter."""
    session = make_session(days=days)
    session_service.set_blocked(session["_id"], [(0, 0)], True)
    free_before = available(session)
    held = holds.hold_seats(session["_id"], STAFF, None, [HOUSE, PLAIN], context=holds.HoldContext(house_seats=True))
    sale = counter.CounterSale(name="Grace Hopper", method=method, by="anna", by_id=7, **fields)
    order = counter.sell(STAFF, held.cart_id, sale)
    return session, order, free_before


def ticket(order, key):
    return next(line["ticket"] for line in order["lines"] if line["key"] == key)


def test_the_order_line_remembers_it_was_a_house_seat():
    session, order, free_before = sold_at_counter()
    assert [line.get("house", False) for line in order["lines"]] == [True, False]
    assert cells(session, [HOUSE, PLAIN]) == [SOLD, SOLD] and available(session) == free_before - 1
    assert check_invariants() == []


def test_a_partial_refund_of_a_house_seat_blocks_it_again():
    session, order, free_before = sold_at_counter()
    refunds.refund_tickets(order["_id"], tickets=[ticket(order, HOUSE)], by="anna")
    assert cells(session, [HOUSE, PLAIN]) == [BLOCKED, SOLD]
    assert available(session) == free_before - 1
    assert check_invariants() == []
    refunds.refund_tickets(order["_id"], tickets=[ticket(order, PLAIN)], by="anna")
    assert cells(session, [HOUSE, PLAIN]) == [BLOCKED, FREE] and available(session) == free_before
    assert check_invariants() == []


def test_canceling_the_whole_order_blocks_the_house_seat_and_frees_the_other():
    session, order, free_before = sold_at_counter(counter.COMPLIMENTARY, reason="press")
    cancels.cancel_order(order["_id"], by="anna")
    assert cells(session, [HOUSE, PLAIN]) == [BLOCKED, FREE] and available(session) == free_before
    orders.release_order_seats(mongo.orders().find_one({"_id": order["_id"]}) | {"lines": order["lines"]})
    assert cells(session, [HOUSE, PLAIN]) == [BLOCKED, FREE] and available(session) == free_before  # repeat: no-op
    assert check_invariants() == []


def test_an_exchange_away_from_a_house_seat_blocks_it_again():
    session, order, free_before = sold_at_counter()
    done = exchanges.exchange(order["_id"], [ticket(order, HOUSE)], session["_id"], ["2:0"], settle=exchanges.COUNTER)
    assert done["exchanges"][0]["state"] == "done"
    assert cells(session, [HOUSE, PLAIN, "2:0"]) == [BLOCKED, SOLD, SOLD]
    assert available(session) == free_before - 2
    assert check_invariants() == []


def test_canceling_the_session_blocks_its_house_seats_again():
    session, order, free_before = sold_at_counter()
    session_cancel.start(session["_id"], by="anna")
    cancels.cancel_session_orders(session["_id"])
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "refunded"
    assert cells(session, [HOUSE, PLAIN]) == [BLOCKED, FREE] and available(session) == free_before
    assert check_invariants() == []


def test_an_invoice_reservation_ending_unpaid_blocks_the_house_seat_again():
    session = make_session(days=5)
    session_service.set_blocked(session["_id"], [(0, 0)], True)
    free_before = available(session)
    held = holds.hold_seats(session["_id"], STAFF, None, [HOUSE, PLAIN], context=holds.HoldContext(house_seats=True))
    due = (mongo.sessions().find_one({"_id": session["_id"]})["start"] - timedelta(days=2)).date()
    order = counter.sell(STAFF, held.cart_id, counter.CounterSale(name="Ada", method=counter.INVOICE, due=due))
    assert cells(session, [HOUSE, PLAIN]) == [HELD, HELD]
    cart_expiry.expire_stale_carts(now=order["payment"]["until"])
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "expired"
    assert cells(session, [HOUSE, PLAIN]) == [BLOCKED, FREE] and available(session) == free_before
    assert check_invariants() == []
