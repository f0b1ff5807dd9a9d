"""Small builders for tests: a theater from a text grid, a session on sale tomorrow."""

from datetime import timedelta

from booking import clock
from booking.layouts import parse_grid
from booking.services.sessions import create_session
from booking.services.theaters import create_theater

CATEGORIES = [{"code": "s", "name": "Stalls"}, {"code": "p", "name": "Premium"}]
SMALL_GRID = """\
A: ssss.ssss
B: sspp.ppss
C: ssss.ssss
"""


def make_theater(grid: str = SMALL_GRID, categories=None, name: str = "Test Hall") -> dict:
    return create_theater(name, parse_grid(grid, categories or CATEGORIES))


def make_session(
    theater: dict | None = None, *, grid: str = SMALL_GRID, prices=None, days: float = 1, **details
) -> dict:
    theater = theater or make_theater(grid)
    start = clock.now() + timedelta(days=days)
    return create_session(
        theater["_id"],
        name=details.get("name", "Hamlet"),
        description=details.get("description", "A play"),
        start=start,
        end=start + timedelta(hours=2),
        prices=prices or {"s": 2000, "p": 3500},
    )
