"""Exchanged and refunded tickets at a door that was offline: a phone whose list is older
than an exchange or a refund lets the old ticket in offline, by its scanned code or by a name
search (the hash only). The sync must know those tickets: the old one comes back "not valid,
replaced by an exchange" naming the seat (and the performance) that replaced it, stored as a
conflict staff see, never "not a ticket for this performance"; the new ticket admits. And the
list itself keeps the old ticket of an exchange to another performance, with where it went."""

import json
from datetime import timedelta
from typing import Any

import pytest

from booking.checkin.presenters import conflict_summary
from booking.core import clock, mongo
from booking.payments import refunds
from booking.sales import checkin, exchanges
from booking.tests.checkin_support import door_staff, sell, tickets
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants

pytestmark = pytest.mark.django_db

JSON: dict[str, Any] = {"HTTP_ACCEPT": "application/json"}


@pytest.fixture
def door(client):
    client.force_login(door_staff())
    return client


def sync(client, session, scans):
    body = json.dumps({"scans": scans})
    answer = client.post(f"/checkin/{session['_id']}/sync", body, content_type="application/json", **JSON)
    assert answer.status_code == 200
    return answer.json()["results"]


def scanned(scan_id, *, code=None, digest=None, door="East"):
    """A check-in the phone queued offline: by the scanned code, or by the hash of a search hit."""
    at = (clock.now() - timedelta(minutes=4)).isoformat()
    return {"id": scan_id, "at": at, "door": door, **({"code": code} if code else {"hash": digest})}


def line(order, key):
    return next(x for x in mongo.orders().find_one({"_id": order["_id"]})["lines"] if x["key"] == key)


@pytest.mark.parametrize("by", ["code", "hash"])
def test_an_old_ticket_let_in_offline_after_its_exchange_syncs_as_replaced_and_the_new_one_admits(door, by):
    session = make_session(name="Hamlet")
    order = sell(session, ["1:2", "1:3"], name="Ada Q. Lovelace")
    old = tickets(order)[0]
    # The phone's list was downloaded before this: offline, the old ticket looked valid.
    exchanges.exchange(order["_id"], [old], session["_id"], ["1:5"], settle=exchanges.COUNTER, by="anna")
    new = line(order, "1:5")
    queued = scanned("east-scan-0001", **({"code": old} if by == "code" else {"digest": checkin.ticket_hash(old)}))
    [answer] = sync(door, session, [queued])
    assert answer["status"] == checkin.NOT_VALID and answer["state"] == "exchanged"
    assert answer["replacedBy"] == {"row": "B", "seat": new["seat"], "section": ""}
    assert answer["message"] == f"Replaced by an exchange — new seat: Row B · Seat {new['seat']}."
    stored = mongo.checkin_conflicts().find_one({"scanId": "east-scan-0001"})
    assert stored["kind"] == checkin.NOT_VALID and stored["state"] == "exchanged"
    assert conflict_summary(stored).endswith(f"but: Replaced by an exchange — new seat: Row B · Seat {new['seat']}.")
    [admitted] = sync(door, session, [scanned("east-scan-0002", digest=checkin.ticket_hash(new["ticket"]))])
    assert admitted["status"] == checkin.ADMITTED
    assert "checkedIn" in line(order, "1:5") and mongo.checkin_conflicts().count_documents({}) == 1
    assert check_invariants() == []


def test_a_refunded_ticket_picked_by_name_offline_syncs_as_refunded_not_unknown(door):
    session = make_session(name="Hamlet")
    order = sell(session, ["1:2", "1:3"], name="Ada Q. Lovelace")
    gone = tickets(order)[1]
    refunds.refund_tickets(order["_id"], tickets=[gone], by="anna")
    [answer] = sync(door, session, [scanned("west-scan-0001", digest=checkin.ticket_hash(gone), door="West")])
    assert answer["status"] == checkin.NOT_VALID and answer["message"] == "The ticket was refunded."
    assert answer["ticket"]["ref"] == order["ref"] and answer["conflict"]["kind"] == checkin.NOT_VALID
    assert check_invariants() == []


def test_an_exchange_to_another_performance_stays_on_the_old_doors_list_saying_where_it_went(door):
    session = make_session(name="Hamlet")
    other = make_session(name="Macbeth", days=3)
    order = sell(session, ["1:2", "1:3"], name="Ada Q. Lovelace")
    old = tickets(order)
    exchanges.exchange(order["_id"], old, other["_id"], ["0:0", "0:1"], settle=exchanges.COUNTER, by="anna")
    listed = {t["h"]: t for t in door.get(f"/checkin/{session['_id']}/tickets.json").json()["tickets"]}
    entry = listed[checkin.ticket_hash(old[0])]  # the order has no ticket for Hamlet any more
    assert entry["ok"] is False and entry["state"] == "exchanged"
    assert entry["newSeat"]["row"] == "A" and entry["newSeat"]["seat"] == "1"
    assert entry["newSeat"]["show"]["name"] == "Macbeth"
    outcome = checkin.check_in(checkin.get_scope(session["_id"]), door="Main", by="door", code=old[0])
    message = f"Replaced by an exchange — new seat: Row A · Seat 1, Macbeth, {outcome.replaced_by['show']['when']}."
    from booking.checkin.presenters import outcome_data

    assert outcome_data(outcome)["message"] == message
    new_list = {t["h"]: t for t in door.get(f"/checkin/{other['_id']}/tickets.json").json()["tickets"]}
    assert all(new_list[checkin.ticket_hash(x["ticket"])]["ok"] for x in mongo.orders().find_one()["lines"])
    assert check_invariants() == []
