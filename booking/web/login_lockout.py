"""Password guessing on the staff logins (/admin/login/ and the door's /checkin/login/), stopped
with django-axes (settings: ``AXES_*``; README, "Staff accounts and groups").

Failed sign-ins are counted in Django's database per client address (``ratelimits.client_address``:
behind ``BOOKING_TRUSTED_PROXIES``, an IPv6 /64 as one) and per user name, each on its own: one
address trying many names and many addresses trying one name both stop at
``BOOKING_LOGIN_FAILURE_LIMIT``. From then on both logins answer 429 with the page saying why,
even to the right password, until ``BOOKING_LOGIN_LOCKOUT_MINUTES`` after the last counted failure
(failures while locked out are not counted, so the lockout always ends). An administrator lifts
it sooner: ``manage.py axes_reset_username NAME``, ``axes_reset_ip ADDRESS``, ``axes_reset``.
"""

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.utils.translation import ngettext


def cool_off_seconds() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def lockout_message() -> str:
    minutes = max(1, round(cool_off_seconds() / 60))
    return ngettext(
        "Too many failed sign-ins. Signing in is blocked for %(minutes)d minute; "
        "an administrator can lift the block sooner.",
        "Too many failed sign-ins. Signing in is blocked for %(minutes)d minutes; "
        "an administrator can lift the block sooner.",
        minutes,
    ) % {"minutes": minutes}


class LockoutMessageMixin:
    """A login form whose sign-in axes refused says so (its only error), instead of "wrong
    password": with the right password too, nothing else would explain it."""

    locked_out = False

    def clean(self):
        try:
            return super().clean()  # type: ignore[misc]
        except ValidationError:
            if getattr(getattr(self, "request", None), "axes_locked_out", False):
                self.locked_out = True
                raise ValidationError(lockout_message(), code="locked_out") from None
            raise


class AdminLoginForm(LockoutMessageMixin, AdminAuthenticationForm):
    pass


class DoorLoginForm(LockoutMessageMixin, AuthenticationForm):
    pass


def locked_out_response(request, original_response=None, credentials=None) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the login page the request was for, already showing the message
    (the forms above), as 429 with Retry-After."""
    if isinstance(original_response, HttpResponse):
        response = original_response
    else:  # axes' asynchronous middleware passes no page; ours runs synchronously (settings)
        response = HttpResponse(lockout_message(), content_type="text/plain; charset=utf-8")
    response.status_code = 429
    response.reason_phrase = "Too Many Requests"
    response["Retry-After"] = str(cool_off_seconds())
    return response


class FailedLogins(AxesDatabaseHandler):
    """AXES_HANDLER: axes' database handler, except that a successful sign-in forgets only the
    failures it explains, its own user name's from its own address. (Axes forgets every failure
    of the address too: an attacker with one account of their own would then reset the count
    of an address trying other names by signing in between tries.)"""

    def reset_user_attempts(self, request, credentials=None) -> int:
        username = get_client_username(request, credentials)
        count, _ = AccessAttempt.objects.filter(username=username, ip_address=request.axes_ip_address).delete()
        return count
