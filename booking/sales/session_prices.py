"""A session's prices per seat category, checked: what staff save for a session, a sectioned
performance and a price table."""

from django.utils.translation import gettext

from booking.core.domain import Layout
from booking.core.errors import InvalidRequest
from booking.core.formatting import thousands
from booking.venues.layouts import category_codes_used

MAX_PRICE = 1_000_000  # minor units: 10,000.00 is more than any seat here costs


def clean_prices(prices: dict, layout: Layout) -> dict[str, int]:
    clean = {}
    errors = {}
    names = {c["code"]: c["name"] for c in layout["categories"]}
    for code in category_codes_used(layout):
        value = prices.get(code)
        if isinstance(value, bool) or not isinstance(value, int):
            errors[f"price_{code}"] = gettext("Give a price for %(category)s in cents.") % {"category": names[code]}
        elif value < 0:
            errors[f"price_{code}"] = gettext("The price for %(category)s cannot be below zero.") % {
                "category": names[code]
            }
        elif value > MAX_PRICE:
            errors[f"price_{code}"] = gettext("The price for %(category)s is too high (at most %(max)s).") % {
                "category": names[code],
                "max": thousands(MAX_PRICE // 100),
            }
        else:
            clean[code] = value
    if errors:
        raise InvalidRequest(" ".join(errors.values()), fields=errors)
    return clean
