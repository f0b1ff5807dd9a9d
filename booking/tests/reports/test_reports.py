"""Sales reports and exports: the figures equal what the orders say, in the page, the
CSV and the XLSX, read from the per-session summaries (booking/reports/summaries.py) and counted
from the orders alike, also after every kind of change and after a crash between an order's write
and its summary's refresh; the attendee list; the order list's filters; permissions and bad input.

Known sales are made through the services (holds, ticket types, checkout, card payment at
localstripe, box-office payment, refunds, door check-in). The counter sale (which writes an
order's ``channel``) is another engineer's work in progress: the box-office, phone and
complimentary orders here are made the same way and then given their ``channel`` value
(``domain.SalesChannel``), the only thing the counter adds that the reports read.
"""

import csv
import dataclasses
import io
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

import pytest
from openpyxl import load_workbook

from booking.core import mongo
from booking.core.domain import COMPLIMENTARY_METHOD, SalesChannel, sales_channel
from booking.core.faults import InjectedCrash
from booking.payments import flow as payments
from booking.payments import money, refunds
from booking.payments import settings as payment_settings
from booking.reports import figures, marks, summaries, tally
from booking.sales import cancels, checkin, exchanges, holds, offers
from booking.sales import sessions as session_service
from booking.tests.admin_support import make_staff
from booking.tests.factories import TYPES, make_session, make_theater
from booking.tests.paying import pay
from booking.upkeep.invariants import check_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SEAT_OWNING = ("paid", "partially_refunded")


@pytest.fixture(autouse=True)
def _no_orphan_rule(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False  # the sales pick seats for their figures, not their places


@pytest.fixture
def reporter(client, db):
    """Staff with the reports permission only."""
    client.force_login(make_staff("reporter", ["view_reports"]))
    return client


def buy(session, owner, seats, *, types=None, method="card", channel=None, given_away=False, name="Ada Lovelace"):
    """An order made through the services: hold, ticket types, checkout, payment (card at
    localstripe, or the box office's "paid at the counter"); ``channel`` and a complimentary
    sale's ``method`` as the counter sale writes them."""
    cart = holds.hold_seats(session["_id"], owner, None, list(seats))
    for key, kind in (types or {}).items():
        offers.choose_ticket_type(owner, cart.cart_id, session["_id"], key, kind)
    order = payments.start(owner, cart.cart_id, name, f"{owner[2:]}@example.com", method)
    order = pay(order) if method == "card" else payments.mark_paid_at_counter(order["_id"], by="clerk")
    marked = {"$push": marks.push(marks.sessions_of(order))}  # the counter writes these with the new order
    if channel is not None:
        mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"channel": channel}, **marked})
    if given_away:  # as the counter writes a complimentary sale: its method, at the box office
        mongo.orders().update_one(
            {"_id": order["_id"]},
            {"$set": {"method": COMPLIMENTARY_METHOD, "channel": SalesChannel.BOX_OFFICE}, **marked},
        )
    return mongo.orders().find_one({"_id": order["_id"]})


def hall():
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    payment_settings.set_vat_rates(theater["_id"], rate="7", per_category={"p": "19"})  # two rates
    return theater


def on_sale(theater, *, name="Hamlet", days=1):
    session = make_session(theater, name=name, days=days)
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500, "p": 2500}})
    payment_settings.set_box_office(session["_id"], enabled=True, deadline_minutes=30)
    return session


@pytest.fixture
def sales():
    """Two Hamlet sessions (a series) and a Lear in the same hall, with known sales."""
    theater = hall()
    first, second, lear = on_sale(theater), on_sale(theater, days=2), on_sale(theater, name="Lear")
    made = {
        # online, card: full and reduced stalls, a full premium seat (19 % VAT)
        "a": buy(first, "s:a", ["0:0", "0:1", "1:2"], types={"0:1": "reduced"}),
        "b": buy(first, "s:b", ["2:0", "2:1"]),  # one ticket refunded below
        "c": buy(first, "s:c", ["2:2"]),  # refunded in full below
        "d": buy(first, "s:d", ["0:5", "0:6"], method="box_office", channel=SalesChannel.BOX_OFFICE),
        "e": buy(first, "s:e", ["1:5"], method="box_office", given_away=True),
        "f": buy(second, "s:f", ["0:0"], types={"0:0": "reduced"}, channel=SalesChannel.PHONE),
        "g": buy(second, "s:g", ["1:2", "1:3"]),
        "lear": buy(lear, "s:l", ["0:0", "0:1"]),  # another show: in neither Hamlet report
    }
    b_refunded = next(line["ticket"] for line in made["b"]["lines"] if line["key"] == "2:1")
    refunds.refund_tickets(made["b"]["_id"], tickets=[b_refunded], reason="cannot come", by="clerk")
    refunds.refund_tickets(made["c"]["_id"], reason="canceled", by="clerk")
    # a reservation not paid yet: its seat is held, not sold
    cart = holds.hold_seats(first["_id"], "s:pending", None, ["2:5"])
    payments.start("s:pending", cart.cart_id, "Pending Person", "p@example.com", "box_office")
    holds.hold_seats(first["_id"], "s:browsing", None, ["2:6"])  # a live cart
    session_service.set_blocked(first["_id"], [(2, 8)], True)  # a house seat
    scope = checkin.get_scope(first["_id"])
    for order, door in ((made["a"], "North"), (made["d"], "South")):
        assert checkin.check_in(scope, code=order["lines"][0]["ticket"], door=door, by="anna").admitted
    assert check_invariants() == []
    return {"first": first, "second": second, "lear": lear, **made}


