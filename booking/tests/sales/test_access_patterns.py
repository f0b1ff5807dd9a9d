"""Every access pattern (docs/architecture.md) costs the MongoDB commands it promises, or fewer.

Counted through pymongo's command monitoring, so these are the commands really sent."""

from datetime import timedelta

from django.test import Client

from booking.core import clock, mongo
from booking.payments import flow as payments
from booking.sales import holds, selectors, waiting_list
from booking.sales.carts import expire_cart
from booking.tests import paying
from booking.tests.commands import counting_commands
from booking.tests.factories import make_session, make_theater
from booking.tests.presale.test_waiting_room_views import open_room

ALICE = "s:alice"


def test_q1_whats_on_is_one_indexed_query_and_one_read_by_id():
    make_session()
    make_session(days=2)
    with counting_commands() as counter:
        sessions = selectors.upcoming_sessions()
    assert len(sessions) == 2
    assert counter.commands == [("find", "listings"), ("find", "sessions")]  # the seats left, by _id
    # notablescan refuses an unindexed query; the index that serves it must exist all the same
    leading_keys = [spec["key"][0][0] for spec in mongo.listings().index_information().values()]
    assert "start" in leading_keys


def test_q2_seat_map_is_one_read_by_id_and_q3_version_is_one_tiny_read():
    session = make_session()
    with counting_commands() as counter:
        selectors.get_session(session["_id"])
        selectors.session_version(session["_id"])
    assert counter.commands == [("find", "sessions"), ("find", "sessions")]


def test_c1_hold_is_two_writes():
    session = make_session()
    with counting_commands() as counter:
        first = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    assert counter.writes == [("findAndModify", "sessions"), ("insert", "carts")]
    with counting_commands() as counter:
        holds.hold_seats(session["_id"], ALICE, first.cart_id, ["0:2", "0:3"])
    assert counter.writes == [("findAndModify", "sessions"), ("findAndModify", "carts")]


def test_c1_hold_reads_only_the_carts_once_this_process_knows_the_session():
    session = make_session()
    with counting_commands() as counter:  # the first hold here reads the session (no layout, no reservations)
        first = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    assert counter.commands == [
        ("find", "carts"),
        ("find", "sessions"),
        ("find", "sessions"),  # the layout, kept per process from now on
        ("findAndModify", "sessions"),
        ("insert", "carts"),
    ]
    assert counter.replies_bytes("find", "sessions") < 12_000  # the whole document is about 40 KB
    holds.release_seats(session["_id"], ALICE, first.cart_id, ["0:0", "0:1"])  # the cart's last seats here
    assert selectors.get_session(session["_id"])["reservations"] == []  # so its reservation went too
    for seats in (["0:0", "0:1"], ["0:2", "0:3"]):  # into an empty reservation, then beside it
        with counting_commands() as counter:
            holds.hold_seats(session["_id"], ALICE, first.cart_id, seats)
        # one read of carts (the buyer's, and the live ones the anti-hoarding limits count), two writes
        assert counter.commands == [("find", "carts"), ("findAndModify", "sessions"), ("findAndModify", "carts")]


def test_c2_release_is_two_writes():
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    with counting_commands() as counter:
        holds.release_seats(session["_id"], ALICE, cart.cart_id, ["0:1"])
    # findAndModify: still one write each, and their replies answer the click; nobody ever joined
    # the waiting list (the session write's answer says so), so it is not asked
    assert counter.commands == [("find", "carts"), ("findAndModify", "sessions"), ("findAndModify", "carts")]


