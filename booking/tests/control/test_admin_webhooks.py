"""The webhook endpoints' staff pages: register an endpoint (its secret shown to those who may
change it, and rotated), edit it, see its deliveries and their attempts, send one again; every
page needs its permission; a bad URL (plain http, a private host, credentials, a huge value) or
an unknown event is a form error (400) that changes nothing."""

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group

from booking.control.groups import create_groups
from booking.core import mongo
from booking.sales import outbox
from booking.tests.admin_support import last_log, make_staff, sell
from booking.tests.factories import make_session, make_theater
from booking.tests.webhook_support import deliver_order_events, receiver

pytestmark = pytest.mark.django_db

LIST = "/admin/booking/webhookendpoint/"
ADD = "/admin/booking/webhookendpoint/add/"
EVERY = ["view_webhookendpoint", "add_webhookendpoint", "change_webhookendpoint", "delete_webhookendpoint"]


def change_url(endpoint) -> str:
    return f"{LIST}{endpoint['_id']}/change/"


def endpoints() -> list[dict]:
    return list(mongo.webhook_endpoints().find())


@pytest.fixture
def staff_client(client, db):
    client.force_login(make_staff("hooks", EVERY))
    return client


def form(theater, url="https://crm.example.org/hooks", events=(outbox.ORDER_PAID,), **more) -> dict:
    return {"theater": str(theater["_id"]), "url": url, "events": list(events), "active": "on", **more}


def test_register_an_endpoint_see_its_secret_rotate_it_and_edit_it(staff_client, settings):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = True  # no DNS lookup of crm.example.org in the test
    theater = make_theater(name="Globe")
    assert "Register a webhook endpoint" in staff_client.get(ADD).content.decode()
    response = staff_client.post(ADD, form(theater, description="CRM"))
    [endpoint] = endpoints()
    assert response.status_code == 302 and response["Location"] == change_url(endpoint)
    assert endpoint["events"] == ["order.paid"] and endpoint["active"] and endpoint["secret"].startswith("whsec_")
    page = staff_client.get(change_url(endpoint)).content.decode()
    assert endpoint["secret"] in page and "Globe" in page
    assert last_log("webhookendpoint").change_message.startswith("Registered webhook endpoint")

    rotated = staff_client.post(f"{LIST}{endpoint['_id']}/rotate-secret/")
    assert rotated.status_code == 302
    assert mongo.webhook_endpoints().find_one()["secret"] not in (endpoint["secret"], "")

    events = [outbox.ORDER_PLACED, outbox.TICKET_CHECKED_IN]
    edited = staff_client.post(change_url(endpoint), {"url": "https://crm.example.org/v2", "events": events})
    assert edited.status_code == 302
    stored = mongo.webhook_endpoints().find_one()
    assert stored["url"] == "https://crm.example.org/v2" and stored["events"] == events and not stored["active"]
    assert "crm.example.org/v2" in staff_client.get(LIST).content.decode()

    assert staff_client.post(f"{LIST}{endpoint['_id']}/delete/").status_code == 302
    assert endpoints() == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://crm.example.org/hooks", "must start with https://"),
        ("https://127.0.0.1/hooks", "local or private"),
        ("https://10.1.2.3/hooks", "local or private"),
        ("https://[::1]/hooks", "local or private"),
        ("https://169.254.169.254/latest/meta-data", "local or private"),
        ("https://localhost:8000/hooks", "local or private"),
        ("https://[::ffff:127.0.0.1]/hooks", "local or private"),
        ("https://2130706433/hooks", "local or private"),  # 127.0.0.1 written as one number
        ("https://0.0.0.0/hooks", "local or private"),
        ("https://user:pw@crm.example.org/", "user name or password"),
        ("https://crm.example.org:99999/", "port"),
        ("ftp://crm.example.org/", "must start with https://"),
        ("javascript:alert(1)", "must start with https://"),
        ("https://crm.example.org/\u202eevil", "invisible"),
        ("https:///nohost", "no host"),
        ("", "This field is required"),
        ("https://crm.example.org/" + "a" * 2000, "at most 2000 characters"),
    ],
)
def test_a_bad_or_hostile_url_is_a_form_error_that_stores_nothing(staff_client, settings, url, message):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = False  # production's rules
    response = staff_client.post(ADD, form(make_theater(), url=url))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert endpoints() == []


