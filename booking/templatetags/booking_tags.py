"""Template filters for the buyer's and the staff's pages (the values as booking/formatting.py writes them)."""

from django import template

from ..formatting import countdown, format_money, thousands

register = template.Library()


@register.filter
def money(cents, currency=None):
    """Integer minor units as the buyer reads them: {{ 2550|money }} -> €25.50."""
    if cents in (None, ""):
        return ""
    return format_money(int(cents), currency or None)


@register.filter
def num(value):
    """A count with the language's thousands separator: {{ 100000|num }} -> 100,000 / 100.000."""
    if value in (None, ""):
        return ""
    return thousands(int(value))


@register.filter
def mmss(seconds):
    """Seconds as m:ss for the hold countdown."""
    return countdown(seconds)


@register.filter
def get_item(mapping, key):
    """{{ field_errors|get_item:key }}: a dict's value, or "" (offers: a message beside its field)."""
    return (mapping or {}).get(key, "") if hasattr(mapping, "get") else ""
