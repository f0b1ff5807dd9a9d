"""A season at once (sales/seasons.py): the dates of a plan, every draft with the same settings,
a repeated submit or a rerun after a crash midway leaves one coherent series."""

from datetime import time, timedelta
from typing import Any

import pytest
from django.utils import timezone

from booking.core import faults, mongo
from booking.core.errors import InvalidRequest
from booking.sales import offers, seasons
from booking.tests.admin_support import assert_consistent
from booking.tests.factories import make_theater

pytestmark = pytest.mark.django_db


def next_monday():
    today = timezone.localdate()
    return today + timedelta(days=7 - today.weekday())


def plan(**overrides):
    first = next_monday()
    values = {
        "first_day": first,
        "last_day": first + timedelta(days=13),
        "times": {2: [time(19, 30)], 5: [time(15, 0), time(20, 0)]},
        "skip": {first + timedelta(days=9)},  # the second Wednesday
    }
    values.update(overrides)
    return seasons.Plan(**values)


def test_the_plan_gives_every_time_of_every_picked_weekday_less_the_skipped_days():
    starts = [timezone.localtime(s) for s, _ in seasons.plan_dates(plan=plan())]
    assert [(s.weekday(), s.hour) for s in starts] == [(2, 19), (5, 15), (5, 20), (5, 15), (5, 20)]
    assert all(end - start == timedelta(minutes=150) for start, end in seasons.plan_dates(plan=plan()))


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"times": {}}, "weekdays"),
        ({"times": {2: []}}, "times_2"),
        ({"last_day": next_monday() - timedelta(days=1)}, "last_day"),
    ],
)
def test_a_bad_plan_is_refused_with_the_field_named(overrides, field):
    with pytest.raises(InvalidRequest) as refused:
        seasons.plan_dates(plan=plan(**overrides))
    assert field in refused.value.details["fields"]


def test_the_limit_of_dates_is_exact():
    first = next_monday()
    daily = {d: [time(19, 0)] for d in range(7)}
    at_limit = plan(times=daily, skip=set(), last_day=first + timedelta(days=seasons.MAX_DATES - 1))
    assert len(seasons.plan_dates(plan=at_limit)) == seasons.MAX_DATES
    with pytest.raises(InvalidRequest) as refused:
        seasons.plan_dates(plan=plan(times=daily, skip=set(), last_day=first + timedelta(days=seasons.MAX_DATES)))
    assert "last_day" in refused.value.details["fields"]


def create(theater, **overrides):
    performances = seasons.plan_dates(plan=plan())
    values: dict[str, Any] = {
        "key": "k1",
        "name": "Carmen",
        "name_de": "Carmen (de)",
        "performances": performances,
        "prices": {"s": 2000, "p": 3000},
        "type_prices": {"reduced": {"s": 1200}},
        "sale_opens": timezone.now() + timedelta(hours=1),
        "box_office": {"enabled": True, "deadlineMinutes": 45},
    }
    values.update(overrides)
    return seasons.create_season(theater["_id"], **values)


@pytest.fixture
def theater():
    hall = make_theater()
    offers.set_theater_ticket_types(
        hall["_id"], [{"code": "full", "name": "Full price"}, {"code": "reduced", "name": "Reduced"}]
    )
    return hall


def test_every_date_is_a_draft_with_the_same_settings_and_a_second_submit_creates_nothing(theater):
    first = create(theater)
    assert len(first.created) == 5 and not first.existing
    docs = list(mongo.sessions().find({"theaterId": theater["_id"]}, hint=[("_id", 1)]))
    assert len(docs) == 5
    for doc in docs:
        assert doc["status"] == "draft" and doc["nameDe"] == "Carmen (de)"
        assert doc["prices"] == {"s": 2000, "p": 3000} and doc["typePrices"] == {"reduced": {"s": 1200}}
        assert doc["boxOffice"] == {"enabled": True, "deadlineMinutes": 45} and doc["season"] == {"key": "k1"}
        assert "saleOpens" in doc
    again = create(theater)
    assert not again.created and len(again.existing) == 5
    assert mongo.sessions().count_documents({"theaterId": theater["_id"]}) == 5
    assert_consistent()


def test_a_bad_price_creates_nothing(theater):
    for prices in ({"s": -1, "p": 3000}, {"s": "20", "p": 3000}):
        with pytest.raises(InvalidRequest):
            create(theater, prices=prices)
    with pytest.raises(InvalidRequest):
        create(theater, type_prices={"reduced": {"s": -5}})
    assert mongo.sessions().count_documents({"theaterId": theater["_id"]}) == 0


def test_a_crash_midway_leaves_whole_drafts_and_a_rerun_completes_the_season(theater):
    seen = []

    def crash_at_third(name):
        if name == "season.between_dates":
            seen.append(name)
            if len(seen) == 2:
                raise faults.InjectedCrash

    faults.set_hook(crash_at_third)
    try:
        with pytest.raises(faults.InjectedCrash):
            create(theater)
    finally:
        faults.set_hook(None)
    half = list(mongo.sessions().find({"theaterId": theater["_id"]}, hint=[("_id", 1)]))
    assert len(half) == 2 and all(d["typePrices"] and d["boxOffice"] and d["status"] == "draft" for d in half)
    rerun = create(theater)
    assert (len(rerun.created), len(rerun.existing)) == (3, 2)
    assert mongo.sessions().count_documents({"theaterId": theater["_id"]}) == 5
    assert_consistent()
