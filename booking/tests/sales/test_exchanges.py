"""Exchanges (sales/exchanges.py): tickets move to other seats; the price difference goes back
through the payment or is taken at the counter; the customer never has both or neither set of
tickets, even when the process dies between any two writes."""

import itertools
from datetime import timedelta

import pytest
from django.core import mail
from django.http import HttpResponse
from django.test import Client

from booking.core import faults, mongo
from booking.core.errors import Conflict, InvalidRequest, SeatsTaken
from booking.notifications import change_notices
from booking.sales import cancels, checkin, exchanges, holds
from booking.tests.factories import make_session
from booking.tests.localstripe import VISA, card, requests_received
from booking.tests.paying import checkout_paid
from booking.tests.threads import at_once
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import FREE, SOLD
from booking.web import buyer

pytestmark = pytest.mark.slow

# SMALL_GRID: row A "ssss.ssss" (stalls 20.00), row B "sspp.ppss" (premium 35.00 at 1:2, 1:3, 1:5, 1:6)


def paid(session, keys, owner="s:ada", email="ada@example.com"):
    cart = holds.hold_seats(session["_id"], owner, None, list(keys))
    return checkout_paid(owner, cart.cart_id, "Ada Lovelace", email)


def cell(session_id, key):
    r, c = (int(x) for x in key.split(":"))
    return mongo.sessions().find_one({"_id": session_id})["seats"][r][c]


def stored(order):
    return mongo.orders().find_one({"_id": order["_id"]})


def stripe_refunds(order):
    from booking.payments.stripe_provider import client

    return [r.amount for r in client().v1.refunds.list({"payment_intent": order["paidWith"]["id"]}).data]


def admits(session_id, code):
    return checkin.check_in(checkin.get_scope(session_id), door="Main", by="door", code=code).admitted


@pytest.fixture
def session():
    return make_session()


def test_moving_to_cheaper_seats_refunds_the_difference_through_the_card(session):
    order = paid(session, ["1:2", "1:3"])  # two premium seats, 70.00
    old_codes = [line["ticket"] for line in order["lines"]]
    done = exchanges.exchange(order["_id"], old_codes, session["_id"], ["0:0", "0:1"], by="staff", reason="view")
    assert [line["key"] for line in done["lines"]] == ["0:0", "0:1"]
    assert done["total"] == order["total"] - 3000 and done["state"] == "paid"
    assert [cell(session["_id"], k) for k in ("0:0", "0:1", "1:2", "1:3")] == [SOLD, SOLD, FREE, FREE]
    [record] = done["exchanges"]
    assert record["state"] == "done" and record["difference"] == -3000 and "exchangeOpen" not in done
    assert done["refunds"][-1]["status"] == "succeeded" and stripe_refunds(done) == [3000]
    assert {line["ticket"] for line in done["exchangedLines"]} == set(old_codes)
    assert check_invariants() == []
    # the new tickets let in, the old ones do not
    assert admits(session["_id"], done["lines"][0]["ticket"])
    assert not admits(session["_id"], old_codes[0])
    assert check_invariants() == []


def test_moving_some_tickets_to_another_dearer_session_takes_the_difference_at_the_counter(session):
    other = make_session(name="Hamlet", days=2)
    order = paid(session, ["0:0", "0:1"])
    keep, move = order["lines"][0]["ticket"], order["lines"][1]["ticket"]
    done = exchanges.exchange(order["_id"], [move], other["_id"], ["1:2"], settle=exchanges.COUNTER, by="anna")
    assert [(line["sessionId"], line["key"]) for line in done["lines"]] == [
        (session["_id"], "0:0"),
        (other["_id"], "1:2"),
    ]
    assert done["topUps"][0]["amount"] == 1500 and done["total"] == order["total"] + 1500
    assert cell(session["_id"], "0:1") == FREE and cell(other["_id"], "1:2") == SOLD
    assert any(s["_id"] == other["_id"] for s in done["sessions"])
    assert admits(session["_id"], keep) and admits(other["_id"], done["lines"][1]["ticket"])
    assert check_invariants() == []


def test_a_seat_taken_meanwhile_changes_nothing(session):
    order = paid(session, ["0:0"])
    holds.hold_seats(session["_id"], "s:bob", None, ["0:5"])
    with pytest.raises(SeatsTaken):
        exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["0:5"])
    assert stored(order)["lines"] == order["lines"] and "exchanges" not in stored(order)
    assert check_invariants() == []


def test_the_race_for_a_seat_between_the_check_and_the_take_abandons_the_exchange(session, fault_hook):
    order = paid(session, ["0:0"])

    def someone_buys_it_first(name):
        if name == "exchange.after_start":
            fault_hook(None)
            paid(session, ["0:5"], owner="s:bob", email="bob@example.com")

    fault_hook(someone_buys_it_first)
    with pytest.raises(Conflict, match="taken meanwhile"):
        exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["0:5"])
    after = stored(order)
    assert after["lines"] == order["lines"] and after["exchanges"][0]["state"] == "abandoned"
    assert "exchangeOpen" not in after and cell(session["_id"], "0:0") == SOLD
    assert check_invariants() == []


