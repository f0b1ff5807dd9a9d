"""The waiting list of a sold-out performance: join it (how many seats, side by side or not, the
e-mail, prefilled for a signed-in buyer), see one's place, and take the seats an offer holds."""

from django.shortcuts import redirect, render
from django.utils.translation import get_language, gettext
from django.views.decorators.http import require_http_methods

from booking.accounts import buyers
from booking.core.domain import SessionStatus
from booking.core.errors import BookingError, NotFound
from booking.core.ids import object_id
from booking.core.localized import localized
from booking.presale.context import error_page
from booking.sales import selectors, waiting_list
from booking.web import buyer
from booking.web.errors import status_for


def _join_context(session, *, email: str, count: str, together: bool, category: str, error: str = "") -> dict:
    categories = [{"code": c["code"], "name": localized(c, "name")} for c in session["layout"].get("categories", [])]
    return {
        "session": session,
        "session_id": str(session["_id"]),
        "show": localized(session, "name"),
        "categories": categories,
        "email": email,
        "count": count,
        "together": together,
        "category": category,
        "error": error,
        "max_seats": range(1, waiting_list.most_seats() + 1),
        "sold_out": waiting_list.is_sold_out(session),
    }


@require_http_methods(["GET", "HEAD", "POST"])
def join(request, session_id):
    try:
        sid = object_id(session_id, "performance")
    except NotFound as exc:
        return error_page(request, exc, 404)
    session = selectors.get_session(sid)
    if session is None or session.get("status") == SessionStatus.DRAFT:
        return error_page(request, gettext("No such performance."), 404)
    if request.method != "POST":
        email = buyers.buyer_email(request.user) or ""
        context = _join_context(session, email=email, count="2", together=True, category="")
        return render(request, "booking/waiting_list_join.html", context)
    form = request.POST
    email, count = form.get("email", ""), form.get("count", "")
    together, category = form.get("together") == "on", form.get("category", "")
    try:
        entry = waiting_list.join(
            session_id=sid,
            email=email,
            count=count,
            together=together,
            category=category or None,
            language=get_language() or "en",
        )
    except BookingError as exc:
        context = _join_context(
            session, email=email, count=count, together=together, category=category, error=exc.message
        )
        return render(request, "booking/waiting_list_join.html", context, status=status_for(exc))
    context = {
        "session": session,
        "show": localized(session, "name"),
        "entry": entry,
        "position": waiting_list.position(entry),
    }
    return render(request, "booking/waiting_list_joined.html", context)


@require_http_methods(["GET", "HEAD", "POST"])
def offer(request, token):
    """The mailed link opens a page with one button; its POST puts the held seats in the buyer's
    cart (a mail scanner that opens links takes nothing)."""
    entry = waiting_list.offer_of(token)
    if entry is None:
        return error_page(request, gettext(waiting_list.OFFER_ENDED), 404)
    session = selectors.get_session(entry["sessionId"])
    if request.method != "POST":
        context = {
            "entry": entry,
            "show": localized(session, "name") if session else "",
            "session": session,
            "seats": waiting_list.seat_words(session, entry) if session else "",
            "token": token,
        }
        return render(request, "booking/waiting_list_offer.html", context)
    try:
        accepted = waiting_list.accept(token=token)
    except BookingError as exc:
        return error_page(request, exc, status_for(exc))
    buyer.adopt(request, accepted.owner, accepted.cart_id)
    return redirect("booking:cart")
