"""Sales per performance: the staff report's figures."""

from bson import ObjectId

from booking.reports import summaries
from booking.tests.checkin_support import sell


def test_sales_of_a_performance(api, performance):
    sell(performance, ["0:0", "0:1"])  # two stalls at 20.00
    sell(performance, ["1:2", "1:3"])  # two premium at 35.00
    summaries.refresh_marked()
    report = api.get(f"/api/v1/reports/performances/{performance['_id']}/sales/")
    assert report.status_code == 200, report.content
    body = report.json()
    assert (body["totals"]["tickets"], body["totals"]["gross"]) == (4, 11000)
    assert {row["key"]: row["tickets"] for row in body["by_category"]} == {"s": 2, "p": 2}
    assert [row["key"] for row in body["by_channel"]] == ["online"]
    assert body["seats"]["sold"] == 4
    assert body["totals"]["net"] + body["totals"]["vat"] == 11000


def test_unknown_performance_is_404(api):
    assert api.get(f"/api/v1/reports/performances/{ObjectId()}/sales/").status_code == 404
    assert api.get("/api/v1/reports/performances/x/sales/").status_code == 404
