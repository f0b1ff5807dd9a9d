"""Takings by payment method and seller (reports/takings.py) and closing the till at the end of
the day (reports/tills.py, control/tills.py): an exchange's top-up is counted where it was taken,
a till closing counts each cash sale and refund of its seller once, racing closings of one till
leave one, and the staff pages refuse bad input without changing anything."""

import threading
import time
from datetime import date, datetime, timedelta
from datetime import time as day_time

import pytest
from django.core import mail
from django.utils import timezone

from booking.core import clock, faults, mongo
from booking.core.errors import Conflict, InvalidRequest
from booking.notifications import change_notices
from booking.payments import flow as payment_flow
from booking.payments import refunds, voucher_sales
from booking.reports import takings, tills
from booking.sales import cancels, counter, exchanges, holds
from booking.tests.admin_support import make_staff, sell
from booking.tests.factories import make_session
from booking.tests.pdfs import pdf_text

BIG_GRID = "\n".join(f"{chr(65 + r)}: ssssssssss" for r in range(6)) + "\n"


@pytest.fixture(autouse=True)
def single_seats(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False


def counter_sale(session, key, method, seller="anna", **fields):
    owner = counter.staff_owner(f"{seller}-{key}")
    held = holds.hold_seats(session["_id"], owner, None, [key], context=holds.BOX_OFFICE)
    sale = counter.CounterSale(name="Grace", method=method, by=seller, by_id=1, **fields)
    return counter.sell(owner, held.cart_id, sale)


def today():
    day = clock.now().astimezone().date()
    return takings.build(day, day)


def row(rows, key):
    return next(r for r in rows if r.key == key)


def test_takings_split_by_payment_method_and_seller():
    session = make_session(days=5, grid=BIG_GRID)
    counter_sale(session, "0:0", counter.CASH, "anna")
    counter_sale(session, "0:1", counter.CARD_TERMINAL, "anna")
    counter_sale(session, "0:2", counter.COMPLIMENTARY, "bea", reason="press")
    tomorrow = timezone.localdate(clock.now()) + timedelta(days=1)
    invoice = counter_sale(session, "0:3", counter.INVOICE, "bea", due=tomorrow)
    payment_flow.mark_paid_at_counter(invoice["_id"], by="bea", means="bank_transfer", reference="T-1")
    online = sell(session["_id"], ["1:0"])
    report = today()
    price = online["total"]
    assert row(report.by_method, takings.CASH).taken == price
    assert row(report.by_method, takings.CARD_TERMINAL).taken == price
    assert row(report.by_method, takings.ONLINE_CARD).taken == price
    assert row(report.by_method, takings.INVOICE).taken == price
    complimentary = row(report.by_method, takings.COMPLIMENTARY)
    assert complimentary.sales == 1 and complimentary.taken == 0
    assert row(report.by_seller, "anna").taken == 2 * price
    assert row(report.by_seller, "bea").taken == price  # the invoice's bank transfer, recorded by bea
    assert row(report.by_seller, takings.ONLINE).taken == price
    assert report.total.taken == 4 * price


def test_an_exchanges_top_up_at_the_counter_is_counted_as_cash_by_the_seller_who_took_it():
    session = make_session(days=5)
    order = sell(session["_id"], ["0:0"])  # bought online by card
    done = exchanges.exchange(
        order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["1:2"], settle=exchanges.COUNTER, by="anna"
    )
    top_up = done["topUps"][0]["amount"]
    assert top_up > 0
    report = today()
    assert row(report.by_method, takings.ONLINE_CARD).taken == order["total"]  # not the top-up
    assert row(report.by_method, takings.CASH).taken == top_up
    assert row(report.by_seller, "anna").taken == top_up


def test_a_cash_refund_is_money_paid_out_by_the_seller_and_the_buyer_is_told_to_collect_it():
    session = make_session(days=5)
    order = counter_sale(session, "0:0", counter.CASH, "anna", email="grace@example.com")
    mail.outbox.clear()
    cancels.cancel_order(order["_id"], by="bea", reason="ill")
    report = today()
    assert row(report.by_method, takings.CASH).given_back == order["total"]
    assert row(report.by_seller, "bea").given_back == order["total"]
    change_notices.send_pending(order["_id"])
    (message,) = [m for m in mail.outbox if "canceled" in m.subject]
    assert "collect" in message.body and "box office" in message.body


def test_a_card_refund_does_not_tell_the_buyer_to_collect_cash():
    session = make_session(days=5)
    order = sell(session["_id"], ["0:0"])
    mail.outbox.clear()
    cancels.cancel_order(order["_id"], by="bea")
    change_notices.send_pending(order["_id"])
    (message,) = [m for m in mail.outbox if "canceled" in m.subject]
    assert "collect" not in message.body


def test_a_till_closing_counts_the_sellers_cash_less_cash_refunds_once_and_later_sales_go_to_the_next():
    session = make_session(days=5, grid=BIG_GRID)
    first = counter_sale(session, "0:0", counter.CASH, "anna")
    counter_sale(session, "0:1", counter.CASH, "anna")
    counter_sale(session, "0:2", counter.CARD_TERMINAL, "anna")  # not cash: not in the drawer
    counter_sale(session, "0:3", counter.CASH, "bea")  # another till
    cancels.cancel_order(first["_id"], by="anna")
    price = first["total"]
    assert tills.open_till("anna").expected == price
    closing = tills.close(till="anna", seller="anna", counted=price - 100, seq=1)
    assert (closing["cashIn"], closing["cashOut"], closing["expected"]) == (2 * price, price, price)
    assert closing["difference"] == -100 and closing["seq"] == 1
    assert tills.open_till("anna").expected == 0  # nothing counted twice
    counter_sale(session, "0:4", counter.CASH, "anna")
    second = tills.close(till="anna", seller="anna", counted=price, seq=2)
    with pytest.raises(Conflict):  # a double submit of the closing just made
        tills.close(till="anna", seller="anna", counted=price, seq=2)
    assert second["seq"] == 2 and second["expected"] == price and second["from"] == closing["until"]
    assert tills.get(closing["_id"]) == closing  # written once, never changed


@pytest.mark.parametrize("counted", [-1, tills.COUNTED_MAX + 1, "100", 1.5, True])
def test_a_bad_counted_amount_is_refused_and_nothing_is_written(counted):
    with pytest.raises(InvalidRequest):
        tills.close(till="anna", seller="anna", counted=counted, seq=1)
    assert tills.closings().count_documents({"till": "anna"}) == 0


def test_the_counted_amount_at_its_limits_is_taken():
    assert tills.close(till="anna", seller="anna", counted=0, seq=1)["counted"] == 0
    assert tills.close(till="anna", seller="anna", counted=tills.COUNTED_MAX, seq=2)["counted"] == tills.COUNTED_MAX


def test_two_closings_of_one_till_racing_leave_one_and_no_sale_is_counted_twice_or_lost():
    session = make_session(days=5, grid=BIG_GRID)
    price = counter_sale(session, "0:0", counter.CASH, "anna")["total"]
    start = threading.Barrier(2)
    outcomes: list = []

    def close():
        start.wait()
        try:
            outcomes.append(tills.close(till="anna", seller="anna", counted=price, seq=1))
        except Conflict as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=close) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    won = [o for o in outcomes if isinstance(o, dict)]
    assert len(won) == 1 and len(outcomes) == 2
    # sales while and after: each in exactly one closing
    for n in range(1, 6):
        counter_sale(session, f"1:{n}", counter.CASH, "anna")
        tills.close(till="anna", seller="anna", counted=price, seq=n + 1)
    every = list(tills.closings().find({"till": "anna"}).sort("seq", 1))
    refs = [m["ref"] for c in every for m in c["moves"]]
    assert len(refs) == len(set(refs)) == 6
    assert [c["seq"] for c in every] == list(range(1, 7))
    assert all(b["from"] == a["until"] for a, b in zip(every, every[1:], strict=False))


