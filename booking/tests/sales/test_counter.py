"""Selling at the counter and on the phone (sales/counter.py): staff's own cart on the buyer's
engine, house seats, the four ways to pay, the idle end of staff holds, and crashes in between."""

from datetime import timedelta

import pytest
from django.utils import timezone

from booking.core import clock, faults, mongo
from booking.core.errors import CartExpired, InvalidRequest, SeatsTaken
from booking.sales import cart_expiry, carts, counter, holds, promos
from booking.sales import sessions as session_service
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile
from booking.venues.seat_grid import BLOCKED, FREE, HELD, SOLD

STAFF = counter.staff_owner(7)


def cells(session, keys):
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    return [seats[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


def available(session):
    return mongo.sessions().find_one({"_id": session["_id"]})["seatsAvailable"]


HOUSE_SEATS = holds.HoldContext(house_seats=True)  # staff may take seats they blocked


def staff_hold(session, keys, cart_id=None, owner=STAFF):
    return holds.hold_seats(session["_id"], owner, cart_id, list(keys), context=HOUSE_SEATS)


def sale(method=counter.CASH, **fields):
    return counter.CounterSale(**{"name": "Grace Hopper", "method": method, "by": "anna", "by_id": 7, **fields})


def test_cash_sale_sells_the_seats_at_once_and_records_staff_and_channel():
    session = make_session()
    held = staff_hold(session, ["1:2", "1:3"])
    order = counter.sell(STAFF, held.cart_id, sale())
    assert order["state"] == "paid" and order["method"] == "cash" and order["channel"] == "box_office"
    assert order["soldBy"] == {"id": 7, "name": "anna"}
    assert order["paidWith"]["provider"] == "counter" and order["paidWith"]["by"] == "anna"
    assert order["paidWith"]["means"] == "cash" and order["paidWith"]["amount"] == order["total"] == 7000
    assert order["fee"]["amount"] == 0 and order["email"] == "" and order["mail"] == "none"
    assert order["receiptNo"]
    assert cells(session, ["1:2", "1:3"]) == [SOLD, SOLD]
    assert mongo.carts().find_one({"_id": held.cart_id})["state"] == "done"
    assert check_invariants() == []


def test_a_double_submit_returns_the_same_paid_order():
    session = make_session()
    held = staff_hold(session, ["0:0"])
    first = counter.sell(STAFF, held.cart_id, sale(counter.CARD_TERMINAL))
    again = counter.sell(STAFF, held.cart_id, sale(counter.CARD_TERMINAL))
    assert again["_id"] == first["_id"] and again["state"] == "paid"
    assert mongo.orders().count_documents({"cartId": held.cart_id}) == 1
    assert check_invariants() == []


def test_phone_sale_with_an_e_mail_queues_the_confirmation():
    session = make_session()
    held = staff_hold(session, ["0:0"])
    order = counter.sell(STAFF, held.cart_id, sale(channel="phone", email="Grace@Example.com", phone="+49 30 1234"))
    assert order["channel"] == "phone" and order["email"] == "grace@example.com" and order["phone"] == "+49 30 1234"
    assert order["mail"] == "pending"
    assert check_invariants() == []


def test_invoice_keeps_the_seats_reserved_until_paid_then_sells_them():
    session = make_session(days=5)
    held = staff_hold(session, ["0:0"])
    due = (clock.now() + timedelta(days=2)).date()
    order = counter.sell(STAFF, held.cart_id, sale(counter.INVOICE, channel="phone", due=due))
    assert order["state"] == "pending_payment" and order["method"] == "invoice"
    assert cells(session, ["0:0"]) == [HELD]
    cart = mongo.carts().find_one({"_id": held.cart_id})
    assert cart["state"] == "paying" and cart["expiresAt"] == order["payment"]["until"]
    assert cart["expiresAt"].date() >= due
    assert check_invariants() == []
    paid = counter.mark_invoice_paid(order["_id"], by="ben")
    assert paid["state"] == "paid" and paid["paidWith"]["by"] == "ben"
    assert cells(session, ["0:0"]) == [SOLD]
    assert check_invariants() == []


def test_an_unpaid_invoice_releases_its_seats_at_the_due_date():
    session = make_session(days=5)
    held = staff_hold(session, ["0:0"])
    order = counter.sell(STAFF, held.cart_id, sale(counter.INVOICE, due=timezone.localdate(clock.now())))
    until = order["payment"]["until"]
    assert cart_expiry.expire_stale_carts(now=until - timedelta(milliseconds=1)).carts_expired == 0
    assert cart_expiry.expire_stale_carts(now=until).carts_expired == 1
    assert cells(session, ["0:0"]) == [FREE]
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "expired"
    assert check_invariants() == []


@pytest.mark.parametrize(
    ("due_days", "message"),
    [(-1, "today or later"), (3, "on or before the day of the performance"), (None, "date the invoice is due")],
)
def test_invoice_due_dates_that_make_no_sense_are_refused_and_change_nothing(due_days, message):
    session = make_session(days=1)
    held = staff_hold(session, ["0:0"])
    due = None if due_days is None else (clock.now() + timedelta(days=due_days)).date()
    with pytest.raises(InvalidRequest, match=message) as refused:
        counter.sell(STAFF, held.cart_id, sale(counter.INVOICE, due=due))
    assert "due" in refused.value.details["fields"]
    assert mongo.carts().find_one({"_id": held.cart_id})["state"] == "active"
    assert mongo.orders().count_documents({"cartId": held.cart_id}) == 0
    assert check_invariants() == []


def test_complimentary_needs_a_reason_and_costs_nothing():
    session = make_session()
    held = staff_hold(session, ["1:2", "1:3"])
    with pytest.raises(InvalidRequest, match="reason"):
        counter.sell(STAFF, held.cart_id, sale(counter.COMPLIMENTARY))
    order = counter.sell(STAFF, held.cart_id, sale(counter.COMPLIMENTARY, reason="Press: Daily Bugle"))
    assert order["state"] == "paid" and order["total"] == 0 and order["compReason"] == "Press: Daily Bugle"
    assert [line["price"] - line["discount"] for line in order["lines"]] == [0, 0]
    assert cells(session, ["1:2", "1:3"]) == [SOLD, SOLD]
    assert check_invariants() == []


def test_complimentary_with_a_promo_code_applied_is_refused():
    session = make_session()
    promos.create_code("TENOFF", "percent", 10, cap=5)
    held = staff_hold(session, ["0:0"])
    promos.apply_code(STAFF, held.cart_id, "TENOFF")
    with pytest.raises(InvalidRequest, match="promo code"):
        counter.sell(STAFF, held.cart_id, sale(counter.COMPLIMENTARY, reason="Friends"))
    order = counter.sell(STAFF, held.cart_id, sale(counter.CASH))  # the code applies to a paid sale
    assert order["total"] == 1800 and order["state"] == "paid"
    assert check_invariants() == []


def test_a_code_whose_seats_left_the_counter_cart_gives_its_use_back_at_the_sale():
    session, other = make_session(), make_session(name="Hamlet")
    promos.create_code("HAMLETONLY", "percent", 50, session_id=other["_id"], cap=1)
    held = staff_hold(session, ["0:0"])
    staff_hold(other, ["0:0"], cart_id=held.cart_id)
    promos.apply_code(STAFF, held.cart_id, "HAMLETONLY")
    holds.release_seats(other["_id"], STAFF, held.cart_id, ["0:0"])
    order = counter.sell(STAFF, held.cart_id, sale(counter.CASH))
    assert order["state"] == "paid" and order["total"] == 2000 and "promo" not in order
    assert mongo.promo_codes().find_one({"code": "HAMLETONLY"})["uses"] == 0
    assert check_invariants() == []


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": "  "}, "name"),
        ({"email": "not-an-address"}, "email"),
        ({"phone": "call me"}, "phone"),
        ({"method": "bitcoin"}, "method"),
        ({"channel": "carrier pigeon"}, "channel"),
    ],
)
def test_bad_customer_details_are_refused_per_field_and_change_nothing(fields, field):
    session = make_session()
    held = staff_hold(session, ["0:0"])
    with pytest.raises(InvalidRequest) as refused:
        counter.sell(STAFF, held.cart_id, sale(**fields))
    assert field in refused.value.details["fields"]
    assert mongo.carts().find_one({"_id": held.cart_id})["state"] == "active"
    assert cells(session, ["0:0"]) == [HELD]


