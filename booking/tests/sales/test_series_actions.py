"""Bulk actions on a series (sales/series.py, control/series_actions.py): a preview of what each
performance would change, then exactly that applied; permissions and bad input."""

from datetime import timedelta

import pytest

from booking.core import domain, mongo
from booking.core.errors import InvalidRequest
from booking.sales import cancels, series
from booking.tests.admin_support import assert_consistent, make_staff, sell
from booking.tests.factories import make_session, make_theater

pytestmark = pytest.mark.slow


@pytest.fixture
def three():
    theater = make_theater()
    shows = [make_session(theater, days=d) for d in (1, 2, 3)]
    make_session(theater, days=4, name="Macbeth")  # another show in the same hall: not in the series
    mongo.sessions().update_one({"_id": shows[2]["_id"]}, {"$set": {"status": "draft"}})
    return shows


def url(session):
    return f"/admin/booking/session/{session['_id']}/series-actions/"


def test_the_price_change_is_previewed_then_applied_as_previewed(manager_client, three):
    mongo.sessions().update_one({"_id": three[1]["_id"]}, {"$set": {"prices.s": 2500}})
    form = {"action": "prices", "category": "s", "price": "25.00"}
    preview = manager_client.post(url(three[0]), form)
    text = preview.content.decode()
    assert preview.status_code == 200 and text.count('name="sessions"') == 2 and "€20 → €25" in text
    assert "has this price already" in text and "Macbeth" not in text
    assert all(
        s["prices"]["s"] == 2000 for s in mongo.sessions().find({"_id": {"$in": [three[0]["_id"], three[2]["_id"]]}})
    )
    # someone changes one of them after the preview: it is left as they made it
    mongo.sessions().update_one({"_id": three[2]["_id"]}, {"$set": {"prices.s": 2100}})
    data = {**form, "apply": "yes", "sessions": [str(three[0]["_id"]), str(three[2]["_id"])]}
    data |= {f"old_{three[0]['_id']}": "2000", f"old_{three[2]['_id']}": "2000"}
    response = manager_client.post(url(three[0]), data, follow=True)
    assert "1 had changed since the preview" in response.content.decode()
    prices = [mongo.sessions().find_one({"_id": s["_id"]})["prices"]["s"] for s in three]
    assert prices == [2500, 2500, 2100]
    assert_consistent()


def test_putting_the_drafts_on_sale_and_canceling_the_series(manager_client, three):
    sell(three[0]["_id"], ["0:0", "0:1"])
    preview = series.preview(three[0]["_id"], series.PUBLISH)
    assert [c.skip == "" for c in preview] == [False, False, True]
    response = manager_client.post(
        url(three[0]), {"action": "publish", "apply": "yes", "sessions": [str(three[2]["_id"])]}
    )
    assert response.status_code == 302
    assert mongo.sessions().find_one({"_id": three[2]["_id"]})["status"] == "on_sale"

    preview = manager_client.post(url(three[0]), {"action": "cancel"}).content.decode()
    assert "canceled; 1 paid orders refunded and mailed" in preview
    ids = [str(s["_id"]) for s in three]
    assert manager_client.post(url(three[0]), {"action": "cancel", "apply": "yes", "sessions": ids}).status_code == 302
    for s in three:
        cancels.cancel_session_orders(s["_id"])
        assert mongo.sessions().find_one({"_id": s["_id"]})["status"] == "canceled"
    assert mongo.orders().find_one({})["state"] == "refunded"
    assert_consistent()


def test_bad_input_and_permissions(client, db, three):
    manager = make_staff("pricer", ["view_session", "change_session"])
    client.force_login(manager)
    assert client.get(url(three[0])).status_code == 200
    for data in ({}, {"action": "fly"}, {"action": "prices", "category": "s"}, {"action": "prices", "price": "-1"}):
        assert client.post(url(three[0]), data).status_code == 400, data
    assert client.post(url(three[0]), {"action": "prices", "category": "s", "price": "99999"}).status_code == 400
    # canceling needs the delete permission, as canceling one session does
    assert client.post(url(three[0]), {"action": "cancel"}).status_code == 403
    assert client.get("/admin/booking/session/nope/series-actions/").status_code == 404
    client.force_login(make_staff("viewer", ["view_session"]))
    assert client.get(url(three[0])).status_code == 403
    assert all(s["status"] != "canceled" for s in mongo.sessions().find({}, hint=[("_id", 1)]))
    assert_consistent()


def closes_of(sessions):
    return [mongo.sessions().find_one({"_id": s["_id"]}).get("saleCloses") for s in sessions]


def test_online_sales_close_a_time_before_each_start_as_previewed(manager_client, three):
    opens_late = three[1]["start"] - timedelta(minutes=30)  # its sale opens only half an hour before
    mongo.sessions().update_one({"_id": three[1]["_id"]}, {"$set": {"saleOpens": opens_late}})
    form = {"action": "sale_closes", "closes_before": "60"}
    preview = manager_client.post(url(three[0]), form).content.decode()
    assert preview.count('name="sessions"') == 2 and "would close before its sale opens" in preview
    ids = [str(three[0]["_id"]), str(three[2]["_id"])]
    # one performance moves after the preview: its close is not set from the old start
    mongo.sessions().update_one({"_id": three[2]["_id"]}, {"$set": {"start": three[2]["start"] + timedelta(hours=1)}})
    response = manager_client.post(url(three[0]), {**form, "apply": "yes", "sessions": ids}, follow=True)
    assert "1 had changed since the preview" not in response.content.decode()  # applied to its start now
    moved = mongo.sessions().find_one({"_id": three[2]["_id"]})["start"]
    assert closes_of(three) == [
        three[0]["start"] - timedelta(minutes=60),
        None,
        moved - timedelta(minutes=60),
    ]
    stored = mongo.sessions().find_one({"_id": three[0]["_id"]})
    assert domain.sale_phase(stored, stored["start"] - timedelta(minutes=30)) == domain.SalePhase.CLOSED
    assert domain.sale_phase(stored, stored["start"] - timedelta(minutes=61)) == domain.SalePhase.OPEN
    assert_consistent()


def test_the_close_limits_hold_at_their_exact_values(manager_client, three):
    for minutes, status in (("0", 200), (str(series.MAX_CLOSE_BEFORE_MINUTES), 200)):
        assert (
            manager_client.post(url(three[0]), {"action": "sale_closes", "closes_before": minutes}).status_code
            == status
        )
    for bad in ("-1", str(series.MAX_CLOSE_BEFORE_MINUTES + 1), "", "soon", "1.5"):
        answer = manager_client.post(url(three[0]), {"action": "sale_closes", "closes_before": bad, "apply": "yes"})
        assert answer.status_code == 400, bad
    with pytest.raises(InvalidRequest):
        series.apply(three[0]["_id"], series.SALE_CLOSES, [three[0]["_id"]], closes_before=-1)
    assert closes_of(three) == [None, None, None]


def test_a_close_set_at_the_start_leaves_the_sale_open_until_then():
    theater = make_theater()
    show = make_session(theater, days=2)
    series.apply(show["_id"], series.SALE_CLOSES, [show["_id"]], closes_before=0)
    stored = mongo.sessions().find_one({"_id": show["_id"]})
    assert stored["saleCloses"] == stored["start"]
    assert domain.sale_phase(stored, stored["start"] - timedelta(seconds=1)) == domain.SalePhase.OPEN
