"""The waiting list of a sold-out performance: joining, first come first offered among the wishes
the seats fit, the offer's seats held in the write that takes them off sale, offers passing on,
crashes between the offer's writes, and an offer racing a buyer's click on the released seat."""

import threading
from datetime import timedelta

import pytest
from django.core import mail

from booking.core import clock, faults, mongo
from booking.core.domain import CartState
from booking.core.errors import Conflict, InvalidRequest, SeatsTaken
from booking.notifications import waiting_list_mail
from booking.sales import carts, holds, waiting_list
from booking.tests.factories import make_session, reread
from booking.tests.threads import PerThreadClient
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import FREE, HELD

# two rows of four; A is Stalls, B is Premium
GRID = "A: ssss\nB: pppp\n"
ROW_A = ["0:0", "0:1", "0:2", "0:3"]
ROW_B = ["1:0", "1:1", "1:2", "1:3"]


@pytest.fixture
def sold_out():
    """A performance whose every seat is held by one of two buyers' carts: (session, carts)."""
    session = make_session(grid=GRID)
    first = holds.hold_seats(session["_id"], "s:first", None, ROW_A)
    second = holds.hold_seats(session["_id"], "s:second", None, ROW_B)
    assert reread(session["_id"])["seatsAvailable"] == 0
    return session, {"s:first": first.cart_id, "s:second": second.cart_id}


def join(session, email, count, *, together=True, category=None):
    return waiting_list.join(
        session_id=session["_id"], email=email, count=count, together=together, category=category, language="en"
    )


def give_back(session, owner, cart_id, keys):
    holds.release_seats(session["_id"], owner, cart_id, keys)


def cell(session_id, key):
    row, col = (int(p) for p in key.split(":"))
    return reread(session_id)["seats"][row][col]


def entry(entry_id):
    found = mongo.waiting_list().find_one({"_id": entry_id})
    assert found is not None
    return found


# --- joining ---


def test_joining_is_refused_while_seats_are_on_sale():
    session = make_session(grid=GRID)
    with pytest.raises(Conflict):
        join(session, "ada@example.com", 2)
    assert mongo.waiting_list().count_documents({}) == 0


def test_a_sold_out_category_can_be_waited_for_while_another_is_on_sale():
    session = make_session(grid=GRID)
    holds.hold_seats(session["_id"], "s:first", None, ROW_B)
    with pytest.raises(Conflict):
        join(session, "ada@example.com", 2, category="s")
    waiting = join(session, "ada@example.com", 2, category="p")
    assert waiting["state"] == waiting_list.WAITING and waiting["category"] == "p"


def test_seat_count_limits_at_their_exact_values(sold_out, settings):
    session, _ = sold_out
    most = settings.BOOKING_MAX_SEATS_PER_CART
    for bad in (0, most + 1, "two", None):
        with pytest.raises(InvalidRequest):
            join(session, f"bad{bad}@example.com", bad)
    assert join(session, "one@example.com", 1)["count"] == 1
    assert join(session, "most@example.com", most)["count"] == most
    assert mongo.waiting_list().count_documents({}) == 2


def test_a_bad_address_or_category_is_refused(sold_out):
    session, _ = sold_out
    with pytest.raises(InvalidRequest):
        join(session, "not an address", 1)
    with pytest.raises(InvalidRequest):
        join(session, "ada@example.com", 1, category="z")
    assert mongo.waiting_list().count_documents({}) == 0


def test_joining_twice_keeps_the_first_place(sold_out):
    session, _ = sold_out
    first = join(session, "ada@example.com", 2)
    join(session, "bob@example.com", 2)
    again = join(session, "ADA@example.com ", 3)
    assert again["_id"] == first["_id"] and again["count"] == 2
    assert waiting_list.position(entry(first["_id"])) == 1
    assert mongo.waiting_list().count_documents({}) == 2


