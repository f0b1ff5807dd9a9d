"""Template helpers for the buyer's pages."""

from django import template
from django.utils.safestring import mark_safe

from .. import cart_summary as panels
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
    return panels.countdown(seconds)


@register.simple_tag(takes_context=True)
def cart_summary(context):
    """The "Your seats" panel (booking/cart_summary.py) from the cart context the views build."""
    return mark_safe(panels.cart_summary_from(context, oob=bool(context.get("oob"))))  # noqa: S308 - escaped parts


@register.simple_tag(takes_context=True)
def notice(context):
    """The notice line (booking/cart_summary.py)."""
    return mark_safe(  # noqa: S308 - built from escaped parts
        panels.notice_html(context.get("notice") or "", context.get("notice_level") or "", oob=bool(context.get("oob")))
    )


@register.filter
def get_item(mapping, key):
    """{{ field_errors|get_item:key }}: a dict's value, or "" (offers: a message beside its field)."""
    return (mapping or {}).get(key, "") if hasattr(mapping, "get") else ""