def test_a_closing_that_loses_between_its_read_and_its_write_writes_nothing(fault_hook):
    session = make_session(days=5)
    price = counter_sale(session, "0:0", counter.CASH, "anna")["total"]

    def another_closing_first(name):
        if name == "till.before_write":
            fault_hook(None)
            tills.close(till="anna", seller="anna", counted=price, seq=1)

    fault_hook(another_closing_first)
    with pytest.raises(Conflict):
        tills.close(till="anna", seller="anna", counted=0, seq=1)
    assert tills.closings().count_documents({"till": "anna"}) == 1
    faults.set_hook(None)


# --- the staff pages ---


@pytest.fixture
def seller_client(client, db):
    client.force_login(make_staff("anna", ["sell_at_counter"]))
    return client


def test_the_till_page_closes_the_sellers_till_and_gives_the_z_report(seller_client):
    session = make_session(days=5)
    price = counter_sale(session, "0:0", counter.CASH, "anna")["total"]
    page = seller_client.get("/admin/booking/tillclosing/")
    assert page.status_code == 200 and "Expected in the drawer" in page.content.decode()
    done = seller_client.post("/admin/booking/tillclosing/", {"counted": f"{price / 100:.2f}", "seq": "1"})
    assert done.status_code == 302
    closing = tills.last_closing("anna")
    assert closing["difference"] == 0 and closing["expected"] == price
    again = seller_client.post("/admin/booking/tillclosing/", {"counted": "1.00", "seq": "1"})  # a double submit
    assert again.status_code == 409 and tills.closings().count_documents({"till": "anna"}) == 1
    assert seller_client.get(done["Location"]).status_code == 200
    pdf = seller_client.get(f"/admin/booking/tillclosing/day/{closing['day']}/z.pdf")
    assert pdf.status_code == 200 and "anna" in pdf_text(pdf.content)
    csv = seller_client.get(f"/admin/booking/tillclosing/day/{closing['day']}/z.csv")
    assert csv.status_code == 200 and closing["moves"][0]["ref"] in csv.content.decode()


