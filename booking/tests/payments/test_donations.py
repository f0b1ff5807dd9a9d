"""Donations at checkout: the theater's offer decides what a buyer may give (suggested amounts or
a free amount from 1 EUR to the maximum, tested at the exact edges); a refused amount changes
nothing; the card, a voucher or the box office is charged the donation with the tickets; it has
no VAT on the receipt; a whole refund gives it back, a partial one keeps it; the takings count
it apart; the invariants hold throughout."""

from datetime import timedelta

import pytest
from django.utils import timezone

from booking.core import clock, faults, mongo
from booking.core.errors import InvalidRequest
from booking.notifications import confirmations
from booking.payments import donations, pdf, refunds, vouchers
from booking.payments import flow as payments
from booking.payments.stripe_provider import client
from booking.reports import takings
from booking.sales import holds
from booking.tests.factories import make_session
from booking.tests.paying import pay
from booking.tests.pdfs import pdf_text
from booking.upkeep.invariants import check_invariants

ADA = "s:ada"
STALLS = 2000  # make_session's price of an "s" seat (row 0); the booking fee is 0 in the tests


def offering(session, *, suggested=(500, 1000, 2500), free=True, **kwargs):
    return donations.set_offer(
        session["theaterId"],
        enabled=True,
        suggested=list(suggested),
        free=free,
        appeal=kwargs.get("appeal", "Help us keep tickets cheap."),
        appeal_de=kwargs.get("appeal_de", "Helfen Sie uns, die Karten günstig zu halten."),
    )


@pytest.fixture
def session(db):
    return make_session()


def checkout(session, donation, *, keys=("0:0",), method="card", code=""):
    cart = holds.hold_seats(session["_id"], ADA, None, list(keys))
    return payments.start(
        ADA, cart.cart_id, "Ada Buyer", "ada@example.com", method, voucher_code=code, donation=donation
    )


def nothing_changed(session):
    assert mongo.orders().count_documents({}) == 0
    assert [c["state"] for c in mongo.carts().find({"owner": ADA})] == ["active"]
    assert "donation" not in mongo.carts().find_one({"owner": ADA})


def intent_amount(order):
    intent = mongo.orders().find_one({"_id": order["_id"]})["payment"]["intent"]
    return client().v1.payment_intents.retrieve(intent).amount


# --- what a buyer may give ---


def test_a_free_amount_is_taken_at_one_euro_and_at_the_maximum_exactly(session, settings):
    settings.BOOKING_DONATION_MAX_VALUE = 50_000
    offer = offering(session)
    assert donations.chosen("1", offer) == 100 == donations.DONATION_MIN
    assert donations.chosen("500", offer) == 50_000
    assert donations.chosen("500,00", offer) == 50_000 and donations.chosen(" 7.5 ", offer) == 750
    for outside in ("0.99", "0,99", "500.01", "501"):
        with pytest.raises(InvalidRequest) as refused:
            donations.chosen(outside, offer)
        assert "1.00 EUR" in refused.value.message and "500.00 EUR" in refused.value.message


@pytest.mark.parametrize(
    "typed",
    ["-5", "abc", "1e3", "5,555", "NaN", "Infinity", "٥", "5 5", "0x10", "5€", "1" * 7, "9" * 10_000, "<b>5</b>"],
)
def test_what_is_not_an_amount_is_refused_and_checkout_changes_nothing(session, typed):
    offering(session)
    with pytest.raises(InvalidRequest) as refused:
        checkout(session, typed)
    assert "donation" in refused.value.details["fields"]
    nothing_changed(session)


def test_only_a_suggested_amount_is_taken_when_the_theater_allows_no_free_one(session):
    offering(session, suggested=[500, 1000], free=False)
    with pytest.raises(InvalidRequest) as refused:
        checkout(session, "7")
    assert refused.value.message == "Please choose one of the suggested amounts."
    nothing_changed(session)
    assert checkout(session, "10", keys=("0:1",))["donation"] == {"amount": 1000}


def test_a_theater_that_asks_for_no_donation_takes_none_and_an_empty_choice_is_none(session):
    with pytest.raises(InvalidRequest):
        checkout(session, "5")
    nothing_changed(session)
    order = checkout(session, "", keys=("0:1",))
    assert "donation" not in order and order["total"] == STALLS


def test_the_theater_offer_is_refused_outside_the_limits(session, settings):
    settings.BOOKING_DONATION_MAX_VALUE = 50_000
    for wrong in ([99], [50_001], [100, 200, 300, 400, 500]):
        with pytest.raises(InvalidRequest):
            donations.set_offer(
                session["theaterId"], enabled=True, suggested=wrong, free=False, appeal="", appeal_de=""
            )
    with pytest.raises(InvalidRequest):  # on, but nothing to give
        donations.set_offer(session["theaterId"], enabled=True, suggested=[], free=False, appeal="", appeal_de="")
    assert "donations" not in mongo.theaters().find_one({"_id": session["theaterId"]})
    offer = offering(session, suggested=[100, 50_000])
    assert offer["suggested"] == [100, 50_000]


# --- paying it ---


