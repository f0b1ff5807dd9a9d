"""Limits at their exact value: what happens at the limit and one step (a millisecond, MongoDB's
date precision; a cent; a character) beyond it: compaction, reconcile's grace, a stuck checkout,
the box office's deadline, a hold's end, an offline scan's age, the highest price, a theater's
name. Each test fails if its comparison is off by one (``<`` for ``<=``); the limits that count
requests or seats have theirs beside them (tests/security/test_limits.py, test_race_windows.py,
test_refunds.py, test_tasks.py, test_holds.py, test_counter.py, test_ticket_types.py)."""

from datetime import timedelta

import pytest

from booking.core import clock, domain, mongo
from booking.core.domain import CartState
from booking.core.errors import CartExpired, InvalidRequest
from booking.payments import BOX_OFFICE
from booking.payments import flow as payments
from booking.sales import checkin, holds, reservations, retention, session_prices, sessions
from booking.sales.cart_expiry import expire_stale_carts
from booking.tests import admin_support as support
from booking.tests.factories import make_session, make_theater
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import FREE, HELD, SOLD

pytestmark = pytest.mark.django_db

MS = timedelta(milliseconds=1)


def whole_ms(moment):
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def cell(session_id, key):
    row, col = (int(x) for x in key.split(":"))
    return mongo.sessions().find_one({"_id": session_id})["seats"][row][col]


def test_a_session_is_compacted_once_it_ended_more_than_the_days_ago(settings):
    """BOOKING_SESSION_COMPACT_AFTER_DAYS: a session that ended exactly that long ago keeps its grid."""
    settings.BOOKING_SESSION_COMPACT_AFTER_DAYS = 7
    session = make_session()
    support.sell(session["_id"], ["0:0"])
    end = whole_ms(clock.now()) - timedelta(days=8)
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"start": end - timedelta(hours=2), "end": end}})
    assert retention.compact_past_sessions(now=end + timedelta(days=7)) == 0
    assert retention.compact_past_sessions(now=end + timedelta(days=7) + MS) == 1
    assert check_invariants() == []


def test_reconcile_leaves_a_hold_exactly_its_grace_old_and_frees_it_a_moment_later(settings):
    """The grace period (BOOKING_RECONCILE_GRACE_SECONDS) of a hold whose cart is gone."""
    session = make_session()
    hold = holds.hold_seats(session["_id"], "s:gone", None, ["0:0"])
    mongo.carts().delete_one({"_id": hold.cart_id, "owner": "s:gone"})
    changed = reservations.read_reservation(session["_id"], hold.cart_id)["modifiedOn"]
    grace = timedelta(seconds=settings.BOOKING_RECONCILE_GRACE_SECONDS)
    assert reconcile(now=changed + grace, grace=grace).holds_released == 0
    assert cell(session["_id"], "0:0") == HELD
    assert reconcile(now=changed + grace + MS, grace=grace).holds_released == 1
    assert cell(session["_id"], "0:0") == FREE
    assert check_invariants() == []


def test_a_checkout_is_stuck_from_exactly_the_stuck_seconds_on(settings):
    """BOOKING_CHECKOUT_STUCK_SECONDS: reconcile finishes a checkout begun before payments that long ago, not sooner."""
    settings.BOOKING_CHECKOUT_STUCK_SECONDS = 120
    session = make_session()
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["1:2", "1:3"])
    began = whole_ms(clock.now())
    mongo.carts().update_one(
        {"_id": cart.cart_id, "owner": "s:ada"},
        {"$set": {"state": "checking_out", "checkoutOn": began, "customer": {"name": "Ada", "email": "a@b.co"}}},
    )
    no_grace = timedelta(0)
    assert reconcile(now=began + timedelta(seconds=120) - MS, grace=no_grace).checkouts_finished == 0
    assert mongo.carts().find_one({"_id": cart.cart_id})["state"] == "checking_out"
    assert reconcile(now=began + timedelta(seconds=120), grace=no_grace).checkouts_finished == 1
    assert mongo.carts().find_one({"_id": cart.cart_id})["state"] == CartState.DONE
    assert cell(session["_id"], "1:2") == SOLD
    assert check_invariants() == []