def test_bad_input_is_refused_and_changes_nothing(session):
    order = paid(session, ["0:0", "0:1"])
    code = order["lines"][0]["ticket"]
    with pytest.raises(InvalidRequest):
        exchanges.exchange(order["_id"], [], session["_id"], [])
    with pytest.raises(InvalidRequest):
        exchanges.exchange(order["_id"], ["not-a-ticket"], session["_id"], ["0:5"])
    with pytest.raises(InvalidRequest, match="as many new seats"):
        exchanges.exchange(order["_id"], [code], session["_id"], ["0:5", "0:6"])
    with pytest.raises(InvalidRequest):
        exchanges.exchange(order["_id"], [code], session["_id"], ["0:4"])  # the aisle
    with pytest.raises(InvalidRequest):
        exchanges.exchange(order["_id"], [code], session["_id"], ["x"])
    with pytest.raises(InvalidRequest):
        exchanges.exchange(order["_id"], [code], session["_id"], ["0:5"], settle="cash please")
    with pytest.raises(SeatsTaken):
        exchanges.exchange(order["_id"], [code], session["_id"], ["0:1"])  # its own other seat
    assert admits(session["_id"], code)
    with pytest.raises(Conflict, match="already used"):
        exchanges.exchange(order["_id"], [code], session["_id"], ["0:5"])
    assert stored(order)["lines"][1] == order["lines"][1] and "exchanges" not in stored(order)
    assert check_invariants() == []


def test_seats_ticked_on_another_performances_map_are_refused_and_change_nothing(session):
    """Seat keys name a row and a column, so the same key exists in another hall: seats picked on
    one performance's map are never taken in another."""
    order = paid(session, ["0:0", "0:1"])
    elsewhere = make_session(days=3)
    code = order["lines"][0]["ticket"]
    for move in (exchanges.plan, exchanges.exchange):
        with pytest.raises(InvalidRequest, match="seat map of another performance"):
            move(order["_id"], [code], elsewhere["_id"], ["0:5"], seats_of=session["_id"])
    assert stored(order)["lines"] == order["lines"] and "exchanges" not in stored(order)
    assert cell(elsewhere["_id"], "0:5") == FREE
    found = exchanges.plan(order["_id"], [code], elsewhere["_id"], ["0:5"], seats_of=elsewhere["_id"])
    assert [n["key"] for n in found.new] == ["0:5"]
    assert check_invariants() == []


POINTS = [
    "exchange.after_start",
    "exchange.after_take",
    "exchange.after_switch",
    "exchange.after_unmark",
    "exchange.after_release",
    "exchange.after_money",
]


def tickets_now(order_id):
    return sorted(line["key"] for line in mongo.orders().find_one({"_id": order_id})["lines"])


@pytest.mark.parametrize("point", POINTS)
def test_a_crash_at_any_point_is_rolled_forward_without_losing_or_doubling_a_seat(session, crash_at, point):
    order = paid(session, ["1:2", "1:3"])
    codes = [line["ticket"] for line in order["lines"]]
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        exchanges.exchange(order["_id"], codes, session["_id"], ["0:0", "0:1"], by="staff")
    faults.set_hook(None)
    # Between the writes the customer has exactly one set of valid tickets, and every seat of
    # both sets is kept from other buyers (none can be sold twice).
    assert tickets_now(order["_id"]) in (["1:2", "1:3"], ["0:0", "0:1"])
    for key in ("1:2", "1:3") if point not in ("exchange.after_release", "exchange.after_money") else ():
        assert cell(session["_id"], key) == SOLD
    if point != "exchange.after_start":
        assert cell(session["_id"], "0:0") == SOLD
        with pytest.raises(SeatsTaken):
            holds.hold_seats(session["_id"], "s:bob", None, ["0:0"])
    reconcile(grace=timedelta(0))
    after = stored(order)
    assert tickets_now(order["_id"]) == ["0:0", "0:1"] and "exchangeOpen" not in after
    assert after["exchanges"][0]["state"] == "done"
    assert [cell(session["_id"], k) for k in ("0:0", "0:1", "1:2", "1:3")] == [SOLD, SOLD, FREE, FREE]
    assert after["refunds"][-1]["status"] == "succeeded" and stripe_refunds(after) == [3000]
    assert (
        "exchangeHolds" not in mongo.sessions().find_one({"_id": session["_id"]})
        or not mongo.sessions().find_one({"_id": session["_id"]})["exchangeHolds"]
    )
    assert [n["kind"] for n in after["changeNotices"]] == ["exchange"]
    assert check_invariants() == []
    # the freed seats sell again
    paid(session, ["1:2", "1:3"], owner="s:bob", email="bob@example.com")
    assert check_invariants() == []