# --- house seats: blocked by staff, available to staff selling ---


def test_staff_may_sell_a_house_seat_and_buyers_still_may_not():
    session = make_session()
    session_service.set_blocked(session["_id"], [(0, 0), (0, 1)], True)
    free_before = available(session)
    with pytest.raises(SeatsTaken):
        holds.hold_seats(session["_id"], "s:buyer", None, ["0:0"])
    held = staff_hold(session, ["0:0", "0:2", "0:3"])
    assert cells(session, ["0:0", "0:1", "0:2", "0:3"]) == [HELD, BLOCKED, HELD, HELD]
    assert available(session) == free_before - 2  # the house seat was never counted as available
    assert check_invariants() == []
    order = counter.sell(STAFF, held.cart_id, sale())
    assert order["state"] == "paid" and cells(session, ["0:0", "0:1", "0:2"]) == [SOLD, BLOCKED, SOLD]
    assert check_invariants() == []


def test_a_released_house_seat_goes_back_to_blocked_not_on_sale():
    session = make_session()
    session_service.set_blocked(session["_id"], [(0, 0)], True)
    free_before = available(session)
    held = staff_hold(session, ["0:0", "0:1"])
    holds.release_seats(session["_id"], STAFF, held.cart_id, ["0:0"])
    assert cells(session, ["0:0", "0:1"]) == [BLOCKED, HELD]
    assert available(session) == free_before - 1
    assert check_invariants() == []
    staff_hold(session, ["0:0"], held.cart_id)  # taken again, then the whole cart given up
    carts.cancel_cart(held.cart_id, STAFF)
    assert cells(session, ["0:0", "0:1"]) == [BLOCKED, FREE]
    assert available(session) == free_before
    assert check_invariants() == []