# --- what the orders say, computed here without the report's code ---


def sold_lines(session_ids):
    orders = mongo.orders().find({}).hint([("_id", 1)])  # every order, on purpose (test only)
    return [
        (order, line)
        for order in orders
        if order["state"] in SEAT_OWNING
        for line in order["lines"]
        if line["sessionId"] in session_ids
    ]


def refunded_lines(session_ids):
    orders = mongo.orders().find({}).hint([("_id", 1)])
    return [(o, line) for o in orders for line in o.get("refundedLines", []) if line["sessionId"] in session_ids]


def paid(order, line):
    """What the buyer paid for the ticket (nothing when staff gave it away)."""
    return 0 if order.get("method") == "complimentary" else line["price"] - line.get("discount", 0)


def split(pairs):
    """(gross, net, vat) of (order, line) pairs, per VAT rate as the receipts do."""
    vat_lines = money.breakdown((paid(order, line), line["vat"]) for order, line in pairs)
    return sum(v.gross for v in vat_lines), sum(v.net for v in vat_lines), sum(v.vat for v in vat_lines)


def grouped(pairs, key):
    groups = defaultdict(list)
    for order, line in pairs:
        groups[key(order, line)].append((order, line))
    return {k: (len(v), *split(v)) for k, v in groups.items()}


def as_figures(rows):
    return {f.key: (f.tickets, f.gross, f.net, f.vat) for f in rows}


def expect_report(report, session_ids):
    pairs = sold_lines(session_ids)
    assert (report.totals.tickets, report.totals.gross, report.totals.net, report.totals.vat) == (
        len(pairs),
        *split(pairs),
    )
    assert as_figures(report.by_category) == grouped(pairs, lambda o, line: line["cat"])
    assert as_figures(report.by_type) == grouped(pairs, lambda o, line: line["ticketType"])
    assert as_figures(report.by_channel) == grouped(pairs, lambda o, line: sales_channel(o))
    assert report.totals.checked_in == sum(1 for _o, line in pairs if line.get("checkedIn"))
    gone = refunded_lines(session_ids)
    assert (report.refunds.tickets, report.refunds.gross) == (len(gone), sum(paid(o, line) for o, line in gone))
    assert sum(d.tickets for d in report.days) == len(pairs)
    assert sum(d.gross for d in report.days) == report.totals.gross
    grids = [mongo.sessions().find_one({"_id": sid}) for sid in session_ids]
    for state, code in (("sold", 2), ("held", 1), ("blocked", 3), ("free", 0)):
        assert report.seats[state] == sum(row.count(code) for g in grids for row in g["seats"]), state
    assert report.seats["sold"] == len(pairs)  # every sold seat is a ticket of a paid order


def test_session_figures_equal_what_the_orders_say(sales):
    first = sales["first"]
    report = figures.build("session", first["_id"])
    expect_report(report, {first["_id"]})
    # and the same figures written out by hand, so a shared mistake in both computations shows
    # a: 2000 + 1500 + 3500 (p, 19 %); b: 2000 (its 2:1 refunded); d: 2 x 2000; e: given away (p)
    assert report.totals.tickets == 7 and report.totals.gross == 13000
    stalls = money.net_of(9500, "7")
    premium = money.net_of(3500, "19")
    assert report.totals.net == stalls + premium and report.totals.vat == 13000 - stalls - premium
    channels = {f.key: (f.tickets, f.gross) for f in report.by_channel}
    assert channels == {"online": (4, 9000), "box_office": (2, 4000), "complimentary": (1, 0)}
    assert {f.key: f.tickets for f in report.by_type} == {"full": 6, "reduced": 1}
    assert (report.refunds.tickets, report.refunds.gross) == (2, 4000)
    assert {f.key: f.tickets for f in report.refunds_by_channel} == {"online": 2}
    assert report.totals.checked_in == 2
    assert report.seats == {"sold": 7, "held": 2, "blocked": 1, "free": 14, "total": 24, "occupancy": 29}
    assert [d.tickets for d in report.days] == [7]
    assert check_invariants() == []


