"""Refunds through the provider (localstripe): staff cancel in full or per ticket, the booking
fee, a refund that fails and is retried, and the money invariants."""

from datetime import timedelta

import pytest

from booking.core import clock, mongo
from booking.core.errors import Conflict, InvalidRequest
from booking.payments import base, refunds
from booking.payments.stripe_provider import StripeProvider, client
from booking.sales import cancels, holds
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import FREE, SOLD

ALICE = "s:alice"


def buy(session, keys=("1:2", "1:3", "0:0")):
    cart = holds.hold_seats(session["_id"], ALICE, None, list(keys))
    return checkout_paid(ALICE, cart.cart_id, "Ada", "ada@example.com")


def cells(session, keys):
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    return [seats[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


def refunded_at_stripe(order):
    return sorted(r.amount for r in client().v1.refunds.list({"payment_intent": order["paidWith"]["id"]}).data)


def test_staff_cancel_of_a_paid_order_refunds_it_in_full_and_frees_the_seats():
    session = make_session()
    order = buy(session)
    canceled = cancels.cancel_order(order["_id"], by="staff", reason="double booking")
    assert canceled["state"] == "refunded" and canceled["seatsReleased"] and canceled["lines"] == []
    [refund] = canceled["refunds"]
    assert refund["status"] == "succeeded" and refund["amount"] == order["total"] == 9000
    assert canceled["amountRefunded"] == 9000 and "refundDue" not in canceled
    assert refunded_at_stripe(order) == [9000]
    assert cells(session, ["1:2", "1:3", "0:0"]) == [FREE, FREE, FREE]
    with pytest.raises(Conflict):
        cancels.cancel_order(order["_id"], by="staff")
    assert check_invariants() == []


def test_refund_per_ticket_then_the_rest_with_the_booking_fee(settings):
    settings.BOOKING_FEE = 150
    session = make_session()
    order = buy(session)
    assert order["total"] == 9150
    premium = [line["ticket"] for line in order["lines"] if line["cat"] == "p"]
    partly = refunds.refund_tickets(order["_id"], tickets=premium[:1], reason="seat broken", by="staff")
    assert partly["state"] == "partially_refunded" and len(partly["lines"]) == 2
    assert partly["refunds"][0]["amount"] == 3500 and partly["refunds"][0]["status"] == "succeeded"
    assert cells(session, ["1:2", "1:3", "0:0"]) == [FREE, SOLD, SOLD]
    assert check_invariants() == []
    rest = refunds.refund_tickets(order["_id"], reason="show moved", by="staff")
    assert rest["state"] == "refunded" and rest["refunds"][1]["amount"] == 3500 + 2000 + 150  # fee with the last
    assert refunded_at_stripe(order) == [3500, 5650]
    assert rest["amountRefunded"] == 9150
    assert cells(session, ["1:2", "1:3", "0:0"]) == [FREE, FREE, FREE]
    assert check_invariants() == []


def test_a_ticket_is_refunded_once_however_often_staff_click():
    session = make_session()
    order = buy(session)
    ticket = order["lines"][0]["ticket"]
    refunds.refund_tickets(order["_id"], tickets=[ticket], by="a")
    with pytest.raises(InvalidRequest):
        refunds.refund_tickets(order["_id"], tickets=[ticket], by="b")
    assert len(refunded_at_stripe(order)) == 1
    assert check_invariants() == []


NOBODY_LISTENS = "http://127.0.0.1:9"  # Stripe unreachable: every call fails to connect


def test_a_failed_refund_is_visible_and_retried_until_it_succeeds(settings):
    session = make_session()
    order = buy(session)
    reachable = settings.STRIPE_API_BASE
    settings.STRIPE_API_BASE = NOBODY_LISTENS
    result = cancels.cancel_order(order["_id"], by="staff", reason="sick")
    [refund] = result["refunds"]
    failure, retry_at = refund["failure"], refund["retryAt"]
    assert failure is not None and retry_at is not None, refund
    assert result["state"] == "refunded" and refund["status"] == "failed" and "APIConnectionError" in failure
    assert retry_at > clock.now() and result["refundDue"]
    assert cells(session, ["1:2", "1:3", "0:0"]) == [FREE, FREE, FREE]  # the seats do not wait for the money
    assert [r["_id"] for r in refunds.failed_refunds()] == [refund["_id"]]
    assert any("is failed" in b for b in check_invariants())  # money kept: not quiet until refunded
    reconcile(now=clock.now(), grace=timedelta(0))  # not due yet: nothing asked
    assert mongo.orders().find_one({"_id": order["_id"]})["refunds"][0]["tries"] == 1
    settings.STRIPE_API_BASE = reachable
    reconcile(now=retry_at + timedelta(seconds=1), grace=timedelta(0))
    done = mongo.orders().find_one({"_id": order["_id"]})
    assert done["refunds"][0]["status"] == "succeeded" and "refundDue" not in done
    assert refunded_at_stripe(order) == [9000]
    assert check_invariants() == []


def test_a_refund_given_up_waits_for_staff_and_staff_can_retry_it(settings):
    settings.BOOKING_REFUND_MAX_TRIES = 1
    session = make_session()
    order = buy(session)
    reachable = settings.STRIPE_API_BASE
    settings.STRIPE_API_BASE = NOBODY_LISTENS
    result = cancels.cancel_order(order["_id"], by="staff")
    assert result["refunds"][0]["status"] == "failed" and result["refunds"][0]["retryAt"] is None
    reconcile(now=clock.now() + timedelta(days=1), grace=timedelta(0))
    assert mongo.orders().find_one({"_id": order["_id"]})["refunds"][0]["status"] == "failed"
    settings.STRIPE_API_BASE = reachable
    assert refunds.retry(order["_id"], result["refunds"][0]["_id"]) == "succeeded"
    assert check_invariants() == []


def test_a_refund_is_tried_exactly_max_tries_times_then_waits_for_staff(settings, monkeypatch):
    """BOOKING_REFUND_MAX_TRIES at its exact value: 2 tries, the first wait RETRY_SECONDS, the
    second failure gives up. (Each try is counted once: at its claim.)"""
    settings.BOOKING_REFUND_MAX_TRIES = 2
    settings.BOOKING_REFUND_RETRY_SECONDS = 300
    order = buy(make_session())
    monkeypatch.setattr(StripeProvider, "refund", lambda *a, **k: (_ for _ in ()).throw(base.ProviderError("down")))
    first = cancels.cancel_order(order["_id"], by="staff")["refunds"][0]
    assert (first["status"], first["tries"]) == ("failed", 1)
    assert first["retryAt"] is not None
    assert timedelta(seconds=300) <= first["retryAt"] - first["triedOn"] < timedelta(seconds=301)  # the first wait
    assert refunds.retry_due(now=first["retryAt"] - timedelta(seconds=1)) == 0  # not due yet
    assert refunds.retry_due(now=first["retryAt"]) == 1
    second = mongo.orders().find_one({"_id": order["_id"]})["refunds"][0]
    assert (second["status"], second["tries"], second["retryAt"]) == ("failed", 2, None)  # given up: staff
    assert refunds.retry_due(now=first["retryAt"] + timedelta(days=30)) == 0
    monkeypatch.undo()
    assert refunds.retry(order["_id"], first["_id"]) == "succeeded"  # staff's "Retry refund"
    assert check_invariants() == []


def test_a_second_payment_for_a_paid_order_is_refunded():
    session = make_session()
    order = buy(session)
    stray = StripeProvider().start(order, idempotency_key=f"stray-{order['_id']}")
    from booking.tests.localstripe import card

    paid_twice = StripeProvider().confirm(stray.id, card(), idempotency_key=f"stray-{order['_id']}-c")
    from booking.payments import flow as payments

    after = payments.settle(paid_twice)
    assert after["state"] == "paid" and after["extraPayments"][0]["id"] == stray.id
    assert after["refunds"][0]["status"] == "succeeded" and after["refunds"][0]["payment"]["id"] == stray.id
    assert payments.settle(paid_twice)["refunds"] == after["refunds"]  # the same news again: nothing new
    assert check_invariants() == []


def test_invariants_catch_money_without_seats_and_orders_paid_twice():
    session = make_session()
    order = buy(session)
    mongo.orders().update_one(
        {"_id": order["_id"]},
        {"$push": {"extraPayments": {"provider": "stripe", "id": "pi_x", "amount": 9000}}},
    )
    assert any("paid twice" in b for b in check_invariants())
    mongo.orders().update_one({"_id": order["_id"]}, {"$unset": {"extraPayments": ""}, "$set": {"state": "expired"}})
    breaches = check_invariants()
    assert any("keeps 90.00 EUR for tickets worth 0.00 EUR" in b for b in breaches)
    assert any("sold seat" in b for b in breaches)  # and its seats are sold without a paid order


def test_the_confirmation_mail_carries_the_receipt_pdf(settings):
    from django.core import mail

    from booking.notifications import confirmations as notifications

    settings.BOOKING_FEE = 150
    session = make_session()
    order = buy(session)
    assert notifications.send_confirmation(order["_id"]) == "sent"
    [message] = mail.outbox
    [(name, content, kind)] = [a for a in message.attachments if a[2] == "application/pdf"]  # (and the .ics)
    assert name == f"receipt-{order['ref']}.pdf" and content[:5] == b"%PDF-"
    assert "Your receipt is attached (PDF)." in message.body


def test_worker_status_lists_refunds_not_done(monkeypatch):
    import io

    from django.core.management import call_command

    session = make_session()
    order = buy(session)
    monkeypatch.setattr(StripeProvider, "refund", lambda *a, **k: (_ for _ in ()).throw(base.ProviderError("down")))
    cancels.cancel_order(order["_id"], by="staff")
    out = io.StringIO()
    call_command("worker_status", "--no-ping", stdout=out)
    assert "refunds not done yet:         1" in out.getvalue() and f"{order['ref']}  90.00  failed" in out.getvalue()


def test_invariants_catch_a_paid_orders_seat_that_is_not_sold():
    session = make_session()
    order = buy(session)
    r, c = (int(x) for x in order["lines"][0]["key"].split(":"))
    freed = {"$set": {f"seats.{r}.{c}": FREE}, "$inc": {"seatsAvailable": 1}}
    mongo.sessions().update_one({"_id": session["_id"]}, freed)
    assert any(f"is in order {order['ref']} but its cell is 0" in b for b in check_invariants())


def test_a_promo_code_is_paid_for_less_its_vat_counts_the_discount_and_its_use_goes_back_with_a_refund():
    from booking.sales import promos
    from booking.tests.paying import pay

    promos.create_code("TENOFF", "percent", 10, cap=5)
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["1:2", "1:3"])
    promos.apply_code(ALICE, cart.cart_id, "TENOFF")
    from booking.payments import flow as payments

    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    assert order["total"] == 6300 and order["discount"] == 700  # 2 x 35.00, less 10 %
    from booking.payments import money

    assert [(v.rate, v.gross) for v in money.order_breakdown(order)] == [("7", 6300)]
    paid = pay(order)
    assert paid["paidWith"]["amount"] == 6300 and check_invariants() == []
    refunded = cancels.cancel_order(order["_id"], by="staff")
    assert refunded["refunds"][0]["amount"] == 6300 and refunded_at_stripe(paid) == [6300]
    assert mongo.promo_codes().find_one({"code": "TENOFF"})["uses"] == 0
    assert check_invariants() == []


def test_an_unpaid_order_canceled_by_its_buyer_gives_its_promo_code_use_back():
    from booking.payments import flow as payments
    from booking.sales import promos

    promos.create_code("FIVE", "amount", 500, cap=1)
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, ["1:2", "1:3"])
    promos.apply_code(ALICE, cart.cart_id, "FIVE")
    order = payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")
    assert mongo.promo_codes().find_one({"code": "FIVE"})["uses"] == 1
    payments.cancel_unpaid(order["_id"], owner=ALICE)
    assert mongo.promo_codes().find_one({"code": "FIVE"})["uses"] == 0
    assert check_invariants() == []