@pytest.mark.parametrize("counted", ["", "-1", "abc", "100000.01", "1e9", "12.345"])
def test_hostile_counted_input_is_a_400_and_nothing_is_closed(seller_client, counted):
    answer = seller_client.post("/admin/booking/tillclosing/", {"counted": counted, "note": "x", "seq": "1"})
    assert answer.status_code == 400
    assert tills.closings().count_documents({}) == 0


def test_a_seller_sees_only_their_own_closings_and_days(seller_client, db):
    tills.close(till="bea", seller="bea", counted=0, seq=1)
    other = tills.last_closing("bea")
    assert seller_client.get(f"/admin/booking/tillclosing/closing/{other['_id']}/").status_code == 404
    assert seller_client.get(f"/admin/booking/tillclosing/day/{other['day']}/z.csv?till=bea").status_code == 403
    assert seller_client.get("/admin/booking/tillclosing/day/not-a-day/z.pdf").status_code == 404


def test_the_takings_page_and_its_csv(manager_client):
    session = make_session(days=5)
    counter_sale(session, "0:0", counter.CASH, "anna")
    day = clock.now().astimezone().date().isoformat()
    page = manager_client.get(f"/admin/booking/report/takings/?first={day}&last={day}")
    assert page.status_code == 200 and "anna" in page.content.decode()
    assert f"/admin/booking/tillclosing/day/{day}/z.pdf" in page.content.decode()  # every seller's day
    csv = manager_client.get(f"/admin/booking/report/takings.csv?first={day}&last={day}")
    assert csv.status_code == 200 and "anna" in csv.content.decode()


