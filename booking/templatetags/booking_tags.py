"""Template filters for the buyer's and the staff's pages (the values as booking/core/formatting.py writes them)."""

from django import template
from django.utils.safestring import mark_safe

from booking.core.formatting import countdown, format_money, thousands
from booking.core.localized import (
    cart_state_label,
    order_state_label,
    session_status_label,
    status_label,
    ticket_type_name,
)
from booking.core.localized import localized as localized_text
from booking.reports.figures import channel_label
from booking.web import cart_panel_html

register = template.Library()


@register.filter
def status(code):
    """A payment's, refund's or mail's status code as staff read it: {{ "succeeded"|status }}."""
    return status_label(str(code)) if code else ""


@register.filter
def order_state(code):
    """An order's state as staff read it: {{ "partially_refunded"|order_state }} -> Partly refunded."""
    return order_state_label(str(code)) if code else ""


@register.filter
def session_status(code):
    """A session's status as staff read it: {{ "on_sale"|session_status }} -> on sale."""
    return session_status_label(str(code)) if code else ""


@register.filter
def cart_state(code):
    """A cart's state as staff read it: {{ "done"|cart_state }} -> bought."""
    return cart_state_label(str(code)) if code else ""


@register.filter
def ticket_type(offered):
    """A ticket type's name in the reader's language, "Full price" translated: {{ t|ticket_type }}."""
    return ticket_type_name(offered if hasattr(offered, "get") else None)


@register.filter
def channel_name(code):
    """A sales channel as staff read it: {{ "box_office"|channel_name }} -> Box office."""
    return channel_label(code) if code else ""


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


@register.filter
def localized(document, field):
    """{{ session|localized:"venueName" }}: the staff's German text (``venueNameDe``) on German
    pages when there is one, else the field itself (booking/core/localized.py)."""
    return localized_text(document if hasattr(document, "get") else {}, field)


# The cart panel's parts, built in Python (booking/web/cart_panel_html.py) because every seat click
# answers with them; the page shows them through these tags, so the markup exists once.


@register.simple_tag(takes_context=True)
def cart_summary(context):
    """{% cart_summary %}: the side panel "Your seats" from the page's cart values."""
    return mark_safe(cart_panel_html.cart_summary(context.flatten()))  # noqa: S308 - built escaped


@register.simple_tag(takes_context=True)
def cart_bar(context):
    """{% cart_bar %}: the phone's sticky cart bar."""
    return mark_safe(cart_panel_html.cart_bar(context.flatten()))  # noqa: S308 - built escaped


@register.simple_tag(takes_context=True)
def notice_area(context):
    """{% notice_area %}: what the last action did (``notice``, ``notice_level``)."""
    return mark_safe(cart_panel_html.notice(context.flatten()))  # noqa: S308 - built escaped
