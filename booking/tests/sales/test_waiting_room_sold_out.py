"""A sold-out waiting room (sales/waiting_room.py, the supply): when no seat is left that any
buyer could take, the queue in Redis lets nobody in and every answer says so, with the latest
expiry of the seats held; when held seats come back, it lets buyers in again by itself.

Seat states change through the real holds and the real expiry sweep (its clock injected as
``now``); the queue is the real Lua script in the test Redis."""

from datetime import timedelta

import pytest

from booking.core import clock, mongo
from booking.sales import holds, waiting_room
from booking.sales.cart_expiry import expire_stale_carts
from booking.tests.factories import make_session, reread
from booking.venues import seat_grid
from booking.venues.layouts import parse_grid

pytestmark = pytest.mark.django_db

CATEGORIES = [{"code": "s", "name": "Stalls"}]


def open_room(session, rate=60_000):
    """A waiting room whose sale began a minute ago, letting in ``rate`` buyers a minute."""
    now = clock.now()
    return waiting_room.enable(
        session["_id"], opens_at=now - timedelta(minutes=10), on_sale_at=now - timedelta(minutes=1), rate=rate
    )


def cart_expiry(cart_id):
    return mongo.carts().find_one({"_id": cart_id})["expiresAt"]


def ms(moment) -> int:
    return int(moment.timestamp() * 1000)


# --- which seats a buyer could still take ---


@pytest.mark.parametrize(
    ("grid", "states", "takeable"),
    [
        ("A: sss", [[0, 1, 1]], 1),  # one ordinary seat: a buyer asking for one takes it
        ("A: sss", [[2, 1, 2]], 0),
        ("A: sSs", [[1, 0, 2]], 0),  # a wheelchair space, both companion seats taken: nobody's wish
        ("A: sSs", [[1, 0, 0]], 2),  # the space with its companion (and that seat on its own)
        ("A: sS.s", [[1, 0, -1, 0]], 1),  # a gap is no companion; the seat across it is ordinary
    ],
)
def test_takeable_seats_count_only_seats_some_wish_fits(grid, states, takeable):
    layout = parse_grid(grid, CATEGORIES)
    assert seat_grid.takeable_seats(layout, states) == takeable


# --- the queue stops, says so, and reopens ---


def test_a_sold_out_room_lets_nobody_in_says_when_held_seats_may_return_and_reopens_when_they_do():
    session = make_session(grid="A: ss", prices={"s": 2000})
    held = holds.hold_seats(session["_id"], "s:holder", None, ["0:0", "0:1"])
    config = open_room(session)
    expires = cart_expiry(held.cart_id)

    waiting = waiting_room.poll(config, "s:waiting")
    assert waiting.state == "waiting" and waiting.sold_out
    assert waiting.seats_back_ms == ms(expires)
    assert waiting_room.admission_log(config.queue_id) == []
    assert waiting_room.stats(config).admitted == 0

    report = expire_stale_carts(now=expires + timedelta(seconds=1))
    assert report.seats_released == 2
    supply = waiting_room.refresh_supply(config, fresh=True)
    assert supply is not None and not supply.sold_out and supply.takeable == 2
    back = waiting_room.poll(config, "s:waiting")
    assert back.state == "admitted" and not back.sold_out
    assert [owner for owner, _score in waiting_room.admission_log(config.queue_id)] == ["s:waiting"]


def test_every_seat_sold_says_no_seats_can_come_back():
    session = make_session(grid="A: ss", prices={"s": 2000})
    config = open_room(session)
    mongo.sessions().update_one(  # both seats sold (what a paid order leaves), nothing held
        {"_id": session["_id"]}, {"$set": {"seats": [[2, 2]], "seatsAvailable": 0}, "$inc": {"version": 1}}
    )
    waiting_room.refresh_supply(config, fresh=True)
    result = waiting_room.poll(config, "s:waiting")
    assert result.sold_out and result.seats_back_ms == 0


@pytest.mark.parametrize(
    ("grid", "holding", "sold_out"),
    [
        ("A: sss", ["0:0", "0:1"], False),  # one ordinary seat left: it fits a wish of one
        ("A: sSs", ["0:0", "0:2"], True),  # one wheelchair space left, no companion seat: fits none
    ],
    ids=["one-seat-left-that-fits", "one-seat-left-that-fits-no-wish"],
)
def test_one_free_seat_left(grid, holding, sold_out):
    session = make_session(grid=grid, prices={"s": 2000})
    holds.hold_seats(session["_id"], "s:holder", None, holding, allow_orphans=True)
    assert reread(session["_id"])["seatsAvailable"] == 1
    config = open_room(session)
    result = waiting_room.poll(config, "s:waiting")
    assert result.sold_out is sold_out
    assert result.state == ("waiting" if sold_out else "admitted")


def test_an_older_reading_cannot_undo_a_newer_one():
    session = make_session(grid="A: ss", prices={"s": 2000})
    config = open_room(session)
    newer = waiting_room.Supply(takeable=0, held=2, seats_back_at=None, version=7)
    older = waiting_room.Supply(takeable=2, held=0, seats_back_at=None, version=6)
    assert waiting_room.publish_supply(config, newer)
    assert not waiting_room.publish_supply(config, older)
    assert waiting_room.poll(config, "s:waiting").sold_out


def test_a_reading_does_not_create_a_queue_redis_does_not_have():
    session = make_session(grid="A: ss", prices={"s": 2000})
    config = open_room(session)
    waiting_room.drop(config.queue_id)
    assert not waiting_room.publish_supply(config, waiting_room.Supply(0, 0, None, 1))
    assert not waiting_room.store().exists(waiting_room.keys(config.queue_id)[0])
