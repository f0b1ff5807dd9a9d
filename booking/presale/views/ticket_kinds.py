"""How many tickets of which kinds, chosen before the map: the buyer asks for the picker, says for
example 2 full price and 1 reduced, and the seats then clicked on the map one by one take those
kinds in that order (sales/holds.py ``give_chosen_kinds``). The choice is kept in the buyer's
browser session per performance; best available asks its own kinds.

One view serves the full page and, for htmx, the picker alone (placed above the map)."""

from django.conf import settings
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from booking.core.domain import SessionStatus
from booking.core.errors import NotFound
from booking.core.ids import object_id
from booking.core.localized import localized, ticket_type_name
from booking.presale.context import error_page
from booking.sales import offers, selectors
from booking.web import seatmap_html

SESSION_KEY = "chosen_kinds"  # {performance id: [[code, count], ...]} in the browser's session


def kinds_offered(session) -> list[dict]:
    """Full price first, then the kinds a buyer may choose before the map (``seatmap_html``)."""
    full = next((t for t in offers.ticket_types(session) if t["code"] == offers.FULL), offers.FULL_PRICE)
    return [{"code": offers.FULL, "name": ticket_type_name(full)}, *seatmap_html.ticket_kinds(session)]


def chosen_kinds(request, session_id) -> list[tuple[str, int]]:
    """The kinds this browser chose for the performance, in order ([] when none)."""
    stored = request.session.get(SESSION_KEY, {}).get(str(session_id), []) if hasattr(request, "session") else []
    return [(str(code), int(count)) for code, count in stored]


def chosen_words(request, session) -> str:
    """The choice in words ("2 × Full price, 1 × Reduced"), "" when none."""
    names = {k["code"]: k["name"] for k in kinds_offered(session)}
    return ", ".join(f"{n} × {names.get(code, code)}" for code, n in chosen_kinds(request, session["_id"]))


def _clean(post, kinds: list[dict]) -> tuple[list[tuple[str, int]], str]:
    """The posted counts (``kind_<code>``) -> the choice, or an error message."""
    most = settings.BOOKING_MAX_SEATS_PER_CART
    chosen = []
    for kind in kinds:
        raw = post.get(f"kind_{kind['code']}", "0") or "0"
        if not raw.isdigit() or int(raw) > most:
            return [], gettext("Choose how many tickets of each kind from the lists.")
        if int(raw):
            chosen.append((kind["code"], int(raw)))
    known = {k["code"] for k in kinds}
    if any(name.startswith("kind_") and name[5:] not in known for name in post):
        return [], gettext("Choose how many tickets of each kind from the lists.")
    total = sum(n for _code, n in chosen)
    if total == 0:
        return [], gettext("Choose at least one ticket.")
    if total > most:
        return [], gettext("At most %(most)d seats at a time.") % {"most": most}
    return chosen, ""


@require_http_methods(["GET", "HEAD", "POST"])
def choose(request, session_id):
    try:
        sid = object_id(session_id, "performance")
    except NotFound as exc:
        return error_page(request, exc, 404)
    session = selectors.get_session(sid)
    if session is None or session.get("status") == SessionStatus.DRAFT:
        return error_page(request, gettext("No such performance."), 404)
    kinds = kinds_offered(session)
    chosen = dict(chosen_kinds(request, sid))
    error, status = "", 200
    if request.method == "POST":
        stored = dict(request.session.get(SESSION_KEY, {}))
        if request.POST.get("clear"):
            stored.pop(str(sid), None)
            request.session[SESSION_KEY] = stored
            return _to_map(request, sid)
        picked, error = _clean(request.POST, kinds)
        if not error:
            stored[str(sid)] = [[code, n] for code, n in picked]
            request.session[SESSION_KEY] = stored
            return _to_map(request, sid)
        status = 400
        chosen = {k["code"]: int(v) for k in kinds if (v := request.POST.get(f"kind_{k['code']}", "0")).isdigit()}
    context = {
        "session_id": str(sid),
        "show": localized(session, "name"),
        "session": session,
        "kinds": [{**k, "chosen": chosen.get(k["code"], 0)} for k in kinds],
        "counts": range(settings.BOOKING_MAX_SEATS_PER_CART + 1),
        "error": error,
        "has_choice": bool(chosen_kinds(request, sid)),
    }
    template = "booking/ticket_kinds.html#kinds-form" if request.htmx else "booking/ticket_kinds.html"
    return render(request, template, context, status=status)


def _to_map(request, sid):
    if request.htmx:
        return HttpResponseClientRedirect(f"/sessions/{sid}/")
    return redirect("booking:session", session_id=str(sid))
