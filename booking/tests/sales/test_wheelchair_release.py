"""Unsold wheelchair spaces go on general sale BOOKING_WHEELCHAIR_RELEASE_BEFORE before the show
(sales/wheelchair.py, the beat task release_wheelchair_spaces): at the exact boundary, once,
never a space a buyer holds, and safely when a buyer holds it at the same moment."""

import threading
import time
from datetime import datetime, timedelta

import pytest
from django.conf import settings

from booking.control.seat_chart import category_legend, layout_rows
from booking.core import clock, mongo
from booking.sales import carts, holds, wheelchair
from booking.tests.factories import make_session, make_theater, reread
from booking.upkeep import tasks
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, HELD, seat_at

# Row A: wheelchair spaces at both ends, companions beside them; row B: ordinary seats.
GRID = "A: Ssss.sssS\nB: ssss.ssss\n"
LEFT, RIGHT = (0, 0), (0, 8)


@pytest.fixture
def at(monkeypatch):
    """at(moment): the engine's clock (booking/core/clock.py) reads ``moment`` from now on."""

    def set_now(moment):
        monkeypatch.setattr(clock, "now", lambda: moment)

    return set_now


@pytest.fixture
def show():
    return make_session(make_theater(GRID), days=2, prices={"s": 2000, "p": 3500})


def cell(session_id, r, c) -> dict:
    return reread(session_id)["layout"]["rows"][r]["cells"][c]


def due(show) -> datetime:
    """The first moment the show's spaces are due: exactly the release period before its start."""
    return show["start"] - settings.BOOKING_WHEELCHAIR_RELEASE_BEFORE


def test_released_at_the_exact_boundary_and_not_a_millisecond_before(show, at):
    at(due(show) - timedelta(milliseconds=1))
    assert tasks.release_wheelchair_spaces() == {"sessions": 0, "released": 0}
    assert cell(show["_id"], *LEFT)["wheelchair"] is True

    at(due(show))
    version = reread(show["_id"])["version"]
    assert tasks.release_wheelchair_spaces() == {"sessions": 1, "released": 2}
    after = reread(show["_id"])
    left = seat_at(after["layout"], 0, 0)
    assert "wheelchair" not in left and left["releasedFrom"] == "wheelchair" and left["releasedOn"] == due(show)
    assert after["seats"][0][0] == FREE  # still free: on general sale now
    assert after["version"] == version + 1 and after["layoutRev"] == 1  # one write for the session
    # the seats beside released spaces are no longer companion seats (no wheelchair space beside them)
    assert not any(after["layout"]["rows"][0]["cells"][c].get("companion") for c in (1, 7))


def test_running_again_changes_nothing(show, at):
    at(due(show))
    wheelchair.release_due_spaces()
    before = reread(show["_id"])
    assert wheelchair.release_due_spaces().released == 0
    assert reread(show["_id"]) == before


def test_the_period_comes_from_the_setting(show, at, settings):
    settings.BOOKING_WHEELCHAIR_RELEASE_BEFORE = timedelta(hours=72)  # the show is 48 h away
    at(clock.now())
    assert wheelchair.release_due_spaces().released == 2


def test_a_started_or_canceled_show_is_left_alone(show, at):
    mongo.sessions().update_one({"_id": show["_id"]}, {"$set": {"status": "canceled"}})
    at(due(show))
    assert wheelchair.release_due_spaces().released == 0
    at(show["start"])  # started: out of the window
    mongo.sessions().update_one({"_id": show["_id"]}, {"$set": {"status": "on_sale"}})
    assert wheelchair.release_due_spaces().released == 0


def test_a_held_space_stays_a_wheelchair_space_until_it_is_free_again(show, at):
    at(due(show) - timedelta(hours=1))
    held = holds.hold_seats(show["_id"], "s:wheelchair-user", None, ["0:0"], needs_wheelchair=True)
    [item] = mongo.carts().find_one({"_id": held.cart_id})["items"]
    assert item["wheelchair"] is True

    at(due(show))
    assert wheelchair.release_due_spaces().released == 1  # the right one only
    assert cell(show["_id"], *LEFT)["wheelchair"] is True and cell(show["_id"], 0, 1)["companion"] is True
    assert "wheelchair" not in cell(show["_id"], *RIGHT)

    # the buyer gives up: the next run releases the space
    carts.cancel_cart(held.cart_id, "s:wheelchair-user")
    assert wheelchair.release_due_spaces().released == 1
    assert "wheelchair" not in cell(show["_id"], *LEFT) and "companion" not in cell(show["_id"], 0, 1)
    assert check_invariants() == []


