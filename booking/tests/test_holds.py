from datetime import timedelta

import pytest
from bson import ObjectId

from booking import clock, mongo, selectors
from booking.errors import (
    CartExpired,
    InvalidRequest,
    NoAdjacentSeats,
    NotFound,
    OrphanSeat,
    SeatsTaken,
    SessionNotOnSale,
    TooManySeats,
)
from booking.invariants import check_invariants
from booking.seatmap import FREE, HELD
from booking.services import holds
from booking.services.carts import expire_stale_carts
from booking.tests.factories import make_session

ALICE, BOB = "s:alice", "s:bob"


def state(session, key):
    r, c = (int(x) for x in key.split(":"))
    return selectors.get_session(session["_id"])["seats"][r][c]


def test_hold_marks_seats_held_starts_a_cart_and_counts_availability():
    session = make_session()
    result = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    fresh = selectors.get_session(session["_id"])
    assert fresh["seats"][0][:2] == [HELD, HELD]
    assert fresh["seatsAvailable"] == session["seatsAvailable"] - 2
    assert fresh["version"] > session["version"]
    [reservation] = fresh["reservations"]
    assert reservation["_id"] == result.cart_id and reservation["seats"] == ["0:0", "0:1"]
    cart = mongo.carts().find_one({"_id": result.cart_id})
    assert cart["owner"] == ALICE and cart["state"] == "active"
    assert [i["key"] for i in cart["items"]] == ["0:0", "0:1"]
    assert cart["total"] == 4000
    assert check_invariants() == []


def test_second_hold_joins_the_same_cart_and_reservation():
    session = make_session()
    first = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    second = holds.hold_seats(session["_id"], ALICE, first.cart_id, ["0:1"])
    assert second.cart_id == first.cart_id
    [reservation] = selectors.get_session(session["_id"])["reservations"]
    assert reservation["seats"] == ["0:0", "0:1"]
    assert reservation["total"] == 4000
    assert check_invariants() == []


def test_conflict_names_the_seats_taken_and_changes_nothing():
    session = make_session()
    holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    before = selectors.get_session(session["_id"])
    with pytest.raises(SeatsTaken) as exc:
        holds.hold_seats(session["_id"], BOB, None, ["0:1", "0:2"])
    assert exc.value.seat_names == ["Row A, seat 2"]
    assert "Row A, seat 2" in exc.value.message
    assert selectors.get_session(session["_id"]) == before
    assert mongo.carts().count_documents({"owner": BOB}) == 0


def test_seat_of_an_expired_hold_is_free_for_the_next_buyer_without_the_worker():
    session = make_session()
    alice = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    mongo.carts().update_one({"_id": alice.cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    bob = holds.hold_seats(session["_id"], BOB, None, ["0:0"])
    assert mongo.carts().find_one({"_id": alice.cart_id})["state"] == "expired"
    fresh = selectors.get_session(session["_id"])
    assert [r["_id"] for r in fresh["reservations"]] == [bob.cart_id]
    assert state(session, "0:1") == FREE
    assert check_invariants() == []


@pytest.mark.parametrize(
    "keys, error",
    [
        (["0:4"], InvalidRequest),  # the aisle
        (["9:0"], InvalidRequest),  # no such row
        (["0:99"], InvalidRequest),
        (["0:0", "0:0"], InvalidRequest),
        (["x"], InvalidRequest),
        (["-1:2"], InvalidRequest),
        ([], InvalidRequest),
        ([f"0:{i}" for i in range(11)], TooManySeats),
    ],
)
def test_bad_seat_requests_are_refused_and_change_nothing(keys, error):
    session = make_session()
    before = selectors.get_session(session["_id"])
    with pytest.raises(error) as exc:
        holds.hold_seats(session["_id"], ALICE, None, keys)
    assert exc.value.message
    assert selectors.get_session(session["_id"]) == before
    assert mongo.carts().count_documents({}) == 0


def test_cart_limit_counts_seats_already_held(settings):
    settings.BOOKING_MAX_SEATS_PER_CART = 3
    session = make_session()
    first = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    with pytest.raises(TooManySeats, match="at most 3"):
        holds.hold_seats(session["_id"], ALICE, first.cart_id, ["0:2", "0:3"])
    assert check_invariants() == []


def test_orphan_seat_rule(settings):
    session = make_session()
    with pytest.raises(OrphanSeat, match="Row A, seat 1"):
        holds.hold_seats(session["_id"], ALICE, None, ["0:1"])
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    holds.hold_seats(session["_id"], ALICE, None, ["0:1"])


def test_past_canceled_and_unknown_sessions_are_not_on_sale():
    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"start": clock.now() - timedelta(minutes=1)}})
    with pytest.raises(SessionNotOnSale, match="already started"):
        holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    other = make_session()
    mongo.sessions().update_one({"_id": other["_id"]}, {"$set": {"status": "canceled"}})
    with pytest.raises(SessionNotOnSale):
        holds.hold_seats(other["_id"], ALICE, None, ["0:0"])
    with pytest.raises(NotFound):
        holds.hold_seats(ObjectId(), ALICE, None, ["0:0"])