@pytest.mark.parametrize(
    "query", ["first=2026-13-01", "first=2026-01-02&last=2026-01-01", "first=2024-01-01&last=2025-01-01", "first=x"]
)
def test_bad_takings_days_are_a_400(manager_client, query):
    assert manager_client.get(f"/admin/booking/report/takings/?{query}").status_code == 400
    assert manager_client.get(f"/admin/booking/report/takings.csv?{query}").status_code == 400


def test_the_last_day_of_the_longest_range_is_taken(manager_client):
    page = manager_client.get("/admin/booking/report/takings/?first=2024-01-01&last=2024-12-31")
    assert page.status_code == 200
    assert page.content.decode().count("No money taken or given back on these days.") == 2  # by seller, and both
    assert mongo.orders().count_documents({}) == 0


@pytest.mark.parametrize("on_server", [True, False], ids=["grouped in MongoDB", "grouped in the app"])
def test_the_session_report_counts_a_counter_top_up_under_the_box_office_not_online(settings, on_server):
    from booking.reports import figures, tally

    settings.BOOKING_REPORTS_GROUP_ON_SERVER = on_server
    settings.BOOKING_REPORTS_SOURCE = "orders"
    session = make_session(days=5)
    order = sell(session["_id"], ["0:0"])  # bought online by card
    ticket = order["lines"][0]["ticket"]
    done = exchanges.exchange(order["_id"], [ticket], session["_id"], ["1:2"], settle=exchanges.COUNTER, by="anna")
    top_up = done["topUps"][0]["amount"]
    report = figures.build("session", session["_id"])
    channels = {row.key: row for row in report.by_channel}
    assert channels["online"].gross == order["total"] and channels["online"].tickets == 1
    assert channels["box_office"].gross == top_up and channels["box_office"].tickets == 0
    assert report.totals.gross == order["total"] + top_up and report.totals.tickets == 1
    # refunded: the part taken at the counter goes back under the box office too
    refunds.refund_tickets(order["_id"], by="bea")
    report = figures.build("session", session["_id"])
    back = {row.key: row for row in report.refunds_by_channel}
    assert back["online"].gross == order["total"] and back["box_office"].gross == top_up
    assert report.refunds.tickets == 1
    assert tally.same(
        tally.count_in_app([session["_id"]])[session["_id"]], tally.count_on_server([session["_id"]])[session["_id"]]
    )


# --- exactly once: each cash movement stamped by one closing ---


def counted_refs(till="anna"):
    every = list(tills.closings().find({"till": till}).sort("seq", 1))
    return [m["ref"] for c in every for m in c["moves"]], every


def test_a_sale_whose_write_lands_after_a_closing_made_since_its_time_is_counted_by_the_next(fault_hook):
    session = make_session(days=5, grid=BIG_GRID)
    before = counter_sale(session, "0:0", counter.CASH)
    made: list = []

    def close_in_between(name):
        if name == "pay.paid_time_taken" and not made:
            time.sleep(0.002)  # the clock's millisecond: the closing's moment after the sale's
            made.append(tills.close(till="anna", seller="anna", counted=0, seq=1))

    fault_hook(close_in_between)
    racing = counter_sale(session, "0:1", counter.CASH)
    fault_hook(None)
    (first,) = made
    assert racing["paidOn"] < first["until"]  # its time is before the closing, its write after
    assert [m["ref"] for m in first["moves"]] == [before["ref"]]
    assert [m.ref for m in tills.open_till("anna").moves] == [racing["ref"]]
    second = tills.close(till="anna", seller="anna", counted=racing["total"], seq=2)
    assert [m["ref"] for m in second["moves"]] == [racing["ref"]] and second["difference"] == 0
    refs, _every = counted_refs()
    assert sorted(refs) == sorted([before["ref"], racing["ref"]])
    assert tills.open_till("anna").expected == 0


