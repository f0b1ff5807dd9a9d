"""At the door: staff take a check-in back (one conditional update on the check-in they saw,
kept on the order), complimentary tickets say so (door, offline list, search, attendee list), and
a theater may let one scan admit the whole booking."""

import json
from datetime import timedelta

import pytest

from booking.core import clock, mongo
from booking.core.errors import Conflict, NotFound
from booking.reports import exports, figures
from booking.sales import checkin, counter, holds
from booking.tests.checkin_support import door_staff, scope_of, sell, tickets
from booking.tests.factories import make_session
from booking.tests.threads import at_once
from booking.upkeep.invariants import check_invariants
from booking.venues.theaters import set_admit_whole_booking

pytestmark = pytest.mark.django_db

STAFF = counter.staff_owner(7)


def admit(session, code, door="Main"):
    return checkin.check_in(scope_of(session), door=door, by="door", code=code)


def line_of(order, code):
    stored = mongo.orders().find_one({"_id": order["_id"]})
    return next(line for line in stored["lines"] if line["ticket"] == code)


def comp_order(session, keys):
    context = holds.HoldContext(house_seats=True)
    held = holds.hold_seats(session["_id"], STAFF, None, list(keys), context=context, allow_orphans=True)
    sale = counter.CounterSale(name="Press Person", method=counter.COMPLIMENTARY, by="anna", by_id=7, reason="Press")
    return counter.sell(STAFF, held.cart_id, sale)


# --- undo ---


def test_an_undone_check_in_lets_the_ticket_in_again_and_the_order_keeps_who_undid_it():
    session = make_session()
    order = sell(session, ["1:2"])
    [code] = tickets(order)
    assert admit(session, code).admitted
    ticket = checkin.undo_check_in(scope_of(session), by="lead", code=code)
    assert (ticket["row"], ticket["ref"]) == ("B", order["ref"])
    assert "checkedIn" not in line_of(order, code)
    [undo] = mongo.orders().find_one({"_id": order["_id"]})["checkinUndos"]
    assert (undo["ticket"], undo["by"], undo["checkIn"]["door"]) == (code, "lead", "Main")
    assert checkin.counts(scope_of(session))["checkedIn"] == 0
    assert admit(session, code, door="Side").admitted
    assert check_invariants() == []


def test_undo_by_the_hash_a_search_gives():
    session = make_session()
    order = sell(session, ["1:2"], name="Grace Hopper")
    [code] = tickets(order)
    admit(session, code)
    [hit] = checkin.search(scope_of(session), "Grace")
    checkin.undo_check_in(scope_of(session), by="lead", digest=hit["h"])
    assert "checkedIn" not in line_of(order, code)


def test_undoing_a_ticket_that_is_not_checked_in_is_refused():
    session = make_session()
    [code] = tickets(sell(session, ["1:2"]))
    with pytest.raises(Conflict):
        checkin.undo_check_in(scope_of(session), by="lead", code=code)


def test_a_ticket_of_another_performance_cannot_be_undone_here():
    session, other = make_session(), make_session(days=2)
    [code] = tickets(sell(other, ["1:2"]))
    admit(other, code)
    with pytest.raises(NotFound):
        checkin.undo_check_in(scope_of(session), by="lead", code=code)
    assert "checkedIn" in line_of(mongo.orders().find_one({"lines.ticket": code}), code)


def test_two_staff_undoing_at_once_undo_once():
    session = make_session()
    order = sell(session, ["1:2"])
    [code] = tickets(order)
    admit(session, code)
    scope = scope_of(session)

    def undo():
        try:
            checkin.undo_check_in(scope, by="lead", code=code)
        except Conflict:
            return "refused"
        return "undone"

    results = at_once(undo, 6)
    assert results.count("undone") == 1 and results.count("refused") == 5
    assert len(mongo.orders().find_one({"_id": order["_id"]})["checkinUndos"]) == 1


def test_a_check_in_made_again_after_the_read_is_not_undone_by_the_stale_undo(fault_hook):
    """The undo is conditional on the check-in it read: one undone and made again meanwhile stays."""
    session = make_session()
    order = sell(session, ["1:2"])
    [code] = tickets(order)
    admit(session, code)

    def meanwhile(name):
        if name == "checkin.before_undo":
            fault_hook(None)
            checkin.undo_check_in(scope_of(session), by="other", code=code)
            admit(session, code, door="Side")

    fault_hook(meanwhile)
    with pytest.raises(Conflict):
        checkin.undo_check_in(scope_of(session), by="lead", code=code)
    assert line_of(order, code)["checkedIn"]["door"] == "Side"
    assert [u["by"] for u in mongo.orders().find_one({"_id": order["_id"]})["checkinUndos"]] == ["other"]