@pytest.mark.parametrize(
    "data",
    [
        {"events": ["order.stolen"]},
        {"events": []},
        {"theater": "not-an-id"},
        {"theater": "0" * 24},
        {"description": "x" * 201},
        {"events": ["order.paid"] * 5000},
    ],
)
def test_bad_choices_and_huge_values_are_form_errors(staff_client, settings, data):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = True
    response = staff_client.post(ADD, {**form(make_theater()), **data})
    assert response.status_code == 400
    assert endpoints() == []


def test_unknown_ids_are_404(staff_client):
    assert staff_client.get(f"{LIST}0123456789abcdef01234567/change/").status_code == 404
    assert staff_client.get(f"{LIST}nonsense/change/").status_code == 404
    assert staff_client.post(f"{LIST}0123456789abcdef01234567/rotate-secret/").status_code == 404
    assert staff_client.get(f"{LIST}0123456789abcdef01234567/deliveries/x/").status_code == 404


def test_deliveries_and_their_attempts_are_shown_and_one_is_sent_again(staff_client, settings):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = True
    session = make_session()
    with receiver([500, 200]) as got:
        staff_client.post(ADD, form({"_id": session["theaterId"]}, url=got.url))
        [endpoint] = endpoints()
        got.secret = endpoint["secret"]
        order = sell(session["_id"], ["0:0"])
        deliver_order_events(order["_id"])
        [delivery] = mongo.webhook_deliveries().find()
        page = staff_client.get(change_url(endpoint)).content.decode()
        assert "order.paid" in page and "delivered" in page
        detail_url = f"{LIST}{endpoint['_id']}/deliveries/{delivery['_id']}/"
        detail = staff_client.get(detail_url).content.decode()
        assert "answer 500" in detail and "answer 200" in detail and order["ref"] in detail

        again = staff_client.post(f"{detail_url}resend/")
        assert again.status_code == 302 and again["Location"] == detail_url
        assert mongo.webhook_deliveries().find_one()["state"] == "pending"
        refused = staff_client.post(f"{detail_url}resend/", follow=True)
        assert "being sent already" in refused.content.decode()
    other = make_staff("other", EVERY)
    staff_client.force_login(other)
    someone_elses = f"{LIST}0123456789abcdef01234567/deliveries/{delivery['_id']}/"
    assert staff_client.get(someone_elses).status_code == 404


def test_each_page_needs_its_permission(client, db, settings):
    settings.BOOKING_WEBHOOK_ALLOW_LOCAL = True
    theater = make_theater()
    client.force_login(make_staff("viewer", ["view_webhookendpoint"]))
    assert client.get(LIST).status_code == 200 and client.get(ADD).status_code == 403
    assert client.post(ADD, form(theater)).status_code == 403 and endpoints() == []

    client.force_login(make_staff("adder", ["view_webhookendpoint", "add_webhookendpoint"]))
    assert client.post(ADD, form(theater)).status_code == 302
    [endpoint] = endpoints()

    client.force_login(make_staff("viewer2", ["view_webhookendpoint"]))
    page = client.get(change_url(endpoint)).content.decode()
    assert endpoint["secret"] not in page  # the secret is for those who may change the endpoint
    assert client.post(change_url(endpoint), {"url": "https://x.example/", "events": ["order.paid"]}).status_code == 403
    assert client.post(f"{LIST}{endpoint['_id']}/rotate-secret/").status_code == 403
    assert client.post(f"{LIST}{endpoint['_id']}/delete/").status_code == 403
    assert mongo.webhook_endpoints().find_one() == endpoint

    client.force_login(make_staff("nobody"))
    assert client.get(LIST).status_code == 403
    assert client.get(change_url(endpoint)).status_code == 403
    client.logout()
    assert client.get(LIST).status_code == 302  # to the login page


def test_the_manager_group_may_register_endpoints(client, db):
    # the groups as the data migration makes them (a live server's test before this one empties the database)
    create_groups(django_apps)
    assert Group.objects.get(name="Manager").permissions.filter(codename="add_webhookendpoint").exists()
