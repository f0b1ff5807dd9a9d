"""The chaos harness's final checks catch each breach they promise to, on a database doctored by
hand (the control run shows the same through real races; this does not depend on luck)."""

import random

import pytest

from booking.core import mongo
from booking.sales import holds
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.venues.seat_grid import HELD, SOLD
from chaos.buyers import Hall, Stats, free_seats, pick_free_block
from chaos.verify import final_checks


@pytest.fixture
def session():
    return make_session()


def buy(session, owner, keys, name="Ann"):
    held = holds.hold_seats(session["_id"], owner, None, keys)
    return checkout_paid(owner, held.cart_id, name, f"{name.lower()}@example.org")


def test_a_clean_run_passes(session):
    order = buy(session, "s:a", ["0:0", "0:1"])
    stats = Stats(orders_seen={order["ref"]: 2})
    verdict = final_checks(stats, web_log="")
    assert verdict.ok, verdict.breaches + verdict.invariant_breaches
    assert verdict.orders == 1 and verdict.seats_sold == 2


def test_a_seat_sold_twice_is_caught(session):
    first = buy(session, "s:a", ["0:0", "0:1"])
    second = buy(session, "s:b", ["2:0", "2:1"], name="Bob")
    # Doctor the second order so it also has seat 0:0: what a missing hold filter leads to.
    line = {**first["lines"][0], "ticket": "forged-ticket-code-000000"}
    mongo.orders().update_one({"_id": second["_id"]}, {"$push": {"lines": line}})
    verdict = final_checks(Stats(), web_log="")
    assert not verdict.ok
    assert verdict.double_sold_seats == 1
    assert any("0:0" in b and "2 paid orders" in b for b in verdict.breaches)


def test_a_seat_held_by_two_carts_is_caught(session):
    a = holds.hold_seats(session["_id"], "s:a", None, ["0:0", "0:1"])
    b = holds.hold_seats(session["_id"], "s:b", None, ["2:0", "2:1"])
    mongo.sessions().update_one(
        {"_id": session["_id"], "reservations._id": b.cart_id}, {"$push": {"reservations.$.seats": "0:0"}}
    )
    mongo.carts().update_one(
        {"_id": b.cart_id}, {"$push": {"items": {**mongo.carts().find_one({"_id": a.cart_id})["items"][0]}}}
    )
    verdict = final_checks(Stats(), web_log="")
    assert verdict.double_held_seats == 1
    assert not verdict.ok


def test_a_success_the_buyer_saw_without_its_order_is_caught(session):
    verdict = final_checks(Stats(orders_seen={"NOSUCHRF": 2}), web_log="")
    assert "a buyer saw order NOSUCHRF succeed, but no paid order NOSUCHRF exists" in verdict.breaches


def test_an_order_whose_seats_are_not_sold_is_caught(session):
    order = buy(session, "s:a", ["0:0", "0:1"])
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"seats.0.0": HELD}})
    verdict = final_checks(Stats(orders_seen={order["ref"]: 2}), web_log="")
    assert any("seat 0:0 is not sold" in b for b in verdict.breaches)


def test_server_errors_and_503s_without_hint_are_caught(session):
    stats = Stats(server_errors=[("POST", "/checkout/", 500)], retry_after_missing=2)
    verdict = final_checks(stats, web_log="Internal Server Error: /checkout/\n")
    assert any("1 server errors" in b for b in verdict.breaches)
    assert any("without Retry-After" in b for b in verdict.breaches)
    assert any("internal server errors" in b for b in verdict.breaches)


def test_the_reconcile_pass_finishes_what_a_crash_left_before_checking(session):
    held = holds.hold_seats(session["_id"], "s:a", None, ["0:0", "0:1"])
    mongo.carts().delete_one({"_id": held.cart_id})  # the cart vanished: its hold must be released
    verdict = final_checks(Stats(), web_log="")
    assert verdict.ok, verdict.breaches + verdict.invariant_breaches
    assert "holds released: 1" in verdict.reconcile_report


def test_buyers_read_free_seats_off_the_rendered_map():
    html = (
        '<button class="s c-s" name="seat" value="0:0" id="s0-0" aria-label="A1">1</button>'
        '<button class="s h c-s" name="seat" value="0:1" id="s0-1" aria-label="A2" aria-disabled="true">2</button>'
        '<button class="s me c-s" name="seat" value="0:2" id="s0-2" aria-label="A3">3</button>'
        '<button class="s c-p" name="seat" value="1:3" id="s1-3" aria-label="B4">4</button>'
        '<button class="s c-p" name="seat" value="1:4" id="s1-4" aria-label="B5">5</button>'
    )
    assert free_seats(html) == {0: [0], 1: [3, 4]}
    hall = Hall(session_id="x", seats_by_row=[[0, 1, 2], [3, 4]])
    assert pick_free_block(hall, free_seats(html), 2, random.Random(1)) == ["1:3", "1:4"]
    assert pick_free_block(hall, free_seats(html), 3, random.Random(1)) is None


def test_sold_cells_count(session):
    order = buy(session, "s:a", ["0:0"])
    assert mongo.sessions().find_one({"_id": session["_id"]})["seats"][0][0] == SOLD
    assert final_checks(Stats(orders_seen={order["ref"]: 1}), web_log="").ok


def test_money_stripe_kept_for_an_order_that_sells_nothing_is_caught(session, localstripe_url):
    """The run's money check reads localstripe: an order that is no longer paid while its payment
    is kept there is money kept for unsold seats (shared localstripe: only this order is looked at)."""
    from chaos.verify import Verdict, _money_at_stripe

    kept = buy(session, "s:a", ["0:0", "0:1"])
    clean = buy(session, "s:b", ["2:0", "2:1"], name="Bob")
    mongo.orders().update_one({"_id": kept["_id"]}, {"$set": {"state": "expired"}})  # paid at Stripe, not here
    verdict = Verdict()
    _money_at_stripe(verdict, localstripe_url)
    mine = [b for b in verdict.breaches if kept["ref"] in b or clean["ref"] in b]
    assert mine == [f"Stripe kept 40.00 for order {kept['ref']} (expired), whose seats are worth 0.00"]
