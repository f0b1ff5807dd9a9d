"""Stripe's webhook: the events localstripe made, signed as Stripe signs them, posted to the app.
Twice, out of order, for an unknown payment, with a bad signature; and localstripe delivering
its own webhook to a live server."""

import json
import time
from typing import Any

import pytest
from django.test import Client

from booking.core import mongo
from booking.payments import flow as payments
from booking.payments.stripe_provider import StripeProvider
from booking.sales import holds
from booking.tests.localstripe import DECLINED, VISA, card, events_for, register_webhook, signed
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import HELD, SOLD

ALICE = "s:alice"
URL = "/payments/stripe/webhook/"


def start(session, keys=("1:2", "1:3")):
    cart = holds.hold_seats(session["_id"], ALICE, None, list(keys))
    return payments.start(ALICE, cart.cart_id, "Ada", "ada@example.com")


def paid_at_stripe(order, number=VISA):
    """The buyer paid, but the app heard nothing (the page closed; only the webhook will tell)."""
    StripeProvider().confirm(order["payment"]["intent"], card(number), idempotency_key=f"t-{order['_id']}")
    return events_for(order["payment"]["intent"])


def post(event, **kwargs):
    body, signature = signed(event, **kwargs)
    return Client().post(URL, body, content_type="application/json", HTTP_STRIPE_SIGNATURE=signature)


def order_of(order):
    return mongo.orders().find_one({"_id": order["_id"]})


