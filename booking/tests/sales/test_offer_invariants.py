"""check_invariants on offers: it reports an order not charged as its seats were held
and its code redeemed, and a code used more than its cap. Each test corrupts the data the way a
bug would and expects the checker (and the management command) to say so."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from booking.core import mongo
from booking.payments import flow as payments
from booking.sales import holds, offers, promos
from booking.tests.factories import TYPES, make_session, make_theater
from booking.tests.paying import pay
from booking.upkeep.invariants import check_invariants

pytestmark = pytest.mark.django_db

OWNER = "s:ada"


@pytest.fixture
def order(settings):
    """Paid by card (localstripe): seats 0:0 full, 0:1 reduced, code 10 % off."""
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500}})
    promos.create_code("TENOFF", "percent", 10, cap=2)
    hold = holds.hold_seats(session["_id"], OWNER, None, ["0:0", "0:1"])
    offers.choose_ticket_type(OWNER, hold.cart_id, session["_id"], "0:1", "reduced")
    promos.apply_code(OWNER, hold.cart_id, "TENOFF")
    done = pay(payments.start(OWNER, hold.cart_id, "Ada", "ada@example.com"))
    assert done["total"] == 3500 - 350 and check_invariants() == []
    return done


def breaches_about(word: str) -> list[str]:
    return [b for b in check_invariants() if word in b]


def set_order(order, **fields):
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": fields})


def test_a_line_charged_other_than_held_is_reported(order):
    set_order(order, **{"lines.0.price": 1800, "total": 1800 + 1500 - 330})
    assert breaches_about("is not charged as it was held") == [
        f"order {order['ref']}: seat 0:0 is not charged as it was held"
    ]


def test_a_ticket_type_other_than_held_is_reported(order):
    set_order(order, **{"lines.1.ticketType": "companion"})
    assert len(breaches_about("is not charged as it was held")) == 1


def test_a_price_not_from_the_table_kept_at_hold_time_is_reported(order):
    """The cart item and the order agree, but not with the row of the table the hold kept."""
    mongo.carts().update_one({"_id": order["cartId"]}, {"$set": {"items.1.price": 1000}})
    set_order(order, **{"lines.1.price": 1000, "lines.1.discount": 100, "total": 2000 + 1000 - 300})
    assert breaches_about("the price table said") == [
        f"order {order['ref']}: seat 0:1 costs 1000 as reduced, the price table said 1500 when it was held"
    ]


def test_a_discount_other_than_the_code_takes_off_is_reported(order):
    set_order(order, **{"lines.0.discount": 1000, "total": 3500 - 1150})
    assert breaches_about("not what code TENOFF takes off") == [
        f"order {order['ref']}: its discounts are not what code TENOFF takes off"
    ]


def test_a_total_that_is_not_its_lines_less_the_code_is_reported(order):
    set_order(order, total=3500)
    assert breaches_about("total 3500") == [
        f"order {order['ref']}: total 3500, its tickets less the code, fee and donation 3150"
    ]


def test_a_discount_without_a_code_is_reported(order):
    mongo.orders().update_one({"_id": order["_id"]}, {"$unset": {"promo": ""}})
    mongo.carts().update_one({"_id": order["cartId"]}, {"$unset": {"promo": ""}})
    assert breaches_about("a discount without a promo code") == [
        f"order {order['ref']}: a discount without a promo code"
    ]


def test_the_order_is_checked_against_its_own_code_terms_after_its_cart_is_gone(order):
    mongo.carts().delete_one({"_id": order["cartId"]})  # the carts' TTL, 30 days after the sale
    assert check_invariants() == []
    set_order(order, **{"lines.1.discount": 0, "total": 3500 - 200})
    assert len(breaches_about("takes off")) == 1


def test_a_code_used_more_than_its_cap_is_reported(order):
    code = mongo.promo_codes().find_one({"code": "TENOFF"})
    mongo.promo_codes().update_one({"_id": code["_id"]}, {"$set": {"uses": 3}})
    assert breaches_about("promo code TENOFF") == ["promo code TENOFF is used 3 times, its cap is 2"]
    mongo.promo_codes().update_one({"_id": code["_id"]}, {"$set": {"uses": -1}})
    assert breaches_about("promo code TENOFF") == ["promo code TENOFF is used -1 times, its cap is 2"]


def test_more_bookings_holding_a_code_than_its_cap_is_reported_whatever_the_counter_says(order):
    """A redeem that skipped the code's conditional update: the counter looks fine, the carts do not."""
    cart = mongo.carts().find_one({"_id": order["cartId"]})
    for n in range(2):
        copy = {**cart, "_id": order["cartId"].__class__(), "owner": f"s:other{n}", "state": "expired"}
        mongo.carts().insert_one(copy)
    assert breaches_about("bookings") == ["promo code TENOFF is in 3 bookings, its cap is 2"]
    released = {"$set": {"promo.released": True}}
    mongo.carts().update_many({"owner": {"$in": ["s:other0", "s:other1"]}}, released)
    assert breaches_about("promo code") == []  # uses given back do not count


def test_the_management_command_reports_offer_breaches(order):
    out = StringIO()
    call_command("check_invariants", stdout=out)
    assert "All booking invariants hold" in out.getvalue()
    mongo.promo_codes().update_one({"code": "TENOFF"}, {"$set": {"uses": 5}})
    set_order(order, total=1)
    err = StringIO()
    with pytest.raises(CommandError, match="2 invariant breaches"):
        call_command("check_invariants", stdout=StringIO(), stderr=err)
    assert "BREACH: promo code TENOFF is used 5 times, its cap is 2" in err.getvalue()
    assert f"BREACH: order {order['ref']}: total 1" in err.getvalue()
