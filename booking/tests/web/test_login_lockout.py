"""Password guessing on the staff logins (the admin's /admin/login/ and the door phone's
/checkin/login/): failed sign-ins are counted per client address and per user name (django-axes,
booking/web/login_lockout.py); at the limit both logins answer 429 with a message, even to the right
password, until the cool-off has passed; a successful sign-in forgets its own failures."""

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from axes.handlers import proxy as axes_clock
from django.conf import settings
from django.contrib.auth.models import User
from django.test import AsyncClient, Client
from django.utils import timezone

from booking.tests.checkin_support import door_staff
from booking.tests.headers import GERMAN

pytestmark = pytest.mark.django_db

PASSWORD = "the-right-password-1"
ADMIN_LOGIN = "/admin/login/"
DOOR_LOGIN = "/checkin/login/"
LOGINS = [ADMIN_LOGIN, DOOR_LOGIN]
LOCKED = "Too many failed sign-ins. Signing in is blocked for 15 minutes; an administrator can lift the block sooner."
GESPERRT = (
    "Zu viele fehlgeschlagene Anmeldungen. Die Anmeldung ist für 15 Minuten gesperrt; "
    "ein Administrator kann die Sperre früher aufheben."
)


@pytest.fixture
def staff(db):
    """Ada may use both logins: admin staff with the door permission."""
    user = door_staff("ada", password=PASSWORD)
    user.is_staff = True
    user.save()
    return user


def limit() -> int:
    return settings.AXES_FAILURE_LIMIT


def from_address(address: str) -> Client:
    return Client(REMOTE_ADDR=address)


def sign_in(client: Client, login: str, password: str, username: str = "ada", **extra):
    return client.post(login, {"username": username, "password": password}, **extra)


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def fail(client: Client, login: str, times: int, username: str = "ada") -> list[int]:
    return [sign_in(client, login, f"guess-{i}", username).status_code for i in range(times)]


def test_the_defaults_are_ten_failures_and_a_quarter_of_an_hour():
    assert settings.AXES_FAILURE_LIMIT == 10
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60


@pytest.mark.parametrize("login", LOGINS)
def test_one_failure_less_than_the_limit_still_lets_the_right_password_in(staff, login):
    client = from_address("203.0.113.5")
    assert fail(client, login, limit() - 1) == [200] * (limit() - 1)
    assert sign_in(client, login, PASSWORD).status_code == 302
    assert signed_in(client)


@pytest.mark.parametrize("login", LOGINS)
def test_the_limit_locks_the_login_out_with_429_even_for_the_right_password(staff, login):
    client = from_address("203.0.113.5")
    answers = fail(client, login, limit())
    assert answers == [200] * (limit() - 1) + [429]
    right = sign_in(client, login, PASSWORD)
    assert right.status_code == 429
    assert LOCKED in right.content.decode() and right["Retry-After"] == "900"
    assert not signed_in(client)
    german = sign_in(from_address("203.0.113.5"), login, PASSWORD, **GERMAN)
    assert german.status_code == 429 and GESPERRT in german.content.decode()


@pytest.mark.parametrize("login", LOGINS)
def test_the_lockout_ends_by_itself_after_the_cool_off(staff, login, monkeypatch):
    client = from_address("203.0.113.5")
    fail(client, login, limit())
    locked_at = timezone.now()
    for later, status in ((timedelta(minutes=15) - timedelta(seconds=2), 429), (timedelta(minutes=15, seconds=1), 302)):
        monkeypatch.setattr(axes_clock, "now", lambda later=later: locked_at + later)
        assert sign_in(client, login, PASSWORD).status_code == status, later
    assert signed_in(client)


def test_guesses_at_one_user_name_from_many_addresses_lock_that_name(staff):
    addresses = [f"198.51.100.{i}" for i in range(1, limit() + 1)]
    for address in addresses[:-1]:
        assert fail(from_address(address), ADMIN_LOGIN, 1) == [200]
    assert fail(from_address(addresses[-1]), DOOR_LOGIN, 1) == [429]  # the same count at both logins
    newcomer = from_address("192.0.2.77")
    assert sign_in(newcomer, ADMIN_LOGIN, PASSWORD).status_code == 429 and not signed_in(newcomer)
    User.objects.create_user("bob", "bob@theater.example", PASSWORD, is_staff=True)
    assert sign_in(newcomer, ADMIN_LOGIN, PASSWORD, username="bob").status_code == 302  # others still get in


def test_one_address_trying_many_user_names_is_locked_out(staff):
    client = from_address("203.0.113.9")
    for i in range(limit() - 1):
        assert fail(client, ADMIN_LOGIN, 1, username=f"user{i}") == [200]
    assert fail(client, ADMIN_LOGIN, 1, username="someone-else") == [429]
    assert sign_in(client, ADMIN_LOGIN, PASSWORD).status_code == 429 and not signed_in(client)
    elsewhere = from_address("192.0.2.10")
    assert sign_in(elsewhere, ADMIN_LOGIN, PASSWORD).status_code == 302  # ada's name was never guessed


def test_a_successful_sign_in_forgets_its_own_failures(staff):
    client = from_address("203.0.113.5")
    fail(client, ADMIN_LOGIN, limit() - 1)
    assert sign_in(client, ADMIN_LOGIN, PASSWORD).status_code == 302
    client.logout()
    assert fail(client, ADMIN_LOGIN, limit() - 1) == [200] * (limit() - 1)
    assert sign_in(client, ADMIN_LOGIN, PASSWORD).status_code == 302


def test_signing_in_to_ones_own_account_does_not_reset_an_address_trying_others(staff):
    client = from_address("203.0.113.9")
    for i in range(limit() - 1):
        fail(client, ADMIN_LOGIN, 1, username=f"user{i}")
    assert sign_in(client, ADMIN_LOGIN, PASSWORD).status_code == 302  # ada is the one trying
    client.logout()
    assert fail(client, ADMIN_LOGIN, 1, username="user-next") == [429]


@pytest.mark.django_db(transaction=True)  # the requests run in a thread of their own: committed data
def test_over_asgi_the_lockout_is_the_login_page_too(staff):
    """Production serves ASGI (Procfile): the lockout still answers with the page and its message
    (axes' asynchronous middleware would have no page to send; settings keep it synchronous)."""
    client = AsyncClient(REMOTE_ADDR="203.0.113.5")

    async def guess_then_sign_in():
        for i in range(limit()):
            await client.post(DOOR_LOGIN, {"username": "ada", "password": f"guess-{i}"})
        return await client.post(DOOR_LOGIN, {"username": "ada", "password": PASSWORD})

    # a thread of its own: a browser test's Playwright may leave an event loop running in this one
    with ThreadPoolExecutor(max_workers=1) as pool:
        right = pool.submit(asyncio.run, guess_then_sign_in()).result(timeout=120)
    assert right.status_code == 429 and right["Content-Type"].startswith("text/html")
    page = right.content.decode()
    assert LOCKED in page and 'name="password"' in page
