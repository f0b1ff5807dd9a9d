"""Buyer accounts: one Django user per e-mail address, never staff, with no password; the only way
in is a sign-in link mailed to the address (django-sesame: signed, short-lived, one use).

Asking for a link answers the same whatever the address: the request only queues the mail, and
the worker makes the account when it sends it, so neither the answer nor its time says whether
the address has bookings or an account."""

import hashlib

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.translation import gettext
from sesame.backends import ModelBackend as SesameBackend
from sesame.utils import get_query_string

from booking.core import work_queue
from booking.core.errors import InvalidRequest
from booking.core.text_checks import address_problem

SIGN_IN_SCOPE = "buyer-sign-in"
# buyer accounts' user names: never a staff member's, and no e-mail address in the name
USERNAME_PREFIX = "buyer-"
LONGEST_EMAIL = 254


def clean_email(email: str) -> str:
    """The address as orders keep it (trimmed, lower case), or InvalidRequest saying what is wrong."""
    email = str(email or "").strip().lower()
    if not email:
        raise InvalidRequest(gettext("Please enter your e-mail address."))
    if len(email) > LONGEST_EMAIL:
        raise InvalidRequest(gettext("That e-mail address is too long."))
    try:
        validate_email(email)
    except ValidationError:
        raise InvalidRequest(gettext("Please enter a valid e-mail address.")) from None
    if address_problem(email):
        raise InvalidRequest(gettext("Please enter a valid e-mail address."))
    return email


def request_sign_in(*, email: str, language: str) -> None:
    """Queue the sign-in mail to ``email`` (checked with ``clean_email``). Raises what the broker
    raises when the mail cannot be queued."""
    work_queue.queue(work_queue.SEND_SIGN_IN_LINK, clean_email(email), language)


def username_for(email: str) -> str:
    return USERNAME_PREFIX + hashlib.sha256(email.encode()).hexdigest()[:40]


def buyer_user(*, email: str) -> User:
    """The account of ``email``, made on first use: no password, no staff rights."""
    user, created = User.objects.get_or_create(
        username=username_for(email), defaults={"email": email, "is_staff": False, "is_superuser": False}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def sign_in_query(*, user: User) -> str:
    """``?sesame=...``: what the mailed link carries."""
    return get_query_string(user, scope=SIGN_IN_SCOPE)


def is_buyer(user) -> bool:
    return bool(
        user is not None
        and user.is_authenticated
        and user.username.startswith(USERNAME_PREFIX)
        and not (user.is_staff or user.is_superuser)
    )


def user_of_link(token: str) -> User | None:
    """The buyer a sign-in link's token names, if it is valid, unused and not expired; a token of
    anything but a buyer account is refused. Signing in (``login``) sets the last login, which the
    token is bound to: that ends it (one use). Checked by sesame's backend itself, not through
    ``authenticate``, so a wrong link does not count as a failed staff password (django-axes)."""
    if not isinstance(token, str) or not token or len(token) > 512:
        return None
    user = SesameBackend().authenticate(None, sesame=token, scope=SIGN_IN_SCOPE)
    return user if is_buyer(user) else None


def buyer_email(user) -> str | None:
    """The e-mail address whose bookings this signed-in buyer sees; None for anyone else."""
    return user.email if is_buyer(user) else None