def test_an_abandoned_exchange_whose_seats_were_taken_gives_them_back(session, crash_at):
    """A crash after the take, then the exchange is abandoned (its tickets were refunded
    meanwhile): reconcile gives the new seats back."""
    from booking.payments import refunds

    order = paid(session, ["0:0"])
    crash_at("exchange.after_take")
    with pytest.raises(faults.InjectedCrash):
        exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["0:5"])
    faults.set_hook(None)
    with pytest.raises(Conflict, match="being exchanged"):
        refunds.refund_tickets(order["_id"])
    # the ticket was used at the door meanwhile: the switch no longer applies
    admits(session["_id"], order["lines"][0]["ticket"])
    reconcile(grace=timedelta(0))
    after = stored(order)
    assert after["exchanges"][0]["state"] == "abandoned" and tickets_now(order["_id"]) == ["0:0"]
    assert cell(session["_id"], "0:5") == FREE and cell(session["_id"], "0:0") == SOLD
    assert check_invariants() == []


def test_the_customer_gets_one_mail_with_the_new_tickets_however_often_the_task_runs(session, settings):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    order = paid(session, ["1:2", "1:3"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["0:3"], by="staff")
    mail.outbox.clear()
    assert change_notices.send_pending(order["_id"]) == ["sent"]
    assert change_notices.send_pending(order["_id"]) == []
    [message] = mail.outbox
    assert message.to == ["ada@example.com"] and "new seats" in message.subject
    assert "A4 is now A4" not in message.body and "is now A4" in message.body
    names = [a[0] for a in message.attachments]
    assert names == [f"tickets-{order['ref']}.pdf", f"receipt-{order['ref']}.pdf", f"booking-{order['ref']}.ics"]
    assert message.attachments[0][1].startswith(b"%PDF")
    assert stored(order)["changeNotices"][0]["state"] == "sent"


def test_the_buyers_page_shows_the_new_tickets_and_the_history(session, client, db):
    order = paid(session, ["1:2", "1:3"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["0:3"], by="anna <a@x>")
    page = client.get(f"/orders/{order['ref']}/", {"email": "ada@example.com"}).content.decode()
    assert "Changes to this booking" in page and "Tickets moved" in page and "B3 → A4" in page
    assert "anna" not in page  # staff names stay in the admin
    assert "Row A, seat 4" in page


def test_canceling_after_a_dearer_exchange_refunds_the_card_and_the_counter_each_their_part(session):
    order = paid(session, ["0:0", "0:1"])  # 2 x 20.00 by card
    code = order["lines"][0]["ticket"]
    exchanges.exchange(order["_id"], [code], session["_id"], ["1:5"], settle=exchanges.COUNTER, by="anna")
    exchanges.exchange(
        order["_id"], [stored(order)["lines"][0]["ticket"]], session["_id"], ["1:6"], settle=exchanges.COUNTER
    )  # now 2 x 35.00: 40.00 by card, 30.00 at the counter
    from booking.payments import refunds

    done = refunds.refund_tickets(order["_id"], reason="cannot come", by="anna")
    parts = sorted((r["payment"]["provider"], r["amount"], r["status"]) for r in done["refunds"])
    fee = (order.get("fee") or {}).get("amount", 0)
    assert parts == [
        ("box_office", 1500, "succeeded"),
        ("box_office", 1500, "succeeded"),
        ("stripe", 4000 + fee, "succeeded"),
    ]
    assert stripe_refunds(done) == [4000 + fee]
    assert done["state"] == "refunded" and check_invariants() == []


def test_a_dearer_seat_paid_online_keeps_the_old_tickets_valid_until_the_customer_pays(session, settings):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    order = paid(session, ["0:0", "0:1"])
    old, keep = order["lines"][0]["ticket"], order["lines"][1]["ticket"]
    waiting = exchanges.exchange(order["_id"], [old], session["_id"], ["1:2"], by="anna")
    assert waiting["exchanges"][0]["state"] == "awaiting_payment" and waiting["lines"] == order["lines"]
    assert cell(session["_id"], "1:2") == SOLD  # kept for the customer meanwhile
    with pytest.raises(SeatsTaken):
        holds.hold_seats(session["_id"], "s:bob", None, ["1:2", "1:3"])
    assert check_invariants() == []
    mail.outbox.clear()
    change_notices.send_pending(order["_id"])
    assert "please pay the difference" in mail.outbox[0].subject and "A1 becomes B3" in mail.outbox[0].body

    status, after, _ = exchanges.pay_difference(order["_id"], card(VISA))
    assert status == "paid" and sorted(line["key"] for line in after["lines"]) == ["0:1", "1:2"]
    assert after["topUps"][0]["provider"] == "stripe" and after["topUps"][0]["amount"] == 1500
    assert cell(session["_id"], "0:0") == FREE and after["exchanges"][0]["state"] == "done"
    assert admits(session["_id"], keep) and not admits(session["_id"], old)
    assert check_invariants() == []
    # a later refund of everything goes back through both card payments, each its part
    from booking.payments import refunds

    done = refunds.refund_tickets(after["_id"], by="anna")
    assert sorted(r["amount"] for r in done["refunds"]) == sorted([1500, order["paidWith"]["amount"]])
    assert all(r["status"] == "succeeded" for r in done["refunds"]) and check_invariants() == []


def test_an_unpaid_difference_gives_the_new_seats_back_when_its_time_is_over(session, settings):
    from booking.core import clock

    order = paid(session, ["0:0", "0:1"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"])
    reconcile(grace=timedelta(0))
    assert stored(order)["exchanges"][0]["state"] == "awaiting_payment"  # not yet
    later = clock.now() + timedelta(days=3)
    reconcile(now=later, grace=timedelta(0))
    after = stored(order)
    assert after["exchanges"][0]["state"] == "abandoned" and after["lines"] == order["lines"]
    assert cell(session["_id"], "1:2") == FREE and "exchangeOpen" not in after
    assert check_invariants() == []


def test_the_webhook_of_the_difference_payment_finishes_the_exchange(session):
    from booking.payments import flow as payments
    from booking.payments.stripe_provider import StripeProvider

    order = paid(session, ["0:0", "0:1"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"])
    record = stored(order)["exchanges"][0]
    intent = record["payment"]["intent"]
    stripe = StripeProvider()
    paid_now = stripe.confirm(intent, card(VISA), idempotency_key=f"test-{intent}")
    assert paid_now.status == "succeeded"
    settled = payments.settle(stripe.retrieve(intent))  # as the webhook does
    assert settled is not None and settled["exchanges"][0]["state"] == "done"
    assert sorted(line["key"] for line in settled["lines"]) == ["0:1", "1:2"]
    assert payments.settle(stripe.retrieve(intent))["exchanges"][0]["state"] == "done"  # a replay: nothing more
    assert not stored(order).get("extraPayments") and check_invariants() == []


def test_staff_call_off_an_exchange_waiting_for_payment(session, manager_client):
    order = paid(session, ["0:0", "0:1"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"])
    page = manager_client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert "payment" in page and "Call off this exchange" in page and "the current tickets stay valid" in page
    response = manager_client.post(f"/admin/booking/order/{order['_id']}/exchange/call-off/", follow=True)
    assert "The exchange was called off" in response.content.decode()
    after = stored(order)
    assert after["exchanges"][0]["state"] == "abandoned" and after["lines"] == order["lines"]
    assert cell(session["_id"], "1:2") == FREE and check_invariants() == []
    again = manager_client.post(f"/admin/booking/order/{order['_id']}/exchange/call-off/", follow=True)
    assert "No exchange of this order is waiting" in again.content.decode()
    assert manager_client.get(f"/admin/booking/order/{order['_id']}/exchange/call-off/").status_code == 405


def test_a_difference_paid_for_a_move_that_can_no_longer_happen_goes_back(session, crash_at):
    """Paid online, then (before the switch) the old ticket is used at the door: the exchange is
    abandoned and the difference refunded, never kept without seats."""
    order = paid(session, ["0:0", "0:1"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"])
    crash_at("exchange.after_paid")
    with pytest.raises(faults.InjectedCrash):
        exchanges.pay_difference(order["_id"], card(VISA))
    faults.set_hook(None)
    assert admits(session["_id"], order["lines"][0]["ticket"])  # the old ticket, still valid, is used
    reconcile(grace=timedelta(0))
    after = stored(order)
    assert after["exchanges"][0]["state"] == "abandoned" and after["lines"][0]["key"] == "0:0"
    assert after["extraPayments"][0]["amount"] == 1500 and after["refunds"][-1]["status"] == "succeeded"
    assert cell(session["_id"], "1:2") == FREE and check_invariants() == []


def test_a_move_into_a_performance_canceled_meanwhile_does_not_happen(session, crash_at):
    from booking.sales import session_cancel

    other = make_session(days=2)
    order = paid(session, ["0:0", "0:1"])
    crash_at("exchange.after_take")
    with pytest.raises(faults.InjectedCrash):
        exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], other["_id"], ["0:0"], settle="counter")
    faults.set_hook(None)
    session_cancel.start(other["_id"], by="anna")
    reconcile(grace=timedelta(0))
    after = stored(order)
    assert after["exchanges"][0]["state"] == "abandoned" and [line["key"] for line in after["lines"]] == ["0:0", "0:1"]
    assert cell(other["_id"], "0:0") == FREE and check_invariants() == []


def test_the_door_says_an_exchanged_ticket_was_exchanged(session):
    order = paid(session, ["0:0", "0:1"])
    old = order["lines"][0]["ticket"]
    exchanges.exchange(order["_id"], [old], session["_id"], ["0:5"])
    outcome = checkin.check_in(checkin.get_scope(session["_id"]), door="Main", by="door", code=old)
    assert outcome.status == checkin.NOT_VALID and outcome.message == "Replaced by an exchange."
    new = next(line for line in stored(order)["lines"] if line["key"] == "0:5")
    assert outcome.replaced_by == {"row": new["row"], "seat": new["seat"], "section": ""}
    listed = {t["h"]: t for t in checkin.door_list(checkin.get_scope(session["_id"]))}  # the offline door's list
    assert listed[checkin.ticket_hash(old)]["ok"] is False and listed[checkin.ticket_hash(old)]["state"] == "exchanged"
    assert listed[checkin.ticket_hash(old)]["newSeat"] == outcome.replaced_by
    assert listed[checkin.ticket_hash(new["ticket"])]["ok"] is True


def test_eight_staff_moving_eight_orders_to_the_same_seat_give_it_to_one(session, monkeypatch):
    import threading

    from booking.tests.threads import PerThreadClient

    orders = [paid(session, [f"{r}:{c}", f"{r}:{c + 1}"], owner=f"s:p{r}{c}") for r in (1, 2) for c in (0, 2, 5, 7)]
    clients = PerThreadClient()
    monkeypatch.setattr(mongo, "get_client", clients.get)
    start = threading.Barrier(8)
    outcomes: list = []
    lock = threading.Lock()

    def staff(order):
        start.wait()
        try:
            exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["0:0"], settle="counter")
            result = "moved"
        except (SeatsTaken, Conflict) as exc:
            result = type(exc).__name__
        with lock:
            outcomes.append((order["_id"], result))

    threads = [threading.Thread(target=staff, args=(o,)) for o in orders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    monkeypatch.undo()
    clients.close()
    moved = [oid for oid, result in outcomes if result == "moved"]
    assert len(outcomes) == 8 and len(moved) == 1, outcomes
    with_it = mongo.orders().find({"lines.sessionId": session["_id"]}, {"lines": 1})
    owners = [o["_id"] for o in with_it if any(line["key"] == "0:0" for line in o["lines"])]
    assert owners == moved and mongo.orders().count_documents({"exchangeOpen": {"$gt": ""}}) == 0
    assert check_invariants() == []


def test_a_check_in_of_another_ticket_during_the_exchange_is_kept(session, fault_hook):
    order = paid(session, ["0:0", "0:1"])
    moving, staying = order["lines"][0]["ticket"], order["lines"][1]["ticket"]

    def door_scans_the_other_ticket(name):
        if name == "exchange.after_take":
            fault_hook(None)
            assert admits(session["_id"], staying)

    fault_hook(door_scans_the_other_ticket)
    done = exchanges.exchange(order["_id"], [moving], session["_id"], ["0:5"], settle="counter")
    kept = next(line for line in done["lines"] if line["ticket"] == staying)
    assert kept["checkedIn"]["door"] == "Main" and done["exchanges"][0]["state"] == "done"
    assert check_invariants() == []


def test_a_check_in_of_the_other_ticket_between_the_switchs_read_and_its_write_stays_recorded(session, fault_hook):
    """The door lets the other ticket in after the switch read the order's lines: the switch's
    write (conditional on the lines as read) misses, reads again and keeps the check-in."""
    order = paid(session, ["0:0", "0:1"])
    moving, staying = order["lines"][0]["ticket"], order["lines"][1]["ticket"]
    scanned: list[bool] = []

    def door_scans_the_other_ticket(name):
        if name == "exchange.before_switch" and not scanned:
            scanned.append(admits(session["_id"], staying))

    fault_hook(door_scans_the_other_ticket)
    done = exchanges.exchange(order["_id"], [moving], session["_id"], ["0:5"], settle="counter")
    assert scanned == [True]
    assert [line["key"] for line in done["lines"]] == ["0:1", "0:5"]
    kept = next(line for line in done["lines"] if line["ticket"] == staying)
    assert kept["checkedIn"]["door"] == "Main" and done["exchanges"][0]["state"] == "done"
    assert not admits(session["_id"], staying)  # used once: the door still knows
    assert cell(session["_id"], "0:0") == FREE and check_invariants() == []


def test_a_refund_of_the_other_ticket_landing_between_the_switchs_read_and_its_write_is_refused(session, fault_hook):
    """Staff refund the other ticket: the refund read the order before the exchange began and
    writes inside the switch's window. It is refused (an exchange is open); the switch goes on,
    the other ticket stays valid and nothing goes back to the card."""
    import threading

    from booking.payments import refunds

    order = paid(session, ["0:0", "0:1"])
    moving, staying = order["lines"][0]["ticket"], order["lines"][1]["ticket"]
    refund_read, refund_go_on = threading.Event(), threading.Event()
    outcome: list = []

    def interleave(name):
        if name == "refund.before_order":
            refund_read.set()
            assert refund_go_on.wait(30)
        elif name == "exchange.before_switch" and not refund_go_on.is_set():
            refund_go_on.set()
            staff.join(timeout=30)

    def staff_refund():
        try:
            outcome.append(refunds.refund_tickets(order["_id"], tickets=[staying], reason="ill", by="bob"))
        except Conflict as exc:
            outcome.append(exc)

    fault_hook(interleave)
    staff = threading.Thread(target=staff_refund)
    staff.start()
    assert refund_read.wait(30)
    done = exchanges.exchange(order["_id"], [moving], session["_id"], ["0:5"], settle="counter", by="anna")
    staff.join(timeout=30)
    [refused] = outcome
    assert isinstance(refused, Conflict) and "changed meanwhile" in refused.message
    assert done["exchanges"][0]["state"] == "done" and done["state"] == "paid"
    assert [line["key"] for line in done["lines"]] == ["0:1", "0:5"] and not done.get("refundedLines")
    assert not done.get("refunds") and stripe_refunds(done) == []
    assert [cell(session["_id"], k) for k in ("0:0", "0:1", "0:5")] == [FREE, SOLD, SOLD]
    assert admits(session["_id"], staying) and check_invariants() == []


def pdf_text(data: bytes) -> str:
    """The text drawn in a ReportLab PDF (its page streams, inflated)."""
    import base64
    import re
    import zlib

    out = []
    for stream in re.findall(rb"stream\r?\n(.*?)endstream", data, re.S):
        try:  # ReportLab: ASCII85, then Flate
            out.append(zlib.decompress(base64.a85decode(stream.strip().removesuffix(b"~>"))).decode("latin-1"))
        except (ValueError, zlib.error):
            out.append(stream.decode("latin-1"))
    return "".join(out).replace("\\(", "(").replace("\\)", ")")


def test_the_receipt_shows_the_exchange_and_what_was_paid_at_the_counter(session):
    from booking.payments.pdf import receipt_pdf

    order = paid(session, ["0:0", "0:1"])
    done = exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:5"], settle="counter")
    text = pdf_text(receipt_pdf(done))
    assert "(exchanged)" in text and "Exchange: difference paid at the box office" in text
    paid_total = done["paidWith"]["amount"] + 1500
    assert f"{paid_total // 100}.{paid_total % 100:02d}" in text  # total paid includes the counter's part


def test_a_session_canceled_between_the_switchs_check_and_its_write_gets_no_tickets(session, fault_hook):
    """The window: the switch has read the new performance on sale, then the performance is
    canceled and its cancel run goes through, then the switch writes. The run stops the exchange
    by a conditional write on the order, so the switch misses: the customer keeps the old tickets,
    the canceled performance has no live tickets and its run is done."""
    from booking.sales import session_cancel

    other = make_session(days=2)
    order = paid(session, ["0:0", "0:1"])
    runs: list[dict] = []

    def cancel_in_the_window(name):
        if name == "exchange.before_switch" and not runs:
            session_cancel.start(other["_id"], by="anna")
            runs.append(cancels.cancel_session_orders(other["_id"]))

    fault_hook(cancel_in_the_window)
    with pytest.raises(Conflict, match="canceled meanwhile"):
        exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], other["_id"], ["0:0"], settle="counter")
    faults.set_hook(None)
    after = stored(order)
    assert [(line["sessionId"], line["key"]) for line in after["lines"]] == [
        (session["_id"], "0:0"),
        (session["_id"], "0:1"),
    ]
    assert after["exchanges"][0]["state"] == "abandoned" and "exchangeOpen" not in after
    assert not mongo.orders().count_documents(
        {"lines.sessionId": other["_id"], "state": {"$in": ["paid", "partially_refunded"]}}
    )
    assert mongo.sessions().find_one({"_id": other["_id"]})["cancelRun"]["state"] == "done"
    assert cell(other["_id"], "0:0") == FREE and cell(session["_id"], "0:0") == SOLD
    assert admits(session["_id"], order["lines"][0]["ticket"])
    reconcile(grace=timedelta(0))
    assert check_invariants() == []


def test_a_session_canceled_in_the_switchs_window_and_run_after_it_refunds_the_moved_tickets(session, fault_hook):
    """The other order of events: the cancel only flips the status inside the window (its worker
    run comes later), so the switch, already past its check, writes. The customer then holds
    tickets of a canceled performance only until the run: it finds the order by its lines and
    refunds exactly the moved tickets, like every other ticket of that performance. Nobody is
    left with a valid ticket for the canceled show, the old seat stays freed, the money is right."""
    from booking.sales import session_cancel

    other = make_session(days=2)
    order = paid(session, ["0:0", "0:1"])
    flipped: list[str] = []

    def flip_in_the_window(name):
        if name == "exchange.before_switch" and not flipped:
            flipped.append(session_cancel.start(other["_id"], by="anna")["status"])

    fault_hook(flip_in_the_window)
    moved = order["lines"][0]["ticket"]
    done = exchanges.exchange(order["_id"], [moved], other["_id"], ["0:0"], settle="counter")
    faults.set_hook(None)
    assert flipped == ["canceled"] and done["exchanges"][0]["state"] == "done"
    new = next(line for line in done["lines"] if line["sessionId"] == other["_id"])
    result = cancels.cancel_session_orders(other["_id"])
    assert result["refunded"] == 1
    after = stored(order)
    assert after["state"] == "partially_refunded"
    assert [(line["sessionId"], line["key"]) for line in after["lines"]] == [(session["_id"], "0:1")]
    assert not mongo.orders().count_documents(
        {"lines.sessionId": other["_id"], "state": {"$in": ["paid", "partially_refunded"]}}
    )
    assert mongo.sessions().find_one({"_id": other["_id"]})["cancelRun"]["state"] == "done"
    assert sum(r["amount"] for r in after["refunds"]) == new["price"]
    assert cell(session["_id"], "0:0") == FREE and cell(session["_id"], "0:1") == SOLD
    assert not admits(other["_id"], new["ticket"]) and not admits(session["_id"], moved)
    reconcile(grace=timedelta(0))
    assert check_invariants() == []


def test_a_crash_right_after_abandoning_a_paid_exchange_still_gives_the_money_and_seats_back(session, crash_at):
    """The abandon's write is done (the exchange ``abandoned``, no longer open) and the process dies
    before the new seats and the difference the customer paid go back. The exchange is no longer
    open, so nothing rolls it forward: reconcile must still find the seats and the money."""
    order = paid(session, ["0:0", "0:1"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"])
    crash_at("exchange.after_paid")
    with pytest.raises(faults.InjectedCrash):
        exchanges.pay_difference(order["_id"], card(VISA))
    assert admits(session["_id"], order["lines"][0]["ticket"])  # the old ticket is used: no switch now
    crash_at("exchange.after_abandon")
    with pytest.raises(faults.InjectedCrash):
        reconcile(grace=timedelta(0))
    faults.set_hook(None)
    after = stored(order)
    assert after["exchanges"][0]["state"] == "abandoned" and "exchangeOpen" not in after
    reconcile(grace=timedelta(0))
    after = stored(order)
    assert after["lines"][0]["key"] == "0:0" and cell(session["_id"], "1:2") == FREE
    assert after["extraPayments"][0]["amount"] == 1500
    assert [(r["amount"], r["status"]) for r in after.get("refunds", [])] == [(1500, "succeeded")]
    assert check_invariants() == []


@pytest.mark.parametrize("point", ["exchange.after_intent", "exchange.before_switch", "exchange.after_abandon"])
def test_the_remaining_crash_points_are_rolled_forward_or_given_back(session, crash_at, point):
    """after_intent: a dearer move's payment was made at the provider, the process died before the
    customer paid; before_switch: died after the last check; after_abandon: a move whose new seat
    went to someone else died after giving up. Reconcile (and the customer's payment) finish each,
    with one valid set of tickets at every step."""
    order = paid(session, ["0:0", "0:1"])
    code = order["lines"][0]["ticket"]
    crash_at(point)
    if point == "exchange.after_intent":
        with pytest.raises(faults.InjectedCrash):
            exchanges.exchange(order["_id"], [code], session["_id"], ["1:2"])
    elif point == "exchange.before_switch":
        with pytest.raises(faults.InjectedCrash):
            exchanges.exchange(order["_id"], [code], session["_id"], ["0:5"], settle=exchanges.COUNTER)
    else:  # the exchange died after its start; a buyer held its new seat; reconcile gives up, and dies
        crash_at("exchange.after_start")
        with pytest.raises(faults.InjectedCrash):
            exchanges.exchange(order["_id"], [code], session["_id"], ["0:5"], settle=exchanges.COUNTER)
        faults.set_hook(None)
        holds.hold_seats(session["_id"], "s:other", None, ["0:5"], allow_orphans=True)
        crash_at(point)
        with pytest.raises(faults.InjectedCrash):
            reconcile(grace=timedelta(0))
    faults.set_hook(None)
    valid = [line["ticket"] for line in stored(order)["lines"]]
    assert len(valid) == 2 and (code in valid) != any(line["key"] in ("1:2", "0:5") for line in stored(order)["lines"])
    if point == "exchange.after_intent":
        status, _, _ = exchanges.pay_difference(order["_id"], card(VISA))
        assert status == "paid"
    reconcile(grace=timedelta(0))
    after = stored(order)
    assert "exchangeOpen" not in after
    keys = sorted(line["key"] for line in after["lines"])
    if point == "exchange.after_abandon":
        assert after["exchanges"][0]["state"] == "abandoned" and keys == ["0:0", "0:1"]
        assert cell(session["_id"], "0:5") != FREE  # the buyer's hold, untouched
    else:
        assert after["exchanges"][0]["state"] == "done" and len(keys) == 2 and "0:0" not in keys
        assert cell(session["_id"], "0:0") == FREE
    assert check_invariants() == []


def browser_of(owner: str) -> Client:
    """A test client carrying ``owner``'s buyer cookie: the browser that bought the order."""
    signed = HttpResponse()
    signed.set_signed_cookie(buyer.COOKIE_NAME, owner, salt=buyer.SALT)
    browser = Client()
    browser.cookies[buyer.COOKIE_NAME] = signed.cookies[buyer.COOKIE_NAME].value
    return browser


def test_the_exchange_payment_answers_head_like_get(session):
    order = paid(session, ["0:0", "0:1"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"])
    browser = browser_of("s:ada")
    for ref in (order["ref"], "NOSUCHREF"):
        path = f"/orders/{ref}/exchange-pay"
        got, head = browser.get(path), browser.head(path)
        assert (head.status_code, head["Content-Type"]) == (got.status_code, got["Content-Type"]), ref
        assert head.content == b""
    assert stored(order)["exchanges"][0]["state"] == "awaiting_payment"  # a look changes nothing


def test_eight_tabs_paying_the_difference_at_once_charge_once_and_each_is_told_what_happened(session):
    """The customer presses Pay in eight tabs at the same moment, each with a card of its own:
    one charge, one move, and every other tab hears that the difference is paid or being paid
    (never that the payment service did not answer)."""
    order = paid(session, ["0:0", "0:1"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"])
    intent = stored(order)["exchanges"][0]["payment"]["intent"]
    means = [card(VISA) for _ in range(8)]
    tabs = [browser_of("s:ada") for _ in range(8)]
    path = f"/orders/{order['ref']}/exchange-pay"
    turn = itertools.count()

    def press_pay():
        n = next(turn)
        answer = tabs[n].post(path, {"payment_method": means[n]}, HTTP_ACCEPT="application/json")
        return answer.status_code, answer.json()

    answers = at_once(press_pay, 8)
    assert len(answers) == 8
    kinds = sorted((status, body["status"]) for status, body in answers)
    assert (200, "paid") in kinds and set(kinds) <= {(200, "paid"), (409, "processing")}, kinds
    for status, body in answers:
        assert body["redirect"] == f"/orders/{order['ref']}/"
        assert status == 200 or body["message"]  # the waiting tabs say why
    after = stored(order)
    assert after["exchanges"][0]["state"] == "done" and "exchangeOpen" not in after
    assert sorted(line["key"] for line in after["lines"]) == ["0:1", "1:2"]
    assert [t["amount"] for t in after["topUps"]] == [1500] and not after.get("extraPayments")
    assert cell(session["_id"], "0:0") == FREE and cell(session["_id"], "1:2") == SOLD
    from booking.payments.stripe_provider import client

    assert client().v1.payment_intents.retrieve(intent).status == "succeeded"
    assert client().v1.refunds.list({"payment_intent": intent}).data == []
    confirms = [r for r in requests_received() if r["path"] == f"/v1/payment_intents/{intent}/confirm"]
    assert len(confirms) == 1  # one tab charged the card; the others saw it under way or done
    assert check_invariants() == []


def test_a_crash_after_claiming_the_difference_payment_lets_a_pay_through_once_the_claim_lapses(
    session, crash_at, monkeypatch
):
    from booking.core import clock
    from booking.payments.base import confirm_claim_seconds

    order = paid(session, ["0:0", "0:1"])
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"])
    crash_at("exchange.after_claim")
    with pytest.raises(faults.InjectedCrash):
        exchanges.pay_difference(order["_id"], card(VISA))
    faults.set_hook(None)
    status, _, _ = exchanges.pay_difference(order["_id"], card(VISA))
    assert status == "processing"  # the claim may still be charging: nothing charged twice
    intent = stored(order)["exchanges"][0]["payment"]["intent"]
    assert not [r for r in requests_received() if r["path"] == f"/v1/payment_intents/{intent}/confirm"]
    later = clock.now() + timedelta(seconds=confirm_claim_seconds() + 1)
    monkeypatch.setattr(clock, "now", lambda: later)
    status, after, _ = exchanges.pay_difference(order["_id"], card(VISA))
    assert status == "paid" and after["exchanges"][0]["state"] == "done"
    assert [t["amount"] for t in after["topUps"]] == [1500] and check_invariants() == []


def test_a_refund_after_a_card_refund_and_a_counter_top_up_is_split_by_what_each_still_holds(session, manager_client):
    """Card 40.00, 20.00 of it refunded already; 15.00 paid at the counter for a dearer seat.
    Refunding the last ticket (35.00) asks the card for the 20.00 it still holds, never more,
    and records the other 15.00 as cash to pay out at the counter."""
    from booking.payments import refunds

    order = paid(session, ["0:0", "0:1"])  # 2 x 20.00 by card
    moving, other = order["lines"][0]["ticket"], order["lines"][1]["ticket"]
    exchanges.exchange(order["_id"], [moving], session["_id"], ["1:5"], settle=exchanges.COUNTER, by="anna")
    refunds.refund_tickets(order["_id"], tickets=[other], reason="ill", by="anna")  # 20.00 back to the card
    [last] = stored(order)["lines"]
    assert last["key"] == "1:5" and last["price"] == 3500
    answer = manager_client.post(
        f"/admin/booking/order/{order['_id']}/refund/",
        {"tickets": [last["ticket"]], "reason": "cannot come"},
        follow=True,
    )
    done = stored(order)
    final = [(r["payment"]["provider"], r["amount"], r["status"]) for r in done["refunds"][1:]]
    assert final == [("stripe", 2000, "succeeded"), ("box_office", 1500, "succeeded")]
    assert done["refunds"][1]["payment"]["id"] == order["paidWith"]["id"]
    assert done["refunds"][2]["payment"]["id"] == done["topUps"][0]["id"]
    assert sorted(stripe_refunds(done)) == [2000, 2000]  # the card gave back all it took, not a cent more
    assert done["state"] == "refunded" and done["amountRefunded"] == 5500
    page = answer.content.decode()
    assert "Refunded 1 ticket (35.00 EUR): cannot come." in page
    assert "Pay out 15.00 EUR at the counter. The seats are free again." in page
    assert cell(session["_id"], "1:5") == FREE and check_invariants() == []