def test_a_sale_landing_while_a_closing_stamps_goes_to_exactly_one_closing(fault_hook):
    session = make_session(days=5, grid=BIG_GRID)
    sold = [counter_sale(session, f"0:{n}", counter.CASH) for n in range(3)]

    def sell_meanwhile(name):
        if name == "till.before_stamp" and len(sold) < 6:
            sold.append(counter_sale(session, f"1:{len(sold)}", counter.CASH))

    fault_hook(sell_meanwhile)
    first = tills.close(till="anna", seller="anna", counted=0, seq=1)
    fault_hook(None)
    assert len(first["moves"]) == 3  # the three there when it began; those during it are the next's
    tills.close(till="anna", seller="anna", counted=0, seq=2)
    refs, _every = counted_refs()
    assert sorted(refs) == sorted(o["ref"] for o in sold) and len(sold) == 6


@pytest.mark.parametrize("finisher", ["next closing", "reconcile"])
def test_a_crash_between_two_stamps_is_finished_and_every_sale_counted_once(crash_at, finisher):
    session = make_session(days=5, grid=BIG_GRID)
    sold = [counter_sale(session, f"0:{n}", counter.CASH) for n in range(3)]
    stamps = []

    def crash_on_the_second_stamp(name):
        if name == "till.before_stamp":
            stamps.append(name)
            if len(stamps) == 2:
                raise faults.InjectedCrash(name)

    faults.set_hook(crash_on_the_second_stamp)
    with pytest.raises(faults.InjectedCrash):
        tills.close(till="anna", seller="anna", counted=100, seq=1)
    faults.set_hook(None)
    assert tills.of_day(clock.now().astimezone().date(), "anna") == []  # half made: not in the Z report
    sold.append(counter_sale(session, "1:0", counter.CASH))
    if finisher == "reconcile":
        assert tills.finish_all() == 1 and tills.finish_all() == 0
    assert tills.open_till("anna").seq == 2
    tills.close(till="anna", seller="anna", counted=0, seq=2)
    refs, every = counted_refs()
    first = every[0]
    assert "claiming" not in first and sorted(m["ref"] for m in first["moves"]) == sorted(o["ref"] for o in sold[:3])
    assert first["difference"] == 100 - 3 * sold[0]["total"]
    assert sorted(refs) == sorted(o["ref"] for o in sold)


def test_racing_sales_refunds_and_closings_count_every_cash_movement_exactly_once():
    session = make_session(days=5, grid=BIG_GRID)
    refunded = [counter_sale(session, f"5:{n}", counter.CASH) for n in range(3)]
    sold: list = []
    lock = threading.Lock()
    selling = threading.Event()

    def sell(row):
        for n in range(6):
            order = counter_sale(session, f"{row}:{n}", counter.CASH)
            with lock:
                sold.append(order)

    def refund(order):
        cancels.cancel_order(order["_id"], by="anna")

    def close_repeatedly():
        while not selling.wait(0.05):
            seq = tills.open_till("anna").seq
            try:
                tills.close(till="anna", seller="anna", counted=0, seq=seq)
            except Conflict:
                pass

    closers = [threading.Thread(target=close_repeatedly) for _ in range(2)]
    workers = [threading.Thread(target=sell, args=(row,)) for row in range(4)]
    workers += [threading.Thread(target=refund, args=(order,)) for order in refunded]
    for thread in [*closers, *workers]:
        thread.start()
    for thread in workers:
        thread.join(timeout=120)
    selling.set()
    for thread in closers:
        thread.join(timeout=60)
    tills.close(till="anna", seller="anna", counted=0, seq=tills.open_till("anna").seq)
    every = list(tills.closings().find({"till": "anna"}).sort("seq", 1))
    moves = [(m["ref"], m["kind"]) for c in every for m in c["moves"]]
    expected = [(o["ref"], "sale") for o in [*refunded, *sold]] + [(o["ref"], "refund") for o in refunded]
    assert sorted(moves) == sorted(expected)  # each once: none twice, none lost
    assert sum(c["expected"] for c in every) == sum(o["total"] for o in sold)
    assert [c["seq"] for c in every] == list(range(1, len(every) + 1)) and len(every) >= 2
    assert tills.open_till("anna").expected == 0


