"""The buyer's account: ask for a sign-in link, follow it, see every booking made with the address,
sign out. Guest checkout needs none of it."""

from django.contrib.auth import login, logout
from django.shortcuts import redirect, render
from django.utils.translation import get_language, gettext, gettext_noop
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from booking.accounts import bookings, buyers
from booking.core.errors import InvalidRequest
from booking.presale.context import error_page
from booking.web import ratelimits

SESAME_BACKEND = "sesame.backends.ModelBackend"
COULD_NOT_QUEUE = gettext_noop("We could not send the link just now. Please try again in a minute.")
LINK_REFUSED = gettext_noop("This sign-in link has expired or was used already. Ask for a new one below.")


@require_safe
def account(request):
    email = buyers.buyer_email(request.user)
    if email is None:
        return render(request, "booking/account_sign_in.html", {"email": ""})
    return render(request, "booking/account.html", {"email": email, "bookings": bookings.bookings_of(email=email)})


@require_POST
def sign_in(request):
    """The same answer for every well-formed address, bookings or not: only the mail is queued."""
    email = request.POST.get("email", "")
    try:
        email = buyers.clean_email(email)
    except InvalidRequest as exc:
        return render(request, "booking/account_sign_in.html", {"email": email, "error": exc.message}, status=400)
    refused = ratelimits.sign_in_mail_refused(request, email)
    if refused is not None:
        response = render(
            request,
            "booking/account_sign_in.html",
            {"email": email, "error": gettext("Too many sign-in links were asked for. Please try again later.")},
            status=429,
        )
        response["Retry-After"] = str(refused[1])
        return response
    try:
        buyers.request_sign_in(email=email, language=get_language() or "en")
    except Exception:  # noqa: BLE001 - any broker failure: the buyer may simply try again
        return render(
            request, "booking/account_sign_in.html", {"email": email, "error": gettext(COULD_NOT_QUEUE)}, status=503
        )
    return render(request, "booking/account_link_sent.html", {"email": email})


@require_http_methods(["GET", "HEAD", "POST"])
def enter(request):
    """The mailed link opens a page with one button; only its POST signs in, so a mail scanner that
    opens links does not use up the one-time link."""
    token = request.POST.get("sesame") if request.method == "POST" else request.GET.get("sesame")
    if not token:
        return error_page(request, gettext(LINK_REFUSED), 400)
    if request.method != "POST":
        return render(request, "booking/account_enter.html", {"token": token})
    user = buyers.user_of_link(token)
    if user is None:
        return render(
            request, "booking/account_sign_in.html", {"email": "", "error": gettext(LINK_REFUSED)}, status=400
        )
    login(request, user, backend=SESAME_BACKEND)
    return redirect("booking:account")


@require_POST
def sign_out(request):
    logout(request)
    return redirect("booking:account")