# --- complimentary ---


def test_a_complimentary_ticket_says_so_at_the_door_in_the_list_and_in_the_attendee_list():
    session = make_session()
    order = comp_order(session, ["1:2"])
    paid = sell(session, ["2:2"])
    [code] = tickets(order)
    outcome = admit(session, code)
    assert outcome.admitted and outcome.ticket["comp"] is True
    assert admit(session, tickets(paid)[0]).ticket["comp"] is False
    listed = {entry["ref"]: entry["comp"] for entry in checkin.door_list(scope_of(session))}
    assert listed == {order["ref"]: True, paid["ref"]: False}
    _session, people = figures.attendees(session["_id"])
    rows = {row[5]: row[4] for row in exports.attendee_rows(people)}
    assert "Complimentary" in rows[order["ref"]] and "Complimentary" not in rows[paid["ref"]]


# --- the whole booking on one scan ---


def test_one_scan_admits_the_whole_booking_where_the_theater_allows_it():
    session = make_session()
    order = sell(session, ["1:0", "1:1", "1:2", "1:3"])
    first, second, *rest = tickets(order)
    assert admit(session, second).admitted  # one already in: the scan admits the other three
    set_admit_whole_booking(session["theaterId"], allowed=True)
    outcome = admit(session, first)
    assert outcome.admitted and outcome.party == 3
    assert all("checkedIn" in line_of(order, code) for code in tickets(order))
    assert checkin.counts(scope_of(session))["checkedIn"] == 4
    events = [e for e in mongo.orders().find_one({"_id": order["_id"]}).get("webhookEvents", [])]
    assert sorted(e["ticket"] for e in events if e["type"] == "ticket.checked_in") == sorted(tickets(order))
    assert admit(session, rest[0]).status == checkin.USED


def test_without_the_setting_a_scan_admits_one():
    session = make_session()
    order = sell(session, ["1:0", "1:1"])
    outcome = admit(session, tickets(order)[0])
    assert outcome.party == 1
    assert "checkedIn" not in line_of(order, tickets(order)[1])


def test_the_whole_booking_stays_in_its_own_performance():
    session, other = make_session(), make_session(days=1)
    set_admit_whole_booking(session["theaterId"], allowed=True)
    owner = "s:family"
    cart = holds.hold_seats(session["_id"], owner, None, ["1:0", "1:1"]).cart_id
    holds.hold_seats(other["_id"], owner, cart, ["1:0"])
    from booking.tests.paying import checkout_paid  # noqa: PLC0415

    order = checkout_paid(owner, cart, "Fam", "fam@example.com")
    here = [line["ticket"] for line in order["lines"] if line["sessionId"] == session["_id"]]
    there = [line["ticket"] for line in order["lines"] if line["sessionId"] == other["_id"]]
    assert admit(session, here[0]).party == 2
    assert "checkedIn" not in line_of(order, there[0])


# --- over HTTP ---


def test_undo_over_http_as_json_and_as_a_form(client):
    client.force_login(door_staff())
    session = make_session()
    order = sell(session, ["1:2"])
    [code] = tickets(order)
    admit(session, code)
    answer = client.post(
        f"/checkin/{session['_id']}/undo",
        json.dumps({"code": code}),
        content_type="application/json",
        HTTP_ACCEPT="application/json",
    )
    assert answer.status_code == 200 and answer.json()["undone"] is True
    assert "Check-in undone" in answer.json()["message"]
    again = client.post(
        f"/checkin/{session['_id']}/undo",
        json.dumps({"code": code}),
        content_type="application/json",
        HTTP_ACCEPT="application/json",
    )
    assert again.status_code == 409 and "not checked in" in again.json()["error"]
    admit(session, code)
    page = client.post(f"/checkin/{session['_id']}/undo", {"code": code})
    assert page.status_code == 200 and "Check-in undone" in page.content.decode()
    assert client.post(f"/checkin/{session['_id']}/undo", {}).status_code == 400
    assert client.post(f"/checkin/{session['_id']}/undo", {"code": "x" * 15}).status_code == 400


