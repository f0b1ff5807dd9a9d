"""Request headers the tests send through Django's test client (its extra keyword arguments)."""

from typing import Any

# Any: Client's **extra is untyped
HTMX: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}  # a request htmx made: the answer is a partial
GERMAN: dict[str, Any] = {"HTTP_ACCEPT_LANGUAGE": "de-DE,de;q=0.9,en;q=0.5"}  # a browser set to German
