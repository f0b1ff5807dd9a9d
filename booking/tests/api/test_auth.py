"""Who may call: tokens (hashed, revocable), scopes on every endpoint, the rate limit per token,
and the call log."""

import json
import re

import pytest
from bson import ObjectId

from booking.api.urls import api as ninja_api
from booking.core import mongo
from booking.tests.api.support import ALL_SCOPES, Api, make_token
from booking.web import api_tokens, ratelimits

PATH_VALUES = {"theater_id", "performance_id", "order_id"}


def operations() -> list[tuple[str, str, str]]:
    """(method, path, scope) of every operation in the OpenAPI schema."""
    schema = ninja_api.get_openapi_schema()
    found = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            found.append((method.upper(), path, operation["x-scope"]))
    return found


def call(client: Api, method: str, path: str):
    concrete = re.sub(r"\{(\w+)\}", str(ObjectId()), path)
    return client.get(concrete) if method == "GET" else client.post(concrete, {})


def test_every_operation_names_its_scope():
    ops = operations()
    assert len(ops) >= 12
    assert {scope for _m, _p, scope in ops} <= set(ALL_SCOPES)


@pytest.mark.parametrize(("method", "path", "scope"), operations())
def test_a_token_without_the_scope_gets_403_and_with_it_gets_past(theater, method, path, scope):
    others = [s for s in ALL_SCOPES if s != scope]
    refused = call(Api(make_token(theater, others)), method, path)
    assert refused.status_code == 403, refused.content
    assert refused.json()["error"] == "forbidden"
    assert scope in refused.json()["message"]
    allowed = call(Api(make_token(theater, [scope])), method, path)
    # an unknown id or an empty body: past the scope check, refused for what it asks
    assert allowed.status_code in (200, 400, 404), allowed.content


@pytest.mark.parametrize(("method", "path", "_scope"), operations())
def test_no_token_a_wrong_one_or_a_malformed_header_gets_401(theater, method, path, _scope):
    for client in (Api(None), Api("tk_" + "a" * 43), Api("not-a-token")):
        answer = call(client, method, path)
        assert answer.status_code == 401
        assert answer.json()["error"] == "unauthorized"
        assert answer["WWW-Authenticate"] == "Bearer"


def test_a_revoked_token_stops_working_at_once(theater):
    made = api_tokens.create_token(theater_id=theater["_id"], name="Website", scopes=list(ALL_SCOPES), by="t")
    client = Api(made.token)
    assert client.get("/api/v1/theaters/").status_code == 200
    api_tokens.revoke_token(token_id=made.document["_id"], by="staff")
    assert client.get("/api/v1/theaters/").status_code == 401


def test_only_the_hash_of_a_token_is_stored(theater):
    made = api_tokens.create_token(theater_id=theater["_id"], name="CRM", scopes=["orders:read"], by="t")
    stored = mongo.api_tokens().find_one({"_id": made.document["_id"]})
    assert made.token not in json.dumps(stored, default=str)
    assert stored["hash"] == api_tokens.token_hash(made.token)


def test_a_token_is_for_one_theater_only(theater, performance):
    from booking.tests.factories import make_theater

    other = Api(make_token(make_theater(name="Other Hall")))
    assert other.get(f"/api/v1/performances/{performance['_id']}/").status_code == 404
    assert other.get(f"/api/v1/theaters/{theater['_id']}/").status_code == 404
    assert [t["name"] for t in other.get("/api/v1/theaters/").json()] == ["Other Hall"]


def test_token_creation_refuses_bad_names_scopes_and_theaters(theater):
    from booking.core.errors import InvalidRequest

    for name, scopes, theater_id in [
        ("", ["orders:read"], theater["_id"]),
        ("x" * 81, ["orders:read"], theater["_id"]),
        ("CRM", [], theater["_id"]),
        ("CRM", ["orders:everything"], theater["_id"]),
        ("CRM", ["orders:read"], ObjectId()),
    ]:
        with pytest.raises(InvalidRequest):
            api_tokens.create_token(theater_id=theater_id, name=name, scopes=scopes, by="t")


def test_the_rate_limit_counts_per_token_and_answers_429_with_retry_after(theater, settings, monkeypatch):
    settings.BOOKING_API_RATE = "3/m"
    monkeypatch.setattr(ratelimits, "window_seconds", lambda: 6000.0 + 15)  # 15 s into a minute
    first, second = Api(make_token(theater, name="A")), Api(make_token(theater, name="B"))
    assert [first.get("/api/v1/theaters/").status_code for _ in range(3)] == [200, 200, 200]
    refused = first.get("/api/v1/theaters/")
    assert refused.status_code == 429
    assert refused["Retry-After"] == "45"
    assert refused.json()["error"] == "rate_limited"
    assert second.get("/api/v1/theaters/").status_code == 200  # another token has its own count
    monkeypatch.setattr(ratelimits, "window_seconds", lambda: 6000.0 + 60)  # the next minute
    assert first.get("/api/v1/theaters/").status_code == 200


def test_every_call_is_logged_with_the_tokens_name(theater, performance):
    client = Api(make_token(theater, name="Website calendar"))
    client.get(f"/api/v1/performances/{performance['_id']}/availability/")
    client.get("/api/v1/orders/")  # no scope... it has every scope: 200
    calls = list(mongo.api_calls().find().sort("at", 1))
    assert [(c["tokenName"], c["method"], c["status"]) for c in calls] == [
        ("Website calendar", "GET", 200),
        ("Website calendar", "GET", 200),
    ]
    assert calls[0]["path"] == f"/api/v1/performances/{performance['_id']}/availability/"


def test_head_answers_as_get_without_a_body(api, performance):
    path = f"/api/v1/performances/{performance['_id']}/availability/"
    head, got = api.client.head(path, **api.headers()), api.get(path)
    assert (head.status_code, head["Content-Type"], head.content) == (200, got["Content-Type"], b"")
    assert got["Content-Type"] == "application/json; charset=utf-8" and got.content
    assert api.client.head("/api/v1/tickets/check-in/", **api.headers()).status_code == 405  # a POST only


def test_messages_follow_accept_language(theater):
    answer = Api(make_token(theater, ["orders:read"])).get("/api/v1/theaters/", headers={"Accept-Language": "de"})
    assert answer.status_code == 403
    assert answer.json()["message"] == "Dieses Token hat den Bereich performances:read nicht."
    assert answer.json()["error"] == "forbidden"  # the codes stay English
