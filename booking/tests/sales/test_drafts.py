"""A new performance is a draft: staff see and change it, buyers find it nowhere (what's on, its
page, its seat map, the live stream, the API) and nobody can hold its seats. Publishing puts it
on sale; deleting is for a performance nobody bought from, anything else can only be canceled."""

from datetime import timedelta

import pytest

from booking.core import clock, mongo
from booking.core.errors import Conflict, NotFound
from booking.payments import refunds
from booking.sales import holds, selectors
from booking.sales.sessions import create_session, delete_session, publish_session
from booking.tests.admin_support import sell
from booking.tests.api.support import Api, make_token
from booking.tests.factories import CATEGORIES, make_session, make_theater
from booking.upkeep.invariants import check_invariants
from booking.venues.layouts import parse_grid
from booking.venues.theaters import create_sectioned_theater

pytestmark = pytest.mark.django_db


def exists(session) -> bool:
    return mongo.sessions().find_one({"_id": session["_id"]}, {"_id": 1}) is not None


def listed_ids() -> set:
    return {s["_id"] for s in selectors.upcoming_sessions()}


def test_a_new_session_is_a_draft_that_no_buyer_reaches(client):
    theater = make_theater()
    start = clock.now() + timedelta(days=2)
    draft = create_session(
        theater["_id"],
        name="Secret",
        description="",
        start=start,
        end=start + timedelta(hours=2),
        prices={"s": 1000, "p": 2000},
    )
    assert draft["status"] == "draft"
    assert draft["_id"] not in listed_ids()
    assert "Secret" not in client.get("/").content.decode()
    assert client.get(f"/sessions/{draft['_id']}/").status_code == 404
    assert client.get(f"/sessions/{draft['_id']}/map/").status_code == 404
    assert selectors.listed_session_version(draft["_id"]) is None
    with pytest.raises(NotFound):
        holds.hold_seats(draft["_id"], "s:early", None, ["0:0"])
    api = Api(make_token(theater))
    listed = api.get("/api/v1/performances/").json()["performances"]
    assert listed == []
    assert api.get("/api/v1/performances/", {"status": "draft"}).json()["performances"] == []
    assert api.get(f"/api/v1/performances/{draft['_id']}/").status_code == 404
    assert api.get(f"/api/v1/performances/{draft['_id']}/availability/").status_code == 404


def test_publishing_puts_it_on_sale_everywhere(client):
    draft = make_session(published=False, name="Opening")
    assert publish_session(draft["_id"]) == 1
    assert draft["_id"] in listed_ids()
    assert "Opening" in client.get("/").content.decode()
    assert client.get(f"/sessions/{draft['_id']}/").status_code == 200
    assert holds.hold_seats(draft["_id"], "s:first", None, ["0:0"]).cart_id is not None
    with pytest.raises(Conflict):
        publish_session(draft["_id"])  # once


def test_a_sectioned_performance_is_published_and_deleted_whole(client):
    sections = [{"name": f"North {n}", "layout": parse_grid("A: ssss\nB: pppp\n", CATEGORIES)} for n in (1, 2)]
    venue = create_sectioned_theater("Arena", sections)
    start = clock.now() + timedelta(days=3)
    first = create_session(
        venue["_id"],
        name="Cup Final",
        description="",
        start=start,
        end=start + timedelta(hours=2),
        prices={"s": 1000, "p": 2000},
    )
    performance = first["performanceId"]
    assert client.get(f"/performances/{performance}/").status_code == 404
    assert publish_session(first["_id"]) == 2
    assert client.get(f"/performances/{performance}/").status_code == 200
    assert delete_session(first["_id"]) == 2
    assert mongo.sessions().count_documents({"performanceId": performance}) == 0
    assert mongo.performances().find_one({"_id": performance}) is None
    assert client.get(f"/performances/{performance}/").status_code == 404


def test_a_draft_is_deleted_with_its_listing():
    draft = make_session(published=False)
    assert delete_session(draft["_id"]) == 1
    assert not exists(draft)
    assert mongo.listings().find_one({"_id": draft["_id"]}) is None


def test_a_published_session_nobody_bought_from_can_be_deleted():
    session = make_session()
    assert session["_id"] in listed_ids()
    assert delete_session(session["_id"]) == 1
    assert not exists(session) and session["_id"] not in listed_ids()


def test_a_session_with_an_order_can_only_be_canceled_and_nothing_changes():
    session = make_session()
    sell(session["_id"], ["0:0"])
    before = mongo.sessions().find_one({"_id": session["_id"]})
    with pytest.raises(Conflict) as refused:
        delete_session(session["_id"])
    assert "only be canceled" in refused.value.message
    assert mongo.sessions().find_one({"_id": session["_id"]}) == before
    assert check_invariants() == []


def test_a_session_whose_only_order_was_refunded_still_cannot_be_deleted():
    session = make_session()
    order = sell(session["_id"], ["0:0"])
    refunds.refund_tickets(order["_id"], by="anna", notice=None)
    with pytest.raises(Conflict):
        delete_session(session["_id"])
    assert exists(session)


def test_seats_held_in_a_cart_keep_it(client):
    session = make_session()
    holds.hold_seats(session["_id"], "s:holder", None, ["0:0"])
    with pytest.raises(Conflict):
        delete_session(session["_id"])
    assert exists(session)


def test_a_hold_between_the_read_and_the_delete_makes_the_delete_refuse(fault_hook):
    session = make_session()

    def hold_meanwhile(name):
        if name == "session_delete.before_delete":
            fault_hook(None)
            holds.hold_seats(session["_id"], "s:quick", None, ["0:0"])

    fault_hook(hold_meanwhile)
    with pytest.raises(Conflict):
        delete_session(session["_id"])
    assert exists(session)
    assert [r["owner"] for r in mongo.sessions().find_one({"_id": session["_id"]})["reservations"]] == ["s:quick"]
    assert check_invariants() == []