def test_with_the_per_address_limit_a_release_writes_no_address_and_the_hold_after_it_reserves_none(settings):
    """The limit's document (sales/client_holds.py) is written by a hold that needs seats counted,
    not by a release, nor by a hold taking the seats a release left counted: then the hold's read
    of its cart is the write that takes them."""
    settings.BOOKING_MAX_HELD_SEATS_PER_CLIENT = 10
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False  # seats picked one by one along a row
    session = make_session()
    here = holds.HoldContext(client="ip:203.0.113.9")
    cart = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"], context=here)
    with counting_commands() as counter:
        holds.hold_seats(session["_id"], ALICE, cart.cart_id, ["0:2"], context=here)  # nothing released yet
    assert counter.commands == [
        ("findAndModify", "carts"),
        ("findAndModify", "client_holds"),
        ("findAndModify", "sessions"),
        ("findAndModify", "carts"),
    ]
    with counting_commands() as counter:
        holds.release_seats(session["_id"], ALICE, cart.cart_id, ["0:1", "0:2"])
    assert counter.commands == [("find", "carts"), ("findAndModify", "sessions"), ("findAndModify", "carts")]
    with counting_commands() as counter:
        holds.hold_seats(session["_id"], ALICE, cart.cart_id, ["0:1", "0:2"], context=here)
    assert counter.commands == [("findAndModify", "carts"), ("findAndModify", "sessions"), ("findAndModify", "carts")]
    with counting_commands() as counter:
        holds.toggle_seat(session["_id"], ALICE, cart.cart_id, "0:2", context=here)  # off
        holds.toggle_seat(session["_id"], ALICE, cart.cart_id, "0:2", context=here)  # on again
    assert (
        counter.commands == [("findAndModify", "carts"), ("findAndModify", "sessions"), ("findAndModify", "carts")] * 2
    )


def test_c2_release_asks_the_waiting_list_once_someone_joined_it():
    session = make_session(grid="A: ss\n")
    cart = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    waiting_list.join(
        session_id=session["_id"], email="w@example.com", count=1, together=True, category=None, language="en"
    )
    with counting_commands() as counter:
        holds.release_seats(session["_id"], ALICE, cart.cart_id, ["0:1"])
    assert counter.commands == [
        ("find", "carts"),
        ("findAndModify", "sessions"),
        ("find", "waiting_list"),
        ("findAndModify", "carts"),
    ]


def test_c3_checkout_of_one_session_is_three_writes_and_its_payment_seven():
    # Was four writes (cart, order, session, cart) when checkout sold the seats. Now checkout
    # starts the payment and the seats are sold when the money is there (payments/flow.py).
    theater = make_theater()
    paying.pay(paying.checkout_paid_setup(make_session(theater), "s:first"))  # its receipt series exists
    session = make_session(theater)
    cart = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    with counting_commands() as counter:
        order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    # cart active -> paying, the order, its payment's id (+ the provider's call, not MongoDB)
    assert counter.writes == [("update", "carts"), ("insert", "orders"), ("update", "orders")]
    means = paying.card()
    with counting_commands() as counter:
        paying.pay(order, means=means)
    assert counter.writes == [
        ("update", "orders"),  # the attempt claimed (a double submit confirms once)
        ("update", "orders"),  # paid (after the provider said so)
        ("update", "sessions"),  # held -> sold
        ("findAndModify", "number_series"),  # receipt: the next number, logged as the order's
        ("update", "orders"),  # receipt: its number on the order
        ("update", "carts"),  # done
        ("update", "orders"),  # settled: its confirmation mail pending
    ]


def test_c4_expiring_a_cart_is_one_write_plus_one_per_session():
    first, second = make_session(), make_session(days=2)
    cart = holds.hold_seats(first["_id"], ALICE, None, ["0:0", "0:1"])
    holds.hold_seats(second["_id"], ALICE, cart.cart_id, ["2:0"])
    mongo.carts().update_one({"_id": cart.cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    with counting_commands() as counter:
        assert expire_cart(cart.cart_id, owner=ALICE) == 3
    # the cart's write is a findAndModify: it answers with the cart's sessions and whether a promo
    # code must be given back
    assert counter.writes == [("findAndModify", "carts"), ("update", "sessions"), ("update", "sessions")]


def test_q2_a_buyer_sent_to_the_waiting_room_costs_one_small_read():
    """In an on-sale rush every arrival opens the seat map first and is sent to the queue; the map
    changes with every hold, so reading it whole would be 38 KB for each of them."""
    session = make_session()
    holds.hold_seats(session["_id"], ALICE, None, ["0:0"])  # a newer version than any map built here
    open_room(session, on_sale=-1, rate=1)
    with counting_commands() as counter:
        answer = Client().get(f"/sessions/{session['_id']}/")
    assert answer.status_code == 302 and "/queue/" in answer["Location"]
    assert counter.commands == [("find", "sessions")]
    assert counter.replies_bytes("find", "sessions") < 4_000
