"""Season subscriptions: the same seat in every performance, taken all together or not at all;
a crash between the performances' writes finished or undone by reconcile; never sold twice."""

import threading
from datetime import timedelta

import pytest
from django.utils import translation

from booking.core import clock, faults, mongo
from booking.core.domain import SubscriptionSaleState
from booking.core.errors import (
    BookingError,
    Conflict,
    InvalidRequest,
    OrphanSeat,
    SeatsTaken,
    SessionNotOnSale,
    TooManySeats,
)
from booking.notifications import confirmations as notifications
from booking.payments import flow as payments
from booking.payments import pdf
from booking.sales import buyer_changes, counter, exchanges, holds, promos, self_service, subscriptions
from booking.sales.holds import HoldContext
from booking.sales.subscriptions import SaleRequest
from booking.tests.factories import make_session, make_theater
from booking.tests.localstripe import VISA, card
from booking.tests.pdfs import pdf_text
from booking.tests.threads import PerThreadClient
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import FREE, HELD, SOLD

ALICE = "s:alice"
BOB = "s:bob"
NO_GRACE = timedelta(0)
PRICES = {"s": 8000, "p": 16001}  # 16001 over 3 performances: shares of 5334, 5334, 5333


def season(performances: int = 3, **options):
    """A subscription of performances over two halls of the same shape, on sale now."""
    halls = [make_theater(name="Grand Hall"), make_theater(name="Studio")]
    sessions = [make_session(halls[i % 2], days=2 + i) for i in range(performances)]
    now = clock.now()
    sub = subscriptions.create_subscription(
        name="Season A",
        name_de="Abo A",
        session_ids=[s["_id"] for s in sessions],
        prices=options.pop("prices", PRICES),
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
        **options,
    )
    return sub, sessions


def cell(session, key):
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    row, col = (int(p) for p in key.split(":"))
    return seats[row][col]


def a_moment_later():
    return clock.now() + timedelta(milliseconds=50)


def test_a_sale_holds_the_same_seat_in_every_performance_at_the_subscription_price():
    sub, sessions = season()
    cart = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["1:3"], request=SaleRequest(owner=ALICE)
    )
    assert [cell(s, "1:3") for s in sessions] == [HELD, HELD, HELD]
    assert sorted(i["sessionId"] for i in cart["items"]) == sorted(s["_id"] for s in sessions)
    assert sorted(i["price"] for i in cart["items"]) == [5333, 5334, 5334]
    assert cart["total"] == PRICES["p"]
    assert all(i["subscription"] == sub["_id"] for i in cart["items"])
    [sale] = mongo.subscription_sales().find()
    assert sale["state"] == SubscriptionSaleState.HELD
    assert check_invariants() == []


def test_a_seat_taken_in_one_performance_holds_nothing_in_the_others():
    sub, sessions = season()
    holds.hold_seats(sessions[2]["_id"], BOB, None, ["0:0"])  # the last performance's seat is Bob's
    with pytest.raises(SeatsTaken):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["0:0"], request=SaleRequest(owner=ALICE))
    assert [cell(s, "0:0") for s in sessions] == [FREE, FREE, HELD]
    assert mongo.carts().count_documents({"owner": ALICE}) == 0
    [sale] = mongo.subscription_sales().find()
    assert sale["state"] == SubscriptionSaleState.UNDONE
    assert check_invariants() == []


@pytest.mark.parametrize("point", ["subscription.after_intent", "subscription.after_session"])
def test_a_crash_before_the_cart_is_undone_by_reconcile(crash_at, point):
    sub, sessions = season()
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["2:0"], request=SaleRequest(owner=ALICE))
    faults.set_hook(None)
    if point == "subscription.after_session":
        assert cell(sessions[0], "2:0") == HELD  # the first performance taken, the others not yet
        assert check_invariants() != []
    report = reconcile(now=a_moment_later(), grace=NO_GRACE)
    assert report.subscription_sales_undone == 1
    assert [cell(s, "2:0") for s in sessions] == [FREE, FREE, FREE]
    assert mongo.subscription_sales().find_one()["state"] == SubscriptionSaleState.UNDONE
    assert check_invariants() == []


