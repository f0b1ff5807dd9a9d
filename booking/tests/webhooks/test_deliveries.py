"""Deliveries to a real receiver started by the test: signed, retried after 5xx with the attempts
kept, refused answers not retried, switched-off or unsubscribed endpoints sent nothing, a
delivery sent again by staff signed anew."""

import json
from urllib.parse import urlsplit

import pytest

from booking.core import clock, mongo
from booking.core.errors import Conflict, InvalidRequest
from booking.sales import outbox
from booking.tests.admin_support import sell
from booking.tests.factories import make_session
from booking.tests.webhook_support import deliver, deliver_order_events, receiver, register
from booking.webhooks import addresses, deliveries, endpoints, signing
from booking.webhooks.dispatch import dispatch

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def local_receivers(settings):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = True  # the receiver is http://127.0.0.1


def stored(delivery_id: str) -> dict:
    return mongo.webhook_deliveries().find_one({"_id": delivery_id})


def test_a_delivery_is_retried_after_two_500s_then_delivered_signed_and_every_attempt_kept():
    session = make_session()
    with receiver([500, 500, 200]) as got:
        endpoint = register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0", "0:1"])
        assert deliver_order_events(order["_id"]) == [deliveries.DELIVERED]

    assert len(got.received) == 3 and all(r["verified"] for r in got.received)
    assert len({r["body"] for r in got.received}) == 1  # the same body each time
    event = got.events()[0]
    assert event["type"] == "order.paid" and event["apiVersion"] == "1"
    assert event["data"]["order"]["ref"] == order["ref"] and event["data"]["order"]["state"] == "paid"
    assert event["data"]["order"]["total"] == order["total"]
    headers = got.received[0]["headers"]
    assert headers["X-Booking-Event"] == "order.paid" and headers["Content-Type"] == "application/json"
    [delivery] = mongo.webhook_deliveries().find({"endpointId": endpoint["_id"]})
    assert delivery["state"] == "delivered" and delivery["tries"] == 3
    assert [a["status"] for a in delivery["attempts"]] == [500, 500, 200]
    assert delivery["attempts"][0]["excerpt"] == "answer 500" and all(a["ms"] >= 0 for a in delivery["attempts"])


def test_the_body_carries_no_ticket_codes_nor_the_buyers_cookie():
    session = make_session()
    with receiver([200]) as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        deliver_order_events(order["_id"])
    text = got.received[0]["body"].decode()
    assert order["lines"][0]["ticket"] not in text and order["owner"] not in text
    assert order["cartId"].__str__() not in text
    assert got.events()[0]["data"]["order"]["tickets"][0]["id"].startswith("tkt_")


def test_a_tampered_body_or_an_old_timestamp_fails_the_signature_check():
    secret = signing.new_secret()
    body = json.dumps({"type": "order.paid", "data": {"order": {"total": 4000}}}).encode()
    now = int(clock.now().timestamp())
    header = signing.header(secret, now, body)
    assert signing.verify(secret, header, body, now=now)
    assert not signing.verify(secret, header, body.replace(b"4000", b"1"), now=now)
    assert not signing.verify(signing.new_secret(), header, body, now=now)
    assert not signing.verify(secret, header, body, now=now + 301)  # a recorded delivery replayed later
    assert signing.verify(secret, header, body, now=now + 300)
    assert not signing.verify(secret, "t=abc,v1=00", body, now=now)
    assert not signing.verify(secret, "", body, now=now)


