"""Canceling a performance (sales/session_cancel.py) and canceling some tickets of an order:
only the canceled performance's tickets are refunded, the rest stay valid; the worker's run is
resumable after a crash and refunds each order once; every customer is mailed once."""

import pytest
from django.core import mail

from booking.core import faults, mongo
from booking.notifications import change_notices
from booking.payments import refunds
from booking.sales import cancels, checkin, holds, session_cancel
from booking.sales.sessions import cancel_session
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, SOLD

pytestmark = pytest.mark.slow


def paid(parts, owner, email=None):
    """A paid order with seats in several sessions: parts = [(session, keys), ...]."""
    cart_id = None
    for session, keys in parts:
        cart_id = holds.hold_seats(session["_id"], owner, cart_id, list(keys)).cart_id
    return checkout_paid(owner, cart_id, owner.split(":")[1].title(), email or f"{owner.split(':')[1]}@example.com")


def stored(order):
    return mongo.orders().find_one({"_id": order["_id"]})


def cell(session, key):
    r, c = (int(x) for x in key.split(":"))
    return mongo.sessions().find_one({"_id": session["_id"]})["seats"][r][c]


def admits(session, code):
    return checkin.check_in(checkin.get_scope(session["_id"]), door="Main", by="door", code=code).admitted


@pytest.fixture
def mails(settings):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    mail.outbox.clear()
    return mail.outbox


def test_canceling_some_tickets_refunds_them_and_the_rest_still_check_in(mails):
    session = make_session()
    order = paid([(session, ["0:0", "0:1", "0:2", "0:3"])], "s:ada")
    first, second = (line["ticket"] for line in order["lines"][:2])
    done = refunds.refund_tickets(order["_id"], tickets=[first], reason="seat broken", by="anna")
    assert done["state"] == "partially_refunded" and done["refunds"][-1]["amount"] == 2000
    assert done["refunds"][-1]["status"] == "succeeded"
    assert cell(session, "0:0") == FREE and cell(session, "0:1") == SOLD
    assert check_invariants() == []
    assert admits(session, second) and not admits(session, first)
    assert change_notices.send_pending(order["_id"]) == ["sent"]
    [message] = mails
    assert "tickets canceled" in message.subject and "A1" in message.body and "seat broken" in message.body
    attached = [a[0] for a in message.attachments]
    receipt, calendar = f"receipt-{order['ref']}.pdf", f"booking-{order['ref']}.ics"
    assert attached == [f"tickets-{order['ref']}.pdf", receipt, "credit-note-CN-000001.pdf", calendar]
    assert check_invariants() == []


def test_canceling_a_session_refunds_only_its_tickets_and_mails_everyone(mails):
    tonight, tomorrow = make_session(), make_session(days=2)
    both = paid([(tonight, ["0:0", "0:1"]), (tomorrow, ["0:0"])], "s:ada")
    only = paid([(tonight, ["2:0", "2:1"])], "s:bob")
    elsewhere = paid([(tomorrow, ["2:0", "2:1"])], "s:cy")
    holds.hold_seats(tonight["_id"], "s:dan", None, ["1:0", "1:1"])
    assert cancel_session(tonight["_id"], cancel_orders=True, by="anna") == 2
    progress = session_cancel.progress(mongo.sessions().find_one({"_id": tonight["_id"]}))
    assert progress and (progress.state, progress.total, progress.left) == ("running", 2, 2)

    assert cancels.cancel_session_orders(tonight["_id"]) == {"refunded": 2, "skipped": 0, "state": "done"}
    after_both, after_only = stored(both), stored(only)
    assert after_both["state"] == "partially_refunded" and [line["key"] for line in after_both["lines"]] == ["0:0"]
    assert after_both["lines"][0]["sessionId"] == tomorrow["_id"]
    assert after_both["refunds"][0]["amount"] == 4000  # not the other performance's ticket, nor the fee
    assert after_only["state"] == "refunded" and after_only["refunds"][0]["status"] == "succeeded"
    assert stored(elsewhere)["state"] == "paid" and "refunds" not in stored(elsewhere)
    assert admits(tomorrow, after_both["lines"][0]["ticket"])
    assert cell(tonight, "1:0") == FREE  # the cart's hold went back
    progress = session_cancel.progress(mongo.sessions().find_one({"_id": tonight["_id"]}))
    assert progress and (progress.state, progress.done, progress.percent) == ("done", 2, 100)
    assert check_invariants() == []
    for order in (both, only):
        change_notices.send_pending(order["_id"])
    assert sorted(m.to[0] for m in mails) == ["ada@example.com", "bob@example.com"]
    assert all("performance is canceled" in m.subject for m in mails)


def test_a_worker_killed_mid_way_is_finished_by_running_again_each_order_once(crash_at, mails):
    session = make_session()
    orders = [paid([(session, [f"{r}:0", f"{r}:1"])], f"s:p{r}") for r in range(3)]
    orders.append(paid([(session, ["0:5", "0:6"])], "s:p3"))
    cancel_session(session["_id"], cancel_orders=True, by="anna")
    calls = []

    def die_on_the_second(name):
        if name == "session_cancel.after_order":
            calls.append(name)
            if len(calls) == 2:
                raise faults.InjectedCrash(name)

    faults.set_hook(die_on_the_second)
    with pytest.raises(faults.InjectedCrash):
        cancels.cancel_session_orders(session["_id"])
    faults.set_hook(None)
    states = sorted(stored(o)["state"] for o in orders)
    assert states == ["paid", "paid", "refunded", "refunded"]
    progress = session_cancel.progress(mongo.sessions().find_one({"_id": session["_id"]}))
    assert progress and (progress.state, progress.done, progress.left) == ("running", 2, 2)
    assert check_invariants() == []

    assert cancels.cancel_session_orders(session["_id"])["refunded"] == 2  # only the two left
    assert cancels.cancel_session_orders(session["_id"])["refunded"] == 0  # nothing twice
    for order in orders:
        after = stored(order)
        assert after["state"] == "refunded" and len(after["refunds"]) == 1
        assert [n["kind"] for n in after["changeNotices"]] == ["session_canceled"]
        change_notices.send_pending(order["_id"])
        change_notices.send_pending(order["_id"])
    assert len(mails) == 4
    assert mongo.sessions().find_one({"_id": session["_id"]})["seatsAvailable"] == 24
    assert check_invariants() == []


def test_reconcile_queues_a_stalled_run_again(crash_at):
    from datetime import timedelta

    from booking.core import clock

    session = make_session()
    paid([(session, ["0:0"])], "s:ada")
    crash_at("session_cancel.after_start")
    with pytest.raises(faults.InjectedCrash):
        cancel_session(session["_id"], cancel_orders=True)
    faults.set_hook(None)
    assert session_cancel.resume_stalled(clock.now()) == 0  # not stalled yet
    assert session_cancel.resume_stalled(clock.now() + timedelta(minutes=6)) == 1
    assert cancels.cancel_session_orders(session["_id"])["state"] == "done"
    assert check_invariants() == []