def test_a_used_ticket_offers_undo_on_the_door_page(client):
    client.force_login(door_staff())
    session = make_session()
    order = sell(session, ["1:2"], name="Grace Hopper")
    admit(session, tickets(order)[0])
    page = client.post(f"/checkin/{session['_id']}/scan", {"code": tickets(order)[0], "door": "Main"}).content.decode()
    assert "Already used" in page and f"/checkin/{session['_id']}/undo" in page
    found = client.get(f"/checkin/{session['_id']}/?q=Grace").content.decode()
    assert "Undo check-in" in found


def test_the_theater_setting_from_its_change_page(manager_client):
    session = make_session()
    theater_id = session["theaterId"]
    page = manager_client.get(f"/admin/booking/theater/{theater_id}/change/").content.decode()
    assert "One scan lets the whole booking in" in page
    response = manager_client.post(f"/admin/booking/theater/{theater_id}/door/", {"door-admit_whole_booking": "on"})
    assert response.status_code == 302
    assert mongo.theaters().find_one({"_id": theater_id})["admitWholeBooking"] is True
    assert scope_of(session).whole_booking is True
    manager_client.post(f"/admin/booking/theater/{theater_id}/door/", {})
    assert scope_of(session).whole_booking is False


# --- the whole booking on an offline door ---


def test_the_offline_list_and_the_door_page_say_whether_one_scan_admits_the_whole_booking(client):
    client.force_login(door_staff())
    session = make_session()
    sell(session, ["1:0", "1:1"])
    listed = client.get(f"/checkin/{session['_id']}/tickets.json").json()
    assert listed["wholeBooking"] is False and len({t["ref"] for t in listed["tickets"]}) == 1
    set_admit_whole_booking(session["theaterId"], allowed=True)
    assert client.get(f"/checkin/{session['_id']}/tickets.json").json()["wholeBooking"] is True
    assert '"wholeBooking": true' in client.get(f"/checkin/{session['_id']}/").content.decode()


def test_a_whole_booking_admitted_offline_syncs_each_ticket_once_and_one_used_meanwhile_is_a_conflict(client):
    """The phone queues one scan per ticket of the booking it let in; the sync admits each once,
    a replay changes nothing, and a ticket let in meanwhile at another door is a conflict (never
    admitted twice)."""
    client.force_login(door_staff())
    session = make_session()
    set_admit_whole_booking(session["theaterId"], allowed=True)
    order = sell(session, ["1:0", "1:1", "1:2"])
    scanned, second, used_elsewhere = tickets(order)
    assert admit(session, used_elsewhere, door="West").party == 3  # online: the whole booking ...
    checkin.undo_check_in(scope_of(session), by="lead", code=scanned)
    checkin.undo_check_in(scope_of(session), by="lead", code=second)  # ... two taken back: West's stays
    at = (clock.now() - timedelta(minutes=3)).isoformat()
    body = {
        "scans": [
            {"id": "east-0001", "code": scanned, "at": at, "door": "East"},
            {"id": "east-0002", "hash": checkin.ticket_hash(second), "at": at, "door": "East", "party": "east-0001"},
            {"id": "east-0003", "hash": checkin.ticket_hash(used_elsewhere), "at": at, "door": "East"},
        ]
    }
    sync = f"/checkin/{session['_id']}/sync"
    answer = client.post(sync, json.dumps(body), content_type="application/json").json()
    assert [r["status"] for r in answer["results"]] == ["admitted", "admitted", "used"]
    assert [r.get("party", 1) for r in answer["results"][:2]] == [1, 1]  # each scan admits its own ticket
    assert answer["counts"]["checkedIn"] == 3 and answer["counts"]["openConflicts"] == 1
    again = client.post(sync, json.dumps(body), content_type="application/json").json()
    assert [r["status"] for r in again["results"]] == ["admitted", "admitted", "used"]
    assert mongo.checkin_conflicts().count_documents({}) == 1
    assert line_of(order, scanned)["checkedIn"]["door"] == "East" and line_of(order, second)["checkedIn"]["offline"]
    assert line_of(order, used_elsewhere)["checkedIn"]["door"] == "West"
    assert check_invariants() == []
