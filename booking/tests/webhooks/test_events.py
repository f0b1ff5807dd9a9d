"""Every kind of event fires from the real services, is written with its change (a crash before
the worker is asked loses nothing: reconcile hands it over), and reaches a real receiver once."""

import io
import json
from datetime import timedelta

import pytest
import redis
from django.conf import settings as django_settings
from django.core.management import call_command

from booking.core import clock, faults, mongo, work_queue
from booking.payments import flow as payments
from booking.payments import refunds
from booking.sales import cancels, checkin, counter, exchanges, holds, outbox
from booking.sales.sessions import cancel_session
from booking.tests.admin_support import sell
from booking.tests.factories import make_session, make_theater
from booking.tests.paying import checkout_paid_setup
from booking.tests.webhook_support import deliver, deliver_order_events, deliver_pending, receiver, register
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.upkeep.tasks import dispatch_webhook_events
from booking.webhooks import deliveries, endpoints
from booking.webhooks.dispatch import dispatch

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def local_receivers(settings):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = True


def pending_events(collection, document_id) -> list[str]:
    found = mongo.get_db()[collection].find_one({"_id": document_id}, {"webhookEvents": 1})
    return [e["type"] for e in found.get("webhookEvents", [])]


def test_placing_and_paying_an_order_fire_placed_then_paid():
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"])
        order = sell(session["_id"], ["0:0", "0:1"])
        assert pending_events("orders", order["_id"]) == ["order.placed", "order.paid"]  # written with the changes
        assert deliver_order_events(order["_id"]) == ["delivered", "delivered"]
    assert got.types() == ["order.placed", "order.paid"]
    assert all(r["verified"] for r in got.received)
    assert pending_events("orders", order["_id"]) == []  # handed over: pulled from the order
    assert len({e["id"] for e in got.events()}) == 2


def test_a_partial_refund_fires_refunded_and_a_full_one_canceled_too():
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.ORDER_REFUNDED, outbox.ORDER_CANCELED])
        order = sell(session["_id"], ["0:0", "0:1"])
        first, second = (line["ticket"] for line in order["lines"])
        refunds.refund_tickets(order["_id"], tickets=[first], by="anna")
        deliver_order_events(order["_id"])
        assert got.types() == ["order.refunded"]
        refund_event = got.events()[0]
        assert refund_event["data"]["order"]["state"] == "partially_refunded"
        assert refund_event["data"]["refundId"] == mongo.orders().find_one({"_id": order["_id"]})["refunds"][0]["_id"]
        refunds.refund_tickets(order["_id"], tickets=[second], by="anna")
        deliver_order_events(order["_id"])
    assert got.types() == ["order.refunded", "order.refunded", "order.canceled"]
    assert check_invariants() == []


def test_the_buyer_giving_up_an_unpaid_order_fires_canceled():
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.ORDER_CANCELED])
        order = checkout_paid_setup(session, "s:ada")
        payments.cancel_unpaid(order["_id"], owner="s:ada")
        deliver_order_events(order["_id"])
    [event] = got.events()
    assert event["type"] == "order.canceled" and event["data"]["order"]["state"] == "canceled"


def test_staff_canceling_a_card_paid_order_fires_refunded_and_canceled():
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.ORDER_REFUNDED, outbox.ORDER_CANCELED])
        order = sell(session["_id"], ["0:0"])
        cancels.cancel_order(order["_id"], by="anna", reason="asked")
        deliver_order_events(order["_id"])
    assert got.types() == ["order.refunded", "order.canceled"]


def test_a_cash_sale_at_the_counter_canceled_by_staff_fires_placed_paid_canceled_through_the_tasks():
    session = make_session()
    staff = counter.staff_owner(7)
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PLACED, outbox.ORDER_PAID, outbox.ORDER_CANCELED])
        held = holds.hold_seats(session["_id"], staff, None, ["1:2", "1:3"])
        sale = counter.CounterSale(name="Grace Hopper", method=counter.CASH, by="anna", by_id=7)
        order = counter.sell(staff, held.cart_id, sale)
        cancels.cancel_order(order["_id"], by="anna", reason="asked")
        assert dispatch_webhook_events.apply(args=[outbox.ORDERS, str(order["_id"])]).get() == 3
        assert dispatch_webhook_events.apply(args=[outbox.ORDERS, "not-an-id"]).get() == 0
        for delivery in mongo.webhook_deliveries().find():
            assert deliver(delivery["_id"]) == deliveries.DELIVERED
    assert sorted(got.types()) == ["order.canceled", "order.paid", "order.placed"]
    assert got.events()[0]["data"]["order"]["channel"] == "box_office"


