"""What's on: the listing of upcoming performances, and a sectioned venue's overview of its sections.

One view serves the full page and the htmx partial (the listing alone).
"""

from datetime import datetime, time, timedelta
from typing import Any

from bson import ObjectId
from django.contrib.messages import get_messages
from django.http import HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.cache import patch_vary_headers
from django.utils.translation import gettext
from django.views.decorators.http import require_safe

from booking.core import clock
from booking.core.errors import NotFound
from booking.core.ids import object_id
from booking.core.localized import localized
from booking.presale.context import error_page, performance_gate
from booking.presale.forms import WhatsOnFilterForm
from booking.sales import selectors
from booking.web import page_cache, presenters, seatmap_html


@require_safe
def whats_on(request):
    """Every viewer without a message gets the page kept for a moment (booking/web/page_cache.py): a
    hit is no MongoDB command and no template, and a browser holding the same page gets a 304."""
    template = "booking/whats_on.html#listing" if request.htmx and not request.htmx.boosted else "booking/whats_on.html"
    if get_messages(request):  # shown once, to this viewer: the page is theirs alone
        context, status = _whats_on_context(request)
        return render(request, template, context, status=status)

    refused = []

    def build() -> str | None:
        context, status = _whats_on_context(request)
        if status != 200:  # a bad filter: answered as it is, never kept
            refused.append(render(request, template, context, status=status))
            return None
        return render_to_string(template, {**context, "csrf_token": seatmap_html.CSRF_MARKER}, request)

    language, tz = translation.get_language(), timezone.get_current_timezone_name()
    page = page_cache.kept_page((template, language, tz, request.get_full_path()), build)
    if page is None:
        return refused[0]
    if page_cache.is_fresh(request, page):
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(page_cache.for_viewer(request, page))
    response["ETag"] = page_cache.etag(request, page)
    response["Cache-Control"] = "private, no-cache"  # always ask: the answer is a 304 while it is the same
    patch_vary_headers(response, ["Cookie", "HX-Request"])  # the CSRF token; the listing alone for htmx
    return response


def _whats_on_context(request) -> tuple[dict, int]:
    theaters = selectors.theaters()
    form = WhatsOnFilterForm(request.GET or None, theaters=theaters)
    query: dict[str, Any] = {}
    status = 200
    if form.is_bound and form.is_valid():
        tz = timezone.get_current_timezone()
        day = form.cleaned_data.get("date")
        if day:
            query["start_from"] = max(clock.now(), datetime.combine(day, time.min, tzinfo=tz))
            query["start_before"] = datetime.combine(day + timedelta(days=1), time.min, tzinfo=tz)
        if form.cleaned_data.get("theater"):
            query["theater_id"] = ObjectId(form.cleaned_data["theater"])
    elif form.is_bound:
        status = 400
    sessions = selectors.upcoming_sessions(**query) if status == 200 else []
    voucher_theaters = [{"id": str(t["_id"]), "name": localized(t, "name")} for t in theaters]
    context = {"form": form, "days": presenters.whats_on_days(sessions), "filtered": bool(query)}
    return {**context, "voucher_theaters": voucher_theaters}, status


@require_safe
def performance_page(request, performance_id):
    """A sectioned venue (a stadium): every section with its free seats; each opens its own map."""
    try:
        sections = selectors.listed_performance_sections(object_id(performance_id, "performance"))
    except NotFound as exc:
        return error_page(request, exc, 404)
    if not sections:
        return error_page(request, gettext("No such performance."), 404)
    gate = performance_gate(request, sections)  # waiting room
    if gate is not None:
        return gate
    summary = selectors.group_sections(sections)[0]
    context = {
        "card": presenters.session_card(summary),
        "stands": presenters.section_stands(sections),
        "tiers": presenters.price_tiers(sections)[1],
    }
    return render(request, "booking/performance.html", context)