def test_a_crash_between_the_second_and_third_performance_is_undone(fault_hook):
    sub, sessions = season()
    written = []

    def crash_on_second(name):
        if name == "subscription.after_session":
            written.append(name)
            if len(written) == 2:
                raise faults.InjectedCrash(name)

    fault_hook(crash_on_second)
    with pytest.raises(faults.InjectedCrash):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["2:3"], request=SaleRequest(owner=ALICE))
    faults.set_hook(None)
    assert [cell(s, "2:3") for s in sessions] == [HELD, HELD, FREE]
    reconcile(now=a_moment_later(), grace=NO_GRACE)
    assert [cell(s, "2:3") for s in sessions] == [FREE, FREE, FREE]
    assert check_invariants() == []


def test_a_crash_after_the_cart_is_finished_by_reconcile(crash_at):
    sub, sessions = season()
    crash_at("subscription.after_cart")
    with pytest.raises(faults.InjectedCrash):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["2:5"], request=SaleRequest(owner=ALICE))
    faults.set_hook(None)
    report = reconcile(now=a_moment_later(), grace=NO_GRACE)
    assert report.subscription_sales_finished == 1
    assert [cell(s, "2:5") for s in sessions] == [HELD, HELD, HELD]
    assert mongo.subscription_sales().find_one()["state"] == SubscriptionSaleState.HELD
    assert check_invariants() == []


def test_reconcile_leaves_a_sale_within_its_grace_alone(crash_at):
    sub, sessions = season()
    crash_at("subscription.after_session")
    with pytest.raises(faults.InjectedCrash):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["2:3"], request=SaleRequest(owner=ALICE))
    faults.set_hook(None)
    report = reconcile(now=clock.now(), grace=timedelta(minutes=5))
    assert report.subscription_sales_undone == 0
    assert cell(sessions[0], "2:3") == HELD


def test_a_sale_undone_by_reconcile_while_it_was_slow_gives_its_seats_back(fault_hook):
    """The process was not dead, only slow: reconcile undid its intent; its last writes find that
    out and give back what they took."""
    sub, sessions = season()

    def reconcile_meanwhile(name):
        if name == "subscription.after_cart":
            faults.set_hook(None)
            sale = mongo.subscription_sales().find_one()
            subscriptions.undo(sale)

    fault_hook(reconcile_meanwhile)
    with pytest.raises(BookingError):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["0:3"], request=SaleRequest(owner=ALICE))
    assert [cell(s, "0:3") for s in sessions] == [FREE, FREE, FREE]
    assert check_invariants() == []


@pytest.mark.slow
def test_a_subscription_racing_single_holds_on_one_performance_is_never_sold_twice(monkeypatch, settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    sub, sessions = season(performances=4)
    clients = PerThreadClient()
    monkeypatch.setattr(mongo, "get_client", clients.get)
    seats = [f"{r}:{c}" for r in range(3) for c in (0, 1, 2, 3, 5, 6, 7, 8)]
    contested = sessions[1]["_id"]
    won: dict[str, list[str]] = {"sub": [], "single": []}
    lock = threading.Lock()
    try:
        for key in seats:
            start = threading.Barrier(3)

            def buy_subscription(key=key, start=start):
                start.wait()
                try:
                    subscriptions.hold_subscription(
                        subscription_id=sub["_id"], seat_keys=[key], request=SaleRequest(owner=f"s:sub{key}")
                    )
                    with lock:
                        won["sub"].append(key)
                except BookingError:
                    pass

            def buy_single(n, key=key, start=start):
                start.wait()
                try:
                    holds.hold_seats(contested, f"s:single{n}{key}", None, [key])
                    with lock:
                        won["single"].append(key)
                except BookingError:
                    pass

            threads = [
                threading.Thread(target=buy_subscription),
                threading.Thread(target=buy_single, args=(1,)),
                threading.Thread(target=buy_single, args=(2,)),
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
    finally:
        clients.close()
    monkeypatch.undo()
    assert len(won["sub"]) + len(won["single"]) == len(seats)  # every seat went to exactly one buyer
    assert not set(won["sub"]) & set(won["single"])
    for key in seats:  # a subscription's seat is held in every performance; a single seat only in its own
        states = [cell(s, key) for s in sessions]
        if key in won["sub"]:
            assert states == [HELD] * 4
        else:
            assert states == [FREE, HELD, FREE, FREE]
    assert check_invariants() == []


def test_a_subscription_paid_by_card_sells_a_ticket_per_performance():
    sub, sessions = season()
    cart = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["0:3"], request=SaleRequest(owner=ALICE)
    )
    order = payments.start(ALICE, cart["_id"], "Ada Lovelace", "ada@example.com")
    assert order["total"] >= PRICES["s"]
    outcome = payments.pay_with_card(order["_id"], ALICE, card(VISA))
    paid = mongo.orders().find_one({"_id": outcome.order["_id"]})
    assert paid["state"] == "paid"
    assert paid["subscription"]["_id"] == sub["_id"]
    assert sorted(line["sessionId"] for line in paid["lines"]) == sorted(s["_id"] for s in sessions)
    assert len({line["ticket"] for line in paid["lines"]}) == 3
    assert sum(line["price"] for line in paid["lines"]) == PRICES["s"]
    assert [cell(s, "0:3") for s in sessions] == [SOLD, SOLD, SOLD]
    assert check_invariants() == []


def test_the_box_office_sells_a_subscription():
    sub, sessions = season()
    owner = counter.staff_owner(7)
    cart = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["1:5"], request=SaleRequest(owner=owner, box_office=True)
    )
    order = counter.sell(owner, cart["_id"], counter.CounterSale(name="Max Muster", method=counter.CASH, by="clerk"))
    order = mongo.orders().find_one({"_id": order["_id"]})
    assert order["state"] == "paid" and order["total"] == PRICES["p"]
    assert [cell(s, "1:5") for s in sessions] == [SOLD, SOLD, SOLD]
    assert check_invariants() == []


