"""The REST API's OpenAPI schema kept in the repository: docs/api/openapi.json.

    .venv/bin/python scripts/api_schema.py            print it
    .venv/bin/python scripts/api_schema.py --write    write docs/api/openapi.json (make api-schema)
    .venv/bin/python scripts/api_schema.py --check    exit 1, with a diff, when the file is stale

booking/tests/api/test_schema.py runs --check: an API change without the schema fails CI.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "docs" / "api" / "openapi.json"


def schema_text() -> str:
    from booking.api.urls import api

    schema = api.get_openapi_schema(path_prefix="/api/v1")
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The API's OpenAPI schema in docs/api/openapi.json.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write docs/api/openapi.json")
    mode.add_argument("--check", action="store_true", help="exit 1 when docs/api/openapi.json differs")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "theater_site.settings_test")
    import django

    django.setup()
    wanted = schema_text()
    if not (args.write or args.check):
        sys.stdout.write(wanted)
        return 0
    if args.write:
        SCHEMA.parent.mkdir(parents=True, exist_ok=True)
        SCHEMA.write_text(wanted)
        return 0
    kept = SCHEMA.read_text() if SCHEMA.exists() else ""
    if kept != wanted:
        where = str(SCHEMA.relative_to(ROOT))
        sys.stdout.writelines(difflib.unified_diff(kept.splitlines(True), wanted.splitlines(True), where, "the API"))
        print("docs/api/openapi.json is stale: run `make api-schema`.")
        return 1
    print("OK: docs/api/openapi.json matches the API.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
