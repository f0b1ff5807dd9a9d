"""The API tokens' staff page: a token is shown once when made, listed without its secret, and
revoked; each step needs its permission."""

import re

from booking.core import mongo
from booking.tests.admin_support import last_log, make_staff
from booking.tests.api.support import Api
from booking.tests.factories import make_theater

TOKENS = "/admin/booking/apitoken/"


def test_a_token_is_shown_once_and_works_with_its_scopes(client, db):
    theater = make_theater(name="Globe")
    client.force_login(make_staff("boss", ["view_apitoken", "add_apitoken", "change_apitoken"]))
    form = client.get(f"{TOKENS}add/")
    assert form.status_code == 200 and b"Globe" in form.content
    made = client.post(
        f"{TOKENS}add/", {"theater": str(theater["_id"]), "name": "CRM", "scopes": ["orders:read", "customers:read"]}
    )
    assert made.status_code == 200
    assert "no-store" in made["Cache-Control"]
    token = re.search(rb"tk_[A-Za-z0-9_-]{43}", made.content).group().decode()
    assert Api(token).get("/api/v1/orders/").status_code == 200
    assert Api(token).get("/api/v1/theaters/").status_code == 403  # not its scope
    listing = client.get(TOKENS)
    assert b"CRM" in listing.content and token.encode() not in listing.content
    stored = mongo.api_tokens().find_one({})  # the only one
    assert last_log("apitoken").change_message == "Created API token CRM."
    detail = client.get(f"{TOKENS}{stored['_id']}/change/")
    assert token.encode() not in detail.content and b"/api/v1/orders/" in detail.content  # its calls
    revoked = client.post(f"{TOKENS}{stored['_id']}/revoke/")
    assert revoked.status_code == 302
    assert Api(token).get("/api/v1/orders/").status_code == 401
    assert last_log("apitoken").change_message == "Revoked API token CRM."


def test_bad_forms_are_shown_again_and_make_nothing(client, db):
    theater = make_theater()
    client.force_login(make_staff("boss", ["view_apitoken", "add_apitoken"]))
    for data in (
        {"theater": str(theater["_id"]), "name": "", "scopes": ["orders:read"]},
        {"theater": str(theater["_id"]), "name": "CRM"},
        {"theater": "nothex", "name": "CRM", "scopes": ["orders:read"]},
        {"theater": str(theater["_id"]), "name": "CRM", "scopes": ["root"]},
    ):
        assert client.post(f"{TOKENS}add/", data).status_code == 400, data
    assert mongo.api_tokens().count_documents({}) == 0


def test_each_step_needs_its_permission(client, db):
    theater = make_theater()
    client.force_login(make_staff("viewer", ["view_apitoken"]))
    assert client.get(TOKENS).status_code == 200
    data = {"theater": str(theater["_id"]), "name": "CRM", "scopes": ["orders:read"]}
    assert client.post(f"{TOKENS}add/", data).status_code == 403
    client.force_login(make_staff("nobody"))
    assert client.get(TOKENS).status_code == 403
