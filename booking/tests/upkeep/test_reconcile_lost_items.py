"""Reconcile drops a cart item whose hold is gone (a crash between release's two writes), and
takes its price off the cart's total once, even when two reconciles do it at the same moment."""

import time
from datetime import timedelta

import pytest

from booking.core import clock, faults, mongo
from booking.sales import holds
from booking.upkeep import reconcile
from booking.upkeep.invariants import check_invariants

ALICE = "s:alice"


@pytest.fixture
def cart_with_a_lost_item(crash_at, fault_hook):
    """Alice holds 0:0 and 0:1 (Stalls, 20.00 each); releasing 0:0 crashed after the session write,
    so the cart still lists 0:0 and counts its price."""
    from booking.tests.factories import make_session

    session = make_session()
    held = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])

    crash_at("release.after_session")
    with pytest.raises(faults.InjectedCrash):
        holds.release_seats(session["_id"], ALICE, held.cart_id, ["0:0"])
    fault_hook(None)
    cart = mongo.carts().find_one({"_id": held.cart_id})
    assert [i["key"] for i in cart["items"]] == ["0:0", "0:1"] and cart["total"] == 4000
    return held.cart_id


def test_two_reconciles_dropping_the_same_lost_item_take_its_price_off_once(cart_with_a_lost_item, fault_hook):
    """The race forced: the first reconcile has read the cart (0:0 lost) and is about to drop the
    item when a second one, reading the same, drops it first. The first one's write must then
    change nothing."""
    after_the_grace = clock.now() + timedelta(seconds=1)
    inner = reconcile.ReconcileReport()
    racing: list[str] = []

    def second_reconcile_in_the_window(name):
        if name == "reconcile.before_drop_item" and not racing:
            racing.append(name)
            reconcile._drop_lost_cart_items(after_the_grace, inner)

    outer = reconcile.ReconcileReport()
    fault_hook(second_reconcile_in_the_window)
    reconcile._drop_lost_cart_items(after_the_grace, outer)
    fault_hook(None)
    assert racing, "the fault point was not reached"
    cart = mongo.carts().find_one({"_id": cart_with_a_lost_item})
    assert [i["key"] for i in cart["items"]] == ["0:1"]
    assert cart["total"] == 2000  # before the fix: 0 (20.00 taken off twice)
    assert inner.cart_items_dropped + outer.cart_items_dropped == 1
    assert check_invariants() == []


def test_reconcile_run_twice_drops_the_item_once(cart_with_a_lost_item):
    later = clock.now() + timedelta(seconds=1)
    first = reconcile.reconcile(now=later, grace=timedelta(0))
    second = reconcile.reconcile(now=later, grace=timedelta(0))
    assert (first.cart_items_dropped, second.cart_items_dropped) == (1, 0)
    assert mongo.carts().find_one({"_id": cart_with_a_lost_item})["total"] == 2000


def test_a_cart_its_buyer_changed_meanwhile_is_left_for_the_next_reconcile(cart_with_a_lost_item):
    """Reconcile only drops items of carts nobody changed within the grace period; the write checks
    that again, so a buyer's click between reconcile's read and its write is not undone blindly."""
    older_than = clock.now()
    time.sleep(0.01)  # the buyer's click below is after it, at millisecond precision
    session_id = mongo.carts().find_one({"_id": cart_with_a_lost_item})["items"][0]["sessionId"]

    def buyer_clicks_in_the_window(name):
        if name == "reconcile.before_drop_item":
            faults.set_hook(None)
            holds.hold_seats(session_id, ALICE, cart_with_a_lost_item, ["2:0"])

    report = reconcile.ReconcileReport()
    faults.set_hook(buyer_clicks_in_the_window)
    try:
        reconcile._drop_lost_cart_items(older_than, report)
    finally:
        faults.set_hook(None)
    cart = mongo.carts().find_one({"_id": cart_with_a_lost_item})
    assert report.cart_items_dropped == 0
    assert [i["key"] for i in cart["items"]] == ["0:0", "0:1", "2:0"] and cart["total"] == 6000
    later = reconcile.reconcile(now=clock.now() + timedelta(seconds=1), grace=timedelta(0))
    assert later.cart_items_dropped == 1
    assert mongo.carts().find_one({"_id": cart_with_a_lost_item})["total"] == 4000