def test_release_one_seat_only_by_its_owner():
    session = make_session()
    alice = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    with pytest.raises(NotFound):
        holds.release_seats(session["_id"], BOB, alice.cart_id, ["0:1"])
    assert state(session, "0:1") == HELD
    holds.release_seats(session["_id"], ALICE, alice.cart_id, ["0:1"])
    assert state(session, "0:1") == FREE
    cart = mongo.carts().find_one({"_id": alice.cart_id})
    assert [i["key"] for i in cart["items"]] == ["0:0"] and cart["total"] == 2000
    with pytest.raises(InvalidRequest):
        holds.release_seats(session["_id"], ALICE, alice.cart_id, ["0:1"])
    assert check_invariants() == []


def test_holding_extends_the_cart_but_never_past_the_cap(settings):
    settings.BOOKING_HOLD_SECONDS = 600
    settings.BOOKING_HOLD_CAP_SECONDS = 900
    session = make_session()
    first = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    mongo.carts().update_one({"_id": first.cart_id}, {"$set": {"firstHoldOn": clock.now() - timedelta(seconds=800)}})
    second = holds.hold_seats(session["_id"], ALICE, first.cart_id, ["0:1"])
    cart = mongo.carts().find_one({"_id": first.cart_id})
    assert second.expires_at == cart["expiresAt"]
    assert cart["expiresAt"] <= cart["firstHoldOn"] + timedelta(seconds=900)
    assert cart["expiresAt"] < clock.now() + timedelta(seconds=200)


def test_expired_cart_starts_a_new_cart_on_the_next_hold():
    session = make_session()
    first = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    mongo.carts().update_one({"_id": first.cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    second = holds.hold_seats(session["_id"], ALICE, first.cart_id, ["0:2", "0:3"])
    assert second.cart_id != first.cart_id
    assert state(session, "0:0") == FREE
    assert check_invariants() == []


def test_cart_write_failing_gives_the_seats_back():
    session = make_session()
    first = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    # the cart is checked out elsewhere between our read and our cart write
    original = holds.load_live_cart

    def stale_read(owner, cart_id, now, cart=holds.UNREAD):
        cart = original(owner, cart_id, now, cart)
        mongo.carts().update_one({"_id": cart_id}, {"$set": {"state": "canceled"}})
        return cart

    holds.load_live_cart = stale_read
    try:
        with pytest.raises(CartExpired):
            holds.hold_seats(session["_id"], ALICE, first.cart_id, ["0:1"])
    finally:
        holds.load_live_cart = original
    assert state(session, "0:1") == FREE


def test_best_available_holds_adjacent_seats_and_says_when_there_are_none():
    session = make_session(grid="A: sss.ss\nB: ss.sss")
    result = holds.hold_best_available(session["_id"], ALICE, None, 3)
    assert len({r for r, _ in result.seats}) == 1 and len(result.seats) == 3
    holds.hold_best_available(session["_id"], BOB, None, 3)
    before = selectors.get_session(session["_id"])
    with pytest.raises(NoAdjacentSeats) as exc:
        holds.hold_best_available(session["_id"], "s:carol", None, 3)
    assert "no 3 seats together" in exc.value.message
    assert len(exc.value.suggestion) == 3
    assert all(before["seats"][r][c] == FREE for r, c in exc.value.suggestion)
    assert selectors.get_session(session["_id"]) == before
    with pytest.raises(NoAdjacentSeats, match="not 5 seats left"):
        holds.hold_best_available(session["_id"], "s:carol", None, 5)
    with pytest.raises(InvalidRequest):
        holds.hold_best_available(session["_id"], "s:carol", None, 0)
    assert check_invariants() == []


def test_expire_stale_carts_frees_their_seats_once():
    session = make_session()
    a = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    holds.hold_seats(session["_id"], BOB, None, ["2:0", "2:1"])
    mongo.carts().update_one({"_id": a.cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    report = expire_stale_carts()
    assert (report.carts_expired, report.seats_released) == (1, 2)
    assert expire_stale_carts().carts_expired == 0
    assert state(session, "0:0") == FREE and state(session, "2:0") == HELD
    assert check_invariants() == []


def test_release_a_whole_reservation_keeps_holds_in_other_sessions():
    first, second = make_session(), make_session(days=2)
    cart = holds.hold_seats(first["_id"], ALICE, None, ["0:0", "0:1"])
    holds.hold_seats(second["_id"], ALICE, cart.cart_id, ["2:0"])
    with pytest.raises(NotFound):
        holds.release_reservation(first["_id"], BOB, cart.cart_id)
    assert holds.release_reservation(first["_id"], ALICE, cart.cart_id) == 2
    assert selectors.get_session(first["_id"])["seatsAvailable"] == first["seatsAvailable"]
    assert state(second, "2:0") == HELD
    with pytest.raises(InvalidRequest):
        holds.release_reservation(first["_id"], ALICE, cart.cart_id)
    assert check_invariants() == []
