"""Reports show a subscription's income apart from single tickets, counted in MongoDB or in the app."""

import csv
import io
from datetime import timedelta

import pytest
from openpyxl import load_workbook

from booking.core import clock
from booking.reports import figures, tally
from booking.sales import subscriptions
from booking.sales.subscriptions import SaleRequest
from booking.tests.admin_support import make_staff, sell
from booking.tests.factories import make_session, make_theater
from booking.tests.paying import checkout_paid


@pytest.mark.parametrize("on_server", [True, False])
def test_subscription_income_is_apart_from_single_tickets(settings, on_server):
    settings.BOOKING_REPORTS_GROUP_ON_SERVER = on_server
    hall = make_theater()
    sessions = [make_session(hall, days=2 + i) for i in range(2)]
    now = clock.now()
    sub = subscriptions.create_subscription(
        name="Season",
        session_ids=[s["_id"] for s in sessions],
        prices={"s": 3001, "p": 5000},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
    )
    cart = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["0:0"], request=SaleRequest(owner="s:a")
    )
    checkout_paid("s:a", cart["_id"], "Ada", "ada@example.com")
    sell(sessions[0]["_id"], ["2:0"])  # a single ticket at 20.00

    report = figures.build("session", sessions[0]["_id"])
    products = {f.key: (f.tickets, f.gross) for f in report.by_product}
    assert products == {tally.SINGLE: (1, 2000), tally.SUBSCRIPTION: (1, 1501)}  # 30.01 over two: 15.01 + 15.00
    second = figures.build("session", sessions[1]["_id"])
    assert {f.key: (f.tickets, f.gross) for f in second.by_product} == {tally.SUBSCRIPTION: (1, 1500)}
    assert tally.same(
        tally.count_in_app([sessions[0]["_id"]])[sessions[0]["_id"]],
        tally.count_on_server([sessions[0]["_id"]])[sessions[0]["_id"]],
    )


def test_the_csv_and_xlsx_exports_show_subscriptions_apart(client, db):
    client.force_login(make_staff("reporter", ["view_reports"]))
    hall = make_theater()
    sessions = [make_session(hall, days=2 + i) for i in range(2)]
    now = clock.now()
    sub = subscriptions.create_subscription(
        name="Season",
        session_ids=[s["_id"] for s in sessions],
        prices={"s": 3001, "p": 5000},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
    )
    cart = subscriptions.hold_subscription(
        subscription_id=sub["_id"], seat_keys=["0:0"], request=SaleRequest(owner="s:a")
    )
    checkout_paid("s:a", cart["_id"], "Ada", "ada@example.com")
    sell(sessions[0]["_id"], ["2:0"])  # a single ticket at 20.00
    base = f"/admin/booking/report/session/{sessions[0]['_id']}"
    rows = list(csv.reader(io.StringIO(client.get(f"{base}/sales.csv").content.decode())))
    start = rows.index(["Singles and subscriptions"])
    assert rows[start + 1][:3] == ["Sold as", "Tickets", "Gross"]
    table = {row[0]: (int(row[1]), row[2]) for row in rows[start + 2 : start + 4]}
    assert table == {"Single tickets": (1, "20.00"), "Subscriptions": (1, "15.01")}
    book = load_workbook(io.BytesIO(client.get(f"{base}/sales.xlsx").content), read_only=True)
    sheet = {
        r[0]: (r[1], round(r[2] * 100))
        for r in book["Singles and subscriptions"].iter_rows(min_row=2, values_only=True)
    }
    assert sheet == {"Single tickets": (1, 2000), "Subscriptions": (1, 1501)}
