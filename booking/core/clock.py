"""The engine's notion of now: timezone-aware UTC truncated to MongoDB's millisecond precision."""

from datetime import UTC, datetime


def now() -> datetime:
    t = datetime.now(UTC)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)
