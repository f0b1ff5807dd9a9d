"""Builders for the API tests: a theater with a performance, tokens with given scopes, calls."""

import json
from collections.abc import Mapping
from typing import Any

from django.test import Client

from booking.web import api_tokens

ALL_SCOPES = tuple(api_tokens.SCOPES)


def make_token(theater: Mapping[str, Any], scopes=ALL_SCOPES, name: str = "CRM") -> str:
    return api_tokens.create_token(theater_id=theater["_id"], name=name, scopes=list(scopes), by="test").token


class Api:
    """Django's test client speaking JSON with a bearer token."""

    def __init__(self, token: str | None):
        self.client = Client()
        self.token = token

    def headers(self, extra=None) -> dict:
        headers = {"HTTP_AUTHORIZATION": f"Bearer {self.token}"} if self.token else {}
        for name, value in (extra or {}).items():
            headers["HTTP_" + name.upper().replace("-", "_")] = value
        return headers

    def get(self, path: str, params=None, headers=None):
        return self.client.get(path, params or {}, **self.headers(headers))

    def post(self, path: str, body=None, headers=None, raw: str | None = None):
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client.post(path, data, content_type="application/json", **self.headers(headers))