def test_places_follow_the_order_of_joining(sold_out):
    session, _ = sold_out
    ids = [join(session, f"b{n}@example.com", 1)["_id"] for n in range(4)]
    assert [waiting_list.position(entry(i)) for i in ids] == [1, 2, 3, 4]
    assert waiting_list.leave(entry_id=ids[1], email="b1@example.com")
    assert [waiting_list.position(entry(i)) for i in ids] == [1, None, 2, 3]


# --- offers ---


def test_released_seats_are_offered_to_the_first_whose_wish_they_fit(sold_out):
    session, cart_ids = sold_out
    wants_three = join(session, "three@example.com", 3)
    wants_two = join(session, "two@example.com", 2)
    also_two = join(session, "also@example.com", 2)
    give_back(session, "s:first", cart_ids["s:first"], ["0:2", "0:3"])

    report = waiting_list.offer_free_seats(session["_id"])

    assert report.offered == 1
    assert entry(wants_three["_id"])["state"] == waiting_list.WAITING  # two seats do not fit three
    offered = entry(wants_two["_id"])
    assert offered["state"] == waiting_list.OFFERED and sorted(offered["offer"]["seats"]) == ["0:2", "0:3"]
    assert entry(also_two["_id"])["state"] == waiting_list.WAITING  # came later
    assert waiting_list.position(entry(also_two["_id"])) == 2
    assert all(cell(session["_id"], k) == HELD for k in ("0:2", "0:3"))
    assert reread(session["_id"])["seatsAvailable"] == 0
    assert check_invariants() == []


def test_the_offer_holds_the_seats_in_a_cart_until_the_offer_ends(sold_out, settings):
    settings.BOOKING_WAITING_LIST_OFFER_SECONDS = 1800
    session, cart_ids = sold_out
    waiting = join(session, "ada@example.com", 2)
    give_back(session, "s:first", cart_ids["s:first"], ["0:2", "0:3"])
    before = clock.now()
    waiting_list.offer_free_seats(session["_id"])

    offer = entry(waiting["_id"])["offer"]
    cart = mongo.carts().find_one({"_id": offer["cartId"]})
    assert cart["state"] == CartState.ACTIVE and cart["owner"] == offer["owner"]
    assert sorted(i["key"] for i in cart["items"]) == ["0:2", "0:3"]
    assert cart["total"] == 2 * session["prices"]["s"]
    assert timedelta(seconds=1800) <= cart["expiresAt"] - before < timedelta(seconds=1810)
    assert entry(waiting["_id"])["mail"] == waiting_list.MAIL_PENDING


def test_side_by_side_is_kept_and_apart_is_accepted(sold_out):
    session, cart_ids = sold_out
    together = join(session, "together@example.com", 2, together=True)
    apart = join(session, "apart@example.com", 2, together=False)
    give_back(session, "s:first", cart_ids["s:first"], ["0:0"])
    give_back(session, "s:second", cart_ids["s:second"], ["1:3"])

    waiting_list.offer_free_seats(session["_id"])

    assert entry(together["_id"])["state"] == waiting_list.WAITING
    assert sorted(entry(apart["_id"])["offer"]["seats"]) == ["0:0", "1:3"]


def test_a_category_wish_gets_only_that_category(sold_out):
    session, cart_ids = sold_out
    premium = join(session, "premium@example.com", 1, category="p")
    anything = join(session, "any@example.com", 1)
    give_back(session, "s:first", cart_ids["s:first"], ["0:0"])

    waiting_list.offer_free_seats(session["_id"])

    assert entry(premium["_id"])["state"] == waiting_list.WAITING
    assert entry(anything["_id"])["offer"]["seats"] == ["0:0"]


def test_opening_the_link_gives_the_buyer_the_held_seats(sold_out):
    session, cart_ids = sold_out
    waiting = join(session, "ada@example.com", 2)
    give_back(session, "s:first", cart_ids["s:first"], ["0:2", "0:3"])
    waiting_list.offer_free_seats(session["_id"])
    token = entry(waiting["_id"])["offer"]["token"]

    accepted = waiting_list.accept(token=token)

    assert accepted.cart_id == entry(waiting["_id"])["offer"]["cartId"]
    assert entry(waiting["_id"])["state"] == waiting_list.ACCEPTED
    assert waiting_list.accept(token=token).cart_id == accepted.cart_id  # a second device: the same cart