def test_an_expired_staff_hold_gives_house_seats_back_to_blocked():
    session = make_session()
    session_service.set_blocked(session["_id"], [(2, 8)], True)
    held = staff_hold(session, ["2:8", "2:7"])
    cart = mongo.carts().find_one({"_id": held.cart_id})
    report = cart_expiry.expire_stale_carts(now=cart["expiresAt"])
    assert report.carts_expired == 1
    assert cells(session, ["2:8", "2:7"]) == [BLOCKED, FREE]
    assert check_invariants() == []


# --- staff holds end after the idle setting, not while staff work ---


def test_staff_hold_lasts_while_they_work_and_ends_exactly_at_the_idle_limit(settings, monkeypatch):
    settings.BOOKING_STAFF_HOLD_IDLE_SECONDS = 1200
    settings.BOOKING_HOLD_SECONDS, settings.BOOKING_HOLD_CAP_SECONDS = 600, 900  # a buyer's would end sooner
    session = make_session()
    start = clock.now()
    times = iter([start, start + timedelta(minutes=19), start + timedelta(minutes=38)])
    current = [start]
    monkeypatch.setattr(clock, "now", lambda: current[0])
    held = staff_hold(session, ["0:0"])
    for current[0] in list(times)[1:]:  # an action every 19 minutes: past the buyer's cap, still held
        cart = counter.touch(STAFF, held.cart_id)
        assert cart is not None and cart["expiresAt"] == current[0] + timedelta(seconds=1200)
    last = current[0]
    limit = last + timedelta(seconds=1200)
    assert cart_expiry.expire_stale_carts(now=limit - timedelta(milliseconds=1)).carts_expired == 0
    assert cells(session, ["0:0"]) == [HELD]
    assert cart_expiry.expire_stale_carts(now=limit).carts_expired == 1  # exactly at the limit: released
    assert cells(session, ["0:0"]) == [FREE]
    current[0] = limit
    assert check_invariants() == []
    with pytest.raises(CartExpired):
        counter.sell(STAFF, held.cart_id, sale())


def test_a_buyers_hold_keeps_its_own_duration():
    session = make_session()
    held = holds.hold_seats(session["_id"], "s:buyer", None, ["0:0"])
    assert held.expires_at <= clock.now() + timedelta(seconds=carts.hold_duration().total_seconds())
    assert counter.touch("s:buyer", held.cart_id) is None  # touch is staff's only
    assert mongo.carts().find_one({"_id": held.cart_id})["expiresAt"] == held.expires_at