def test_the_box_office_is_offered_only_while_its_deadline_is_beyond_a_card_payments_window(settings):
    """Paying at the box office needs its deadline (start - deadlineMinutes) later than the card
    payment's window (BOOKING_PAYMENT_WINDOW_SECONDS) from now: at exactly that moment, not offered."""
    settings.BOOKING_PAYMENT_WINDOW_SECONDS = 600
    now = whole_ms(clock.now())
    at_the_window = now + timedelta(seconds=600) + timedelta(minutes=30)
    session = {"boxOffice": {"enabled": True, "deadlineMinutes": 30}, "start": at_the_window}
    assert payments.box_office_deadline([session], now) is None
    later = {**session, "start": at_the_window + MS}
    assert payments.box_office_deadline([later], now) == now + timedelta(seconds=600) + MS


def test_a_hold_ends_at_exactly_its_expiry(monkeypatch):
    """At ``expiresAt`` a cart is no longer live and the sweep expires it; a millisecond before it
    is live, the sweep leaves it and checkout takes it."""
    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    ending = holds.hold_seats(session["_id"], "s:ada", None, ["0:0", "0:1"])
    cart = mongo.carts().find_one({"_id": ending.cart_id})
    ends = cart["expiresAt"]
    assert domain.is_live(cart, ends - MS) and not domain.is_stale(cart, ends - MS)
    assert not domain.is_live(cart, ends) and domain.is_stale(cart, ends)
    assert expire_stale_carts(now=ends - MS).carts_expired == 0
    assert expire_stale_carts(now=ends).carts_expired == 1
    assert [cell(session["_id"], k) for k in ("0:0", "0:1")] == [FREE, FREE]
    paying = holds.hold_seats(session["_id"], "s:bob", None, ["2:0", "2:1"])
    late = holds.hold_seats(session["_id"], "s:eve", None, ["2:5", "2:6"])
    at = {"moment": mongo.carts().find_one({"_id": paying.cart_id})["expiresAt"] - MS}
    monkeypatch.setattr(clock, "now", lambda: at["moment"])
    assert payments.start("s:bob", paying.cart_id, "Bob", "bob@example.org", BOX_OFFICE)["state"] == "pending_payment"
    at["moment"] = mongo.carts().find_one({"_id": late.cart_id})["expiresAt"]
    with pytest.raises(CartExpired):
        payments.start("s:eve", late.cart_id, "Eve", "eve@example.org", BOX_OFFICE)
    assert check_invariants() == []


def test_an_offline_scan_is_taken_up_to_exactly_two_days_old(monkeypatch):
    """A door's offline scan older than OFFLINE_PAST_LIMIT is refused; exactly that old, admitted."""
    session = make_session()
    first, second = support.sell(session["_id"], ["0:0", "0:1"])["lines"]
    now = whole_ms(clock.now())
    monkeypatch.setattr(clock, "now", lambda: now)
    scope = checkin.get_scope(session["_id"])
    with pytest.raises(InvalidRequest):
        checkin.check_in(
            scope, code=first["ticket"], door="N", by="a", offline=True, at=now - checkin.OFFLINE_PAST_LIMIT - MS
        )
    outcome = checkin.check_in(
        scope, code=second["ticket"], door="N", by="a", offline=True, at=now - checkin.OFFLINE_PAST_LIMIT
    )
    assert outcome.admitted


def test_a_price_of_exactly_the_maximum_is_taken_and_a_cent_more_refused():
    """session_prices.MAX_PRICE (minor units): staff's price form and create_session check it."""
    layout = make_session()["layout"]
    codes = sorted(sessions.category_codes_used(layout))
    assert session_prices.clean_prices(dict.fromkeys(codes, session_prices.MAX_PRICE), layout) == dict.fromkeys(
        codes, session_prices.MAX_PRICE
    )
    with pytest.raises(InvalidRequest, match="too high"):
        session_prices.clean_prices({**dict.fromkeys(codes, 100), codes[0]: session_prices.MAX_PRICE + 1}, layout)


def test_a_theater_name_of_exactly_100_characters_is_taken_and_101_refused():
    assert make_theater(name="N" * 100)["name"] == "N" * 100
    with pytest.raises(InvalidRequest, match="1 to 100 characters"):
        make_theater(name="N" * 101)
    assert mongo.theaters().count_documents({"name": "N" * 101}) == 0