def test_an_unanswered_offer_passes_on_to_the_next(sold_out, settings):
    session, cart_ids = sold_out
    first = join(session, "first@example.com", 2)
    second = join(session, "second@example.com", 2)
    give_back(session, "s:first", cart_ids["s:first"], ["0:2", "0:3"])
    waiting_list.offer_free_seats(session["_id"])
    token = entry(first["_id"])["offer"]["token"]
    until = entry(first["_id"])["offer"]["until"]

    assert waiting_list.pass_on(now=until - timedelta(milliseconds=1)).lapsed == 0  # not yet at the end
    report = waiting_list.pass_on(now=until)

    assert report.lapsed == 1 and report.offered == 1
    assert entry(first["_id"])["state"] == waiting_list.LAPSED
    assert sorted(entry(second["_id"])["offer"]["seats"]) == ["0:2", "0:3"]
    with pytest.raises(Exception, match="offer has ended"):
        waiting_list.accept(token=token)
    assert check_invariants() == []


def test_an_offer_is_not_made_for_a_performance_that_started(sold_out):
    session, cart_ids = sold_out
    waiting = join(session, "ada@example.com", 1)
    give_back(session, "s:first", cart_ids["s:first"], ["0:0"])
    report = waiting_list.offer_free_seats(session["_id"], now=session["start"])
    assert report.offered == 0 and entry(waiting["_id"])["state"] == waiting_list.WAITING


# --- the mail ---


def test_the_offer_mail_is_sent_once_with_the_link(sold_out):
    session, cart_ids = sold_out
    waiting = join(session, "ada@example.com", 2)
    give_back(session, "s:first", cart_ids["s:first"], ["0:2", "0:3"])
    waiting_list.offer_free_seats(session["_id"])
    token = entry(waiting["_id"])["offer"]["token"]

    assert waiting_list_mail.send_offer(waiting["_id"]) == "sent"
    assert waiting_list_mail.send_offer(waiting["_id"]) == "nothing to send"

    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["ada@example.com"]
    assert f"/waiting-list/offers/{token}/" in mail.outbox[0].body
    assert entry(waiting["_id"])["mail"] == waiting_list.MAIL_SENT


# --- crashes between the offer's writes ---


@pytest.mark.parametrize("point", ["waiting_list.after_offer_record", "waiting_list.after_cart"])
def test_a_crash_before_the_hold_is_undone_by_reconcile(sold_out, crash_at, point):
    session, cart_ids = sold_out
    waiting = join(session, "ada@example.com", 2)
    give_back(session, "s:first", cart_ids["s:first"], ["0:2", "0:3"])
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        waiting_list.offer_free_seats(session["_id"])
    faults.set_hook(None)
    assert entry(waiting["_id"])["state"] == waiting_list.OFFERING
    cart_id = entry(waiting["_id"])["offer"]["cartId"]

    reconcile(now=clock.now() + timedelta(seconds=1), grace=timedelta(0))

    assert entry(waiting["_id"])["state"] == waiting_list.WAITING
    assert "offer" not in entry(waiting["_id"])
    cart = mongo.carts().find_one({"_id": cart_id})
    assert cart is None or cart["state"] == CartState.CANCELED
    assert all(cell(session["_id"], k) == FREE for k in ("0:2", "0:3"))
    assert check_invariants() == []
    assert waiting_list.offer_free_seats(session["_id"]).offered == 1  # and it is offered again


