"""``manage.py backfill_orders``: orders and sessions made by older versions get what newer code
relies on. An order as the first version stored it has no ``nameKeys`` (the staff search by name
misses it), no ``purgeAt`` (retention never deletes it) and ticket codes that do not start with its
reference (a door must look such codes up by the code alone, asking every shard). A cart the
checkout from before payments left in ``checking_out`` is finished as that checkout would have."""

import secrets
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command

from booking.core import clock, mongo
from booking.core.domain import CartState, Order, OrderState
from booking.sales import checkin, checkout, holds, reservations
from booking.sales import orders as order_service
from booking.sales.order_search import OrderFilters, search_orders
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep import backfill
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import SOLD

pytestmark = pytest.mark.django_db

MADE = datetime(2025, 3, 14, 19, 30, tzinfo=UTC)


def sold(session, owner, keys, name):
    hold = holds.hold_seats(session["_id"], owner, None, keys)
    return checkout_paid(owner, hold.cart_id, name, f"{owner[2:]}@example.org")


def as_the_first_version_stored_it(order):
    """Without the fields added since, its tickets in the first version's format."""
    codes = {f"lines.{i}.ticket": secrets.token_urlsafe(18) for i in range(len(order["lines"]))}
    mongo.orders().update_one(
        {"_id": order["_id"], "ref": order["ref"]},
        {
            "$unset": {
                "nameKeys": "",
                "purgeAt": "",
                "language": "",
                "mail": "",
                "lines.$[].ticketType": "",
                "lines.$[].ticketTypeName": "",
            },
            "$set": {"createdOn": MADE, **codes},
        },
    )
    return mongo.orders().find_one({"_id": order["_id"]})


def found(text: str) -> list[Order]:
    return search_orders(filters=OrderFilters(text=text)).orders


@pytest.fixture
def older():
    """A session from before the marker with an older order, and one whose tickets are all new."""
    session, newer_session = make_session(name="Hamlet"), make_session(name="Faust", days=2)
    for s in (session, newer_session):
        mongo.sessions().update_one({"_id": s["_id"]}, {"$unset": {"ticketCodesByRef": ""}})
    order = as_the_first_version_stored_it(sold(session, "s:ada", ["0:0", "0:1"], "Ada Lovelace"))
    newer = sold(newer_session, "s:bob", ["0:0"], "Bob Example")
    return {"session": session, "order": order, "newer_session": newer_session, "newer": newer}


def test_an_older_order_is_found_by_name_and_will_be_deleted_after_the_backfill(older):
    order = older["order"]
    assert found("Lovelace") == []  # the gap: not found by name
    assert "purgeAt" not in order  # never deleted by the purge_ttl index
    call_command("backfill_orders", "--batch-size", "1")  # a batch per order: the walk resumes by _id
    assert [o["ref"] for o in found("Lovelace")] == [order["ref"]]
    assert [o["ref"] for o in found("ada lov")] == [order["ref"]]
    after = mongo.orders().find_one({"_id": order["_id"]})
    assert after["purgeAt"] == order_service.purge_at(MADE) == datetime(2036, 1, 1, tzinfo=UTC)
    assert check_invariants() == []


def test_only_sessions_whose_tickets_all_start_with_their_reference_are_marked(older):
    report = backfill.backfill_orders()
    assert report.sessions_with_older_codes == {older["session"]["_id"]}
    marked = {s["_id"] for s in mongo.sessions().find({"ticketCodesByRef": True}, hint=[("_id", 1)])}
    assert older["newer_session"]["_id"] in marked and older["session"]["_id"] not in marked
    # the older tickets still check in (by the code alone); the newer session's unknown codes by one shard
    old_code = older["order"]["lines"][0]["ticket"]
    assert checkin.check_in(checkin.get_scope(older["session"]["_id"]), code=old_code, door="N", by="a").admitted
    assert checkin.get_scope(older["newer_session"]["_id"]).codes_by_ref
    assert not checkin.get_scope(older["session"]["_id"]).codes_by_ref


def test_a_refunded_or_exchanged_older_ticket_keeps_its_session_unmarked(older):
    """A door still answers "refunded" or "replaced" for those codes: found by the code alone."""
    newer = older["newer"]
    line = newer["lines"][0]
    mongo.orders().update_one(
        {"_id": newer["_id"], "ref": newer["ref"]},
        {"$push": {"refundedLines": {**line, "ticket": secrets.token_urlsafe(18)}}},
    )
    backfill.backfill_orders()
    assert mongo.sessions().count_documents({"ticketCodesByRef": True}, hint=[("_id", 1)]) == 0