def test_grouping_in_mongodb_or_in_the_app_gives_the_same_report(sales, settings):
    ids = [sales["first"]["_id"], sales["second"]["_id"], sales["lear"]["_id"]]
    in_app, on_server = tally.count_in_app(ids), tally.count_on_server(ids)
    assert all(tally.same(in_app[sid], on_server[sid]) for sid in ids)
    settings.BOOKING_REPORTS_SOURCE = "orders"
    for kind in ("session", "series"):
        settings.BOOKING_REPORTS_GROUP_ON_SERVER = False
        app_report = figures.build(kind, sales["first"]["_id"])
        settings.BOOKING_REPORTS_GROUP_ON_SERVER = True
        server_report = figures.build(kind, sales["first"]["_id"])
        assert without_time(app_report) == without_time(server_report), kind


def without_time(report):
    return dataclasses.replace(report, as_of=None)


def test_summaries_and_orders_give_the_same_report(sales, settings):
    """The pages read the stored summaries; counting the orders at the read gives the same."""
    for kind in ("session", "series"):
        settings.BOOKING_REPORTS_SOURCE = "summaries"
        from_summaries = figures.build(kind, sales["second"]["_id"])
        settings.BOOKING_REPORTS_SOURCE = "orders"
        from_orders = figures.build(kind, sales["second"]["_id"])
        assert without_time(from_summaries) == without_time(from_orders), kind
        assert from_summaries.behind == 0
    stored = mongo.session_sales().find_one({"_id": sales["first"]["_id"]})
    assert stored["version"] == 1 and stored["format"] == summaries.FORMAT


def test_series_report_covers_every_session_of_the_show_and_nothing_else(sales):
    first, second = sales["first"], sales["second"]
    report = figures.build("series", second["_id"])  # from any of its sessions
    assert [row.id for row in report.sessions] == [str(first["_id"]), str(second["_id"])]
    expect_report(report, {first["_id"], second["_id"]})
    assert report.totals.tickets == 7 + 3
    by_session = {row.id: (row.sales.tickets, row.sales.gross, row.refunded_tickets) for row in report.sessions}
    assert by_session == {str(first["_id"]): (7, 13000, 2), str(second["_id"]): (3, 1500 + 3500 + 3500, 0)}
    assert {f.key: f.tickets for f in report.by_channel}["phone"] == 1
    assert check_invariants() == []


# --- the summaries: marked by every change, recounted, never wrong ---


def is_marked(session_id) -> bool:
    return bool(summaries._marked([session_id]).get(session_id))


def counted_and_stored(session_id):
    """The session's report (recounting it), and its stored summary afterwards."""
    report = figures.build("session", session_id)
    return report, mongo.session_sales().find_one({"_id": session_id})


def test_every_kind_of_change_marks_the_summary_and_the_report_follows(sales, settings):
    """After each change the session is marked (the summary stale), and the report read from the
    summaries again equals what the orders say, with the summary stored afresh and unmarked."""
    first, second = sales["first"], sales["second"]
    settings.BOOKING_REPORTS_RECOUNT_ON_READ = 0  # a series shows stale sessions as of their count
    figures.build("series", first["_id"])  # every summary stored
    assert not is_marked(first["_id"]) and not is_marked(second["_id"])
    version = mongo.session_sales().find_one({"_id": first["_id"]})["version"]
    a, d = (mongo.orders().find_one({"_id": sales[k]["_id"]}) for k in ("a", "d"))
    g = mongo.orders().find_one({"_id": sales["g"]["_id"]})

    def partial_cancel():
        refunds.refund_tickets(a["_id"], tickets=[a["lines"][-1]["ticket"]], reason="one cannot come", by="clerk")

    def refund_whole_order():
        refunds.refund_tickets(d["_id"], reason="canceled", by="clerk")

    def check_in_at_the_door():
        scope = checkin.get_scope(first["_id"])
        assert checkin.check_in(scope, code=a["lines"][1]["ticket"], door="North", by="anna").admitted

    def exchange_to_the_other_session():  # g's seats in the second session, one moved to the first
        exchanges.exchange(g["_id"], [g["lines"][0]["ticket"]], first["_id"], ["1:8"], by="clerk")

    def new_sale():
        buy(first, "s:h", ["1:0"])

    def cancel_an_order_paid_before_payments():  # no provider payment: canceled, not refunded
        order = buy(first, "s:i", ["1:1"])
        mongo.orders().update_one({"_id": order["_id"]}, {"$unset": {"paidWith": ""}})  # as before payments
        cancels.cancel_order(order["_id"], by="clerk", reason="house closed")

    changes = [
        (partial_cancel, [first]),
        (refund_whole_order, [first]),
        (check_in_at_the_door, [first]),
        (exchange_to_the_other_session, [first, second]),
        (new_sale, [first]),
        (cancel_an_order_paid_before_payments, [first]),
    ]
    for change, touched in changes:
        change()
        for session in touched:
            assert is_marked(session["_id"]), (change.__name__, session["name"])
        series = figures.build("series", first["_id"])  # no recount here (limit 0): as of before
        assert series.behind == len(touched) and series.as_of is not None
        for session in touched:
            report, stored = counted_and_stored(session["_id"])
            expect_report(report, {session["_id"]})
            assert stored["version"] > version and not is_marked(session["_id"]), change.__name__
        expect_report(figures.build("series", first["_id"]), {first["_id"], second["_id"]})
        assert check_invariants() == [], change.__name__


