"""Sectioned venues: a performance is one session document per section; everything else unchanged."""

from datetime import timedelta

import bson
import pytest

from booking.core import clock, mongo
from booking.core.errors import InvalidLayout
from booking.sales import holds, selectors
from booking.sales.carts import expire_cart
from booking.sales.demo_stadium import create_match, create_stadium, stadium_sections
from booking.tests.commands import counting_commands
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep.invariants import check_invariants
from booking.venues.layouts import validate_sections

ALICE, BOB = "s:alice", "s:bob"


def small_stadium():
    stadium = create_stadium("Test Stadium", seats=3 * 40, rows=4, half=5)
    return stadium, create_match(stadium)


def test_a_performance_is_one_document_per_section_sharing_a_performance_id():
    stadium, first = small_stadium()
    docs = list(mongo.sessions().find({"performanceId": first["performanceId"]}).sort("section.index", 1))
    assert [d["section"] for d in docs] == [
        {"name": s["name"], "nameDe": s["nameDe"], "index": i, "count": 3}  # the demo's German names ("Nord 1")
        for i, s in enumerate(stadium["sections"])
    ]
    assert sum(d["seatsTotal"] for d in docs) == stadium["seatCount"] == 120
    assert all(d["theaterName"] == f"Test Stadium – {d['section']['name']}" for d in docs)


def test_whats_on_lists_a_sectioned_performance_once_in_two_queries():
    _stadium, first = small_stadium()
    make_session(days=2)
    with counting_commands() as counter:
        listed = selectors.upcoming_sessions()
    assert counter.commands == [("find", "listings"), ("find", "sessions")]
    assert len(listed) == 2
    match = next(s for s in listed if s.get("sections"))
    assert match["_id"] == first["performanceId"]
    assert (match["sections"], match["seatsTotal"], match["seatsAvailable"]) == (3, 120, 120)
    assert match["theaterName"] == "Test Stadium"


def test_section_overview_is_two_reads_by_id_with_availability_per_section():
    """The section ids by the performance's id, then the sections by theirs (test_shard_keys.py:
    both shard-targeted)."""
    _stadium, first = small_stadium()
    holds.hold_seats(first["_id"], ALICE, None, ["0:0", "0:1"])
    with counting_commands() as counter:
        sections = selectors.performance_sections(first["performanceId"])
    assert counter.commands == [("find", "performances"), ("find", "sessions")]
    assert [s["seatsAvailable"] for s in sections] == [38, 40, 40]
    assert "seats" not in sections[0] and "rows" not in sections[0].get("layout", {})


def test_hold_checkout_and_expiry_work_on_section_documents():
    _stadium, first = small_stadium()
    second = mongo.sessions().find_one({"performanceId": first["performanceId"], "section.index": 1})
    cart = holds.hold_seats(first["_id"], ALICE, None, ["1:0", "1:1"], needs_wheelchair=True)  # 1:0: a space
    holds.hold_seats(second["_id"], ALICE, cart.cart_id, ["2:0", "2:1"])
    order = checkout_paid(ALICE, cart.cart_id, "Ada", "ada@example.com")
    assert {line["sessionId"] for line in order["lines"]} == {first["_id"], second["_id"]}
    other = holds.hold_seats(second["_id"], BOB, None, ["3:0", "3:1"], needs_wheelchair=True)
    mongo.carts().update_one({"_id": other.cart_id}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    assert expire_cart(other.cart_id) == 2
    assert check_invariants() == []


def test_stadium_of_100000_seats_keeps_each_section_document_small():
    sections = stadium_sections(100_000)
    assert sum(len([c for r in s["layout"]["rows"] for c in r["cells"] if c]) for s in sections) == 100_000
    from booking.venues.seat_grid import initial_states

    biggest = max(len(bson.encode({"layout": s["layout"], "seats": initial_states(s["layout"])})) for s in sections)
    assert biggest < 2 * 1024 * 1024


def test_section_names_must_be_unique_and_each_section_a_valid_layout():
    sections = stadium_sections(80, rows=4, half=5)
    with pytest.raises(InvalidLayout, match="used twice"):
        validate_sections([sections[0], {**sections[1], "name": sections[0]["name"]}])
    with pytest.raises(InvalidLayout, match="Section Bad"):
        validate_sections([{"name": "Bad", "layout": {"categories": [], "rows": []}}])


def test_buyer_goes_from_whats_on_to_the_section_overview_to_one_section(client):
    _stadium, first = small_stadium()
    performance_id = str(first["performanceId"])
    listing = client.get("/").content.decode()
    assert f"/performances/{performance_id}/" in listing
    overview = client.get(f"/performances/{performance_id}/")
    assert overview.status_code == 200
    html = overview.content.decode()
    for doc in mongo.sessions().find({"performanceId": first["performanceId"]}):
        assert f"/sessions/{doc['_id']}/" in html
        assert f"Section {doc['section']['name']}: 40 seats free" in html
    section_page = client.get(f"/sessions/{first['_id']}/").content.decode()
    assert f"/performances/{performance_id}/" in section_page


def test_unknown_performance_is_a_404(client):
    assert client.get("/performances/not-an-id/").status_code == 404
    assert client.get("/performances/0123456789abcdef01234567/").status_code == 404


def test_whats_on_stays_two_commands_with_more_than_a_first_batch_of_section_documents():
    stadium = create_stadium("Big Test Stadium", seats=120 * 8, rows=2, half=2)  # 120 sections
    create_match(stadium)
    with counting_commands() as counter:
        listed = selectors.upcoming_sessions()
    assert counter.commands == [("find", "listings"), ("find", "sessions")]  # no getMore on either
    assert [s["sections"] for s in listed] == [120]
