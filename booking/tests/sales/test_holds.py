import threading
from datetime import timedelta

import pytest
from bson import ObjectId
from hypothesis import given
from hypothesis import strategies as st

from booking.core import clock, mongo
from booking.core.domain import Layout
from booking.core.errors import (
    CartExpired,
    InvalidRequest,
    NoAdjacentSeats,
    NotFound,
    OrphanSeat,
    SeatsTaken,
    SessionNotOnSale,
    TooManySeats,
)
from booking.sales import holds, selectors
from booking.sales.cart_expiry import expire_stale_carts
from booking.tests.factories import CATEGORIES, make_session
from booking.upkeep.invariants import check_invariants
from booking.venues.layouts import parse_grid
from booking.venues.seat_grid import FREE, GAP, HELD, SOLD, orphans_created

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


def test_cart_write_failing_gives_the_seats_back(monkeypatch):
    session = make_session()
    first = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    # the cart is checked out elsewhere between our read and our cart write
    original = holds.load_live_cart

    def stale_read(owner, cart_id, now, cart=holds.UNREAD):
        cart = original(owner, cart_id, now, cart)
        mongo.carts().update_one({"_id": cart_id}, {"$set": {"state": "canceled"}})
        return cart

    monkeypatch.setattr(holds, "load_live_cart", stale_read)
    with pytest.raises(CartExpired):
        holds.hold_seats(session["_id"], ALICE, first.cart_id, ["0:1"])
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


# --- holds that do not read the session: the write's filter checks what the read would have ---


def test_a_hold_by_known_facts_is_priced_by_new_prices():
    session = make_session()
    holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])  # this process now knows the session
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"prices.s": 2600}})  # staff, another process
    later = holds.hold_seats(session["_id"], BOB, None, ["2:0", "2:1"])
    assert [item["price"] for item in later.cart["items"]] == [2600, 2600]
    [_, reservation] = selectors.get_session(session["_id"])["reservations"]
    assert reservation["total"] == 5200
    assert check_invariants() == []


def test_a_hold_by_known_facts_takes_seats_by_the_new_layout():
    session = make_session(grid="A: ssss\nB: ssss")
    first = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])  # this process knows the session
    holds.release_seats(session["_id"], ALICE, first.cart_id, ["0:0", "0:1"])
    # staff copy a new layout (allowed: no seat taken): row B is premium now, and one seat wider
    layout = parse_grid("A: ssss\nB: ppppp", CATEGORIES)
    mongo.sessions().update_one(
        {"_id": session["_id"]},
        {
            "$set": {
                "layout": layout,
                "seats": [[FREE] * 4, [FREE] * 5],
                "seatsTotal": 9,
                "seatsAvailable": 9,
                "prices": {"s": 2000, "p": 3500},
            },
            "$inc": {"layoutRev": 1},
        },
    )
    held = holds.hold_seats(session["_id"], BOB, None, ["1:0", "1:1"])  # seats of both layouts
    assert [(item["cat"], item["price"]) for item in held.cart["items"]] == [("p", 3500), ("p", 3500)]
    held = holds.hold_seats(session["_id"], BOB, held.cart_id, ["1:2", "1:3", "1:4"])  # 1:4 is new
    assert held.cart["total"] == 5 * 3500
    assert check_invariants() == []


def test_a_hold_by_known_facts_is_refused_once_the_sale_closed():
    session = make_session()
    holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"start": clock.now() - timedelta(minutes=1)}})
    before = selectors.get_session(session["_id"])
    with pytest.raises(SessionNotOnSale, match="already started"):
        holds.hold_seats(session["_id"], BOB, None, ["2:0", "2:1"])
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"status": "canceled"}})
    with pytest.raises(SessionNotOnSale):
        holds.hold_seats(session["_id"], BOB, None, ["2:0", "2:1"])
    assert selectors.get_session(session["_id"])["seats"] == before["seats"]


def test_the_write_itself_refuses_to_leave_a_seat_alone():
    """Two buyers each take an end of a row of three at the same moment: each choice alone is
    fine, together they would leave the middle seat alone. The rule is in the write's filter, so
    one of them is refused however the two interleave (a check on a read before the write lets
    both through when both read before either writes)."""
    rounds = 30
    sessions = [make_session(grid="A: sss") for _ in range(rounds)]
    for n, session in enumerate(sessions):  # this process knows them: no read before the writes
        holds.hold_seats(session["_id"], f"s:warmup{n}", None, ["0:0", "0:1", "0:2"])
        mongo.sessions().update_one(
            {"_id": session["_id"]}, {"$set": {"seats": [[FREE] * 3], "seatsAvailable": 3, "reservations": []}}
        )
    mongo.carts().delete_many({})
    results = []

    def take(session, owner, key, barrier):
        barrier.wait()
        try:
            holds.hold_seats(session["_id"], owner, None, [key])
            results.append("held")
        except OrphanSeat:
            results.append("refused")
        except Exception as exc:  # noqa: BLE001 - shown by the assertion below
            results.append(repr(exc))

    for n, session in enumerate(sessions):
        barrier = threading.Barrier(2)
        threads = [
            threading.Thread(target=take, args=(session, owner, key, barrier))
            for owner, key in ((f"s:alice{n}", "0:0"), (f"s:bob{n}", "0:2"))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [r for r in results if r not in ("held", "refused")] == []
    for session in sessions:
        assert selectors.get_session(session["_id"])["seats"][0].count(HELD) == 1
    assert results.count("held") == rounds and results.count("refused") == rounds


@given(
    row=st.lists(st.sampled_from([FREE, HELD, SOLD, GAP]), min_size=1, max_size=9),
    picks=st.sets(st.integers(0, 8), min_size=1, max_size=4),
)
def test_the_write_filter_and_the_read_check_agree_on_seats_left_alone(row, picks):
    coords = [(0, c) for c in sorted(picks) if c < len(row) and row[c] == FREE]
    if not coords:
        return
    layout: Layout = {
        "categories": [],
        "rows": [{"label": "A", "cells": [None if s == GAP else {"label": "x", "cat": "s"} for s in row]}],
    }
    allowed = all(_matches(row, guard) for guard in holds.no_seat_left_alone(layout, coords))
    assert allowed == (orphans_created([row], coords) == [])


def _matches(row: list[int], clause: dict) -> bool:
    """The clauses no_seat_left_alone builds, evaluated the way MongoDB does."""
    if "$or" in clause:
        return any(_matches(row, alternative) for alternative in clause["$or"])
    [(path, condition)] = clause.items()
    state = row[int(path.rsplit(".", 1)[1])]
    return state != condition["$ne"] if isinstance(condition, dict) else state == condition