def test_a_subscription_cart_keeps_its_seats_together():
    sub, sessions = season()
    cart = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["0:5"], request=SaleRequest(owner=ALICE)
    )
    with pytest.raises(InvalidRequest):
        holds.release_seats(sessions[0]["_id"], ALICE, cart["_id"], ["0:5"])
    with pytest.raises(InvalidRequest):
        holds.hold_seats(sessions[0]["_id"], ALICE, cart["_id"], ["0:6"])
    with pytest.raises(InvalidRequest):
        promos.apply_code(ALICE, cart["_id"], "ANYCODE1")
    assert [cell(s, "0:5") for s in sessions] == [HELD, HELD, HELD]


def test_outside_the_sale_window_buyers_cannot_buy_but_the_box_office_can():
    sub, sessions = season()
    mongo.subscriptions().update_one({"_id": sub["_id"]}, {"$set": {"saleOpens": clock.now() + timedelta(hours=1)}})
    with pytest.raises(SessionNotOnSale):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["0:0"], request=SaleRequest(owner=ALICE))
    staff = SaleRequest(owner=counter.staff_owner(3), box_office=True)
    subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["0:0"], request=staff)
    mongo.subscriptions().update_one({"_id": sub["_id"]}, {"$set": {"saleOpens": clock.now() - timedelta(hours=2)}})
    mongo.subscriptions().update_one({"_id": sub["_id"]}, {"$set": {"saleCloses": clock.now()}})
    with pytest.raises(SessionNotOnSale):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["0:1"], request=SaleRequest(owner=BOB))


def test_a_canceled_performance_stops_the_sale():
    sub, sessions = season()
    mongo.sessions().update_one({"_id": sessions[1]["_id"]}, {"$set": {"status": "canceled"}})
    with pytest.raises(SessionNotOnSale):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["0:0"], request=SaleRequest(owner=ALICE))
    assert [cell(s, "0:0") for s in sessions] == [FREE, FREE, FREE]


def test_the_common_map_shows_only_seats_free_everywhere():
    sub, sessions = season()
    holds.hold_seats(sessions[1]["_id"], BOB, None, ["1:0", "1:1"])
    common = subscriptions.common_map(sub, subscriptions.performances(sub))
    assert common["seats"][1][1] == SOLD
    assert common["seats"][1][2] == FREE
    assert common["seatsAvailable"] == sessions[0]["seatsAvailable"] - 2