def test_two_staff_refunding_other_tickets_of_a_partly_refunded_order_at_once_the_second_is_refused(
    manager_client, fault_hook
):
    """Both read the order before either writes: the one that writes second is refused, so no
    ticket the first refunded comes back into the order and nothing is refunded twice."""
    from booking.sales import checkin

    session = make_session()
    order = buy(session)  # B3, B4 premium (35.00 each), A1 stalls (20.00)
    by_key = {line["key"]: line["ticket"] for line in order["lines"]}
    refunds.refund_tickets(order["_id"], tickets=[by_key["0:0"]], reason="ill", by="anna")  # partly refunded
    inside: list[str] = []

    def bob_refunds_the_other_ticket_meanwhile(name):
        if name == "refund.before_order" and not inside:
            inside.append(name)
            refunds.refund_tickets(order["_id"], tickets=[by_key["1:3"]], reason="seat broken", by="bob")

    fault_hook(bob_refunds_the_other_ticket_meanwhile)
    answer = manager_client.post(
        f"/admin/booking/order/{order['_id']}/refund/", {"tickets": [by_key["1:2"]], "reason": "moved"}, follow=True
    )
    assert inside and answer.status_code == 200
    assert "The order changed meanwhile; please look again." in answer.content.decode()
    after = mongo.orders().find_one({"_id": order["_id"]})
    assert after["state"] == "partially_refunded"
    assert [line["ticket"] for line in after["lines"]] == [by_key["1:2"]]  # bob's and anna's tickets stay out
    assert sorted(line["ticket"] for line in after["refundedLines"]) == sorted([by_key["0:0"], by_key["1:3"]])
    assert [(r["amount"], r["status"]) for r in after["refunds"]] == [(2000, "succeeded"), (3500, "succeeded")]
    assert refunded_at_stripe(order) == [2000, 3500] and after["amountRefunded"] == 5500
    assert cells(session, ["0:0", "1:2", "1:3"]) == [FREE, SOLD, FREE]
    door = checkin.get_scope(session["_id"])
    for refunded in (by_key["0:0"], by_key["1:3"]):
        assert not checkin.check_in(door, door="Main", by="door", code=refunded).admitted
    assert check_invariants() == []
