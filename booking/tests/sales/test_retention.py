"""Data that does not grow without bound: ended carts and old orders go by TTL, past sessions'
seat grids are compacted into a summary (sales/retention.py)."""

import time
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from pymongo import MongoClient
from pymongo.collection import Collection

from booking.control import selectors as staff
from booking.core import clock, mongo
from booking.sales import carts as cart_service
from booking.sales import holds, orders, retention, selectors
from booking.tests import admin_support as support
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, GAP, SOLD
from devmongo import DevMongoServer

pytestmark = pytest.mark.django_db


def test_ended_carts_carry_the_date_their_ttl_counts_from(settings):
    session = make_session()
    expired = holds.hold_seats(session["_id"], "s:a", None, ["0:0"])
    mongo.carts().update_one({"_id": expired.cart_id}, {"$set": {"expiresAt": clock.now()}})
    cart_service.expire_cart(expired.cart_id)
    canceled = holds.hold_seats(session["_id"], "s:b", None, ["2:0"])
    cart_service.cancel_cart(canceled.cart_id, "s:b")
    order = support.sell(session["_id"], ["1:0"], owner="s:c")
    live = holds.hold_seats(session["_id"], "s:d", None, ["2:5"])
    ended = {c["_id"]: c.get("endedOn") for c in mongo.carts().find({"owner": {"$in": ["s:a", "s:b", "s:c", "s:d"]}})}
    assert all(ended[c] is not None for c in (expired.cart_id, canceled.cart_id, order["cartId"]))
    assert ended[live.cart_id] is None  # a live cart is never deleted
    ttl = mongo.carts().index_information()["ended_ttl"]
    assert ttl["key"] == [("endedOn", 1)]
    assert ttl["expireAfterSeconds"] == settings.BOOKING_CART_RETENTION_DAYS * 86_400


def test_a_changed_retention_rebuilds_the_ttl_index(settings):
    settings.BOOKING_CART_RETENTION_DAYS = 3
    mongo.ensure_indexes()
    assert mongo.carts().index_information()["ended_ttl"]["expireAfterSeconds"] == 3 * 86_400


def test_ended_carts_past_their_retention_are_deleted_and_the_others_stay():
    """The ended_ttl index as ensure_indexes declares it, on a server of its own whose TTL monitor
    runs every second (MongoDB's runs every 60 s, a startup parameter): the TTL compares with the
    server's clock, so these dates are real ones."""
    spec = mongo.carts().index_information()["ended_ttl"]
    server = DevMongoServer(port=0, ttl_monitor_sleep_secs=1).start()
    try:
        carts: Collection[dict] = MongoClient(server.uri, tz_aware=True)["ttl"]["carts"]
        carts.create_index(spec["key"], name="ended_ttl", expireAfterSeconds=spec["expireAfterSeconds"])
        now = datetime.now(UTC)
        carts.insert_many(
            [
                {"owner": "s:old", "state": "expired", "items": [], "endedOn": now - timedelta(days=31)},
                {"owner": "s:recent", "state": "done", "items": [], "endedOn": now - timedelta(days=29)},
                {"owner": "s:live", "state": "active", "items": [], "expiresAt": now + timedelta(minutes=5)},
            ]
        )
        deadline = time.monotonic() + 10
        while carts.count_documents({}) == 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert {c["owner"] for c in carts.find({})} == {"s:recent", "s:live"}
    finally:
        server.stop()


