"""A performance's quota (sales/quotas.py, domain.within_quota): at most N seats held or sold,
enforced by the filter of every write that takes free seats; what buyers see at the quota."""

from datetime import timedelta

import pytest
from django.test import Client

from booking.core import clock, mongo
from booking.core.domain import quota_taken, seats_left
from booking.core.errors import Conflict, InvalidRequest, QuotaReached
from booking.sales import exchanges, holds, quotas, selectors, subscriptions, waiting_list
from booking.sales import sessions as session_service
from booking.tests.admin_support import assert_consistent, sell
from booking.tests.factories import make_session, make_theater, reread
from booking.tests.threads import PerThreadClient, at_once
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import BLOCKED, FREE
from booking.web.errors import status_for


@pytest.fixture(autouse=True)
def _no_orphan_rule(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False  # single seats anywhere: the quota alone refuses


def hold_one(session_id, key: str, n: int):
    return holds.hold_seats(session_id, f"s:buyer{n}", None, [key])


def test_the_quota_at_its_exact_value_and_a_release_letting_one_more_in():
    session = make_session()
    sid = session["_id"]
    quotas.set_quota(sid, quota=3)
    held = [hold_one(sid, key, n) for n, key in enumerate(["0:0", "0:2", "1:0"])]
    with pytest.raises(QuotaReached):
        hold_one(sid, "2:0", 9)
    assert seats_left(reread(sid)) == 0 and quota_taken(reread(sid)) == 3
    holds.release_seats(sid, "s:buyer1", held[1].cart_id, ["0:2"])
    assert seats_left(reread(sid)) == 1
    hold_one(sid, "2:0", 9)
    with pytest.raises(QuotaReached):
        hold_one(sid, "2:2", 10)
    assert reread(sid)["seatsAvailable"] == 24 - 3  # nothing was taken by the refused holds
    assert_consistent()


def test_one_request_for_more_than_the_quota_allows_is_refused_whole():
    sid = make_session()["_id"]
    quotas.set_quota(sid, quota=2)
    hold_one(sid, "0:0", 1)
    with pytest.raises(QuotaReached):
        holds.hold_seats(sid, "s:buyer2", None, ["1:0", "1:1"])
    assert reread(sid)["seatsAvailable"] == 23
    holds.hold_seats(sid, "s:buyer2", None, ["1:0"])
    assert seats_left(reread(sid)) == 0


def test_blocking_and_unblocking_seats_does_not_change_what_buyers_may_take():
    sid = make_session()["_id"]
    quotas.set_quota(sid, quota=5)
    hold_one(sid, "0:0", 1)
    hold_one(sid, "0:1", 2)
    session_service.set_blocked(sid, [(2, 0), (2, 1), (2, 2)], True)  # house seats
    assert seats_left(reread(sid)) == 3 and quota_taken(reread(sid)) == 2
    session_service.set_blocked(sid, [(2, 1)], False)
    assert seats_left(reread(sid)) == 3
    for n, key in enumerate(["1:0", "1:1", "1:2"]):
        hold_one(sid, key, 10 + n)
    with pytest.raises(QuotaReached):
        hold_one(sid, "1:3", 20)
    assert_consistent()


def test_a_quota_set_after_blocking_counts_only_seats_taken():
    sid = make_session()["_id"]
    session_service.set_blocked(sid, [(2, 0), (2, 1)], True)
    sell(sid, ["0:0"])
    quotas.set_quota(sid, quota=2)
    assert quota_taken(reread(sid)) == 1 and seats_left(reread(sid)) == 1


def test_a_quota_below_what_is_taken_takes_nothing_away():
    sid = make_session()["_id"]
    carts = [hold_one(sid, key, n) for n, key in enumerate(["0:0", "0:2", "1:0", "1:2"])]
    quotas.set_quota(sid, quota=2)
    session = reread(sid)
    assert quota_taken(session) == 4 and seats_left(session) == 0 and session["seatsAvailable"] == 20
    assert_consistent()  # more taken than the quota allows, by the staff's own setting: no breach
    holds.release_seats(sid, "s:buyer0", carts[0].cart_id, ["0:0"])
    holds.release_seats(sid, "s:buyer1", carts[1].cart_id, ["0:2"])
    with pytest.raises(QuotaReached):  # 2 taken of 2
        hold_one(sid, "2:0", 9)
    holds.release_seats(sid, "s:buyer2", carts[2].cart_id, ["1:0"])
    hold_one(sid, "2:0", 9)
    assert_consistent()


def test_clearing_the_quota_gives_the_whole_hall_back():
    sid = make_session()["_id"]
    quotas.set_quota(sid, quota=1)
    hold_one(sid, "0:0", 1)
    quotas.set_quota(sid, quota=None)
    session = reread(sid)
    assert "quota" not in session and "quotaFloor" not in session and seats_left(session) == 23
    hold_one(sid, "0:2", 2)


@pytest.mark.parametrize("bad", [0, -1, 25, 2.5, "3", True])
def test_bad_quotas_are_refused_and_change_nothing(bad):
    sid = make_session()["_id"]  # 24 seats
    before = reread(sid)
    with pytest.raises(InvalidRequest) as refused:
        quotas.set_quota(sid, quota=bad)
    assert "quota" in refused.value.details["fields"]
    after = reread(sid)
    assert after["version"] == before["version"] and "quota" not in after
    quotas.set_quota(sid, quota=24)  # the hall's seat count is a quota too
    assert seats_left(reread(sid)) == 24


def test_the_box_office_keeps_the_quota_and_house_seats_stay_outside_it():
    sid = make_session()["_id"]
    session_service.set_blocked(sid, [(2, 0)], True)
    quotas.set_quota(sid, quota=1)
    staff = "staff:1"
    holds.hold_seats(sid, staff, None, ["2:0"], context=holds.BOX_OFFICE)  # a house seat: not counted
    assert quota_taken(reread(sid)) == 0
    cart = holds.hold_seats(sid, staff, None, ["0:0"], context=holds.BOX_OFFICE)
    with pytest.raises(QuotaReached):
        holds.hold_seats(sid, staff, cart.cart_id, ["0:2"], context=holds.BOX_OFFICE)


def test_at_its_quota_a_performance_reads_as_sold_out():
    sid = make_session()["_id"]
    quotas.set_quota(sid, quota=1)
    hold_one(sid, "0:0", 1)
    listed = [s for s in selectors.upcoming_sessions() if s["_id"] == sid]
    assert listed[0]["seatsAvailable"] == 0
    assert waiting_list.is_sold_out(reread(sid))
    page = Client().get(f"/sessions/{sid}/").content.decode()
    assert "This performance is sold out." in page


def test_waiting_list_offers_stay_within_the_quota(settings):
    sid = make_session()["_id"]
    quotas.set_quota(sid, quota=2)
    first = hold_one(sid, "0:0", 1)
    hold_one(sid, "0:2", 2)
    for n in range(2):
        waiting_list.join(
            session_id=sid, email=f"w{n}@example.com", count=1, together=False, category=None, language="en"
        )
    holds.release_seats(sid, "s:buyer1", first.cart_id, ["0:0"])
    report = waiting_list.offer_free_seats(sid)
    assert report.offered == 1  # one place came back, though 23 seats are free
    assert seats_left(reread(sid)) == 0


def test_a_subscription_takes_nothing_where_a_performance_is_at_its_quota():
    halls = make_theater()
    shows = [make_session(halls, days=d) for d in (2, 3)]
    now = clock.now()
    sub = subscriptions.create_subscription(
        name="Season",
        session_ids=[s["_id"] for s in shows],
        prices={"s": 8000, "p": 16000},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
    )
    quotas.set_quota(shows[1]["_id"], quota=1)
    hold_one(shows[1]["_id"], "2:0", 1)
    with pytest.raises(QuotaReached):
        subscriptions.hold_subscription(
            subscription_id=sub["_id"], seat_keys=["0:0"], request=subscriptions.SaleRequest(owner="s:subscriber")
        )
    assert [reread(s["_id"])["seatsAvailable"] for s in shows] == [24, 23]  # the first one given back
    assert_consistent()


def test_an_exchange_into_a_performance_at_its_quota_is_refused_but_a_move_within_it_is_not():
    theater = make_theater()
    here, full = make_session(theater, days=1), make_session(theater, days=2)
    order = sell(here["_id"], ["0:0"])
    ticket = order["lines"][0]["ticket"]
    quotas.set_quota(full["_id"], quota=1)
    sell(full["_id"], ["0:0"], owner="s:other", email="other@example.com")
    with pytest.raises(QuotaReached):
        exchanges.exchange(order["_id"], [ticket], full["_id"], ["1:0"], settle=exchanges.COUNTER, by="anna")
    quotas.set_quota(here["_id"], quota=1)  # at its quota: a move within it gives its seat back
    moved = exchanges.exchange(order["_id"], [ticket], here["_id"], ["0:2"], by="anna")
    assert [line["key"] for line in moved["lines"]] == ["0:2"] and quota_taken(reread(here["_id"])) == 1
    assert_consistent()


def test_a_refused_hold_is_a_409_error_told_on_the_seat_page_in_both_languages():
    sid = make_session()["_id"]
    quotas.set_quota(sid, quota=1)
    hold_one(sid, "0:0", 1)
    assert status_for(QuotaReached()) == 409  # the API's and the subscription pages' status
    # the seat page tells a refused hold on the refreshed map, as a seat taken first (htmx swaps no 4xx)
    for language, words in (("en", "No more tickets for this performance"), ("de", "Keine Karten mehr")):
        buyer = Client(HTTP_ACCEPT_LANGUAGE=language)
        answer = buyer.post(f"/sessions/{sid}/hold", {"seats": "1:0"}, HTTP_HX_REQUEST="true")
        assert answer.status_code == 200 and words in answer.content.decode()
        plain = buyer.post(f"/sessions/{sid}/hold", {"seats": "1:0"})
        assert plain.status_code == 302 and words in buyer.get(plain["Location"]).content.decode()
    assert reread(sid)["seatsAvailable"] == 23


@pytest.mark.slow
def test_racing_buyers_never_pass_the_quota(monkeypatch):
    grid = "\n".join(f"{row}: ssssssssss" for row in "ABCDEF")  # 60 seats
    sid = make_session(grid=grid)["_id"]
    quotas.set_quota(sid, quota=7)
    clients = PerThreadClient()
    monkeypatch.setattr(mongo, "get_client", clients.get)
    keys = iter([f"{r}:{c}" for r in range(6) for c in range(10)])
    counter = iter(range(1000))
    seats = {n: next(keys) for n in range(24)}

    def buyer():
        n = next(counter)
        try:
            holds.hold_seats(sid, f"s:racer{n}", None, [seats[n]])
            return "held"
        except QuotaReached:
            return "refused"

    try:
        results = at_once(buyer, 24)
    finally:
        clients.close()
        monkeypatch.undo()
    assert sorted(results).count("held") == 7 and results.count("refused") == 17
    session = reread(sid)
    assert session["seatsAvailable"] == 53 and seats_left(session) == 0
    assert_consistent()


def test_copying_the_halls_map_again_keeps_the_quota_whole():
    sid = make_session()["_id"]
    session_service.set_blocked(sid, [(0, 0), (0, 1)], True)
    quotas.set_quota(sid, quota=5)
    session_service.refresh_seat_map(sid)  # the blocked seats are free again, nothing is taken
    session = reread(sid)
    assert session["seatsAvailable"] == 24 and seats_left(session) == 5 and quota_taken(session) == 0


def test_an_exchange_whose_performance_reaches_its_quota_after_the_check_takes_nothing(fault_hook):
    theater = make_theater()
    here, there = make_session(theater, days=1), make_session(theater, days=2)
    order = sell(here["_id"], ["0:0"])
    quotas.set_quota(there["_id"], quota=1)

    def another_buyer_takes_the_last_place(name):
        if name == "exchange.after_start":  # the check passed; the new seat is not taken yet
            hold_one(there["_id"], "2:0", 1)

    fault_hook(another_buyer_takes_the_last_place)
    with pytest.raises(Conflict):
        exchanges.exchange(
            order["_id"], [order["lines"][0]["ticket"]], there["_id"], ["1:0"], settle=exchanges.COUNTER, by="anna"
        )
    fault_hook(None)
    assert [line["key"] for line in mongo.orders().find_one({"_id": order["_id"]})["lines"]] == [
        "0:0"
    ]  # the ticket stays where it was
    target = reread(there["_id"])
    assert target["seats"][1][0] == FREE and quota_taken(target) == 1 and target["seatsAvailable"] == 23
    assert_consistent()


def test_a_waiting_list_offer_whose_performance_reaches_its_quota_after_the_check_takes_nothing(fault_hook):
    sid = make_session()["_id"]
    quotas.set_quota(sid, quota=2)
    first = hold_one(sid, "0:0", 1)
    hold_one(sid, "0:2", 2)
    entry = waiting_list.join(
        session_id=sid, email="w@example.com", count=1, together=False, category=None, language="en"
    )
    holds.release_seats(sid, "s:buyer1", first.cart_id, ["0:0"])
    late = iter([True])

    def a_buyer_takes_the_place_back(name):
        if name == "waiting_list.after_cart" and next(late, False):  # the sweep saw one place left
            hold_one(sid, "2:0", 3)

    fault_hook(a_buyer_takes_the_place_back)
    report = waiting_list.offer_free_seats(sid)
    fault_hook(None)
    assert report.offered == 0 and report.missed == 1
    assert mongo.waiting_list().find_one({"_id": entry["_id"]})["state"] == waiting_list.WAITING  # waits again
    session = reread(sid)
    assert quota_taken(session) == 2 and session["seatsAvailable"] == 22
    assert_consistent()


def test_a_quota_floor_out_of_step_with_the_seats_is_reported():
    sid = make_session()["_id"]
    session_service.set_blocked(sid, [(2, 0)], True)
    quotas.set_quota(sid, quota=3)
    hold_one(sid, "0:0", 1)
    assert_consistent()
    # a seat put back on sale without moving the floor: buyers could take one seat past the quota
    mongo.sessions().update_one({"_id": sid}, {"$set": {"seats.2.0": FREE}, "$inc": {"seatsAvailable": 1}})
    [breach] = check_invariants()
    assert "the quota's floor is 20 but its free and counted seats make it 21" in breach
    mongo.sessions().update_one({"_id": sid}, {"$set": {"seats.2.0": BLOCKED}, "$inc": {"seatsAvailable": -1}})
    mongo.sessions().update_one({"_id": sid}, {"$unset": {"quotaFloor": ""}})
    assert [b for b in check_invariants() if "a quota without its floor" in b]