@pytest.mark.parametrize(
    "change, field",
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 121}, "name"),
        ({"prices": {"s": 8000}}, "price_p"),
        ({"prices": {"s": 8000, "p": -1}}, "price_p"),
        ({"prices": {"s": 8000, "p": 10_000_001}}, "price_p"),
        ({"prices": {"s": 8000, "p": True}}, "price_p"),
    ],
)
def test_a_subscription_definition_is_checked(change, field):
    session = make_session(days=3)
    now = clock.now()
    args = {
        "name": "Season",
        "session_ids": [session["_id"]],
        "prices": PRICES,
        "sale_opens": now,
        "sale_closes": now + timedelta(days=1),
        **change,
    }
    with pytest.raises(InvalidRequest) as caught:
        subscriptions.create_subscription(**args)
    assert field in caught.value.details["fields"]
    assert mongo.subscriptions().count_documents({}) == 0


def test_the_limits_of_a_definition_hold_at_their_exact_values():
    session = make_session(days=3)
    now = clock.now()
    ok = subscriptions.create_subscription(
        name="x" * 120,
        session_ids=[session["_id"]],
        prices={"s": 0, "p": 10_000_000},
        sale_opens=now,
        sale_closes=session["start"],  # closes exactly at the first performance
    )
    assert ok["prices"] == {"s": 0, "p": 10_000_000}
    with pytest.raises(InvalidRequest):
        subscriptions.create_subscription(
            name="late",
            session_ids=[session["_id"]],
            prices=PRICES,
            sale_opens=now,
            sale_closes=session["start"] + timedelta(milliseconds=1),
        )
    with pytest.raises(InvalidRequest):
        subscriptions.create_subscription(
            name="twice", session_ids=[session["_id"], session["_id"]], prices=PRICES, sale_opens=now, sale_closes=now
        )


def test_a_subscriber_swaps_one_performance_for_another_date_through_the_exchange_service():
    sub, sessions = season()
    other_date = make_session(make_theater(name="Grand Hall"), days=9)  # Hamlet again, not in the subscription
    other_show = make_session(make_theater(name="Studio"), days=9, name="Faust")
    cart = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["0:3"], request=SaleRequest(owner=ALICE)
    )
    order = payments.start(ALICE, cart["_id"], "Ada Lovelace", "ada@example.com")
    order = payments.pay_with_card(order["_id"], ALICE, card(VISA)).order
    line = next(line for line in order["lines"] if line["sessionId"] == sessions[1]["_id"])
    with pytest.raises(InvalidRequest):
        exchanges.exchange(order["_id"], [line["ticket"]], other_show["_id"], ["0:3"])
    swapped = exchanges.exchange(order["_id"], [line["ticket"]], other_date["_id"], ["0:3"])
    moved = next(new for new in swapped["lines"] if new["sessionId"] == other_date["_id"])
    assert moved["price"] == line["price"] and moved["subscription"] == sub["_id"]  # no difference to pay
    assert swapped["total"] == order["total"]
    assert [cell(s, "0:3") for s in sessions] == [SOLD, FREE, SOLD]
    assert cell(other_date, "0:3") == SOLD
    assert check_invariants() == []


def test_a_seat_leaving_a_lone_seat_at_one_performance_holds_nothing_anywhere():
    sub, sessions = season()
    # at the second performance only 0:1 is taken: choosing 0:3 would leave 0:2 alone there
    holds.hold_seats(sessions[1]["_id"], BOB, None, ["0:0", "0:1"])
    with pytest.raises(OrphanSeat) as refused:
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["0:3"], request=SaleRequest(owner=ALICE))
    assert "Row A, seat 3" in refused.value.message  # the seat left alone, and where
    assert [cell(s, "0:3") for s in sessions] == [FREE, FREE, FREE]
    assert [cell(s, "0:2") for s in sessions] == [FREE, FREE, FREE]
    both = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["0:2", "0:3"], request=SaleRequest(owner=ALICE)
    )
    assert [cell(s, "0:2") for s in sessions] == [HELD, HELD, HELD]
    assert len(both["items"]) == 6
    assert check_invariants() == []


def test_the_orphan_rule_is_the_holds_own_and_goes_with_its_setting(settings):
    sub, sessions = season()
    with pytest.raises(OrphanSeat):  # the same rule a single hold obeys
        holds.hold_seats(sessions[0]["_id"], BOB, None, ["1:2"])
    with pytest.raises(OrphanSeat):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["1:2"], request=SaleRequest(owner=ALICE))
    with pytest.raises(OrphanSeat):  # the box office too
        subscriptions.hold_subscription(
            subscription_id=sub["_id"], seat_keys=["1:2"], request=SaleRequest(owner="staff:1", box_office=True)
        )
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["1:2"], request=SaleRequest(owner=ALICE))
    assert [cell(s, "1:2") for s in sessions] == [HELD, HELD, HELD]


