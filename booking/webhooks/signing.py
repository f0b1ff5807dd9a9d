"""The signature on every delivery: HMAC-SHA256 with the endpoint's secret over
``"<timestamp>.<body>"``, sent as ``X-Booking-Signature: t=<timestamp>,v1=<hex digest>``.

The timestamp is signed with the body, so a receiver that refuses old timestamps cannot be fed a
recorded delivery again; docs/api.md shows a receiver's check.
"""

import hashlib
import hmac
import secrets

SIGNATURE_HEADER = "X-Booking-Signature"
SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix that tells a secret, not a secret


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def header(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value."""
    return f"t={timestamp},v1={signature(secret, timestamp, body)}"


def verify(secret: str, header_value: str, body: bytes, *, now: int, tolerance: int = 300) -> bool:
    """What a receiver checks: a ``v1`` signature of this body and timestamp, and a timestamp
    within ``tolerance`` seconds of ``now``."""
    parts = dict(part.split("=", 1) for part in header_value.split(",") if "=" in part)
    try:
        timestamp = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs(now - timestamp) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), parts.get("v1", ""))
