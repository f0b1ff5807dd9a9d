"""Theaters and performances: lists with filters and cursors, free seats per category and every
seat's state as holds and sales change them."""

from datetime import timedelta

from bson import ObjectId

from booking.core import clock
from booking.sales import holds
from booking.tests.api.support import Api, make_token
from booking.tests.checkin_support import sell
from booking.tests.factories import make_session


def test_the_theater_list_is_the_tokens_theater(api, theater):
    assert api.get("/api/v1/theaters/").json() == [{"id": str(theater["_id"]), "name": "Test Hall", "seat_count": 24}]
    assert api.get(f"/api/v1/theaters/{theater['_id']}/").json()["name"] == "Test Hall"


def test_performances_come_by_start_a_page_at_a_time(api, theater):
    made = [make_session(theater, days=d, name=f"Show {d}") for d in (3, 1, 2, 4, 5)]
    first = api.get("/api/v1/performances/", {"limit": 2}).json()
    assert [p["name"] for p in first["performances"]] == ["Show 1", "Show 2"]
    second = api.get("/api/v1/performances/", {"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [p["name"] for p in second["performances"]] == ["Show 3", "Show 4"]
    last = api.get("/api/v1/performances/", {"limit": 2, "cursor": second["next_cursor"]}).json()
    assert [p["name"] for p in last["performances"]] == ["Show 5"]
    assert last["next_cursor"] is None
    assert len(made) == 5


def test_performances_filter_by_start_and_status(api, theater):
    make_session(theater, days=1, name="Tomorrow")
    make_session(theater, days=3, name="Later")
    until = (clock.now() + timedelta(days=2)).isoformat()
    names = [p["name"] for p in api.get("/api/v1/performances/", {"start_until": until}).json()["performances"]]
    assert names == ["Tomorrow"]
    start_from = (clock.now() + timedelta(days=2)).isoformat()
    names = [p["name"] for p in api.get("/api/v1/performances/", {"start_from": start_from}).json()["performances"]]
    assert names == ["Later"]
    assert api.get("/api/v1/performances/", {"status": "draft"}).json()["performances"] == []


def test_a_cursor_not_given_by_the_api_is_refused_with_400(api, performance):
    for cursor in ("nonsense", "W10", "eyJhIjoxfQ", "%00"):
        answer = api.get("/api/v1/performances/", {"cursor": cursor})
        assert answer.status_code == 400, cursor
        assert "cursor" in answer.json()["fields"]


def test_availability_counts_free_seats_per_category_as_seats_go(api, performance):
    path = f"/api/v1/performances/{performance['_id']}/availability/"
    before = api.get(path).json()
    assert {c["code"]: (c["free"], c["total"], c["price"]) for c in before["categories"]} == {
        "s": (20, 20, 2000),
        "p": (4, 4, 3500),
    }
    holds.hold_seats(performance["_id"], "s:someone", None, ["1:2"], allow_orphans=True)  # a premium seat held
    sell(performance, ["0:0", "0:1"])  # two stalls sold
    after = api.get(path).json()
    assert {c["code"]: c["free"] for c in after["categories"]} == {"s": 18, "p": 3}
    assert after["seats_available"] == 21
    assert after["version"] > before["version"]


def test_the_seat_map_gives_every_seats_state(api, performance):
    holds.hold_seats(performance["_id"], "s:someone", None, ["1:2"], allow_orphans=True)
    sell(performance, ["0:0", "0:1"])
    detail = api.get(f"/api/v1/performances/{performance['_id']}/").json()
    states = {seat["key"]: seat["state"] for seat in detail["seats"]}
    assert len(states) == 24
    assert (states["0:0"], states["0:1"], states["1:2"], states["2:0"]) == ("sold", "sold", "held", "free")
    first = detail["seats"][0]
    assert (first["row"], first["seat"], first["category"]) == ("A", "1", "s")
    assert detail["name"] == "Hamlet"


def test_unknown_and_malformed_performance_ids_are_404(api):
    for raw in (str(ObjectId()), "nothex", "0" * 23, "z" * 24, "%24where"):
        for suffix in ("/", "/availability/"):
            answer = api.get(f"/api/v1/performances/{raw}{suffix}")
            assert answer.status_code == 404, (raw, suffix)
            assert answer.json()["error"] == "not_found"


def test_another_theaters_performance_is_404(performance):
    from booking.tests.factories import make_theater

    other = Api(make_token(make_theater(name="Elsewhere")))
    assert other.get(f"/api/v1/performances/{performance['_id']}/availability/").status_code == 404
    assert other.get("/api/v1/performances/").json()["performances"] == []