def test_a_crash_after_the_hold_is_finished_by_reconcile(sold_out, crash_at):
    session, cart_ids = sold_out
    waiting = join(session, "ada@example.com", 2)
    give_back(session, "s:first", cart_ids["s:first"], ["0:2", "0:3"])
    crash_at("waiting_list.after_hold")
    with pytest.raises(faults.InjectedCrash):
        waiting_list.offer_free_seats(session["_id"])
    faults.set_hook(None)

    reconcile(now=clock.now() + timedelta(seconds=1), grace=timedelta(0))

    done = entry(waiting["_id"])
    assert done["state"] == waiting_list.OFFERED and done["mail"] == waiting_list.MAIL_PENDING
    assert all(cell(session["_id"], k) == HELD for k in ("0:2", "0:3"))
    assert check_invariants() == []


def test_reconcile_leaves_an_offer_being_made_within_the_grace_period(sold_out, crash_at):
    session, cart_ids = sold_out
    waiting = join(session, "ada@example.com", 2)
    give_back(session, "s:first", cart_ids["s:first"], ["0:2", "0:3"])
    crash_at("waiting_list.after_offer_record")
    with pytest.raises(faults.InjectedCrash):
        waiting_list.offer_free_seats(session["_id"])
    faults.set_hook(None)
    made_at = entry(waiting["_id"])["offer"]["at"]
    assert waiting_list.finish_offers(older_than=made_at) == 0
    assert entry(waiting["_id"])["state"] == waiting_list.OFFERING
    assert waiting_list.finish_offers(older_than=made_at + timedelta(milliseconds=1)) == 1


# --- an offer racing general sale for the released seat ---


def test_an_offer_and_a_click_racing_for_a_released_seat_never_both_get_it(sold_out, monkeypatch):
    session, cart_ids = sold_out
    sid = session["_id"]
    rounds = 12
    wins = {"offer": 0, "click": 0}
    clients = PerThreadClient()
    monkeypatch.setattr(mongo, "get_client", clients.get)
    try:
        for n in range(rounds):
            owner = f"s:clicker{n}"
            waiting = join(session, f"w{n}@example.com", 1)
            free = _free_one_seat(session, cart_ids)
            outcome = _race(sid, owner, free)

            offered = entry(waiting["_id"])["state"] == waiting_list.OFFERED
            clicked = outcome["click"] is not None
            assert offered != clicked, (n, outcome)  # exactly one has the seat
            holders = [r for r in reread(sid)["reservations"] if free in r["seats"]]
            assert len(holders) == 1 and cell(sid, free) == HELD
            in_carts = mongo.carts().count_documents({"items.key": free, "state": CartState.ACTIVE})
            assert in_carts == 1  # no seat in two carts
            wins["offer" if offered else "click"] += 1
            # the winner's seat goes back to the fixture's first buyer's pool for the next round
            holder = holders[0]
            cart_ids[holder["owner"]] = holder["_id"]
            if not offered:
                waiting_list.leave(entry_id=waiting["_id"], email=f"w{n}@example.com")
    finally:
        monkeypatch.undo()
        clients.close()
    assert wins["offer"] + wins["click"] == rounds, wins
    assert check_invariants() == []


def _race(sid, owner: str, free: str) -> dict:
    """The sweep offering the free seat and a buyer clicking it, started together."""
    start = threading.Barrier(2)
    outcome: dict = {}

    def offer():
        start.wait()
        outcome["offer"] = waiting_list.offer_free_seats(sid).offered

    def click():
        start.wait()
        try:
            outcome["click"] = holds.hold_seats(sid, owner, None, [free]).cart_id
        except SeatsTaken:
            outcome["click"] = None

    threads = [threading.Thread(target=offer), threading.Thread(target=click)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return outcome


def _free_one_seat(session, cart_ids) -> str:
    """Give back one held seat of whichever cart still holds seats; its key."""
    for res in reread(session["_id"])["reservations"]:
        cart = mongo.carts().find_one({"_id": res["_id"]})
        if cart and cart["state"] == CartState.ACTIVE and res["seats"]:
            key = res["seats"][0]
            if carts.is_staff_owner(cart["owner"]):
                continue
            holds.release_seats(session["_id"], cart["owner"], cart["_id"], [key])
            return key
    raise AssertionError("no seat left to give back")
