"""The OpenAPI schema: kept in docs/api/openapi.json (an API change without it fails here),
served at /api/v1/schema/; the interactive docs only for staff."""

import importlib.util
import sys
from pathlib import Path

from django.test import Client

from booking.tests.admin_support import make_staff

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("api_schema", ROOT / "scripts" / "api_schema.py")
assert _spec is not None and _spec.loader is not None
api_schema = importlib.util.module_from_spec(_spec)
sys.modules["api_schema"] = api_schema
_spec.loader.exec_module(api_schema)


def test_the_kept_schema_matches_the_api(capsys):
    assert api_schema.main(["--check"]) == 0, capsys.readouterr().out


def test_the_schema_is_served_to_anyone():
    answer = Client().get("/api/v1/schema/")
    assert answer.status_code == 200
    assert "/api/v1/orders/" in answer.json()["paths"]


def test_the_interactive_docs_are_for_staff_only(db):
    anonymous = Client().get("/api/v1/docs/")
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    client = Client()
    client.force_login(make_staff("clerk"))
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    assert b"swagger" in page.content.lower()
    assert b"cdn" not in page.content.lower()  # Swagger UI from our own static files (the CSP allows no other)