def test_the_card_is_charged_the_tickets_and_the_donation_and_the_receipt_shows_it_without_vat(session):
    offering(session)
    order = checkout(session, "10", keys=("0:0", "0:1"))
    assert order["donation"] == {"amount": 1000} and order["total"] == 2 * STALLS + 1000
    assert intent_amount(order) == 2 * STALLS + 1000
    paid = pay(order)
    assert paid["paidWith"]["amount"] == 2 * STALLS + 1000
    text = pdf_text(pdf.receipt_pdf(paid))
    assert "Donation (no VAT)" in text and "10.00 EUR" in text and "50.00 EUR" in text  # the total paid
    [vat] = pdf.sale_breakdown(paid)
    assert vat.gross == 2 * STALLS  # the VAT table is of the tickets alone
    message = confirmations.confirmation_message(paid)
    assert "Donation (no VAT): 10.00 EUR" in message.body
    assert check_invariants() == []


def test_a_voucher_pays_first_and_the_card_the_rest_with_the_donation(session):
    offering(session)
    voucher = vouchers.issue(value=1500, sold_via="counter", now=clock.now(), by="anna")
    order = checkout(session, "5", code=voucher["code"])
    assert order["total"] == STALLS + 500 and order["voucher"]["amount"] == 1500
    assert intent_amount(order) == STALLS + 500 - 1500  # total = tickets + fee + donation - voucher
    pay(order)
    assert check_invariants() == []


def test_a_voucher_that_covers_tickets_and_donation_pays_without_a_card(session):
    offering(session)
    voucher = vouchers.issue(value=5000, sold_via="counter", now=clock.now(), by="anna")
    order = checkout(session, "25", code=voucher["code"])
    assert order["state"] == "paid" and order["paidWith"]["amount"] == STALLS + 2500
    assert mongo.vouchers().find_one({"_id": voucher["_id"]})["balance"] == 5000 - STALLS - 2500
    assert check_invariants() == []


def test_a_box_office_reservation_is_paid_with_its_donation_at_the_counter(session):
    offering(session)
    mongo.sessions().update_one(
        {"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True, "deadlineMinutes": 30}}}
    )
    order = checkout(session, "5", method="box_office")
    assert order["state"] == "pending_payment" and order["total"] == STALLS + 500
    paid = payments.mark_paid_at_counter(order["_id"], by="clerk")
    assert paid["paidWith"]["amount"] == STALLS + 500
    assert check_invariants() == []


@pytest.mark.parametrize("point", ["pay.after_cart", "pay.after_order", "pay.after_provider_start"])
def test_a_crash_during_checkout_keeps_the_donation_once(session, crash_at, point):
    offering(session)
    cart = holds.hold_seats(session["_id"], ADA, None, ["0:0"])
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        payments.start(ADA, cart.cart_id, "Ada", "ada@example.com", donation="5")
    faults.set_hook(None)
    order = payments.start(ADA, cart.cart_id, "Ada", "ada@example.com", donation="5")  # the buyer submits again
    assert order["total"] == STALLS + 500 and mongo.orders().count_documents({}) == 1
    assert intent_amount(order) == STALLS + 500
    pay(order)
    assert check_invariants() == []


# --- giving it back ---


def test_a_whole_refund_gives_the_donation_back_and_a_partial_one_keeps_it(session):
    offering(session)
    order = pay(checkout(session, "10", keys=("0:0", "0:1")))
    first = order["lines"][0]["ticket"]
    partly = refunds.refund_tickets(order["_id"], tickets=[first], reason="seat broken", by="staff")
    assert partly["state"] == "partially_refunded" and partly["refunds"][0]["amount"] == STALLS  # the donation stays
    assert "donation" not in partly["refunds"][0]
    assert check_invariants() == []
    rest = refunds.refund_tickets(order["_id"], reason="show moved", by="staff")
    assert rest["state"] == "refunded" and rest["refunds"][1]["amount"] == STALLS + 1000  # with the last ticket
    assert rest["refunds"][1]["donation"] == 1000
    assert check_invariants() == []


def test_the_takings_count_donations_apart_by_payment_method(session):
    offering(session)
    kept = pay(checkout(session, "10", keys=("0:0",)))
    gone = pay(checkout(session, "5", keys=("0:1",)))
    refunds.refund_tickets(gone["_id"], reason="ill", by="staff")
    today = timezone.localdate(clock.now())
    found = takings.build(today - timedelta(days=1), today + timedelta(days=1))
    [card] = found.donations
    assert card.key == takings.ONLINE_CARD and card.sales == 2
    assert (card.taken, card.given_back, card.net) == (1500, 500, 1000)
    assert found.total.taken == 2 * STALLS + 1500  # the money itself includes them
    tables = takings.tables(found)
    assert tables[-1].title == "Donations by payment method" and tables[-1].rows[-1][-1] == 10
    assert kept["donation"]["amount"] == 1000


def test_the_invariant_finds_a_total_that_does_not_add_up_with_the_donation(session):
    offering(session)
    order = pay(checkout(session, "10"))
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"donation.amount": 900}})
    found = check_invariants()
    assert any("fee and donation" in b for b in found) and any(order["ref"] in b for b in found)