def test_a_crash_between_an_orders_write_and_the_summary_leaves_it_marked(sales, crash_at):
    """The order is written (with its mark), the process dies before anything else: the next read
    recounts the session and the figures are right."""
    first, b = sales["first"], sales["b"]
    figures.build("session", first["_id"])
    crash_at("refund.after_order")
    with pytest.raises(InjectedCrash):
        refunds.refund_tickets(b["_id"], reason="all of it", by="clerk")
    refunds.retry_due()  # reconcile finishes the refund's other steps
    assert is_marked(first["_id"])
    expect_report(figures.build("session", first["_id"]), {first["_id"]})


@pytest.mark.parametrize("point", ["reports.before_count", "reports.after_count", "reports.after_store"])
def test_a_crash_inside_the_refresh_delays_the_summary_but_never_falsifies_it(sales, crash_at, point):
    first, b = sales["first"], sales["b"]
    figures.build("session", first["_id"])
    refunds.refund_tickets(b["_id"], reason="all of it", by="clerk")
    crash_at(point)
    with pytest.raises(InjectedCrash):
        figures.build("session", first["_id"])
    assert is_marked(first["_id"])  # whatever was stored, the marks are still there
    crash_at("none")
    expect_report(figures.build("session", first["_id"]), {first["_id"]})
    assert not is_marked(first["_id"])


def test_an_older_count_never_overwrites_a_newer_one(sales, fault_hook):
    """Refresh A counts, then (before A stores) a check-in is written and refresh B counts it,
    stores and pulls the marks. A's store is conditional on the version it read, so it misses: the
    summary keeps B's count, which has the check-in."""
    first, a = sales["first"], sales["a"]
    figures.build("session", first["_id"])
    refunds.refund_tickets(sales["b"]["_id"], reason="all of it", by="clerk")  # a mark for A to read
    scope = checkin.get_scope(first["_id"])
    done: list[str] = []

    def meanwhile(name):
        if name == "reports.after_count" and not done:
            done.append(name)  # once: B's own refresh passes the same point
            assert checkin.check_in(scope, code=a["lines"][1]["ticket"], door="South", by="anna").admitted
            summaries.refresh([first["_id"]])  # B

    fault_hook(meanwhile)
    summaries.refresh([first["_id"]])  # A
    fault_hook(None)
    stored = mongo.session_sales().find_one({"_id": first["_id"]})
    assert stored["version"] == 2  # the first count, then B's; A's missed
    assert not is_marked(first["_id"])
    assert sum(row["checkedIn"] for row in stored["groups"]) == 3  # a's two and d's one
    assert check_invariants() == []
    expect_report(figures.build("session", first["_id"]), {first["_id"]})


def test_a_write_during_the_count_keeps_its_mark(sales, fault_hook):
    first, a = sales["first"], sales["a"]
    figures.build("session", first["_id"])
    scope = checkin.get_scope(first["_id"])

    def meanwhile(name):
        if name == "reports.after_count":
            fault_hook(None)
            assert checkin.check_in(scope, code=a["lines"][1]["ticket"], door="South", by="anna").admitted

    refunds.refund_tickets(sales["b"]["_id"], reason="all of it", by="clerk")
    fault_hook(meanwhile)
    summaries.refresh([first["_id"]])
    assert is_marked(first["_id"])  # the check-in's mark: counted after this refresh's count
    expect_report(figures.build("session", first["_id"]), {first["_id"]})