def test_current_cart_finds_the_staff_members_live_cart_only():
    session = make_session()
    held = staff_hold(session, ["0:0"])
    holds.hold_seats(session["_id"], counter.staff_owner(8), None, ["0:1"])
    assert counter.current_cart(STAFF)["_id"] == held.cart_id
    assert counter.current_cart(counter.staff_owner(9)) is None


# --- crashes between the sale's writes ---


@pytest.mark.parametrize("point", ["counter.after_cart", "counter.after_order", "pay.after_paid", "pay.after_sell"])
def test_a_crash_during_a_cash_sale_is_finished_by_submitting_again(point, crash_at):
    session = make_session()
    held = staff_hold(session, ["1:2", "1:3"])
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        counter.sell(STAFF, held.cart_id, sale())
    faults.set_hook(None)
    order = counter.sell(STAFF, held.cart_id, sale())
    assert order["state"] == "paid" and not order.get("settling")
    assert cells(session, ["1:2", "1:3"]) == [SOLD, SOLD]
    assert mongo.orders().count_documents({"cartId": held.cart_id}) == 1
    assert check_invariants() == []


def test_a_sale_nobody_submits_again_after_a_crash_is_finished_or_released_by_the_worker(crash_at, settings):
    session = make_session()
    held = staff_hold(session, ["0:0"])
    crash_at("pay.after_paid")
    with pytest.raises(faults.InjectedCrash):
        counter.sell(STAFF, held.cart_id, sale())
    faults.set_hook(None)
    settings.BOOKING_PAYMENT_CHECK_GRACE_SECONDS = 0
    reconcile(grace=timedelta(0))
    order = mongo.orders().find_one({"cartId": held.cart_id})
    assert order["state"] == "paid" and not order.get("settling")
    assert cells(session, ["0:0"]) == [SOLD]
    assert check_invariants() == []


# --- races and crashes with house seats ---


@pytest.mark.slow
def test_staff_and_buyers_racing_for_house_and_free_seats_sell_each_seat_once(monkeypatch, settings):
    import threading

    from booking.core.errors import BookingError
    from booking.tests.threads import PerThreadClient

    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    session = make_session()
    session_service.set_blocked(session["_id"], [(0, 0), (0, 1), (2, 0)], True)
    clients = PerThreadClient()
    monkeypatch.setattr(mongo, "get_client", clients.get)
    wanted = [["0:0", "0:2"], ["0:1", "0:2"], ["0:0", "0:1"], ["2:0", "0:3"]]
    start = threading.Barrier(12)
    sold, errors = [], []

    def staff(n):
        owner = counter.staff_owner(100 + n)
        try:
            start.wait()
            held = holds.hold_seats(session["_id"], owner, None, wanted[n % len(wanted)], context=HOUSE_SEATS)
            sold.append(counter.sell(owner, held.cart_id, sale(by=f"staff{n}")))
        except BookingError:
            pass
        except Exception as exc:  # noqa: BLE001 - a crash in a thread must fail the test
            errors.append(repr(exc))

    def buyer(n):
        try:
            start.wait()
            holds.hold_seats(session["_id"], f"s:b{n}", None, wanted[n % len(wanted)])
            errors.append(f"buyer {n} held a house seat")
        except BookingError:
            pass
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=staff, args=(n,)) for n in range(8)]
    threads += [threading.Thread(target=buyer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    clients.close()
    assert errors == []
    seats = [key for order in sold for key in (line["key"] for line in order["lines"])]
    assert len(seats) == len(set(seats)) and sold  # nobody sold a seat twice; someone sold
    assert check_invariants() == []


def test_a_crash_between_a_staff_holds_two_writes_gives_the_house_seat_back_to_blocked(crash_at):
    session = make_session()
    session_service.set_blocked(session["_id"], [(0, 0)], True)
    free_before = available(session)
    crash_at("hold.after_session")
    with pytest.raises(faults.InjectedCrash):
        staff_hold(session, ["0:0", "0:1"])  # the session's write went through, the cart never heard
    faults.set_hook(None)
    assert cells(session, ["0:0", "0:1"]) == [HELD, HELD]
    reconcile(grace=timedelta(0))
    assert cells(session, ["0:0", "0:1"]) == [BLOCKED, FREE]
    assert available(session) == free_before
    assert check_invariants() == []
