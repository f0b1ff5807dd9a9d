"""Template helpers for the buyer's pages."""

from django import template

from ..rendering import format_money

register = template.Library()


@register.filter
def money(cents, currency=None):
    """Integer minor units as the buyer reads them: {{ 2550|money }} -> €25.50."""
    if cents in (None, ""):
        return ""
    return format_money(int(cents), currency or None)


@register.filter
def mmss(seconds):
    """Seconds as m:ss for the hold countdown."""
    seconds = max(0, int(seconds or 0))
    return f"{seconds // 60}:{seconds % 60:02d}"