def test_a_second_run_changes_nothing(older):
    first = backfill.backfill_orders()
    assert (first.name_keys_set, first.purge_dates_set, first.sessions_marked) == (1, 1, 1)
    again = backfill.backfill_orders()
    assert (again.name_keys_set, again.purge_dates_set, again.sessions_marked) == (0, 0, 0)
    assert again.orders_read == first.orders_read == 2


def test_the_pages_of_an_older_order_work(older, manager_client, client):
    order = older["order"]
    assert manager_client.get(f"/admin/booking/order/{order['_id']}/change/").status_code == 200
    assert manager_client.get(f"/admin/booking/order/?q={order['ref']}").status_code == 302
    found = client.post("/find-booking/", {"ref": order["ref"], "email": "ada@example.org"})
    assert found.status_code == 302
    assert client.get(f"/orders/{order['ref']}/").status_code == 200
    assert client.get(f"/orders/{order['ref']}/tickets/").status_code == 200
    sid = older["session"]["_id"]
    assert manager_client.get(f"/admin/booking/report/session/{sid}/").status_code == 200
    assert manager_client.get(f"/admin/booking/report/session/{sid}/sales.csv").status_code == 200
    assert check_invariants() == []


def begun_before_payments(session, owner, keys, *, stopped_after):
    """A cart as the checkout from before payments left it when its process died: ``checking_out``
    with the buyer's details and its order's reference; then, by how far it got, the order stored
    paid and the seats sold."""
    hold = holds.hold_seats(session["_id"], owner, None, keys)
    customer = {"name": "Ada Lovelace", "email": "ada@example.org", "language": "en"}
    began = {"state": "checking_out", "checkoutOn": clock.now(), "customer": customer, "orderRef": "OLDFL0W2"}
    mongo.carts().update_one({"_id": hold.cart_id, "owner": owner}, {"$set": began})
    cart = mongo.carts().find_one({"_id": hold.cart_id})
    if stopped_after in ("order", "sale"):
        checkout.store_order(cart, make=checkout.new_order)
    if stopped_after == "sale":
        reservations.settle(session["_id"], hold.cart_id, sell=set(keys))
    return hold.cart_id


@pytest.mark.parametrize("stopped_after", ["submit", "order", "sale"])
def test_a_checkout_begun_before_payments_is_finished_once(stopped_after):
    session = make_session()
    cart_id = begun_before_payments(session, "s:ada", ["0:0", "0:1"], stopped_after=stopped_after)
    call_command("backfill_orders", stdout=StringIO())
    [order] = mongo.orders().find({"cartId": cart_id})
    assert order["state"] == OrderState.PAID and order["ref"] == "OLDFL0W2" and order["name"] == "Ada Lovelace"
    assert sorted(line["key"] for line in order["lines"]) == ["0:0", "0:1"]
    assert mongo.carts().find_one({"_id": cart_id})["state"] == CartState.DONE
    grid = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    assert [grid[0][0], grid[0][1]] == [SOLD, SOLD]
    assert check_invariants() == []
    before = (list(mongo.orders().find()), list(mongo.carts().find()), list(mongo.sessions().find()))
    assert backfill.backfill_orders().checkouts_finished == 0  # none left: a second run changes nothing
    assert (list(mongo.orders().find()), list(mongo.carts().find()), list(mongo.sessions().find())) == before


def test_a_checkout_begun_before_payments_whose_hold_is_gone_fails_and_gives_its_seats_back():
    session = make_session()
    cart_id = begun_before_payments(session, "s:ada", ["0:0"], stopped_after="submit")
    taken = sold(session, "s:bob", ["0:1"], "Bob")  # the hold's one seat went, another is Bob's
    mongo.sessions().update_one(
        {"_id": session["_id"]}, {"$pull": {"reservations": {"_id": cart_id}}, "$set": {"seats.0.0": 0}}
    )
    mongo.sessions().update_one({"_id": session["_id"]}, {"$inc": {"seatsAvailable": 1}})
    assert backfill.backfill_orders().checkouts_finished == 1
    [order] = mongo.orders().find({"cartId": cart_id})
    assert order["state"] == OrderState.FAILED
    assert mongo.carts().find_one({"_id": cart_id})["state"] == CartState.CANCELED
    assert mongo.orders().find_one({"_id": taken["_id"]})["state"] == OrderState.PAID
    assert check_invariants() == []