def test_a_4xx_is_not_retried_but_408_and_429_are(settings):
    settings.BOOKING_WEBHOOK_MAX_ATTEMPTS = 6
    session = make_session()
    with receiver([404]) as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        assert deliver_order_events(order["_id"]) == [deliveries.FAILED]
        assert len(got.received) == 1
    elsewhere = make_session()  # another theater: the first receiver's endpoint does not hear of it
    with receiver([429, 408, 201]) as got:
        register(got, elsewhere["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(elsewhere["_id"], ["1:0"], owner="s:other")
        assert deliver_order_events(order["_id"]) == [deliveries.DELIVERED]
        assert len(got.received) == 3


def test_a_receiver_that_keeps_failing_is_given_up_after_the_last_attempt(settings):
    settings.BOOKING_WEBHOOK_MAX_ATTEMPTS = 6
    session = make_session()
    with receiver([503]) as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        [delivery_id] = [d["_id"] for d in mongo.webhook_deliveries().find()] or [None]
        assert delivery_id is None  # nothing is sent in the sale
        assert deliver_order_events(order["_id"]) == [deliveries.FAILED]
    assert len(got.received) == 6
    [delivery] = mongo.webhook_deliveries().find()
    assert delivery["state"] == "failed" and delivery["tries"] == 6


def test_a_receiver_that_is_down_is_a_network_error_tried_again(settings):
    settings.BOOKING_WEBHOOK_MAX_ATTEMPTS = 2
    session = make_session()
    with receiver([200]) as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
    order = sell(session["_id"], ["0:0"])  # the receiver is gone: nothing listens at its port
    assert deliver_order_events(order["_id"]) == [deliveries.FAILED]
    [delivery] = mongo.webhook_deliveries().find()
    assert [a["status"] for a in delivery["attempts"]] == [None, None]
    assert "ConnectionError" in delivery["attempts"][0]["error"]


def test_a_switched_off_endpoint_and_one_that_did_not_choose_the_event_get_nothing():
    session = make_session()
    with receiver([200]) as off, receiver([200]) as placed_only, receiver([200]) as other_theater:
        register(off, session["theaterId"], active=False)
        register(placed_only, session["theaterId"], events=[outbox.ORDER_PLACED])
        register(other_theater, make_session()["theaterId"])
        order = sell(session["_id"], ["0:0"])
        deliver_order_events(order["_id"])
    assert off.received == [] and other_theater.received == []
    assert placed_only.types() == ["order.placed"]


def test_an_endpoint_switched_off_after_the_event_does_not_get_it():
    session = make_session()
    with receiver([200]) as got:
        endpoint = register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        [delivery_id] = dispatch(outbox.ORDERS, order["_id"])
        endpoints.update_endpoint(endpoint["_id"], url=got.url, events=[outbox.ORDER_PAID], active=False)
        assert deliver(delivery_id) == deliveries.CANCELED
    assert got.received == []
    with pytest.raises(Conflict):
        deliveries.resend(delivery_id)


def test_staff_send_a_delivery_again_with_the_new_secret():
    session = make_session()
    with receiver([200]) as got:
        endpoint = register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        assert deliver_order_events(order["_id"]) == [deliveries.DELIVERED]
        delivery_id = mongo.webhook_deliveries().find_one()["_id"]
        old_secret = got.secret
        got.secret = endpoints.rotate_secret(endpoint["_id"])["secret"]
        deliveries.resend(delivery_id)
        assert stored(delivery_id)["state"] == "pending" and stored(delivery_id)["round"] == 2
        with pytest.raises(Conflict):
            deliveries.resend(delivery_id)  # pending already: one sending at a time
        assert deliver(delivery_id) == deliveries.DELIVERED
    assert [r["verified"] for r in got.received] == [True, True]  # each with the secret of its time
    again = got.received[1]
    header = again["headers"][signing.SIGNATURE_HEADER]
    assert not signing.verify(old_secret, header, again["body"], now=int(clock.now().timestamp()))
    assert got.received[0]["body"] == again["body"]
    assert [a["round"] for a in stored(delivery_id)["attempts"]] == [1, 2]


def test_a_delivery_already_delivered_is_not_sent_twice_by_a_repeated_task():
    session = make_session()
    with receiver([200]) as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        [outcome] = deliver_order_events(order["_id"])
        delivery_id = mongo.webhook_deliveries().find_one()["_id"]
        assert deliver(delivery_id) == deliveries.DELIVERED  # the state, not a second send
    assert outcome == deliveries.DELIVERED and len(got.received) == 1


def test_a_local_address_is_refused_at_delivery_time_when_local_hosts_are_not_allowed(settings):
    session = make_session()
    with receiver([200]) as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        settings.BOOKING_WEBHOOK_ALLOW_LOCAL = False  # e.g. the name now resolves to 127.0.0.1
        assert deliver_order_events(order["_id"]) == [deliveries.FAILED]
    assert got.received == []
    [delivery] = mongo.webhook_deliveries().find()
    assert "local or private" in delivery["attempts"][0]["error"]


def test_a_delivery_connects_to_the_address_it_checked_not_to_a_second_lookup_of_the_name():
    looked_up: list[str] = []

    def repointed_after_the_first_answer(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["127.0.0.1"] if len(looked_up) == 1 else ["10.255.255.1"]

    session = make_session()
    with receiver([200]) as got:
        port = urlsplit(got.url).port
        got.url = f"http://hooks.receiver.test:{port}/hooks?source=box-office"  # no resolver knows .test
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        [delivery_id] = dispatch(outbox.ORDERS, order["_id"])
        outcome = deliveries.attempt(delivery_id, resolve=repointed_after_the_first_answer)
    assert outcome.state == deliveries.DELIVERED and looked_up == ["hooks.receiver.test"]
    assert got.received[0]["headers"]["Host"] == f"hooks.receiver.test:{port}"
    assert got.received[0]["path"] == "/hooks?source=box-office"


def test_a_name_with_one_private_address_among_public_ones_is_refused_before_any_connection(settings):
    session = make_session()
    with receiver([200]) as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        mongo.webhook_endpoints().update_one({}, {"$set": {"url": "https://hooks.receiver.test/hooks"}})
        order = sell(session["_id"], ["0:0"])
        [delivery_id] = dispatch(outbox.ORDERS, order["_id"])
        settings.BOOKING_WEBHOOK_ALLOW_LOCAL = False  # production's rules from here
        outcome = deliveries.attempt(delivery_id, resolve=lambda host, port: ["93.184.216.34", "10.0.0.7"])
    assert outcome.state == deliveries.FAILED and got.received == []
    assert "local or private" in stored(delivery_id)["attempts"][0]["error"]


def test_every_address_of_a_public_name_is_public_and_the_first_is_the_one_connected_to():
    public = ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]
    assert addresses.public_address("example.org", 443, allow_local=False, resolve=lambda h, p: public) == public[0]
    with pytest.raises(InvalidRequest, match="could not be resolved"):
        addresses.public_address("example.org", 443, allow_local=False, resolve=lambda h, p: [])
    for private in ("127.0.0.1", "169.254.169.254", "::1", "fd00::1", "100.64.0.1", "224.0.0.1"):
        answer = [*public, private]
        with pytest.raises(InvalidRequest, match="local or private"):
            addresses.public_address("example.org", 443, allow_local=False, resolve=lambda h, p: answer)  # noqa: B023
