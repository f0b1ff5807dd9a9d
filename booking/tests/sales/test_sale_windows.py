"""Sale windows: draft sessions, on-sale and off-sale times, refused by the hold's own
write at the exact second (the clock injected), and what existing documents without the fields do."""

from datetime import timedelta

import pytest

from booking.core import clock, mongo
from booking.core.domain import SalePhase, SessionStatus, sale_phase
from booking.core.errors import Conflict, InvalidRequest, NotFound, SessionNotOnSale
from booking.sales import hold_facts, holds, selectors
from booking.sales import sessions as session_service
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import HELD

ALICE = "s:alice"


@pytest.fixture
def frozen(monkeypatch):
    """Set the engine's clock: ``frozen(t)``."""

    def freeze(moment):
        monkeypatch.setattr(clock, "now", lambda: moment)

    return freeze


def windowed(opens_in=timedelta(hours=1), closes_before_start=timedelta(hours=2)):
    session = make_session()
    opens = clock.now().replace(microsecond=0) + opens_in
    closes = session["start"] - closes_before_start
    session_service.set_sale_window(session["_id"], published=True, sale_opens=opens, sale_closes=closes)
    return selectors.get_session(session["_id"]), opens, closes


@pytest.mark.parametrize("facts_known", [False, True], ids=["session read first", "write without a read"])
def test_a_hold_one_second_early_is_refused_at_the_second_accepted(frozen, facts_known):
    session, opens, _ = windowed()
    if facts_known:
        hold_facts.sale_facts(session)  # this process knows layout and prices: the write goes first
    frozen(opens - timedelta(seconds=1))
    with pytest.raises(SessionNotOnSale, match="Not on sale yet"):
        holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    assert selectors.get_session(session["_id"])["seats"][0][0] != HELD
    frozen(opens)
    holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    assert selectors.get_session(session["_id"])["seats"][0][0] == HELD
    assert check_invariants() == []


def test_the_write_itself_refuses_outside_the_window():
    """Not just the page or the read: the findAndModify's filter names the window."""
    session, opens, closes = windowed()
    facts = hold_facts.sale_facts(session)
    assert facts is not None

    def matches(now):
        plan = holds.HoldPlan(session["_id"], session["_id"], [(0, 0)], facts, now, False)
        query, _update, _filters = holds._hold_write(plan, has_reservation=False)
        return mongo.sessions().count_documents(query) == 1

    assert not matches(opens - timedelta(seconds=1))
    assert not matches(opens - timedelta(milliseconds=1))
    assert matches(opens)
    assert matches(closes - timedelta(milliseconds=1))
    assert not matches(closes)


def test_at_off_sale_the_hold_is_refused(frozen):
    session, _opens, closes = windowed(opens_in=-timedelta(minutes=1))
    frozen(closes - timedelta(seconds=1))
    holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    frozen(closes)
    with pytest.raises(SessionNotOnSale, match="closed"):
        holds.hold_seats(session["_id"], "s:bob", None, ["2:0"])
    hold_facts.sale_facts(session)
    with pytest.raises(SessionNotOnSale, match="closed"):
        holds.hold_seats(session["_id"], "s:bob", None, ["2:0"])


def test_documents_without_the_fields_sell_as_before():
    session = make_session()
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert "saleOpens" not in stored and "saleCloses" not in stored
    assert sale_phase(stored, clock.now()) == SalePhase.OPEN
    holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    assert sale_phase(stored, stored["start"]) == SalePhase.STARTED


def test_a_draft_is_not_in_whats_on_and_cannot_be_held():
    session = make_session()
    session_service.set_sale_window(session["_id"], published=False, sale_opens=None, sale_closes=None)
    assert session["_id"] not in {s["_id"] for s in selectors.upcoming_sessions()}
    with pytest.raises(NotFound):
        holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    hold_facts.sale_facts(session)  # even a process that knows it: the write names status on_sale
    with pytest.raises(NotFound):
        holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    session_service.set_sale_window(session["_id"], published=True, sale_opens=None, sale_closes=None)
    holds.hold_seats(session["_id"], ALICE, None, ["0:0"])


def test_published_not_yet_on_sale_is_listed_with_its_opening():
    session, opens, _ = windowed()
    listed = {s["_id"]: s for s in selectors.upcoming_sessions()}
    assert listed[session["_id"]]["saleOpens"] == opens
    assert sale_phase(session, clock.now()) == SalePhase.NOT_YET


def test_bad_windows_are_refused_with_field_messages():
    session = make_session()
    now = clock.now()
    cases = [
        ({"sale_opens": now + timedelta(hours=2), "sale_closes": now + timedelta(hours=1)}, "sale_closes"),
        ({"sale_opens": now, "sale_closes": session["start"] + timedelta(minutes=1)}, "sale_closes"),
        ({"sale_opens": session["start"], "sale_closes": None}, "sale_opens"),
    ]
    for window, field in cases:
        with pytest.raises(InvalidRequest) as caught:
            session_service.set_sale_window(session["_id"], published=True, **window)
        assert field in caught.value.details["fields"]


def test_back_to_draft_only_while_nothing_is_held():
    session = make_session()
    holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    with pytest.raises(Conflict):
        session_service.set_sale_window(session["_id"], published=False, sale_opens=None, sale_closes=None)
    assert selectors.get_session(session["_id"])["status"] == SessionStatus.ON_SALE


# --- the buyer's page ---


@pytest.fixture
def no_hold_rate(settings):
    settings.BOOKING_HOLD_RATE = ""


def test_a_draft_is_404_to_buyers(client):
    session = make_session()
    session_service.set_sale_window(session["_id"], published=False, sale_opens=None, sale_closes=None)
    assert client.get(f"/sessions/{session['_id']}/").status_code == 404
    assert client.get(f"/sessions/{session['_id']}/map/").status_code == 404


def test_before_on_sale_the_map_is_read_only_with_a_countdown_by_server_time(client, no_hold_rate):
    session, opens, _ = windowed()
    page = client.get(f"/sessions/{session['_id']}/").content.decode()
    assert 'fieldset class="map-lock" disabled' in page
    assert f'data-opens-ms="{int(opens.timestamp() * 1000)}"' in page
    now_ms = int(page.split('data-server-now-ms="')[1].split('"')[0])
    assert abs(now_ms - clock.now().timestamp() * 1000) < 5000
    assert "booking/onsale.js" in page and "On sale from" in page
    again = client.get(f"/sessions/{session['_id']}/").content.decode()  # the shared page: fresh server time
    assert "8c1d0e5a" not in again
    response = client.post(f"/sessions/{session['_id']}/toggle", {"seat": "0:0"}, HTTP_HX_REQUEST="true")
    assert "Not on sale yet" in response.content.decode()
    assert selectors.get_session(session["_id"])["seats"][0][0] != HELD


def test_once_on_sale_the_map_is_clickable(client, frozen, no_hold_rate):
    session, opens, _ = windowed()
    frozen(opens)
    page = client.get(f"/sessions/{session['_id']}/").content.decode()
    assert "map-lock" not in page and "sale-countdown" not in page
    client.post(f"/sessions/{session['_id']}/toggle", {"seat": "0:0"}, HTTP_HX_REQUEST="true")
    assert selectors.get_session(session["_id"])["seats"][0][0] == HELD