def test_a_gift_voucher_sold_for_cash_is_counted_by_one_closing():
    voucher_sales.sell_at_counter(value=2500, means=counter.CASH, by="anna")
    first = tills.close(till="anna", seller="anna", counted=2500, seq=1)
    assert (first["cashIn"], first["difference"]) == (2500, 0)
    assert tills.open_till("anna").cash_in == 0
    assert tills.close(till="anna", seller="anna", counted=0, seq=2)["cashIn"] == 0


# --- the takings page: past days counted once and kept ---


def same_sums(a: takings.Takings, b: takings.Takings) -> bool:
    def rows(t):
        listed = [t.by_method, t.by_seller, t.by_method_and_seller, t.vouchers_sold, t.donations]
        return [[(r.key, r.label, r.sales, r.taken, r.given_back) for r in rs] for rs in listed] + [
            [(r.sales, r.taken, r.given_back) for r in (t.total, t.vouchers_total, t.donations_total)]
        ]

    return rows(a) == rows(b)


@pytest.fixture
def at(monkeypatch):
    """Move the app's clock: ``at(moment)``."""

    def move(moment):
        monkeypatch.setattr(clock, "now", lambda: moment)

    return move


def local_noon(day):
    return timezone.make_aware(datetime.combine(day, day_time(12)))


def noon_today():
    """Today at noon, as "now": yesterday is then sealed (``takings.SEALED_AFTER``) whatever the
    time the suite runs at, also in the first minutes after midnight."""
    return local_noon(timezone.localdate(clock.now()))


def test_the_takings_page_over_kept_days_and_today_sums_as_the_movements_do(at):
    session = make_session(days=9, grid=BIG_GRID)
    real_now = noon_today()
    today_ = timezone.localdate(real_now)
    days = [today_ - timedelta(days=n) for n in (3, 2, 1)]
    at(local_noon(days[0]))
    cash = counter_sale(session, "0:0", counter.CASH, "anna")
    counter_sale(session, "0:1", counter.COMPLIMENTARY, "bea", reason="press")
    voucher_sales.sell_at_counter(value=2500, means=counter.CARD_TERMINAL, by="anna")
    at(local_noon(days[1]))
    card = sell(session["_id"], ["1:0"])
    cancels.cancel_order(cash["_id"], by="bea", reason="ill")  # a cash refund two days later
    at(local_noon(days[2]))
    counter_sale(session, "0:2", counter.CARD_TERMINAL, "anna")
    at(real_now)
    counter_sale(session, "0:3", counter.CASH, "bea")  # today: read from the orders

    page = takings.summary(days[0], today_, now=real_now)
    assert same_sums(page, takings.build(days[0], today_))
    assert row(page.by_method, takings.ONLINE_CARD).taken == card["total"]
    assert row(page.by_seller, "bea").given_back == cash["total"]
    assert page.vouchers_total.taken == 2500 and page.moves == []
    kept = {d["_id"].split(":")[-1] for d in mongo.takings_days().find()}
    assert kept == {d.isoformat() for d in days}  # today is not over: never kept


def test_a_kept_day_is_read_as_kept_and_not_counted_again(at):
    session = make_session(days=9, grid=BIG_GRID)
    real_now = noon_today()
    yesterday = timezone.localdate(real_now) - timedelta(days=1)
    at(local_noon(yesterday))
    counter_sale(session, "0:0", counter.CASH, "anna")
    at(real_now)
    first = takings.summary(yesterday, yesterday, now=real_now)
    mongo.takings_days().update_many({}, {"$set": {"cells": [["all", "anna", "cash", 1, 1, 0]]}})
    again = takings.summary(yesterday, yesterday, now=real_now)
    assert row(again.by_seller, "anna").taken == 1 != row(first.by_seller, "anna").taken