def cells(session, keys):
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    return [seats[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


@pytest.fixture
def session():
    from booking.tests.factories import make_session

    return make_session()


def test_the_webhook_pays_the_order(session):
    order = start(session)
    [succeeded] = paid_at_stripe(order)
    answer = post(succeeded)
    assert answer.status_code == 200 and b"paid" in answer.content
    assert order_of(order)["state"] == "paid" and cells(session, ["1:2", "1:3"]) == [SOLD, SOLD]
    assert check_invariants() == []


def test_webhook_and_return_page_whichever_comes_first_the_other_changes_nothing(session):
    from booking.tests.localstripe import THREE_D_SECURE, authenticate

    first = start(session)  # the webhook first, then the buyer's return page
    [succeeded] = paid_at_stripe(first)
    assert post(succeeded).status_code == 200
    paid = order_of(first)
    assert payments.check(first["_id"]) == paid and order_of(first) == paid
    second = start(session, keys=("2:2", "2:3"))  # the return page first (3-D Secure), then the webhook
    asked = payments.pay_with_card(second["_id"], ALICE, card(THREE_D_SECURE))
    authenticate(second["payment"]["intent"], asked.client_secret)
    assert payments.check(second["_id"])["state"] == "paid"
    returned = order_of(second)
    [late] = [e for e in events_for(second["payment"]["intent"]) if e["type"] == "payment_intent.succeeded"]
    assert post(late).status_code == 200 and order_of(second) == returned
    assert [o["receiptNo"] for o in (paid, returned)] == [1, 2]  # one number each
    assert check_invariants() == []


def test_a_replayed_webhook_is_recorded_once_and_changes_nothing(session):
    order = start(session)
    [succeeded] = paid_at_stripe(order)
    assert post(succeeded).status_code == 200
    after_first = order_of(order)
    again = post(succeeded)
    assert again.status_code == 200 and b"already handled" in again.content
    assert order_of(order) == after_first
    assert mongo.get_db()["payment_events"].count_documents({}) == 1
    assert check_invariants() == []


def test_out_of_order_a_failure_after_the_success_does_not_undo_it(session):
    order = start(session)
    first_intent = order["payment"]["intent"]
    payments.pay_with_card(order["_id"], ALICE, card(DECLINED))  # attempt 1 fails
    [failed] = [e for e in events_for(first_intent) if e["type"] == "payment_intent.payment_failed"]
    paid = payments.pay_with_card(order["_id"], ALICE, card(VISA))  # attempt 2 pays
    assert paid.status == "paid"
    [succeeded] = [e for e in events_for(order_of(order)["paidWith"]["id"]) if e["type"].endswith("succeeded")]
    # Stripe delivers them the other way round: the success first, the old failure last
    assert post(succeeded).status_code == 200
    assert post(failed).status_code == 200
    current = order_of(order)
    assert current["state"] == "paid" and current["payment"]["status"] == "succeeded"
    assert cells(session, ["1:2", "1:3"]) == [SOLD, SOLD]
    assert check_invariants() == []


def test_out_of_order_a_success_after_a_failure_still_pays(session):
    order = start(session)
    first_intent = order["payment"]["intent"]
    payments.pay_with_card(order["_id"], ALICE, card(DECLINED))
    [failed] = [e for e in events_for(first_intent) if e["type"] == "payment_intent.payment_failed"]
    order = payments.orders().find_one({"_id": order["_id"]})
    order = payments._next_attempt(order)  # the buyer opens the form again: a new payment
    [succeeded] = paid_at_stripe(order)  # and pays, but the page dies before answering
    assert post(succeeded).status_code == 200
    assert post(failed).status_code == 200  # the old failure arrives late
    assert order_of(order)["state"] == "paid"
    assert check_invariants() == []


def test_a_webhook_for_an_unknown_payment_is_answered_200_and_changes_nothing(session):
    order = start(session)
    [succeeded] = paid_at_stripe(order)
    stranger = json.loads(json.dumps(succeeded))
    stranger["id"] = "evt_unknown"
    stranger["data"]["object"]["id"] = "pi_not_ours"
    stranger["data"]["object"]["metadata"] = {}
    answer = post(stranger)
    assert answer.status_code == 200 and b"unknown payment" in answer.content
    assert order_of(order)["state"] == "pending_payment"
    assert cells(session, ["1:2", "1:3"]) == [HELD, HELD]
    assert mongo.get_db()["payment_events"].find_one({"_id": "stripe:evt_unknown"})["outcome"] == "unknown payment"


@pytest.mark.parametrize("how", ["wrong secret", "changed body", "no header", "old timestamp"])
def test_a_bad_signature_is_refused_with_400_and_changes_nothing(session, how):
    order = start(session)
    [succeeded] = paid_at_stripe(order)
    if how == "wrong secret":
        answer = post(succeeded, secret="whsec_wrong")
    elif how == "old timestamp":
        answer = post(succeeded, timestamp=int(time.time()) - 3600)
    else:
        body, signature = signed(succeeded)
        headers: dict[str, Any] = {} if how == "no header" else {"HTTP_STRIPE_SIGNATURE": signature}
        body = body.replace(b'"amount": 7000', b'"amount": 1') if how == "changed body" else body
        answer = Client().post(URL, body, content_type="application/json", **headers)
    assert answer.status_code == 400
    assert order_of(order)["state"] == "pending_payment"
    assert mongo.get_db()["payment_events"].count_documents({}) == 0


@pytest.mark.parametrize(
    "skew, answered",
    [(-3600, 400), (-301, 400), (-300, 200), (300, 200), (301, 400), (3600, 400)],
    ids=["an-hour-old", "just-too-old", "oldest-taken", "newest-taken", "just-too-new", "an-hour-ahead"],
)
def test_a_signature_is_taken_within_stripes_five_minutes_either_way(session, monkeypatch, skew, answered):
    """Stripe's library refuses a signature older than its tolerance; one from as far in the future
    is refused too (a clock that far ahead signed it, or it was made to be replayed later)."""
    from datetime import UTC, datetime

    from booking.core import clock

    order = start(session)
    [succeeded] = paid_at_stripe(order)
    now = int(time.time())
    monkeypatch.setattr(clock, "now", lambda: datetime.fromtimestamp(now, UTC))
    answer = post(succeeded, timestamp=now + skew)
    assert answer.status_code == answered, answer.content
    if answered == 400:
        assert order_of(order)["state"] == "pending_payment" and cells(session, ["1:2", "1:3"]) == [HELD, HELD]
        assert mongo.get_db()["payment_events"].count_documents({}) == 0
    else:
        assert order_of(order)["state"] == "paid" and cells(session, ["1:2", "1:3"]) == [SOLD, SOLD]
    assert check_invariants() == []


def test_the_webhook_needs_no_csrf_token_but_only_takes_post(session):
    assert Client(enforce_csrf_checks=True).get(URL).status_code == 405


@pytest.mark.django_db(transaction=True)
def test_localstripe_delivers_its_webhook_to_a_live_server(session, live_server):
    register_webhook(live_server.url + URL, name="live")
    try:
        order = start(session)
        paid_at_stripe(order)
        # (localstripe sends an event a second after it happened, to the webhooks registered then:
        # earlier tests' last events may arrive here too, as payments this database does not know)
        events = mongo.get_db()["payment_events"]
        mine = {"payment": order["payment"]["intent"]}
        deadline = time.monotonic() + 15
        # test-only reads of a small collection, hinted (notablescan is on in tests)
        while not list(events.find({**mine, "handled": True}).hint("_id_").limit(1)) and time.monotonic() < deadline:
            time.sleep(0.2)  # the order is paid a moment before the event is marked handled
        assert order_of(order)["state"] == "paid"
        [event] = list(events.find(mine).hint("_id_"))
        assert event["handled"] and event["type"] == "payment_intent.succeeded"
    finally:
        register_webhook(live_server.url + URL, name="live", events=[])  # later tests hear nothing
