"""The control run's web application (``python -m chaos --control``): the real one, with the hold's
"every requested cell is free" condition taken out of its write, so seats can be sold twice.

Only chaos/stack.py starts gunicorn with this module, and only for the control run; nothing in
booking/ or theater_site/ knows about it. The harness must catch the double selling this allows,
or the control fails (see docs/reliability.md).
"""

import logging

from booking.sales import holds


def no_free_seat_condition(coords) -> dict:
    """Stands in for ``holds.seats_free``: the write no longer requires the cells to be free."""
    return {}


# Patched before the app is loaded, so no request is ever served with the real check.
holds.seats_free = no_free_seat_condition

from theater_site.wsgi import application  # noqa: E402 - after the patch, on purpose

__all__ = ["application"]

logging.getLogger("booking.holds").critical(
    "chaos control run: the hold's free-seat check is off, seats can be sold twice"
)