def test_orders_are_kept_for_the_full_years_the_law_counts(settings):
    settings.BOOKING_ORDER_RETENTION_YEARS = 10
    assert orders.purge_at(datetime(2026, 3, 14, 12, tzinfo=UTC)) == datetime(2037, 1, 1, tzinfo=UTC)
    assert orders.purge_at(datetime(2026, 12, 31, 23, tzinfo=UTC)) == datetime(2037, 1, 1, tzinfo=UTC)
    session = make_session()
    order = support.sell(session["_id"], ["0:0"])
    stored = mongo.orders().find_one({"ref": order["ref"]})
    assert stored["purgeAt"] == orders.purge_at(stored["createdOn"])
    assert mongo.orders().index_information()["purge_ttl"]["expireAfterSeconds"] == 0
    # the live-state indexes leave the years of sent mails and released orders out
    info = mongo.orders().index_information()
    assert info["mail_pending"]["partialFilterExpression"] == {"mail": "pending"}
    assert info["mail_failed"]["partialFilterExpression"] == {"mail": "failed"}
    assert info["release_pending"]["partialFilterExpression"] == {"seatsReleased": False}


def _past_session_with_sales():
    session = make_session()
    support.sell(session["_id"], ["0:0", "0:1"])
    holds.hold_seats(session["_id"], "s:late", None, ["2:5"])  # a hold nobody ended
    past = clock.now() - timedelta(days=10)
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"start": past, "end": past + timedelta(hours=2)}})
    return session


def test_a_past_session_is_compacted_into_a_summary_keeping_its_layout():
    past = _past_session_with_sales()
    recent = make_session()
    before = mongo.sessions().find_one({"_id": past["_id"]})
    assert retention.compact_past_sessions() == 1
    doc = mongo.sessions().find_one({"_id": past["_id"]})
    assert "seats" not in doc and "reservations" not in doc
    assert doc["seatSummary"] == {"sold": 2, "blocked": 0, "free": 22, "total": 24}
    assert doc["layout"] == before["layout"] and doc["prices"] == before["prices"]
    assert doc["version"] == before["version"] + 1  # cached maps of the old grid are not reused
    assert doc["purgeAt"] == orders.purge_at(doc["end"])  # with its orders (TTL)
    assert "seats" in mongo.sessions().find_one({"_id": recent["_id"]})
    assert retention.compact_past_sessions() == 0  # nothing left: the grid_by_end index is empty of it
    assert check_invariants() == []


def test_compaction_is_conditional_on_the_grid_it_read(monkeypatch):
    past = _past_session_with_sales()
    real_update = mongo.sessions

    class Racing:
        """The session changes (a late cancelation frees a seat) between the read and the write."""

        def __init__(self):
            self.collection = real_update()

        def __getattr__(self, name):
            return getattr(self.collection, name)

        def update_one(self, flt, update, **kw):
            self.collection.update_one({"_id": past["_id"]}, {"$set": {"seats.0.0": FREE}, "$inc": {"version": 1}})
            return self.collection.update_one(flt, update, **kw)

    monkeypatch.setattr(mongo, "sessions", Racing)
    assert retention.compact_past_sessions() == 0
    monkeypatch.undo()
    assert retention.compact_past_sessions() == 1
    assert mongo.sessions().find_one({"_id": past["_id"]})["seatSummary"]["sold"] == 1


def test_pages_of_a_compacted_session_still_work(manager_client):
    past = _past_session_with_sales()
    retention.compact_past_sessions()
    # staff: the grid comes back from the paid orders; the lists count from the summary
    grid = staff.get_session(past["_id"])["seats"]
    assert grid[0][:2] == [SOLD, SOLD] and grid[0][2] == FREE and grid[0][4] == GAP
    listed = staff.staff_sessions(when="past")
    assert listed[0]["counts"]["sold"] == 2 and listed[0]["counts"]["occupancy"] == 8
    sid = str(past["_id"])
    for page in (
        f"/admin/booking/session/{sid}/change/",
        f"/admin/booking/session/{sid}/seats/",
        "/admin/booking/session/?when=past",
    ):
        assert manager_client.get(page).status_code == 200, page
    # the buyer: nothing is for sale, every seat shows as taken
    assert selectors.get_session(past["_id"])["seats"][0][2] == SOLD
    buyer = Client()
    assert buyer.get(f"/sessions/{sid}/").status_code == 200
    assert buyer.post(f"/sessions/{sid}/hold", {"seats": ["0:2"]}).status_code in (302, 409)
