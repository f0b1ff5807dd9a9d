"""The box office keeps its own hours: staff selling at the counter hold seats before the
online on-sale, after the online off-sale and in a queued sale without a waiting-room admission,
until the performance starts (plus ``BOOKING_COUNTER_SALE_AFTER_START_SECONDS``); never a canceled
or past performance, never another cart's seats. Buyers' rules are unchanged. The clock is injected
and every limit is tried at its exact value."""

from datetime import timedelta

import pytest
from django.urls import reverse

from booking.core import clock, mongo
from booking.core.errors import SeatsTaken, SessionNotOnSale
from booking.sales import counter, hold_facts, holds, selectors, waiting_room
from booking.sales import sessions as session_service
from booking.sales.admission import AdmissionRequired
from booking.tests.admin_support import make_staff
from booking.tests.factories import make_session, reread
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import FREE, HELD, SOLD

STAFF = counter.staff_owner(7)
BUYER = "s:buyer"
MS = timedelta(milliseconds=1)


@pytest.fixture
def frozen(monkeypatch):
    def freeze(moment):
        monkeypatch.setattr(clock, "now", lambda: moment)

    return freeze


@pytest.fixture(autouse=True)
def _no_hold_rate(settings):
    settings.BOOKING_HOLD_RATE = ""


def windowed():
    """On sale online in an hour, off sale online two hours before the start."""
    session = make_session()
    opens = clock.now().replace(microsecond=0) + timedelta(hours=1)
    closes = session["start"] - timedelta(hours=2)
    session_service.set_sale_window(session["_id"], published=True, sale_opens=opens, sale_closes=closes)
    return selectors.get_session(session["_id"]), opens, closes


def at_counter(session, keys, owner=STAFF):
    return holds.hold_seats(session["_id"], owner, None, keys, context=holds.BOX_OFFICE)


def cell(session, key):
    row, col = (int(p) for p in key.split(":"))
    return mongo.sessions().find_one({"_id": session["_id"]})["seats"][row][col]


@pytest.mark.parametrize("facts_known", [False, True], ids=["session read first", "write without a read"])
def test_the_counter_sells_before_the_online_on_sale_and_buyers_still_wait(frozen, facts_known):
    session, opens, _ = windowed()
    if facts_known:
        hold_facts.sale_facts(session)
    frozen(opens - MS)
    with pytest.raises(SessionNotOnSale, match="Not on sale yet"):
        holds.hold_seats(session["_id"], BUYER, None, ["0:0"])
    held = at_counter(session, ["1:0"])
    assert cell(session, "1:0") == HELD and cell(session, "0:0") == FREE
    order = counter.sell(STAFF, held.cart_id, counter.CounterSale(name="Early Bird", method=counter.CASH, by="anna"))
    assert order["state"] == "paid" and cell(session, "1:0") == SOLD
    assert check_invariants() == []


def test_the_counter_sells_after_the_online_off_sale_until_the_exact_start(frozen):
    session, _, closes = windowed()
    frozen(closes)
    with pytest.raises(SessionNotOnSale, match="closed"):
        holds.hold_seats(session["_id"], BUYER, None, ["0:0"])
    at_counter(session, ["0:0"])
    frozen(session["start"] - MS)
    at_counter(session, ["1:0"], owner=counter.staff_owner(8))
    frozen(session["start"])
    with pytest.raises(SessionNotOnSale, match="already started"):
        at_counter(session, ["2:0"], owner=counter.staff_owner(9))
    assert cell(session, "2:0") == FREE
    reconcile()  # the first staff hold ended (idle) by now: the worker gives its seat back
    assert cell(session, "0:0") == FREE and cell(session, "1:0") == HELD
    assert check_invariants() == []


def test_the_setting_lets_the_counter_sell_into_the_performance_to_its_exact_second(frozen, settings):
    settings.BOOKING_COUNTER_SALE_AFTER_START_SECONDS = 600
    session, _, _ = windowed()
    frozen(session["start"] + timedelta(seconds=600) - MS)
    at_counter(session, ["0:0"])
    with pytest.raises(SessionNotOnSale):
        holds.hold_seats(session["_id"], BUYER, None, ["0:1"])
    frozen(session["start"] + timedelta(seconds=600))
    with pytest.raises(SessionNotOnSale, match="already started"):
        at_counter(session, ["1:0"], owner=counter.staff_owner(8))
    assert cell(session, "1:0") == FREE and cell(session, "0:0") == HELD
    assert check_invariants() == []