def test_a_lone_seat_made_between_the_map_and_the_write_is_refused_by_the_write(fault_hook):
    sub, sessions = season()

    def bob_takes_a_neighbour(point):
        if point == "subscription.after_session":  # the first performance written, the second not yet
            holds.hold_seats(sessions[1]["_id"], BOB, None, ["2:0", "2:1"])

    fault_hook(bob_takes_a_neighbour)
    with pytest.raises(OrphanSeat):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["2:3"], request=SaleRequest(owner=ALICE))
    assert [cell(s, "2:3") for s in sessions] == [FREE, FREE, FREE]
    assert check_invariants() == []


def address_request(owner, client="ip:203.0.113.7"):
    return SaleRequest(owner=owner, client=client)


def test_a_subscription_counts_each_seat_once_per_performance_against_the_address_limit(settings):
    settings.BOOKING_MAX_HELD_SEATS_PER_CLIENT = 6
    sub, sessions = season()  # 3 performances
    subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["0:0"], request=address_request(ALICE))
    assert mongo.client_holds().find_one({"_id": "ip:203.0.113.7"})["held"] == 3
    with pytest.raises(TooManySeats):  # 3 + 6 > 6
        subscriptions.hold_subscription(
            subscription_id=sub["_id"], seat_keys=["2:0", "2:1"], request=address_request(BOB)
        )
    assert [cell(s, "2:0") for s in sessions] == [FREE, FREE, FREE]
    subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["2:8"], request=address_request(BOB))
    assert mongo.client_holds().find_one({"_id": "ip:203.0.113.7"})["held"] == 6  # exactly at the limit
    with pytest.raises(TooManySeats):  # one single seat more from the same address: 7 > 6
        holds.hold_seats(sessions[0]["_id"], "s:carol", None, ["1:0"], context=HoldContext(client="ip:203.0.113.7"))
    # another address, and the box office, are not counted here
    subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["1:0"], request=address_request("s:dan", "ip:198.51.100.1")
    )
    subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["1:8"], request=SaleRequest(owner="staff:1", box_office=True)
    )


def test_a_refused_subscription_gives_its_seats_back_to_the_address(settings):
    settings.BOOKING_MAX_HELD_SEATS_PER_CLIENT = 6
    sub, sessions = season()
    holds.hold_seats(sessions[2]["_id"], BOB, None, ["0:0"])
    with pytest.raises(SeatsTaken):
        subscriptions.hold_subscription(subscription_id=sub["_id"], seat_keys=["0:0"], request=address_request(ALICE))
    assert mongo.client_holds().find_one({"_id": "ip:203.0.113.7"})["held"] == 0
    both = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["2:0", "2:1"], request=address_request(ALICE)
    )
    assert len(both["items"]) == 6


def paid_subscription(key="0:3"):
    sub, sessions = season()
    cart = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=[key], request=SaleRequest(owner=ALICE)
    )
    order = payments.start(ALICE, cart["_id"], "Ada Lovelace", "ada@example.com")
    return sub, sessions, payments.pay_with_card(order["_id"], ALICE, card(VISA)).order


SWAP_RULES = self_service.Rules(exchange=True, hours_before=48, fee=250)


def test_a_subscription_date_swap_costs_the_theaters_fee_per_ticket_at_the_box_office():
    sub, sessions, order = paid_subscription()
    self_service.set_series_rules(session_ids=[s["_id"] for s in sessions], rules=SWAP_RULES)
    other_date = make_session(make_theater(name="Grand Hall"), days=9)
    line = next(line for line in order["lines"] if line["sessionId"] == sessions[1]["_id"])
    preview = exchanges.plan(order["_id"], [line["ticket"]], other_date["_id"], ["0:3"])
    assert (preview.fee, preview.difference) == (250, 250)  # the price kept, the fee to pay
    swapped = exchanges.exchange(order["_id"], [line["ticket"]], other_date["_id"], ["0:3"], settle=exchanges.COUNTER)
    assert swapped["total"] == order["total"] + 250
    assert swapped["exchanges"][-1]["fee"] == 250
    assert cell(other_date, "0:3") == SOLD and cell(sessions[1], "0:3") == FREE
    assert check_invariants() == []