def test_an_exchange_fires_changed_with_the_new_seats():
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.ORDER_CHANGED])
        order = sell(session["_id"], ["0:0"])
        exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["0:2"], by="anna")
        deliver_order_events(order["_id"])
    [event] = got.events()
    assert event["type"] == "order.changed" and event["data"]["exchangeId"]
    assert [(t["row"], t["seat"]) for t in event["data"]["order"]["tickets"]] == [("A", "3")]


def test_a_check_in_fires_checked_in_naming_the_ticket_without_its_code():
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.TICKET_CHECKED_IN])
        order = sell(session["_id"], ["0:0", "0:1"])
        code = order["lines"][1]["ticket"]
        assert checkin.check_in(checkin.get_scope(session["_id"]), code=code, door="Main", by="door").admitted
        assert not checkin.check_in(checkin.get_scope(session["_id"]), code=code, door="Main", by="door").admitted
        deliver_order_events(order["_id"])
    [event] = got.events()  # the second scan changed nothing: no second event
    ticket = event["data"]["ticket"]
    assert event["type"] == "ticket.checked_in" and ticket["seat"] == "2" and ticket["checkedInAt"]
    assert code not in got.received[0]["body"].decode()


def test_canceling_a_performance_fires_performance_canceled_and_its_orders_refunds():
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.PERFORMANCE_CANCELED, outbox.ORDER_REFUNDED])
        order = sell(session["_id"], ["0:0"])
        assert cancel_session(session["_id"], cancel_orders=True, by="anna") == 1
        assert pending_events("sessions", session["_id"]) == ["performance.canceled"]
        for delivery_id in dispatch(outbox.SESSIONS, session["_id"]):
            deliveries.attempt(delivery_id)
        cancels.cancel_session_orders(session["_id"])
        deliver_order_events(order["_id"])
    assert got.types() == ["performance.canceled", "order.refunded"]
    performance = got.events()[0]["data"]["performance"]
    assert performance["id"] == str(session["_id"]) and performance["status"] == "canceled"
    assert pending_events("sessions", session["_id"]) == []


def test_a_crash_between_the_change_and_the_queue_still_delivers_after_reconcile(crash_at):
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.ORDER_REFUNDED])
        order = sell(session["_id"], ["0:0", "0:1"])
        crash_at("refund.after_order")  # the order is written; nothing was queued
        with pytest.raises(faults.InjectedCrash):
            refunds.refund_tickets(order["_id"], tickets=[order["lines"][0]["ticket"]], by="anna")
        faults.set_hook(None)
        assert "order.refunded" in pending_events("orders", order["_id"])
        report = reconcile(now=clock.now(), grace=timedelta(seconds=120))
        assert report.webhook_events_dispatched == 0  # too young: its own dispatch may be under way
        report = reconcile(now=clock.now() + timedelta(seconds=121), grace=timedelta(seconds=120))
        assert report.webhook_events_dispatched == 1
        assert deliver_pending() == ["delivered"]
    assert got.types() == ["order.refunded"]
    assert pending_events("orders", order["_id"]) == []


def test_a_crash_after_the_deliveries_are_stored_sends_each_once(crash_at):
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        crash_at("webhooks.after_deliveries")
        with pytest.raises(faults.InjectedCrash):
            dispatch(outbox.ORDERS, order["_id"])
        faults.set_hook(None)
        assert pending_events("orders", order["_id"]) == ["order.placed", "order.paid"]
        [delivery_id] = dispatch(outbox.ORDERS, order["_id"])  # again: the same delivery, not a second
        assert mongo.webhook_deliveries().count_documents({}) == 1
        assert deliver_pending() == ["delivered"]
    assert got.types() == ["order.paid"]