def test_a_buyer_holding_the_space_between_the_release_read_and_its_write_keeps_a_wheelchair_space(
    show, at, fault_hook
):
    at(due(show))
    holder: dict = {}

    def buyer_holds_first(name):
        if name == "wheelchair.before_release" and not holder:
            holder["hold"] = holds.hold_seats(show["_id"], "s:wheelchair-user", None, ["0:0"])

    fault_hook(buyer_holds_first)
    assert wheelchair.release_due_spaces().released == 1  # missed once, read again, released the other
    session = reread(show["_id"])
    assert session["seats"][0][0] == HELD and session["layout"]["rows"][0]["cells"][0]["wheelchair"] is True
    assert "wheelchair" not in seat_at(session["layout"], 0, 8)
    [item] = mongo.carts().find_one({"_id": holder["hold"].cart_id})["items"]
    assert item["wheelchair"] is True  # a companion ticket can still go with it
    assert check_invariants() == []


def test_a_buyer_whose_process_knew_the_old_layout_holds_an_ordinary_seat_after_the_release(show, at):
    at(due(show))
    holds.hold_seats(show["_id"], "s:someone", None, ["1:0", "1:1"])  # this process now keeps the layout
    wheelchair.release_due_spaces()
    held = holds.hold_seats(show["_id"], "s:late", None, ["0:0"])  # the hold's filter names the old layoutRev
    [item] = mongo.carts().find_one({"_id": held.cart_id})["items"]
    assert "wheelchair" not in item  # an ordinary seat: no companion ticket goes with it
    assert reread(show["_id"])["seats"][0][0] == HELD
    assert check_invariants() == []


def race_once(show: dict, owner: str, release_delay: float) -> dict:
    """The release and a buyer's hold of the left space, started together by a barrier."""
    start = threading.Barrier(2)
    result: dict = {}

    def release():
        start.wait()
        time.sleep(release_delay)  # the hold is the longer operation: let it start first at times
        result["released"] = wheelchair.release_session(show["_id"], clock.now())

    def buy():
        start.wait()
        result["hold"] = holds.hold_seats(show["_id"], owner, None, ["0:0"])

    threads = [threading.Thread(target=release), threading.Thread(target=buy)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return result


@pytest.mark.slow
def test_release_and_a_buyer_racing_for_the_same_space(at):
    """Both at the same moment, many times: whoever wins, the seat is held once, and the space is
    a wheelchair space in the cart exactly when it still is one in the layout."""
    theater = make_theater(GRID)
    for round_ in range(12):
        show = make_session(theater, days=0.5, prices={"s": 2000, "p": 3500})
        at(clock.now())
        result = race_once(show, f"s:racer-{round_}", round_ % 4 * 0.005)
        session = reread(show["_id"])
        [item] = mongo.carts().find_one({"_id": result["hold"].cart_id})["items"]
        space_kept = bool(session["layout"]["rows"][0]["cells"][0].get("wheelchair"))
        assert session["seats"][0][0] == HELD
        assert bool(item.get("wheelchair")) == space_kept, (round_, item, space_kept)
        assert result["released"] == (1 if space_kept else 2)
        assert "wheelchair" not in seat_at(session["layout"], 0, 8)
    assert check_invariants() == []


def test_buyers_see_an_ordinary_seat_and_staff_see_it_was_released(client, show, at):
    at(due(show))
    wheelchair.release_due_spaces()
    html = client.get(f"/sessions/{show['_id']}/").content.decode()
    button = html[html.index('id="s0-0"') - 60 : html.index('id="s0-0"') + 120]
    assert "wheelchair" not in button and ">1</button>" in button and "available" in button

    layout = reread(show["_id"])["layout"]
    [left] = [c for c in layout_rows(layout)[0].cells[:1]]
    assert left.released and not left.wheelchair and "on general sale since" in left.title
    assert {"code": "", "name": "wheelchair spaces now on general sale (dashed outline)", "color": "", "count": 2} in (
        category_legend(layout)
    )


def test_the_beat_schedule_runs_the_task():
    entry = settings.CELERY_BEAT_SCHEDULE["release-wheelchair-spaces"]
    assert entry["task"] == "booking.tasks.release_wheelchair_spaces"
    assert entry["schedule"] == settings.BOOKING_WHEELCHAIR_RELEASE_EVERY_SECONDS
    assert timedelta(hours=24) == settings.BOOKING_WHEELCHAIR_RELEASE_BEFORE  # the default
