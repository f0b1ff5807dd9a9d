"""How long orders are kept: the date an order, and whatever goes with its orders, may be purged."""

from datetime import UTC, datetime

from django.conf import settings


def purge_at(created_on: datetime) -> datetime:
    """When an order made at ``created_on`` may go (the purge_ttl index deletes it then): after
    BOOKING_ORDER_RETENTION_YEARS full calendar years following the year it was made in, the way
    bookkeeping retention is counted (an order of March 2026 is kept to the end of 2036)."""
    return datetime(created_on.year + 1 + settings.BOOKING_ORDER_RETENTION_YEARS, 1, 1, tzinfo=UTC)
