"""Staff set a performance's quota on its sale window page, and the quota or the members' presale
of a whole series (control/series_actions.py): previewed, applied, bad input refused."""

from datetime import timedelta

import pytest
from django.utils import timezone

from booking.core import mongo
from booking.core.domain import quota_taken, seats_left
from booking.core.errors import InvalidRequest
from booking.sales import holds, series, sessions
from booking.tests.factories import make_session, make_theater, reread

pytestmark = pytest.mark.django_db


def window_url(session):
    return f"/admin/booking/session/{session['_id']}/sale-window/"


def series_url(session):
    return f"/admin/booking/session/{session['_id']}/series-actions/"


def local(dt):
    return timezone.localtime(dt).strftime("%Y-%m-%dT%H:%M:%S")


@pytest.fixture
def three():
    theater = make_theater()
    return [make_session(theater, days=d) for d in (1, 2, 3)]


def test_staff_set_and_clear_the_quota_of_one_performance(manager_client, settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    session = make_session()
    holds.hold_seats(session["_id"], "s:buyer", None, ["0:0", "0:2"])
    page = manager_client.get(window_url(session)).content.decode()
    assert "No quota: every seat of the hall can be sold." in page
    response = manager_client.post(window_url(session), {"what": "quota", "quota": "5"})
    assert response.status_code == 302
    stored = reread(session["_id"])
    assert stored["quota"] == 5 and quota_taken(stored) == 2 and seats_left(stored) == 3
    assert "2 of 5 taken" in manager_client.get(window_url(session)).content.decode()
    assert manager_client.post(window_url(session), {"what": "quota", "quota": ""}).status_code == 302
    assert "quota" not in reread(session["_id"])


@pytest.mark.parametrize("bad", ["0", "25", "abc", "2.5", "-3"])
def test_a_bad_quota_is_400_with_a_field_message_and_changes_nothing(manager_client, bad):
    session = make_session()  # 24 seats
    before = reread(session["_id"])
    response = manager_client.post(window_url(session), {"what": "quota", "quota": bad})
    assert response.status_code == 400
    assert 'class="errorlist' in response.content.decode()
    after = reread(session["_id"])
    assert "quota" not in after and after["version"] == before["version"]


def test_the_quota_page_in_german(manager_client):
    session = make_session()
    manager_client.post(window_url(session), {"what": "quota", "quota": "4"})
    page = manager_client.get(window_url(session), HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Kontingent (Plätze)" in page and "0 von 4 vergeben" in page and "Kontingent speichern" in page


def test_the_series_quota_is_previewed_then_set_on_each_ticked_performance(manager_client, three):
    holds.hold_seats(three[1]["_id"], "s:buyer", None, ["0:0"])
    preview = manager_client.post(series_url(three[0]), {"action": "quota", "quota": "10"})
    text = preview.content.decode()
    assert preview.status_code == 200 and text.count('name="sessions"') == 3
    assert "quota 10 seats (0 taken now)" in text and "quota 10 seats (1 taken now)" in text
    assert all("quota" not in reread(s["_id"]) for s in three)  # a preview changes nothing
    chosen = [str(three[0]["_id"]), str(three[1]["_id"])]
    response = manager_client.post(
        series_url(three[0]), {"action": "quota", "quota": "10", "apply": "yes", "sessions": chosen}
    )
    assert response.status_code == 302
    quotas_now = [reread(s["_id"]).get("quota") for s in three]
    assert quotas_now == [10, 10, None]
    assert quota_taken(reread(three[1]["_id"])) == 1
    # empty: no quota
    ids = [str(s["_id"]) for s in three]
    manager_client.post(series_url(three[0]), {"action": "quota", "quota": "", "apply": "yes", "sessions": ids})
    assert all("quota" not in reread(s["_id"]) for s in three)


@pytest.mark.parametrize("bad", ["0", "25", "abc"])
def test_a_bad_series_quota_is_400_and_changes_nothing(manager_client, three, bad):
    ids = [str(s["_id"]) for s in three]
    for extra in ({}, {"apply": "yes", "sessions": ids}):
        response = manager_client.post(series_url(three[0]), {"action": "quota", "quota": bad, **extra})
        assert response.status_code == 400
        assert 'class="errorlist' in response.content.decode()
    assert all("quota" not in reread(s["_id"]) for s in three)


def test_the_series_quota_service_refuses_a_quota_above_the_hall():
    theater = make_theater()
    first = make_session(theater)
    with pytest.raises(InvalidRequest):
        series.preview(first["_id"], series.QUOTA, quota=25)
    with pytest.raises(InvalidRequest):
        series.apply(first["_id"], series.QUOTA, [first["_id"]], quota=0)
    assert "quota" not in reread(first["_id"])


def test_the_members_presale_set_for_a_series_a_time_before_each_public_on_sale(manager_client, three):
    for n, s in enumerate(three):
        mongo.sessions().update_one({"_id": s["_id"]}, {"$set": {"saleOpens": timezone.now() + timedelta(hours=2 + n)}})
    mongo.sessions().update_one({"_id": three[2]["_id"]}, {"$unset": {"saleOpens": ""}})  # on sale already
    form = {"action": "presale", "presale_before": "60", "presale_code": "members"}
    text = manager_client.post(series_url(three[0]), form).content.decode()
    assert text.count('name="sessions"') == 2 and "has no public on-sale time" in text
    assert "new access code" in text
    ids = [str(s["_id"]) for s in three[:2]]
    assert manager_client.post(series_url(three[0]), {**form, "apply": "yes", "sessions": ids}).status_code == 302
    for s in three[:2]:
        stored = reread(s["_id"])
        assert stored["presale"]["opens"] == stored["saleOpens"] - timedelta(minutes=60)
        assert sessions.unlock_presale(s["_id"], "MEMBERS") == stored["presale"]["key"]
    assert "presale" not in reread(three[2]["_id"])
    # removed again
    all_ids = [str(s["_id"]) for s in three]
    text = manager_client.post(series_url(three[0]), {"action": "no_presale"}).content.decode()
    assert text.count("members&#x27; presale removed") == 2 and "has no presale" in text
    manager_client.post(series_url(three[0]), {"action": "no_presale", "apply": "yes", "sessions": all_ids})
    assert all("presale" not in reread(s["_id"]) for s in three)


def test_a_presale_at_one_time_for_all_follows_the_single_windows_rules(manager_client, three):
    for s in three:
        mongo.sessions().update_one({"_id": s["_id"]}, {"$set": {"saleOpens": timezone.now() + timedelta(hours=5)}})
    late = timezone.now() + timedelta(hours=6)  # after the public on-sale: refused per performance
    text = manager_client.post(
        series_url(three[0]), {"action": "presale", "presale_opens": local(late), "presale_code": "members"}
    ).content.decode()
    assert text.count("The presale must open before the public on-sale time.") == 3
    early = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    no_code = manager_client.post(series_url(three[0]), {"action": "presale", "presale_opens": local(early)})
    assert no_code.content.decode().count("A presale needs an access code.") == 3


@pytest.mark.parametrize(
    "form",
    [
        {"action": "presale"},  # neither way given
        {"action": "presale", "presale_before": "0", "presale_code": "members"},
        {"action": "presale", "presale_before": "x", "presale_code": "members"},
        {"action": "presale", "presale_before": "60", "presale_code": "ab"},  # too short a code
    ],
)
def test_a_bad_series_presale_is_400_and_changes_nothing(manager_client, three, form):
    mongo.sessions().update_many({}, {"$set": {"saleOpens": timezone.now() + timedelta(hours=5)}})
    ids = [str(s["_id"]) for s in three]
    for extra in ({}, {"apply": "yes", "sessions": ids}):
        response = manager_client.post(series_url(three[0]), {**form, **extra})
        assert response.status_code == 400, form
    assert all("presale" not in reread(s["_id"]) for s in three)


def test_the_series_page_in_german(manager_client, three):
    page = manager_client.get(series_url(three[0]), HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Kontingent festlegen" in page and "Mitglieder-Vorverkauf festlegen" in page
