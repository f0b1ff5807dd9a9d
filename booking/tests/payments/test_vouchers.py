"""Gift vouchers: issued with a code nobody can guess, spent in one conditional update (a burst of
orders cannot overspend a balance), given back when the order is never paid (also after a crash
between the debit and the order's write), refunded back onto the voucher, refused once expired."""

import math
from datetime import UTC, datetime, timedelta

import pytest
from bson import ObjectId
from django.utils import timezone

from booking.core import clock, faults, mongo
from booking.core.errors import InvalidRequest
from booking.payments import flow as payments
from booking.payments import refunds, voucher_sales, vouchers
from booking.sales import counter, holds
from booking.tests.factories import make_session
from booking.tests.paying import pay
from booking.tests.threads import PerThreadClient, at_once
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import SOLD

NO_GRACE = timedelta(0)
STALLS = 2000  # make_session's price of an "s" seat; the booking fee is 0 in the tests


@pytest.fixture
def session(db):
    return make_session()


def a_voucher(value=5000, **kwargs):
    return vouchers.issue(value=value, sold_via="counter", now=clock.now(), by="anna", **kwargs)


def balance(voucher):
    return mongo.vouchers().find_one({"_id": voucher["_id"]})["balance"]


def checkout(session, owner, keys, code="", method="card"):
    cart = holds.hold_seats(session["_id"], owner, None, list(keys))
    return payments.start(owner, cart.cart_id, "Ada Buyer", "ada@example.com", method, voucher_code=code)


def after_the_hold(settings):
    """Past the hold and the payment window, and reconcile's grace."""
    longest = max(settings.BOOKING_HOLD_SECONDS, settings.BOOKING_PAYMENT_WINDOW_SECONDS)
    return clock.now() + timedelta(seconds=longest + 120)


# --- codes ---


def test_a_code_has_80_random_bits_in_an_alphabet_without_look_alikes(db):
    codes = {a_voucher()["code"] for _ in range(20)}
    assert len(codes) == 20
    assert len(vouchers.ALPHABET) == 32 and not set("IO01") & set(vouchers.ALPHABET)
    assert vouchers.CODE_LENGTH * math.log2(len(vouchers.ALPHABET)) >= 80
    assert all(len(c) == vouchers.CODE_LENGTH and set(c) <= set(vouchers.ALPHABET) for c in codes)


def test_a_code_is_found_as_typed_in_groups_lower_case_with_spaces(db):
    voucher = a_voucher()
    typed = " " + vouchers.display_code(voucher["code"]).lower().replace("-", " - ") + " "
    assert vouchers.usable(typed, clock.now())["_id"] == voucher["_id"]


@pytest.mark.parametrize("typed", ["", "ABCD", "ABCD-EFGH-JKLM-NPQ0", "ABCD-EFGH-JKLM-NPQRS", "x" * 10_000])
def test_what_cannot_be_a_code_is_refused_on_the_voucher_field(db, typed):
    with pytest.raises(InvalidRequest) as refused:
        vouchers.usable(typed, clock.now())
    assert "voucher" in refused.value.details["fields"]


def test_values_are_refused_outside_the_limits_at_their_exact_edges(db, settings):
    settings.BOOKING_VOUCHER_MIN_VALUE, settings.BOOKING_VOUCHER_MAX_VALUE = 500, 50_000
    assert a_voucher(500)["balance"] == 500 and a_voucher(50_000)["balance"] == 50_000
    for wrong in (499, 50_001, 0, -500, True, "1000", 10.5):
        with pytest.raises(InvalidRequest):
            a_voucher(wrong)
    assert mongo.vouchers().count_documents({}) == 2


# --- expiry ---


