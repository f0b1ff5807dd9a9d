"""A season on the staff site (control/sessions.py, control/series_actions.py): preview of the
dates, creation of drafts once however often the form is sent, bad input refused per field with
nothing created, and the series edited at once (a ticket type's price, the on-sale time, cancel
with the buyers' message)."""

from datetime import datetime, time, timedelta

import pytest
from django.utils import timezone

from booking.core import mongo
from booking.sales import offers, seasons
from booking.tests.admin_support import assert_consistent, sell
from booking.tests.factories import make_theater

pytestmark = pytest.mark.django_db


@pytest.fixture
def hall():
    theater = make_theater()
    offers.set_theater_ticket_types(
        theater["_id"], [{"code": "full", "name": "Full price"}, {"code": "reduced", "name": "Reduced"}]
    )
    return theater


def monday():
    today = timezone.localdate()
    return today + timedelta(days=7 - today.weekday())


def season_form(**overrides):
    first = monday()
    data = {
        "name": "Carmen",
        "name_de": "Carmen (Oper)",
        "description": "",
        "first_day": first.isoformat(),
        "last_day": (first + timedelta(days=13)).isoformat(),
        "weekdays": ["2", "5"],
        "start_time": "19:30",
        "times_5": "15:00, 20:00",
        "skip_dates": (first + timedelta(days=9)).isoformat(),
        "duration": "150",
        "price_s": "20",
        "price_p": "30",
        "tprice_reduced_s": "12.50",
        "box_office": "on",
        "box_office_minutes": "45",
    }
    data.update(overrides)
    return data


def url(theater):
    return f"/admin/booking/session/add-series/?theater={theater['_id']}"


def count(theater):
    return mongo.sessions().count_documents({"theaterId": theater["_id"]}, hint=[("_id", 1)])


def test_the_preview_lists_the_dates_and_creates_nothing(manager_client, hall):
    response = manager_client.post(url(hall), {**season_form(), "preview": "1"})
    text = response.content.decode()
    assert response.status_code == 200 and "5 performances will be created" in text
    assert text.count("<li>", text.index("season-dates")) >= 5
    assert count(hall) == 0


def test_the_season_is_created_once_however_often_it_is_sent(manager_client, hall):
    first = manager_client.post(url(hall), season_form())
    assert first.status_code == 200 and "5 created" in first.content.decode()
    docs = list(mongo.sessions().find({"theaterId": hall["_id"]}, hint=[("_id", 1)]))
    assert {d["status"] for d in docs} == {"draft"} and {d["nameDe"] for d in docs} == {"Carmen (Oper)"}
    assert all(d["typePrices"] == {"reduced": {"s": 1250}} for d in docs)
    assert all(d["boxOffice"] == {"enabled": True, "deadlineMinutes": 45} for d in docs)
    again = manager_client.post(url(hall), season_form())
    assert "0 created, 5 existed already" in again.content.decode()
    assert count(hall) == 5
    assert_consistent()


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"weekdays": []}, "weekdays"),
        ({"start_time": "", "times_5": ""}, "times_5"),
        ({"times_5": "25:99"}, "times_5"),
        ({"times_2": "<script>"}, "times_2"),
        ({"last_day": (monday() - timedelta(days=1)).isoformat()}, "last_day"),
        ({"skip_dates": "Christmas"}, "skip_dates"),
        ({"price_s": "abc"}, "price_s"),
        ({"price_s": "-1"}, "price_s"),
        ({"tprice_reduced_s": "-0.01"}, "tprice_reduced_s"),
        ({"box_office_minutes": "x"}, "box_office_minutes"),
        ({"sale_opens": "2026-13-45T99:00"}, "sale_opens"),
    ],
)
def test_bad_input_is_refused_next_to_its_field_and_creates_nothing(manager_client, hall, overrides, field):
    response = manager_client.post(url(hall), season_form(**overrides))
    assert response.status_code == 400
    assert response.context["form"].errors[field]
    assert count(hall) == 0


def test_the_most_dates_of_a_season_is_exact(manager_client, hall):
    first = monday()
    daily = {"weekdays": [str(d) for d in range(7)], "times_5": "", "skip_dates": ""}
    last = first + timedelta(days=seasons.MAX_DATES - 1)
    at_limit = manager_client.post(url(hall), {**season_form(**daily, last_day=last.isoformat()), "preview": "1"})
    assert (
        at_limit.status_code == 200 and f"{seasons.MAX_DATES} performances will be created" in at_limit.content.decode()
    )
    over = season_form(**daily, last_day=(last + timedelta(days=1)).isoformat())
    response = manager_client.post(url(hall), over)
    assert (
        response.status_code == 400 and "more than 100 performances" in response.context["form"].errors["last_day"][0]
    )
    assert count(hall) == 0


def test_a_sale_opening_after_a_date_refuses_that_date_only(manager_client, hall):
    # the first week's Friday at noon, whatever day the suite runs on: the week's earlier
    # performances are refused, the later ones and the second week's created
    opens = datetime.combine(monday() + timedelta(days=4), time(12, 0))
    response = manager_client.post(url(hall), season_form(sale_opens=opens.strftime("%Y-%m-%dT%H:%M")))
    assert response.status_code == 200
    assert len(response.context["refused"]) + len(response.context["created"]) == 5
    assert response.context["refused"] and response.context["created"]