def test_a_series_shows_sessions_beyond_the_recount_limit_as_of_their_count(sales, settings, reporter):
    first, second = sales["first"], sales["second"]
    figures.build("series", first["_id"])
    before = mongo.session_sales().find_one({"_id": second["_id"]})
    buy(second, "s:late", ["0:5"])
    settings.BOOKING_REPORTS_RECOUNT_ON_READ = 0
    series = figures.build("series", first["_id"])
    assert series.behind == 1 and series.as_of == before["countedOn"]
    assert [row.behind for row in series.sessions] == [False, True]
    assert series.totals.tickets == 10  # the late sale is not in yet: said so on the page
    page = reporter.get(f"/admin/booking/report/series/{first['_id']}/").content.decode()
    assert "The sales figures of 1 session are as of" in page and "earlier count" in page
    assert summaries.refresh_marked() == 2  # the worker's round: this session, and Lear's (never counted yet)
    assert summaries.refresh_marked() == 0
    series = figures.build("series", first["_id"])
    assert series.behind == 0 and series.totals.tickets == 11
    expect_report(series, {first["_id"], second["_id"]})
    # a session's own report always counts its changes
    buy(second, "s:later", ["0:6"])
    expect_report(figures.build("session", second["_id"]), {second["_id"]})


def test_a_change_without_its_mark_is_an_invariant_breach(sales):
    first = sales["first"]
    figures.build("session", first["_id"])
    assert check_invariants() == []
    mongo.orders().update_one({"_id": sales["d"]["_id"]}, {"$set": {"channel": SalesChannel.PHONE}})  # no mark
    assert check_invariants() == [f"the sales summary of session {first['_id']} differs from its orders without a mark"]


def read_csv_sections(text: str) -> dict[str, list[list[str]]]:
    sections: dict[str, list[list[str]]] = {}
    current = None
    for row in csv.reader(io.StringIO(text)):
        if not row:
            current = None
        elif current is None:
            current = sections.setdefault(row[0], [])
        else:
            current.append(row)
    return sections


def cents(text) -> int:
    return round(float(text) * 100)