def test_a_lost_delivery_task_is_queued_again_by_reconcile():
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"], events=[outbox.ORDER_PAID])
        order = sell(session["_id"], ["0:0"])
        dispatch(outbox.ORDERS, order["_id"])  # queued to the broker, where no worker takes it
        later = clock.now() + timedelta(seconds=121)
        assert reconcile(now=later, grace=timedelta(seconds=120)).webhook_deliveries_requeued == 1
        status = io.StringIO()
        call_command("worker_status", "--no-ping", stdout=status)
        assert "webhook deliveries pending:   1" in status.getvalue()  # the operator sees them
        assert deliver_pending() == ["delivered"]
        assert reconcile(now=later, grace=timedelta(seconds=120)).webhook_deliveries_requeued == 0


def test_a_sale_goes_through_while_the_receiver_is_down():
    session = make_session()
    with receiver() as got:
        register(got, session["theaterId"])
    order = sell(session["_id"], ["0:0"])  # nothing listens: the sale does not notice
    assert order["state"] == "paid" and mongo.webhook_deliveries().count_documents({}) == 0
    assert check_invariants() == []


def queued_dispatches() -> int:
    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    names = [json.loads(raw)["headers"]["task"] for raw in client.lrange("celery", 0, -1)]
    return names.count(work_queue.DISPATCH_WEBHOOK_EVENTS)


def test_with_no_endpoint_switched_on_a_sale_queues_no_dispatch_and_reconcile_clears_the_events(empty_queue):
    session = make_session()
    with receiver() as got:
        endpoint = register(got, session["theaterId"], events=[outbox.ORDER_PAID], active=False)
        order = sell(session["_id"], ["0:0"])
        assert queued_dispatches() == 0
        assert pending_events("orders", order["_id"]) == ["order.placed", "order.paid"]
        later = clock.now() + timedelta(seconds=121)
        assert reconcile(now=later, grace=timedelta(seconds=120)).webhook_events_dispatched == 1
        assert pending_events("orders", order["_id"]) == []

        endpoints.update_endpoint(endpoint["_id"], url=got.url, events=[outbox.ORDER_PAID], active=True)
        second = sell(session["_id"], ["0:1"])
        assert queued_dispatches() == 2  # placed, paid: switched on in this process, the next sale asks again
        assert deliver_order_events(second["_id"]) == ["delivered"]
    assert got.types() == ["order.paid"] and mongo.webhook_deliveries().count_documents({}) == 1


def test_events_a_sale_left_for_reconcile_reach_an_endpoint_switched_on_meanwhile():
    session = make_session()
    with receiver() as got:
        endpoint = register(got, session["theaterId"], events=[outbox.ORDER_PAID], active=False)
        order = sell(session["_id"], ["0:0"])  # no dispatch queued: nobody was listening yet
        endpoints.update_endpoint(endpoint["_id"], url=got.url, events=[outbox.ORDER_PAID], active=True)
        later = clock.now() + timedelta(seconds=121)
        assert reconcile(now=later, grace=timedelta(seconds=120)).webhook_events_dispatched == 1
        assert deliver_pending() == ["delivered"]
    assert got.types() == ["order.paid"] and pending_events("orders", order["_id"]) == []


def test_a_theater_nobody_listens_to_queues_no_dispatch_beside_one_with_an_endpoint(empty_queue):
    quiet = make_session(make_theater(name="Quiet Hall"))
    listened = make_session(make_theater(name="Listened Hall"))
    with receiver() as got:
        register(got, listened["theaterId"], events=[outbox.ORDER_PAID])
        unheard = sell(quiet["_id"], ["0:0"])
        assert queued_dispatches() == 0  # the other theater's endpoint does not make this one's sale queue
        heard = sell(listened["_id"], ["0:0"])
        assert queued_dispatches() == 2  # placed, paid
        later = clock.now() + timedelta(seconds=121)
        assert reconcile(now=later, grace=timedelta(seconds=120)).webhook_events_dispatched == 2
        assert pending_events("orders", unheard["_id"]) == []  # cleared, never delivered
        assert deliver_pending() == ["delivered"]
    assert got.types() == ["order.paid"] and got.events()[0]["data"]["order"]["ref"] == heard["ref"]
    assert mongo.webhook_deliveries().count_documents({}) == 1