def test_a_subscriber_swapping_online_pays_the_fee_once(monkeypatch):
    sub, sessions, order = paid_subscription()
    theater_id = sessions[1]["theaterId"]
    self_service.set_theater_rules(theater_id=theater_id, rules=SWAP_RULES)
    other_date = make_session(mongo.theaters().find_one({"_id": theater_id}), days=9)
    line = next(line for line in order["lines"] if line["sessionId"] == sessions[1]["_id"])
    targets = buyer_changes.exchange_targets(order=order, now=clock.now())
    assert other_date["_id"] in {t["_id"] for t in targets}
    waiting = buyer_changes.exchange_tickets(
        order_id=order["_id"], tickets=[line["ticket"]], session_id=other_date["_id"], keys=["0:3"], now=clock.now()
    )
    record = waiting["exchanges"][-1]
    assert (record["fee"], record["difference"]) == (250, 250)  # the card pays the fee, once
    assert record["state"] == exchanges.AWAITING


def test_a_subscription_date_swap_ends_at_the_cut_off_exactly(monkeypatch):
    sub, sessions, order = paid_subscription()
    self_service.set_series_rules(session_ids=[s["_id"] for s in sessions], rules=SWAP_RULES)
    other_date = make_session(make_theater(name="Grand Hall"), days=9)
    line = next(line for line in order["lines"] if line["sessionId"] == sessions[1]["_id"])
    deadline = sessions[1]["start"] - timedelta(hours=48)
    monkeypatch.setattr(clock, "now", lambda: deadline - timedelta(milliseconds=1))
    assert exchanges.plan(order["_id"], [line["ticket"]], other_date["_id"], ["0:3"]).fee == 250
    monkeypatch.setattr(clock, "now", lambda: deadline)
    with pytest.raises(Conflict, match="48 hours before"):
        exchanges.plan(order["_id"], [line["ticket"]], other_date["_id"], ["0:3"])
    assert cell(sessions[1], "0:3") == SOLD


def test_a_swap_with_no_rules_set_costs_nothing_and_has_no_cut_off(monkeypatch):
    sub, sessions, order = paid_subscription()
    other_date = make_session(make_theater(name="Grand Hall"), days=9)
    line = next(line for line in order["lines"] if line["sessionId"] == sessions[1]["_id"])
    monkeypatch.setattr(clock, "now", lambda: sessions[1]["start"] - timedelta(hours=1))
    assert exchanges.plan(order["_id"], [line["ticket"]], other_date["_id"], ["0:3"]).fee == 0


def test_the_mail_the_receipt_and_the_staff_page_name_the_subscription_in_the_buyers_language(manager_client):
    sub, sessions = season()
    cart = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["0:3"], request=SaleRequest(owner=ALICE)
    )
    order = payments.start(ALICE, cart["_id"], "Ada Lovelace", "ada@example.com")
    paid = mongo.orders().find_one({"_id": payments.pay_with_card(order["_id"], ALICE, card(VISA)).order["_id"]})
    for language, says in (
        ("en", "Subscription Season A: 3 performances"),
        ("de", "Abonnement Abo A: 3 Vorstellungen"),
    ):
        mail = notifications.confirmation_message(paid | {"language": language})
        assert says in str(mail.body) and says in str(mail.alternatives[0][0])
        with translation.override(language):
            receipt = " ".join(pdf_text(pdf.receipt_pdf(paid)).split())
        assert says.split(" ", 1)[1] in receipt
        staff_page = manager_client.get(f"/admin/booking/order/{paid['_id']}/change/", HTTP_ACCEPT_LANGUAGE=language)
        assert says.split(" ", 1)[1] in staff_page.content.decode()


def test_a_single_ticket_booking_names_no_subscription():
    _, sessions = season()
    held = holds.hold_seats(sessions[0]["_id"], ALICE, None, ["2:0", "2:1"])
    order = payments.start(ALICE, held.cart_id, "Ada Lovelace", "ada@example.com")
    paid = mongo.orders().find_one({"_id": payments.pay_with_card(order["_id"], ALICE, card(VISA)).order["_id"]})
    mail = notifications.confirmation_message(paid)
    assert "Subscription" not in str(mail.body)
    assert "Subscription" not in pdf_text(pdf.receipt_pdf(paid))
