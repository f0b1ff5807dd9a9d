"""Drafts in the staff pages: a session is created as a draft, published from its page, deleted
while nobody bought from it (refused with a 409 and its reason once someone did); a performance
is canceled with staff's message to its buyers and a fee kept per ticket."""

from datetime import timedelta

import pytest
from django.contrib.admin.models import DELETION
from django.utils import timezone

from booking.core import mongo
from booking.tests.admin_support import assert_consistent, last_log, sell
from booking.tests.factories import make_session, make_theater

pytestmark = pytest.mark.django_db


def local(dt):
    return timezone.localtime(dt).strftime("%Y-%m-%dT%H:%M")


def stored(session):
    return mongo.sessions().find_one({"_id": session["_id"]})


def test_created_as_a_draft_then_published_from_its_page(manager_client, client):
    theater = make_theater()
    start = timezone.now() + timedelta(days=3)
    data = {"name": "Premiere", "description": "", "start": local(start), "end": local(start + timedelta(hours=2))}
    data.update(price_s="20", price_p="30")
    response = manager_client.post(f"/admin/booking/session/add/?theater={theater['_id']}", data, follow=True)
    assert "created as a draft" in response.content.decode()
    session = mongo.sessions().find_one({"name": "Premiere"}, hint=[("_id", 1)])
    assert session["status"] == "draft"
    change = manager_client.get(f"/admin/booking/session/{session['_id']}/change/").content.decode()
    assert f"/admin/booking/session/{session['_id']}/publish/" in change
    assert client.get(f"/sessions/{session['_id']}/").status_code == 404

    assert manager_client.get(f"/admin/booking/session/{session['_id']}/publish/").status_code == 200
    response = manager_client.post(f"/admin/booking/session/{session['_id']}/publish/")
    assert response.status_code == 302
    assert stored(session)["status"] == "on_sale"
    assert client.get(f"/sessions/{session['_id']}/").status_code == 200
    again = manager_client.post(f"/admin/booking/session/{session['_id']}/publish/")
    assert again.status_code == 409 and "already on sale" in again.content.decode()


def test_a_draft_is_deleted_and_logged(manager_client):
    session = make_session(published=False)
    response = manager_client.post(f"/admin/booking/session/{session['_id']}/delete/")
    assert response.status_code == 302 and response["Location"] == "/admin/booking/session/"
    assert stored(session) is None
    entry = last_log("session")
    assert (entry.object_id, entry.action_flag) == (str(session["_id"]), DELETION)


def test_deleting_a_session_with_orders_is_refused_with_its_reason_and_changes_nothing(manager_client):
    session = make_session()
    sell(session["_id"], ["0:0"])
    before = stored(session)
    response = manager_client.post(f"/admin/booking/session/{session['_id']}/delete/")
    assert response.status_code == 409
    assert "can only be canceled" in response.content.decode()
    assert stored(session) == before
    assert_consistent()


def test_a_seller_without_the_delete_permission_cannot_delete(client, django_user_model):
    from django.contrib.auth.models import Permission  # noqa: PLC0415 - the test's own staff member

    user = django_user_model.objects.create_user("viewer", password="a-long-test-password", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_session", "change_session"]))
    client.force_login(user)
    session = make_session(published=False)
    assert client.post(f"/admin/booking/session/{session['_id']}/delete/").status_code == 403
    assert stored(session) is not None


def test_cancel_with_a_message_and_a_kept_fee(manager_client):
    session = make_session()
    sell(session["_id"], ["0:0"])
    page = manager_client.get(f"/admin/booking/session/{session['_id']}/cancel/").content.decode()
    assert 'name="message_de"' in page and 'name="kept_per_ticket"' in page
    response = manager_client.post(
        f"/admin/booking/session/{session['_id']}/cancel/",
        {
            "cancel_orders": "on",
            "message": "Sorry: flooding.",
            "message_de": "Leider: Hochwasser.",
            "kept_per_ticket": "1.50",
        },
    )
    assert response.status_code == 302
    run = stored(session)["cancelRun"]
    assert (run["message"], run["messageDe"], run["keptPerTicket"]) == ("Sorry: flooding.", "Leider: Hochwasser.", 150)


@pytest.mark.parametrize("kept", ["-0.01", "abc", "1000.01"])
def test_a_bad_kept_fee_is_a_400_and_nothing_is_canceled(manager_client, kept):
    session = make_session()
    response = manager_client.post(
        f"/admin/booking/session/{session['_id']}/cancel/", {"cancel_orders": "on", "kept_per_ticket": kept}
    )
    assert response.status_code == 400
    assert stored(session)["status"] == "on_sale" and "cancelRun" not in stored(session)


def test_the_highest_kept_fee_is_taken(manager_client):
    session = make_session()
    response = manager_client.post(
        f"/admin/booking/session/{session['_id']}/cancel/", {"cancel_orders": "on", "kept_per_ticket": "1000.00"}
    )
    assert response.status_code == 302
    assert stored(session)["cancelRun"]["keptPerTicket"] == 100_000


def test_the_session_form_in_german_names_the_show_not_the_verb(manager_client):
    theater = make_theater()
    manager_client.cookies["django_language"] = "de"
    page = manager_client.get(f"/admin/booking/session/add/?theater={theater['_id']}").content.decode()
    assert "<h2>Veranstaltung</h2>" in page and "<h2>Anzeigen</h2>" not in page
    assert "Als Entwurf speichern" in page