def test_the_counter_never_sells_a_canceled_performance_or_another_carts_seats():
    session = make_session()
    holds.hold_seats(session["_id"], BUYER, None, ["0:0"])
    with pytest.raises(SeatsTaken):
        at_counter(session, ["0:0"])
    other = make_session()
    session_service.cancel_session(other["_id"])
    with pytest.raises(SessionNotOnSale):
        at_counter(other, ["0:0"])
    assert cell(other, "0:0") == FREE
    assert check_invariants() == []


@pytest.mark.parametrize("facts_known", [False, True], ids=["session read first", "write without a read"])
def test_the_counter_needs_no_waiting_room_admission_and_buyers_still_do(facts_known):
    session = make_session()
    waiting_room.enable(session["_id"], opens_at=clock.now() - timedelta(minutes=10), on_sale_at=clock.now(), rate=60)
    if facts_known:
        hold_facts.sale_facts(reread(session["_id"]))
    with pytest.raises(AdmissionRequired):
        holds.hold_seats(session["_id"], BUYER, None, ["0:0"])
    at_counter(session, ["0:0"])
    holds.hold_best_available(session["_id"], counter.staff_owner(8), None, 2, context=holds.BOX_OFFICE)
    assert cell(session, "0:0") == HELD
    assert check_invariants() == []


def test_over_http_a_buyer_is_refused_outside_the_window_and_staff_at_the_counter_are_not(client, frozen, db):
    session, opens, closes = windowed()
    waiting_room.enable(session["_id"], opens_at=opens - timedelta(minutes=30), on_sale_at=opens, rate=60)
    for moment in (opens - MS, closes):
        frozen(moment)
        client.logout()
        refused = client.post(f"/sessions/{session['_id']}/toggle", {"seat": "0:0"}, HTTP_HX_REQUEST="true")
        assert refused.status_code in (200, 403, 409) and cell(session, "0:0") == FREE
    client.force_login(make_staff("anna", ["view_session", "sell_at_counter"]))
    sell = reverse("admin:booking_session_sell_toggle", args=[str(session["_id"])])
    admitted = client.post(sell, {"seat": "0:0"}, HTTP_HX_REQUEST="true")
    assert admitted.status_code == 200 and cell(session, "0:0") == HELD
    page = client.get(reverse("admin:booking_session_sell", args=[str(session["_id"])])).content.decode()
    assert (
        "map-lock" not in page
        and "Online sales have closed; the box office sells until the performance starts." in page
    )
    frozen(session["start"])
    late = client.post(sell, {"seat": "1:0"}, HTTP_HX_REQUEST="true")
    assert "already started" in late.content.decode() and cell(session, "1:0") == FREE
    assert check_invariants() == []


def test_the_box_offices_rules_apply_to_staff_carts_only(frozen):
    """Wired by mistake around a buyer's cart, the counter's rules do not let it in early: the hold
    refuses (a programming error, never a sale outside the buyer's window)."""
    session, opens, _ = windowed()
    session_service.set_blocked(session["_id"], [(0, 0)], True)
    frozen(opens - MS)
    for keys in (["1:0"], ["0:0"]):  # an ordinary seat early, a house seat
        with pytest.raises(RuntimeError, match="staff carts only"):
            at_counter(session, keys, owner=BUYER)
    assert cell(session, "1:0") == FREE and mongo.carts().count_documents({"owner": BUYER}) == 0
    assert check_invariants() == []


def test_the_counter_never_sells_after_the_performance_ended_whatever_the_setting(frozen, settings):
    """A setting longer than the performance (here 3 hours for a 2-hour show) stops at its end."""
    settings.BOOKING_COUNTER_SALE_AFTER_START_SECONDS = 3 * 3600
    session, _, _ = windowed()
    assert session["end"] == session["start"] + timedelta(hours=2)
    for facts_known in (False, True):
        frozen(session["end"] - MS)
        owner = counter.staff_owner(20 + facts_known)
        if facts_known:
            hold_facts.sale_facts(reread(session["_id"]))
        at_counter(session, [f"{int(facts_known)}:0"], owner=owner)
        frozen(session["end"])
        with pytest.raises(SessionNotOnSale, match="already"):
            at_counter(session, [f"{int(facts_known)}:1"], owner=counter.staff_owner(30 + facts_known))
        assert cell(session, f"{int(facts_known)}:1") == FREE
    assert check_invariants() == []