def series_url(session_id):
    return f"/admin/booking/session/{session_id}/series-actions/"


def test_the_series_gets_a_ticket_types_price_and_an_on_sale_time_sold_seats_keep_theirs(manager_client, hall):
    manager_client.post(url(hall), season_form())
    docs = list(mongo.sessions().find({"theaterId": hall["_id"]}).sort("start", 1))
    first = docs[0]
    mongo.sessions().update_many({"theaterId": hall["_id"]}, {"$set": {"status": "on_sale"}})
    order = sell(first["_id"], ["0:0"])
    form = {"action": "prices", "ticket_type": "reduced", "category": "s", "price": "9.00"}
    preview = manager_client.post(series_url(first["_id"]), form).content.decode()
    assert preview.count('name="sessions"') == 5 and "€12.50 → €9" in preview
    chosen = [str(d["_id"]) for d in docs[:3]]  # the first three only
    data = {**form, "apply": "yes", "sessions": chosen, **{f"old_{sid}": "1250" for sid in chosen}}
    assert manager_client.post(series_url(first["_id"]), data).status_code == 302
    after = [mongo.sessions().find_one({"_id": d["_id"]})["typePrices"]["reduced"]["s"] for d in docs]
    assert after == [900, 900, 900, 1250, 1250]
    kept = mongo.orders().find_one({"_id": order["_id"]})
    assert [line["price"] for line in kept["lines"]] == [line["price"] for line in order["lines"]]

    opens = timezone.localtime(timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    sale = {"action": "sale_opens", "sale_opens": opens.strftime("%Y-%m-%dT%H:%M:%S")}
    ids = [str(d["_id"]) for d in docs]
    assert manager_client.post(series_url(first["_id"]), {**sale, "apply": "yes", "sessions": ids}).status_code == 302
    assert all(mongo.sessions().find_one({"_id": d["_id"]})["saleOpens"] == opens for d in docs)
    assert_consistent()


@pytest.mark.parametrize(
    "form",
    [
        {"action": "prices", "ticket_type": "prices.s", "category": "s", "price": "1"},
        {"action": "prices", "ticket_type": "reduced", "category": "$where", "price": "1"},
        {"action": "prices", "ticket_type": "reduced", "category": "s", "price": "-1"},
        {"action": "sale_opens", "sale_opens": ""},
        {"action": "cancel", "kept_per_ticket": "-3"},
        {"action": "shred"},
    ],
)
def test_hostile_bulk_edits_are_refused_and_change_nothing(manager_client, hall, form):
    manager_client.post(url(hall), season_form())
    docs = list(mongo.sessions().find({"theaterId": hall["_id"]}, hint=[("_id", 1)]))
    ids = [str(d["_id"]) for d in docs]
    response = manager_client.post(series_url(docs[0]["_id"]), {**form, "apply": "yes", "sessions": ids})
    assert response.status_code == 400
    assert list(mongo.sessions().find({"theaterId": hall["_id"]}, hint=[("_id", 1)])) == docs


def test_canceling_the_series_sends_the_staff_message_and_keeps_the_fee(manager_client, hall):
    manager_client.post(url(hall), season_form())
    docs = list(mongo.sessions().find({"theaterId": hall["_id"]}).sort("start", 1))
    data = {"action": "cancel", "apply": "yes", "sessions": [str(docs[0]["_id"])]}
    data |= {"message": "The singer is ill.", "message_de": "Die Sängerin ist krank.", "kept_per_ticket": "1.50"}
    assert manager_client.post(series_url(docs[0]["_id"]), data).status_code == 302
    canceled = mongo.sessions().find_one({"_id": docs[0]["_id"]})
    assert canceled["status"] == "canceled"
    run = canceled["cancelRun"]
    assert (run["message"], run["messageDe"], run["keptPerTicket"]) == (
        "The singer is ill.",
        "Die Sängerin ist krank.",
        150,
    )
    assert mongo.sessions().count_documents({"theaterId": hall["_id"], "status": "draft"}, hint=[("_id", 1)]) == 4


def test_the_season_can_set_its_own_self_service_rules(manager_client, hall):
    rules = {"ss-own": "on", "ss-exchange": "on", "ss-hours_before": "48", "ss-fee": "2.00"}
    rules |= {"ss-max_transfers": "2", "ss-transfer_hours_before": "24"}
    assert manager_client.post(url(hall), season_form(**rules)).status_code == 200
    docs = list(mongo.sessions().find({"theaterId": hall["_id"]}, hint=[("_id", 1)]))
    assert len(docs) == 5 and all(d["selfService"] == docs[0]["selfService"] for d in docs)
    assert docs[0]["selfService"]["exchange"] is True and docs[0]["selfService"]["fee"] == 200


def test_bad_self_service_rules_create_nothing(manager_client, hall):
    bad = {"ss-own": "on", "ss-hours_before": "-1", "ss-fee": "x", "ss-max_transfers": "2"}
    response = manager_client.post(url(hall), season_form(**bad))
    assert response.status_code == 400 and response.context["rules_form"].errors["hours_before"]
    assert count(hall) == 0
