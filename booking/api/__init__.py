"""The REST API at /api/v1/ (django-ninja): what the theater's other systems read and do through
per-theater tokens with scopes. docs/api.md describes it; the OpenAPI schema is kept in
docs/api/openapi.json (``make api-schema``)."""