def test_a_voucher_runs_to_the_end_of_the_third_year_after_its_sale(db, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    settings.BOOKING_VOUCHER_VALIDITY_YEARS, settings.BOOKING_VOUCHER_END_OF_YEAR = 3, True
    sold = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
    assert vouchers.expiry_for(sold) == datetime(2029, 12, 31, 23, 0, tzinfo=UTC)  # midnight in Berlin
    settings.BOOKING_VOUCHER_END_OF_YEAR = False
    assert vouchers.expiry_for(sold) == datetime(2029, 3, 13, 23, 0, tzinfo=UTC)


def test_an_expired_voucher_is_refused_with_its_last_day_and_checkout_changes_nothing(session):
    voucher = a_voucher()
    mongo.vouchers().update_one({"_id": voucher["_id"]}, {"$set": {"expiresAt": clock.now()}})
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    with pytest.raises(InvalidRequest) as refused:
        payments.start("s:ada", cart.cart_id, "Ada", "ada@example.com", voucher_code=voucher["code"])
    assert "expired" in refused.value.message
    assert mongo.carts().find_one({"_id": cart.cart_id})["state"] == "active"
    assert mongo.orders().count_documents({}) == 0 and balance(voucher) == 5000


def test_the_debit_itself_refuses_an_expired_voucher(db):
    voucher = a_voucher()
    now = voucher["expiresAt"]
    assert vouchers.redeem(code=voucher["code"], order_id=ObjectId(), ref="X", wanted=100, now=now) is None
    assert balance(voucher) == 5000


# --- paying an order ---


def test_a_voucher_pays_part_and_the_card_the_rest(session):
    voucher = a_voucher(1500)
    order = checkout(session, "s:ada", ["0:0"], voucher["code"])
    assert order["voucher"]["amount"] == 1500 and order["state"] == "pending_payment"
    intent = mongo.orders().find_one({"_id": order["_id"]})["payment"]["intent"]
    from booking.payments.stripe_provider import client

    assert client().v1.payment_intents.retrieve(intent).amount == STALLS - 1500  # the card is asked for the rest
    paid = pay(order)
    assert paid["paidWith"]["amount"] == STALLS - 1500
    assert balance(voucher) == 0
    assert mongo.vouchers().find_one({"_id": voucher["_id"]})["redemptions"][0]["state"] == "spent"
    assert check_invariants() == []


def test_a_voucher_that_covers_the_order_pays_it_without_a_card(session):
    voucher = a_voucher(5000)
    order = checkout(session, "s:ada", ["0:0", "0:1"], voucher["code"])
    assert order["state"] == "paid" and order["paidWith"]["provider"] == "voucher"
    assert order["paidWith"]["amount"] == 2 * STALLS and order["payment"]["intent"].startswith("voucher:")  # no card
    assert balance(voucher) == 5000 - 2 * STALLS
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    assert seats[0][0] == seats[0][1] == SOLD
    assert check_invariants() == []


def test_a_voucher_is_refused_for_a_box_office_reservation(session):
    voucher = a_voucher()
    with pytest.raises(InvalidRequest) as refused:
        checkout(session, "s:ada", ["0:0"], voucher["code"], method="box_office")
    assert "voucher" in refused.value.details["fields"]
    assert balance(voucher) == 5000


def test_a_refund_of_an_order_paid_by_voucher_goes_back_to_the_voucher_first(session):
    voucher = a_voucher(1500)
    order = pay(checkout(session, "s:ada", ["0:0", "0:1"], voucher["code"]))  # 1500 voucher + 2500 card
    one, two = (line["ticket"] for line in order["lines"])
    refunds.refund_tickets(order["_id"], tickets=[one], by="staff")  # 2000: 1500 to the voucher, 500 to the card
    assert balance(voucher) == 1500
    after = refunds.refund_tickets(order["_id"], tickets=[two], by="staff")
    assert balance(voucher) == 1500  # the voucher got back all it paid; the rest went to the card
    assert sorted((r["payment"]["provider"], r["amount"]) for r in after["refunds"]) == [
        ("stripe", 500),
        ("stripe", 2000),
        ("voucher", 1500),
    ]
    assert all(r["status"] == "succeeded" for r in after["refunds"])
    assert check_invariants() == []


def test_a_refund_repeated_after_a_crash_adds_to_the_voucher_once(session, crash_at):
    voucher = a_voucher(5000)
    order = checkout(session, "s:ada", ["0:0"], voucher["code"])
    crash_at("refund.after_provider")
    with pytest.raises(faults.InjectedCrash):
        refunds.refund_tickets(order["_id"], by="staff")
    faults.set_hook(None)
    assert balance(voucher) == 5000
    refunds.retry_due(clock.now() + timedelta(minutes=5))
    assert balance(voucher) == 5000
    assert mongo.orders().find_one({"_id": order["_id"]})["refunds"][0]["status"] == "succeeded"
    assert check_invariants() == []


# --- given back when never paid ---


def test_a_buyer_giving_up_gets_the_voucher_part_back(session):
    voucher = a_voucher(1500)
    order = checkout(session, "s:ada", ["0:0"], voucher["code"])
    assert balance(voucher) == 0
    payments.cancel_unpaid(order["_id"], owner="s:ada")
    assert balance(voucher) == 1500
    stored = mongo.vouchers().find_one({"_id": voucher["_id"]})
    assert stored["redemptions"][0]["state"] == "returned" and stored["refunds"][0]["amount"] == 1500
    assert check_invariants() == []


def test_an_expired_card_part_gives_the_voucher_back_once_the_card_can_no_longer_pay(session, settings):
    voucher = a_voucher(1500)
    checkout(session, "s:ada", ["0:0"], voucher["code"])
    late = after_the_hold(settings)
    reconcile(late, grace=NO_GRACE)  # the cart and order expire; the card may still pay late
    assert balance(voucher) == 0
    reconcile(late + timedelta(seconds=settings.BOOKING_PAYMENT_LATE_SECONDS + 60), grace=NO_GRACE)
    assert balance(voucher) == 1500
    assert check_invariants() == []


@pytest.mark.parametrize("point", ["voucher.after_debit", "voucher.after_order"])
def test_a_crash_after_the_debit_is_finished_by_the_buyer_going_on(session, crash_at, point):
    voucher = a_voucher(1500)
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        payments.start("s:ada", cart.cart_id, "Ada", "ada@example.com", voucher_code=voucher["code"])
    faults.set_hook(None)
    order = payments.start("s:ada", cart.cart_id, "Ada", "ada@example.com", voucher_code=voucher["code"])
    assert order["voucher"]["amount"] == 1500 and balance(voucher) == 0
    stored = mongo.vouchers().find_one({"_id": voucher["_id"]})
    assert len(stored["redemptions"]) == 1  # the debit made before the crash, not a second one
    pay(order)
    assert check_invariants() == []


def test_a_crash_between_the_debit_and_the_order_is_restored_by_reconcile(session, crash_at, settings):
    voucher = a_voucher(1500)
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    crash_at("voucher.after_debit")
    with pytest.raises(faults.InjectedCrash):
        payments.start("s:ada", cart.cart_id, "Ada", "ada@example.com", voucher_code=voucher["code"])
    faults.set_hook(None)
    assert balance(voucher) == 0 and "voucher" not in mongo.orders().find_one({})
    assert vouchers.breaches() == []  # the debit is recorded with its redemption: nothing lost
    # nobody comes back: the window ends, the order expires with no card payment ever made
    late = after_the_hold(settings)
    reconcile(late, grace=NO_GRACE)
    assert mongo.orders().find_one({})["state"] == "expired"
    assert balance(voucher) == 1500
    assert mongo.vouchers().find_one({"_id": voucher["_id"]})["redemptions"][0]["state"] == "returned"
    assert check_invariants() == []


def test_a_crash_before_a_voucher_covered_order_is_settled_is_settled_by_reconcile(session, crash_at):
    voucher = a_voucher(5000)
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    crash_at("voucher.after_order")
    with pytest.raises(faults.InjectedCrash):
        payments.start("s:ada", cart.cart_id, "Ada", "ada@example.com", voucher_code=voucher["code"])
    faults.set_hook(None)
    assert voucher_sales.finish_redemptions(clock.now(), NO_GRACE) == 1
    order = mongo.orders().find_one({})
    assert order["state"] == "paid" and order["paidWith"]["provider"] == "voucher"
    assert balance(voucher) == 5000 - STALLS
    assert check_invariants() == []


# --- races ---


def test_a_burst_of_orders_cannot_spend_more_than_the_balance(monkeypatch, db):
    """12 buyers check out at once with one voucher worth less than their orders together: the
    balance is spent exactly once, each order records what it got (the card pays the rest), and
    a buyer who comes when it is gone is refused before anything changes."""
    session = make_session(grid="A: " + "s" * 24 + "\n")
    voucher = a_voucher(10_000)  # two and a half orders' worth
    buyers = [f"s:buyer{i}" for i in range(12)]
    carts = {
        b: holds.hold_seats(session["_id"], b, None, [f"0:{2 * i}", f"0:{2 * i + 1}"]).cart_id
        for i, b in enumerate(buyers)
    }
    clients = PerThreadClient()
    monkeypatch.setattr(mongo, "get_client", clients.get)
    waiting = list(buyers)

    failures: list = []

    def buy():
        owner = waiting.pop()
        try:
            return payments.start(owner, carts[owner], "Buyer", "b@example.com", voucher_code=voucher["code"])
        except Exception as exc:  # reported below, with what went wrong
            failures.append((owner, exc))
            return None

    try:
        orders = [order for order in at_once(buy, len(buyers)) if order is not None]
    finally:
        monkeypatch.undo()
        clients.close()
    # a buyer who came after the balance was gone is told so before anything was written
    assert all(isinstance(exc, InvalidRequest) and "used up" in exc.message for _, exc in failures), failures
    assert len(orders) + len(failures) == len(buyers)
    for owner, _ in failures:
        assert mongo.carts().find_one({"_id": carts[owner]})["state"] == "active"
    stored = mongo.vouchers().find_one({"_id": voucher["_id"]})
    taken = [
        o["voucher"]["amount"]
        for o in mongo.orders().find({"_id": {"$in": [o["_id"] for o in orders]}})
        if "voucher" in o
    ]
    assert sum(taken) == 10_000 and stored["balance"] == 0
    assert sorted(r["amount"] for r in stored["redemptions"]) == sorted(taken)
    assert len(taken) >= 3  # two whole orders and part of a third at least
    assert check_invariants() == []


# --- at the counter ---


def test_the_counter_takes_a_voucher_and_cash_for_the_rest(session):
    voucher = a_voucher(1500)
    owner = counter.staff_owner(7)
    held = holds.hold_seats(session["_id"], owner, None, ["0:0"], context=holds.BOX_OFFICE)
    sale = counter.CounterSale(name="Bea", method=counter.CASH, by="anna", by_id=7, voucher=voucher["code"])
    order = counter.sell(owner, held.cart_id, sale)
    assert order["state"] == "paid" and order["voucher"]["amount"] == 1500
    assert order["paidWith"]["provider"] == "counter" and order["paidWith"]["amount"] == STALLS - 1500
    assert balance(voucher) == 0
    assert check_invariants() == []


def test_the_counter_refuses_a_voucher_on_an_invoice(session):
    voucher = a_voucher(1500)
    owner = counter.staff_owner(7)
    held = holds.hold_seats(session["_id"], owner, None, ["0:0"], context=holds.BOX_OFFICE)
    due = timezone.localdate(clock.now())
    sale = counter.CounterSale(name="Bea", method=counter.INVOICE, due=due, by="anna", voucher=voucher["code"])
    with pytest.raises(InvalidRequest):
        counter.sell(owner, held.cart_id, sale)
    assert balance(voucher) == 1500 and mongo.orders().count_documents({}) == 0


def test_a_voucher_sold_at_the_counter_is_spendable_at_once(db):
    voucher = voucher_sales.sell_at_counter(value=2500, means="cash", buyer="Carla", by="anna")
    assert voucher["state"] == "active" and vouchers.usable(voucher["code"], clock.now())["balance"] == 2500
    with pytest.raises(InvalidRequest):
        voucher_sales.sell_at_counter(value=2500, means="invoice", by="anna")


def test_the_invariant_finds_a_balance_changed_without_its_record(db):
    voucher = a_voucher()
    mongo.vouchers().update_one({"_id": voucher["_id"]}, {"$inc": {"balance": 100}})
    assert any("balance 5100" in b for b in check_invariants())