def test_csv_and_xlsx_carry_the_same_figures(sales, reporter):
    first = sales["first"]
    report = figures.build("session", first["_id"])
    base = f"/admin/booking/report/session/{first['_id']}"

    response = reporter.get(f"{base}/sales.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    sections = read_csv_sections(response.content.decode())
    summary = dict(sections["Summary"][1:])
    assert int(summary["Tickets sold"]) == report.totals.tickets == 7
    assert cents(summary["Gross"]) == report.totals.gross and cents(summary["Net"]) == report.totals.net
    assert cents(summary["VAT"]) == report.totals.vat and cents(summary["Refunded"]) == 4000
    assert (int(summary["Sold"]), int(summary["Held"]), int(summary["Blocked"]), int(summary["Free"])) == (7, 2, 1, 14)
    assert int(summary["Checked in"]) == 2
    categories = {
        row[0]: (int(row[1]), cents(row[2]), cents(row[3]), cents(row[4])) for row in sections["By category"][1:]
    }
    assert categories == {f.label: (f.tickets, f.gross, f.net, f.vat) for f in report.by_category}
    channels = {row[0]: (int(row[1]), cents(row[2]), int(row[5])) for row in sections["By channel"][1:]}
    assert channels == {"Online": (4, 9000, 2), "Box office": (2, 4000, 0), "Complimentary": (1, 0, 0)}
    assert [int(r[1]) for r in sections["Per day"][1:]] == [7]

    response = reporter.get(f"{base}/sales.xlsx")
    assert response.status_code == 200 and response["Content-Type"].endswith("spreadsheetml.sheet")
    book = load_workbook(io.BytesIO(response.content), read_only=True)
    assert book.sheetnames == [
        "Summary",
        "Sessions",
        "By category",
        "By ticket type",
        "Singles and subscriptions",
        "By channel",
        "Per day",
    ]
    xsummary = {row[0]: row[1] for row in book["Summary"].iter_rows(min_row=2, values_only=True)}
    assert xsummary["Tickets sold"] == 7 and round(xsummary["Gross"] * 100) == report.totals.gross
    assert round(xsummary["Net"] * 100) == report.totals.net and round(xsummary["VAT"] * 100) == report.totals.vat
    xtypes = {r[0]: (r[1], round(r[2] * 100)) for r in book["By ticket type"].iter_rows(min_row=2, values_only=True)}
    assert xtypes == {"Full price": (6, 11500), "Reduced": (1, 1500)}
    sessions = list(book["Sessions"].iter_rows(min_row=2, values_only=True))
    assert len(sessions) == 1 and sessions[0][5] == 7  # sold
    # every CSV figure is in the XLSX, table by table
    for title, rows in sections.items():
        sheet = [list(r) for r in book[title].iter_rows(values_only=True)]
        assert len(sheet) == len(rows), title
        for csv_row, xlsx_row in zip(rows, sheet, strict=True):
            for text, value in zip(csv_row, xlsx_row, strict=True):
                if isinstance(value, float) or (isinstance(value, int) and "." in text):
                    assert cents(text) == round(value * 100), title  # money (165.00 reads back as 165)
                elif isinstance(value, datetime):
                    assert text == value.strftime("%Y-%m-%d %H:%M")
                else:
                    assert text == ("" if value is None else str(value)), title


def test_series_downloads_and_the_chart(sales, reporter):
    base = f"/admin/booking/report/series/{sales['first']['_id']}"
    sections = read_csv_sections(reporter.get(f"{base}/sales.csv").content.decode())
    assert len(sections["Sessions"]) == 1 + 2
    assert int(dict(sections["Summary"][1:])["Tickets sold"]) == 10
    chart = reporter.get(f"{base}/chart.svg")
    assert chart.status_code == 200 and chart["Content-Type"] == "image/svg+xml"
    assert chart.content.lstrip().startswith(b"<?xml") and b"<svg" in chart.content


def test_report_page_shows_the_figures(sales, reporter):
    first = sales["first"]
    page = reporter.get(f"/admin/booking/report/session/{first['_id']}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "€130" in html  # gross
    assert "Complimentary" in html and "Box office" in html and "Reduced" in html and "Premium" in html
    assert f"/admin/booking/report/session/{first['_id']}/chart.svg" in html
    series = reporter.get(f"/admin/booking/report/series/{first['_id']}/").content.decode()
    assert "2 sessions" in series and str(sales["second"]["_id"]) in series
    index = reporter.get("/admin/booking/report/").content.decode()
    assert f"/admin/booking/report/session/{first['_id']}/" in index


def test_attendee_list_csv_and_pdf(sales, reporter):
    first = sales["first"]
    response = reporter.get(f"/admin/booking/report/session/{first['_id']}/attendees.csv")
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    header, body = rows[0], rows[1:]
    assert header == ["Row", "Seat", "Name", "Category", "Ticket type", "Reference", "Checked in", "Door"]
    expected = sorted(sold_lines({first["_id"]}), key=lambda p: tuple(int(x) for x in p[1]["key"].split(":")))
    assert [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in body] == [
        (
            line["row"],
            line["seat"],
            o["name"],
            {"s": "Stalls", "p": "Premium"}[line["cat"]],
            line["ticketTypeName"] + (" · Complimentary" if o.get("method") == "complimentary" else ""),
            o["ref"],
        )
        for o, line in expected
    ]
    assert any(r[4].endswith(" · Complimentary") for r in body)  # the fixture gave one away
    doors = {(r[0], r[1]): r[7] for r in body}

    def seat(order, n=0):
        return order["lines"][n]["row"], order["lines"][n]["seat"]

    assert doors[seat(sales["a"])] == "North" and doors[seat(sales["d"])] == "South"
    assert sum(1 for r in body if r[6]) == 2
    assert seat(sales["c"]) not in doors  # a refunded ticket is nobody's seat now

    pdf = reporter.get(f"/admin/booking/report/session/{first['_id']}/attendees.pdf")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf" and pdf.content.startswith(b"%PDF")


def test_names_are_never_formulas_in_the_exports(reporter):
    theater = hall()
    session = on_sale(theater)
    buy(session, "s:x", ["0:0"], name='=HYPERLINK("http://evil")')
    rows = list(
        csv.reader(
            io.StringIO(reporter.get(f"/admin/booking/report/session/{session['_id']}/attendees.csv").content.decode())
        )
    )
    assert rows[1][2] == '\'=HYPERLINK("http://evil")'


def test_no_sales_yet(reporter):
    session = on_sale(hall())
    report = figures.build("session", session["_id"])
    assert report.totals.tickets == 0 and report.days == [] and report.seats["free"] == 24
    for path in ("", "sales.csv", "sales.xlsx", "chart.svg", "attendees.csv", "attendees.pdf"):
        assert reporter.get(f"/admin/booking/report/session/{session['_id']}/{path}").status_code == 200, path


def test_sales_per_day_are_local_days():
    assert tally.hour_day("2026-01-01T22") == "2026-01-01"  # 23:00 in Berlin
    assert tally.hour_day("2026-01-01T23") == "2026-01-02"  # 00:00 in Berlin
    assert tally.local_day(datetime(2026, 7, 1, 22, 30, tzinfo=UTC)) == "2026-07-02"  # summer time: UTC+2
    rows: list[tally.DayRow] = [
        {"day": "2026-01-01", "tickets": 1, "gross": 100},
        {"day": "2026-01-02", "tickets": 2, "gross": 200},
        {"day": "2026-01-04", "tickets": 1, "gross": 50},
        {"day": "2026-01-02", "tickets": 1, "gross": 10},  # another session's sales that day
    ]
    days = figures._days(rows)
    assert [(d.day, d.tickets, d.gross) for d in days] == [
        (date(2026, 1, 1), 1, 100),
        (date(2026, 1, 2), 3, 210),
        (date(2026, 1, 3), 0, 0),  # a day without sales is on the chart too
        (date(2026, 1, 4), 1, 50),
    ]


# --- the order list: filters and opening by reference ---


def refs(client, **params):
    response = client.get("/admin/booking/order/", params)
    assert response.status_code == 200, response.content
    return {o["ref"] for o in response.context["orders"]}


def test_orders_filter_by_session_state_channel_and_day(sales, manager_client):
    first, second = sales["first"], sales["second"]
    assert refs(manager_client, session=str(second["_id"])) == {sales["f"]["ref"], sales["g"]["ref"]}
    assert refs(manager_client, session=str(first["_id"]), state="partially_refunded") == {sales["b"]["ref"]}
    assert refs(manager_client, state="refunded") == {sales["c"]["ref"]}
    assert refs(manager_client, channel="box_office") == {sales["d"]["ref"]}
    assert refs(manager_client, channel="complimentary", session=str(first["_id"])) == {sales["e"]["ref"]}
    online = refs(manager_client, channel="online", state="paid")
    assert online == {sales[k]["ref"] for k in ("a", "g", "lear")}
    today = datetime.now(UTC).astimezone().date()
    everything = refs(manager_client, since=str(today - timedelta(days=1)), until=str(today + timedelta(days=1)))
    assert {sales[k]["ref"] for k in ("a", "b", "c", "d", "e", "f", "g", "lear")} <= everything
    assert refs(manager_client, until=str(today - timedelta(days=3))) == set()
    assert refs(manager_client, q="Ada", channel="phone") == {sales["f"]["ref"]}


def test_typing_a_reference_opens_its_order(sales, manager_client):
    order = sales["d"]
    for typed in (order["ref"], order["ref"].lower(), f" {order['ref'][:4]}-{order['ref'][4:]} "):
        response = manager_client.get("/admin/booking/order/", {"q": typed})
        assert response.status_code == 302 and response["Location"].endswith(f"/order/{order['_id']}/change/")
    # a reference nobody has is a search that finds nothing, not an error
    assert manager_client.get("/admin/booking/order/", {"q": "ZZZZZZZZ"}).status_code == 200


@pytest.mark.parametrize(
    "params",
    [
        {"since": "2026-13-45"},
        {"until": "yesterday"},
        {"since": "2026-05-02", "until": "2026-05-01"},
        {"since": "0001-01-01"},
        {"session": "not-an-id"},
        {"state": "stolen"},
        {"channel": "carrier-pigeon"},
    ],
)
def test_bad_order_filters_are_a_400(manager_client, params):
    response = manager_client.get("/admin/booking/order/", params)
    assert response.status_code == 400
    assert b"errornote" in response.content


# --- permissions and bad input ---


REPORT_PATHS = (
    "",
    "session/{id}/",
    "series/{id}/",
    "session/{id}/sales.csv",
    "series/{id}/sales.xlsx",
    "session/{id}/chart.svg",
    "session/{id}/attendees.csv",
    "session/{id}/attendees.pdf",
)


def test_reports_need_their_own_permission(client, db):
    session = on_sale(hall())
    # every other booking permission is not enough: revenue and customer names are the reports'
    from booking.tests.admin_support import ALL_BOOKING

    others = [f"{a}_{m}" for m in ALL_BOOKING for a in ("view", "add", "change", "delete")]
    client.force_login(make_staff("clerk", others))
    for path in REPORT_PATHS:
        assert client.get("/admin/booking/report/" + path.format(id=session["_id"])).status_code == 403, path
    assert b"/admin/booking/report/" not in client.get("/admin/").content
    client.logout()
    for path in REPORT_PATHS:
        response = client.get("/admin/booking/report/" + path.format(id=session["_id"]))
        assert response.status_code == 302 and "/login/" in response["Location"], path


def test_the_admin_index_lists_reports_for_those_allowed(reporter):
    assert b"/admin/booking/report/" in reporter.get("/admin/").content


def test_unknown_or_malformed_session_is_a_404(reporter):
    for bad in ("ffffffffffffffffffffffff", "nope", "1234"):
        for path in REPORT_PATHS[1:]:
            url = "/admin/booking/report/" + path.format(id=bad)
            assert reporter.get(url).status_code == 404, url
    assert reporter.get("/admin/booking/report/", {"when": "someday"}).status_code == 400


def test_seat_counts_have_thousands_separators(reporter):
    big = make_session(make_theater("\n".join(["s" * 40] * 30), name="Big Hall"), name="Big show")  # 1,200 seats
    index = reporter.get("/admin/booking/report/").content.decode()
    assert ">1,200<" in index and ">1200<" not in index
    page = reporter.get(f"/admin/booking/report/session/{big['_id']}/").content.decode()
    assert "1,200" in page and ">1200<" not in page


def test_the_operator_counts_every_session_once(sales):
    """``refresh_report_summaries --all`` after the deploy that brings the summaries; without it,
    the marked sessions only (what the worker does every minute)."""
    from django.core.management import call_command

    ids = [sales["first"]["_id"], sales["second"]["_id"], sales["lear"]["lines"][0]["sessionId"]]  # "lear": its order
    call_command("refresh_report_summaries")
    assert all(not is_marked(sid) for sid in ids)
    mongo.session_sales().delete_many({"_id": {"$in": ids}})
    call_command("refresh_report_summaries", "--all")
    assert mongo.session_sales().count_documents({"_id": {"$in": ids}}) == 3
    assert check_invariants() == []
    expect_report(figures.build("series", sales["first"]["_id"]), {sales["first"]["_id"], sales["second"]["_id"]})


def test_real_counter_sales_house_seats_and_a_canceled_performance_report_what_the_orders_say():
    """The counter's own sales (not given a channel by hand): cash with a house seat, card terminal,
    a phone sale on invoice (held until paid, then sold), complimentary; then a house seat refunded
    (blocked again), a dearer exchange settled at the counter, and the performance canceled by its
    worker run. After each step the report equals what the orders say, and the figures written by
    hand match."""
    from booking.sales import counter, session_cancel

    theater = hall()
    session = on_sale(theater, name="Tartuffe", days=5)
    sid = session["_id"]
    session_service.set_blocked(sid, [(2, 8)], True)  # a house seat staff kept back

    def sell(staff_id, keys, **fields):
        owner = counter.staff_owner(staff_id)
        held = holds.hold_seats(sid, owner, None, keys, context=holds.BOX_OFFICE)
        return counter.sell(owner, held.cart_id, counter.CounterSale(by="clerk", by_id=staff_id, **fields))

    def report_now():
        report = figures.build("session", sid)
        expect_report(report, {sid})
        assert check_invariants() == []
        return report

    cash = sell(1, ["2:8", "0:0"], name="Cash Customer", method=counter.CASH)  # the house seat and a stall
    sell(2, ["1:2"], name="Terminal Customer", method=counter.CARD_TERMINAL)  # premium, 19 %
    due = (session["start"] - timedelta(days=2)).date()
    invoice = sell(3, ["0:5"], name="Phone Customer", method=counter.INVOICE, channel=counter.PHONE, due=due)
    sell(4, ["0:6"], name="Press", method=counter.COMPLIMENTARY, reason="review")
    report = report_now()
    channels = {f.key: (f.tickets, f.gross) for f in report.by_channel}
    assert channels == {"box_office": (3, 7500), "complimentary": (1, 0)}  # the invoice is not paid yet
    assert report.seats["held"] == 1 and report.seats["blocked"] == 0 and report.seats["sold"] == 4

    payments.mark_paid_at_counter(invoice["_id"], by="clerk")
    report = report_now()
    assert {f.key: (f.tickets, f.gross) for f in report.by_channel}["phone"] == (1, 2000)

    house = next(line["ticket"] for line in cash["lines"] if line["key"] == "2:8")
    refunds.refund_tickets(cash["_id"], tickets=[house], reason="returned", by="clerk")
    report = report_now()
    assert report.seats["blocked"] == 1 and (report.refunds.tickets, report.refunds.gross) == (1, 2000)

    stall = next(line["ticket"] for line in cash["lines"] if line["key"] == "0:0")
    exchanges.exchange(cash["_id"], [stall], sid, ["1:3"], settle=exchanges.COUNTER, by="clerk")  # +15.00
    report = report_now()
    assert report.totals.tickets == 4 and report.totals.gross == 3500 + 3500 + 2000 + 0

    session_cancel.start(sid, by="clerk")
    assert cancels.cancel_session_orders(sid)["state"] == "done"
    report = report_now()
    assert report.totals.tickets == 0 and report.totals.gross == 0 and report.seats["sold"] == 0
    assert report.refunds.tickets == 5 and report.refunds.gross == 2000 + 3500 + 3500 + 2000 + 0
    assert report.seats["blocked"] == 1  # the house seat stays the staff's