def test_a_refund_of_a_kept_day_that_fails_or_goes_through_later_changes_that_day(at):
    session = make_session(days=9, grid=BIG_GRID)
    real_now = noon_today()
    yesterday = timezone.localdate(real_now) - timedelta(days=1)
    at(local_noon(yesterday))
    order = sell(session["_id"], ["0:0"])
    refunds.refund_tickets(order["_id"], by="bea")
    at(real_now)
    refund_id = mongo.orders().find_one({"_id": order["_id"]})["refunds"][0]["_id"]
    assert takings.summary(yesterday, yesterday, now=real_now).total.given_back == order["total"]
    for status, given_back in ((refunds.FAILED, 0), (refunds.SUCCEEDED, order["total"])):
        mongo.orders().update_one(
            {"_id": order["_id"], "refunds._id": refund_id}, {"$set": {"refunds.$.status": status}}
        )
        page = takings.summary(yesterday, yesterday, now=real_now)
        assert page.total.given_back == given_back
        assert same_sums(page, takings.build(yesterday, yesterday))


def test_a_day_is_kept_only_once_it_ended_the_sealing_time_ago(at):
    session = make_session(days=9, grid=BIG_GRID)
    yesterday = timezone.localdate(clock.now()) - timedelta(days=1)
    day_end = takings.day_range(yesterday, yesterday)[1]
    at(day_end - timedelta(milliseconds=1))
    counter_sale(session, "0:0", counter.CASH, "anna")
    just_before = day_end + takings.SEALED_AFTER - timedelta(milliseconds=1)
    takings.summary(yesterday, yesterday, now=just_before)
    assert mongo.takings_days().count_documents({}) == 0
    at(day_end - timedelta(milliseconds=1))  # a write that took its time before midnight lands now
    late = counter_sale(session, "0:1", counter.CASH, "anna")
    page = takings.summary(yesterday, yesterday, now=day_end + takings.SEALED_AFTER)
    assert mongo.takings_days().count_documents({}) == 1
    assert row(page.by_seller, "anna").taken == 2 * late["total"]


def test_the_worker_keeps_older_days_a_month_per_run_back_to_the_first_money_taken(at):
    session = make_session(days=60, grid=BIG_GRID)
    real_now = noon_today()
    today_ = timezone.localdate(real_now)
    oldest, later = today_ - timedelta(days=45), today_ - timedelta(days=10)
    at(local_noon(oldest))
    counter_sale(session, "0:0", counter.CASH, "anna")
    at(local_noon(later))
    counter_sale(session, "0:1", counter.CARD_TERMINAL, "bea")
    at(real_now)
    assert takings.first_movement_day() == oldest

    def kept():
        return {date.fromisoformat(d["_id"].split(":")[-1]) for d in mongo.takings_days().find()}

    yesterday = timezone.localdate(real_now - takings.SEALED_AFTER) - timedelta(days=1)
    week_start = yesterday - timedelta(days=takings.KEEP_DAYS - 1)
    assert takings.keep_past_days(now=real_now, fill=31) == takings.KEEP_DAYS + 31
    assert kept() == {week_start + timedelta(days=n) for n in range(-31, takings.KEEP_DAYS)}
    rest = (week_start - timedelta(days=31) - oldest).days
    assert takings.keep_past_days(now=real_now, fill=31) == takings.KEEP_DAYS + rest
    assert min(kept()) == oldest and len(kept()) == (yesterday - oldest).days + 1
    assert takings.keep_past_days(now=real_now, fill=31) == takings.KEEP_DAYS  # nothing left to count
    mongo.takings_days().update_many({}, {"$set": {"cells": []}})
    assert takings.summary(oldest, later, now=real_now).total.taken == 0  # read as kept, not counted
