"""The door check-in's figures where staff already look: the admin's session page
(``{% checkin_summary session %}``)."""

from django import template

from booking.checkin.presenters import conflict_data
from booking.core.errors import NotFound
from booking.sales import checkin

register = template.Library()


@register.inclusion_tag("checkin/_admin_summary.html", takes_context=True)
def checkin_summary(context, session: dict):
    """Checked in / sold by door and the conflicts of the session (for a section of a sectioned
    venue: of its whole performance, as its doors see it)."""
    try:
        scope = checkin.get_scope(session["_id"])
    except NotFound:
        return {"scope": None}
    request = context.get("request")
    return {
        "scope": scope,
        "counts": checkin.counts(scope),
        "conflicts": [conflict_data(c) for c in checkin.conflicts(scope, limit=50)],
        "may_check_in": bool(request and request.user.has_perm("booking.checkin_tickets")),
    }
