"""Door check-in, the engine: one conditional update lets a ticket in once; offline check-ins
sync and a ticket used twice is a stored conflict."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from bson import ObjectId
from django.utils import translation

from booking.core import clock, mongo
from booking.core.errors import InvalidRequest, NotFound
from booking.sales import cancels, checkin
from booking.sales.demo_stadium import create_match, create_stadium
from booking.tests.checkin_support import a_reduced_ticket, scope_of, sell, tickets
from booking.tests.factories import (
    make_session,
    stored_against_id_order,
    two_sessions_at_the_same_start,
)
from booking.tests.threads import PerThreadClient
from booking.upkeep.invariants import check_invariants


@pytest.fixture
def show():
    session = make_session(name="Hamlet")
    order = sell(session, ["1:2", "1:3"], name="Ada Q. Lovelace")
    return session, order


def line_of(order_id, code):
    order = mongo.orders().find_one({"_id": order_id})
    every = order["lines"] + order.get("refundedLines", [])  # a refunded ticket moved there (payments)
    return next(line for line in every if line["ticket"] == code)


def test_a_valid_ticket_is_admitted_once_with_time_door_and_staff(show):
    session, order = show
    scope = scope_of(session)
    code = tickets(order)[0]
    outcome = checkin.check_in(scope, code=code, door="North", by="anna")
    assert outcome.status == checkin.ADMITTED
    assert outcome.ticket == {
        "row": "B",
        "seat": "3",
        "section": "",
        "category": "Premium",
        "type": "Full price",  # every order line now has a ticket type
        "condition": "",  # what the holder must show, if the type asks for something
        "name": "Ada Q. Lovelace",
        "ref": order["ref"],
        "comp": False,  # paid for, not given away
    }
    record = line_of(order["_id"], code)["checkedIn"]
    assert record["door"] == "North" and record["by"] == "anna" and record["offline"] is False
    assert abs(record["at"] - clock.now()) < timedelta(seconds=5)
    assert "checkedIn" not in line_of(order["_id"], tickets(order)[1])  # the other seat is untouched

    again = checkin.check_in(scope, code=code, door="South", by="ben")
    assert again.status == checkin.USED
    assert again.used["door"] == "North" and again.used["by"] == "anna" and again.used["at"] == record["at"]
    assert line_of(order["_id"], code)["checkedIn"] == record  # the second door changed nothing
    assert checkin.counts(scope) == {
        "sold": 2,
        "checkedIn": 1,
        "doors": [{"door": "North", "count": 1}],
        "conflicts": 0,
        "openConflicts": 0,
    }
    assert check_invariants() == []


def test_the_ticket_type_is_shown_when_the_line_has_one(show):
    session, order = show
    code = tickets(order)[0]
    mongo.orders().update_one(
        {"_id": order["_id"]},
        {"$set": {"lines.$[l].ticketType": {"code": "red", "name": "Reduced"}}},
        array_filters=[{"l.ticket": code}],
    )
    assert checkin.check_in(scope_of(session), code=code, door="A", by="x").ticket["type"] == "Reduced"


@pytest.mark.parametrize(
    "language, name, condition",
    [
        ("de", "Ermäßigt", "Studierende, Senioren ab 65; Nachweis am Einlass zeigen"),
        ("en", "Reduced", "Students, seniors 65+; show proof at the door"),
    ],
)
def test_the_door_reads_the_ticket_type_and_what_to_show_in_its_own_language(language, name, condition):
    session, code = a_reduced_ticket()
    scope = scope_of(session)
    with translation.override(language):
        admitted = checkin.check_in(scope, code=code, door="A", by="anna").ticket
        [listed] = checkin.door_list(scope)  # what an offline door shows
    assert (admitted["type"], admitted["condition"]) == (name, condition)
    assert (listed["type"], listed["condition"]) == (name, condition)


@pytest.mark.parametrize(
    "state, words",
    [("staff cancel", "refunded"), ("canceled", "canceled"), ("refunded", "refunded"), ("pending_payment", "not paid")],
)
def test_a_ticket_of_an_order_that_does_not_admit_is_refused(show, state, words):
    session, order = show
    if state == "staff cancel":  # since payments: the order's money goes back, its tickets with it
        cancels.cancel_order(order["_id"], by="boss")
        state = "refunded"
    else:
        mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"state": state}})
    outcome = checkin.check_in(scope_of(session), code=tickets(order)[0], door="A", by="x")
    assert outcome.status == checkin.NOT_VALID and outcome.state == state and words in outcome.message
    assert "checkedIn" not in line_of(order["_id"], tickets(order)[0])


def test_a_ticket_for_another_performance_is_refused_and_says_which(show):
    session, order = show
    other = make_session(name="Macbeth", days=3)
    outcome = checkin.check_in(scope_of(other), code=tickets(order)[0], door="A", by="x")
    assert outcome.status == checkin.WRONG_SESSION
    assert outcome.session["name"] == "Hamlet" and outcome.session["start"] == session["start"]
    assert "checkedIn" not in line_of(order["_id"], tickets(order)[0])


def test_unknown_and_malformed_codes(show):
    session, _ = show
    scope = scope_of(session)
    assert checkin.check_in(scope, code="A" * 24, door="A", by="x").status == checkin.UNKNOWN
    for bad in ["", "short", "has spaces in it 1234567", "x" * 65, "<script>alert(1)</script>xx"]:
        with pytest.raises(InvalidRequest):
            checkin.check_in(scope, code=bad, door="A", by="x")
    with pytest.raises(InvalidRequest):
        checkin.check_in(scope, digest="not-a-hash", door="A", by="x")
    for door in ["", "   ", "x" * 41, "bad\x00door"]:
        with pytest.raises(InvalidRequest):
            checkin.check_in(scope, code="A" * 24, door=door, by="x")
    with pytest.raises(NotFound):
        checkin.get_scope(ObjectId())


def test_a_ticket_picked_by_its_hash_checks_in_the_same_way(show):
    session, order = show
    code = tickets(order)[1]
    outcome = checkin.check_in(scope_of(session), digest=checkin.ticket_hash(code), door="Side", by="x")
    assert outcome.status == checkin.ADMITTED and outcome.ticket["seat"] == "4"
    assert line_of(order["_id"], code)["checkedIn"]["door"] == "Side"
    unknown = checkin.check_in(scope_of(session), digest="0" * 64, door="Side", by="x")
    assert unknown.status == checkin.UNKNOWN
    assert check_invariants() == []


@pytest.mark.slow
def test_two_doors_scanning_the_same_ticket_at_once_admit_it_once(monkeypatch):
    """Twelve doors, each its own MongoClient (as separate web processes), scan the same tickets
    at the same moment: each ticket is admitted exactly once, by the door whose write won."""
    session = make_session()
    order = sell(session, ["0:0", "0:1", "0:2", "0:3"])
    scope = scope_of(session)
    clients = PerThreadClient()
    monkeypatch.setattr(mongo, "get_client", clients.get)
    results = []
    lock = threading.Lock()
    for code in tickets(order):
        start = threading.Barrier(12)

        def door(n, code=code, start=start):
            start.wait()
            outcome = checkin.check_in(scope, code=code, door=f"Door {n}", by=f"staff{n}")
            with lock:
                results.append((code, n, outcome))

        threads = [threading.Thread(target=door, args=(n,)) for n in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    clients.close()
    monkeypatch.undo()
    for code in tickets(order):
        mine = [(n, o) for c, n, o in results if c == code]
        statuses = Counter(o.status for _, o in mine)
        assert statuses == {checkin.ADMITTED: 1, checkin.USED: 11}, statuses
        [winner] = [n for n, o in mine if o.status == checkin.ADMITTED]
        assert line_of(order["_id"], code)["checkedIn"]["door"] == f"Door {winner}"
        assert all(o.used["door"] == f"Door {winner}" for _, o in mine if o.status == checkin.USED)
    assert checkin.counts(scope)["checkedIn"] == 4
    assert check_invariants() == []


# --- offline doors ---


def test_an_offline_check_in_syncs_with_its_own_time_and_a_replay_is_harmless(show):
    session, order = show
    scope = scope_of(session)
    code = tickets(order)[0]
    scanned = clock.now() - timedelta(minutes=7)
    first = checkin.check_in(
        scope, code=code, door="East", by="anna", scan_id="scan-east-0001", at=scanned, offline=True
    )
    assert first.status == checkin.ADMITTED and not first.replay
    record = line_of(order["_id"], code)["checkedIn"]
    assert record["at"] == scanned and record["offline"] is True and record["scanId"] == "scan-east-0001"
    # The door did not hear the answer and sends the same scan again: the same check-in, no conflict.
    again = checkin.check_in(
        scope, code=code, door="East", by="anna", scan_id="scan-east-0001", at=scanned, offline=True
    )
    assert again.status == checkin.ADMITTED and again.replay and again.conflict is None
    assert mongo.checkin_conflicts().count_documents({}) == 0
    assert check_invariants() == []


def test_a_ticket_used_at_two_offline_doors_is_a_conflict_stored_once(show):
    session, order = show
    scope = scope_of(session)
    code = tickets(order)[0]
    t0 = clock.now() - timedelta(minutes=10)
    east = checkin.check_in(scope, code=code, door="East", by="anna", scan_id="scan-east-0001", at=t0, offline=True)
    west = checkin.check_in(
        scope, code=code, door="West", by="ben", scan_id="scan-west-0001", at=t0 + timedelta(minutes=2), offline=True
    )
    assert east.status == checkin.ADMITTED
    assert west.status == checkin.USED and west.conflict is not None
    stored = mongo.checkin_conflicts().find_one({})
    assert stored["kind"] == checkin.USED and stored["scopeId"] == session["_id"]
    assert stored["offline"]["door"] == "West" and stored["offline"]["at"] == t0 + timedelta(minutes=2)
    assert stored["first"]["door"] == "East" and stored["first"]["offline"] is True
    assert stored["ticket"]["ref"] == order["ref"] and stored["ticket"]["row"] == "B"
    # West syncs again (it never heard back): still one conflict
    checkin.check_in(
        scope, code=code, door="West", by="ben", scan_id="scan-west-0001", at=t0 + timedelta(minutes=2), offline=True
    )
    assert mongo.checkin_conflicts().count_documents({}) == 1
    assert checkin.counts(scope)["conflicts"] == 1 and checkin.counts(scope)["openConflicts"] == 1
    assert [c["_id"] for c in checkin.conflicts(scope)] == [stored["_id"]]
    assert checkin.acknowledge_conflict(scope, stored["_id"], "boss")
    assert not checkin.acknowledge_conflict(scope, stored["_id"], "boss")
    assert checkin.counts(scope)["openConflicts"] == 0 and checkin.counts(scope)["conflicts"] == 1
    assert check_invariants() == []


def test_an_offline_door_after_an_online_one_is_a_conflict_too(show):
    session, order = show
    scope = scope_of(session)
    code = tickets(order)[0]
    checkin.check_in(scope, code=code, door="Main", by="anna")
    late = checkin.check_in(
        scope,
        code=code,
        door="Side",
        by="ben",
        scan_id="scan-side-0001",
        at=clock.now() - timedelta(minutes=1),
        offline=True,
    )
    assert late.status == checkin.USED and late.conflict["first"]["door"] == "Main"
    assert check_invariants() == []


def test_an_offline_check_in_of_a_canceled_booking_is_a_conflict(show):
    session, order = show
    cancels.cancel_order(order["_id"], by="boss")
    outcome = checkin.check_in(
        scope_of(session),
        code=tickets(order)[0],
        door="Side",
        by="ben",
        scan_id="scan-side-0002",
        at=clock.now(),
        offline=True,
    )
    assert outcome.status == checkin.NOT_VALID
    assert mongo.checkin_conflicts().find_one({})["kind"] == checkin.NOT_VALID
    assert check_invariants() == []


def test_online_refusals_are_not_conflicts(show):
    session, order = show
    scope = scope_of(session)
    checkin.check_in(scope, code=tickets(order)[0], door="Main", by="anna")
    checkin.check_in(scope, code=tickets(order)[0], door="Main", by="anna")
    checkin.check_in(scope, code="B" * 24, door="Main", by="anna")
    assert mongo.checkin_conflicts().count_documents({}) == 0
    assert check_invariants() == []


def test_offline_scan_times_are_bounded(show):
    session, order = show
    scope = scope_of(session)
    for at in [clock.now() + timedelta(hours=1), clock.now() - timedelta(days=3)]:
        with pytest.raises(InvalidRequest):
            checkin.check_in(
                scope, code=tickets(order)[0], door="A", by="x", scan_id="scan-0000001", at=at, offline=True
            )
    with pytest.raises(InvalidRequest):
        checkin.check_in(scope, code=tickets(order)[0], door="A", by="x", scan_id="bad id!", offline=True)


# --- what doors read ---


def test_the_door_list_has_hashes_seats_and_short_names_only(show):
    session, order = show
    other = sell(session, ["0:0"], name="Grace Hopper", email="grace@example.com")
    cancels.cancel_order(other["_id"], by="boss")
    checkin.check_in(scope_of(session), code=tickets(order)[0], door="North", by="anna")
    listed = {entry["h"]: entry for entry in checkin.door_list(scope_of(session))}
    assert len(listed) == 3
    first = listed[checkin.ticket_hash(tickets(order)[0])]
    assert first["name"] == "Ada L." and first["ok"] is True and first["used"]["door"] == "North"
    assert first["row"] == "B" and first["seat"] == "3" and first["category"] == "Premium"
    assert "used" not in listed[checkin.ticket_hash(tickets(order)[1])]
    canceled = listed[checkin.ticket_hash(tickets(other)[0])]
    assert canceled["ok"] is False and canceled["state"] == "refunded"  # since payments staff cancel refunds
    text = repr(listed)
    for secret in [*tickets(order), *tickets(other), "ada@example.com", "Lovelace", "grace@"]:
        assert secret not in text


def test_search_by_part_of_the_name_or_the_booking_reference(show):
    session, order = show
    sell(session, ["2:0"], name="Grace Hopper", email="grace@example.com")
    scope = scope_of(session)
    assert {hit["seat"] for hit in checkin.search(scope, "lovel")} == {"3", "4"}
    assert [hit["name"] for hit in checkin.search(scope, order["ref"][:4].lower())] == ["Ada Q. Lovelace"] * 2
    assert checkin.search(scope, "nobody") == []
    assert checkin.search(scope, ".*") == []  # the text is matched literally
    with pytest.raises(InvalidRequest):
        checkin.search(scope, "a")


def test_short_names():
    assert checkin.short_name("Ada Q. Lovelace") == "Ada L."
    assert checkin.short_name("Cher") == "Cher"
    assert checkin.short_name("   ") == ""


def test_a_stadium_gate_admits_to_every_section_of_the_performance():
    stadium = create_stadium("Test Stadium", seats=3 * 40, rows=4, half=5)
    first = create_match(stadium)
    north, south = list(mongo.sessions().find({"performanceId": first["performanceId"]}).sort("section.index", 1))[:2]
    a = sell(north, ["0:0"])
    b = sell(south, ["0:1"])
    scope = checkin.get_scope(first["performanceId"])
    assert len(scope.session_ids) == 3 and scope.sectioned
    assert checkin.get_scope(south["_id"]).session_ids == scope.session_ids  # a section opens its performance
    assert (
        checkin.check_in(scope, code=tickets(a)[0], door="Gate 1", by="x").ticket["section"] == north["section"]["name"]
    )
    assert (
        checkin.check_in(scope, code=tickets(b)[0], door="Gate 1", by="x").ticket["section"] == south["section"]["name"]
    )
    assert checkin.counts(scope)["checkedIn"] == 2 and checkin.counts(scope)["sold"] == 2
    assert len(checkin.door_list(scope)) == 2
    assert check_invariants() == []


def test_invariant_a_checked_in_ticket_belongs_to_a_paid_order(show):
    session, order = show
    checkin.check_in(scope_of(session), code=tickets(order)[0], door="North", by="anna")
    cancels.cancel_order(order["_id"], by="boss")  # canceled after the door let them in: allowed
    assert check_invariants() == []
    other = sell(session, ["0:0"])
    mongo.orders().update_one(
        {"_id": other["_id"]},
        {
            "$set": {
                "state": "canceled",
                "canceledOn": clock.now(),
                "seatsReleased": True,
                "lines.0.checkedIn": {"at": clock.now(), "door": "X", "recordedOn": clock.now() + timedelta(seconds=1)},
            }
        },
    )
    breaches = [b for b in check_invariants() if "checked in" in b]
    assert breaches and other["ref"] in breaches[0]


def test_lists_that_can_tie_end_with_the_id():
    """Two performances at the same start and two conflicts reported at the same moment come in
    one order, whatever order they were stored in."""
    ids = two_sessions_at_the_same_start()
    assert [s["_id"] for s in checkin.door_sessions()] == ids
    session = mongo.sessions().find_one({"_id": ids[0]})
    scope = scope_of(session)
    now = clock.now()
    docs = [
        {"_id": ObjectId(), "scopeId": scope.id, "scanId": f"scan-tie-000{n}", "kind": "used", "reportedOn": now}
        for n in range(2)
    ]
    expected = stored_against_id_order(mongo.checkin_conflicts(), docs, descending=True)
    assert [c["_id"] for c in checkin.conflicts(scope)] == expected
