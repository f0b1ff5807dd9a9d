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
    return mark_safe(  # noqa: S308 - built from escaped parts
        panels.cart_summary_html(
            cart=context.get("cart"),
            cart_expired=context.get("cart_expired", False),
            groups=context.get("groups") or (),
            total=context.get("total", 0),
            seat_count=context.get("seat_count", 0),
            expires_at=context.get("expires_at"),
            seconds_left=context.get("seconds_left", 0),
            oob=bool(context.get("oob")),
        )
    )


@register.simple_tag(takes_context=True)
def notice(context):
    """The notice line (booking/cart_summary.py)."""
    return mark_safe(  # noqa: S308 - built from escaped parts
        panels.notice_html(context.get("notice") or "", context.get("notice_level") or "", oob=bool(context.get("oob")))
    )
