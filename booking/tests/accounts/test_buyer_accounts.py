"""Buyers sign in with a mailed link and see every booking made with their address."""

import re
import time
from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from booking.accounts import buyers
from booking.accounts.bookings import bookings_of
from booking.core import clock, mongo
from booking.core.errors import InvalidRequest
from booking.notifications.sign_in import sign_in_message
from booking.sales.cancels import cancel_order
from booking.tests.admin_support import make_staff, sell
from booking.tests.commands import counting_commands
from booking.tests.factories import make_session
from booking.upkeep.tasks import send_sign_in_link

pytestmark = pytest.mark.django_db


def link_in(message) -> str:
    found = re.search(r"https?://\S+/account/enter/\?sesame=\S+", message.body)
    assert found is not None, message.body
    return found.group(0)


def path_of(link: str, settings) -> str:
    return link.removeprefix(settings.SITE_URL)


def signed_in_client(email: str, settings) -> Client:
    """A browser that followed the mailed link and pressed the button."""
    browser = Client()
    path = path_of(link_in(sign_in_message(email=email, language="en")), settings)
    token = path.split("sesame=", 1)[1]
    response = browser.post(reverse("booking:account_enter"), {"sesame": token})
    assert response.status_code == 302 and response["Location"] == reverse("booking:account")
    return browser


# --- asking for a link ---


# the worker's thread writes the accounts through its own database connection: a flush, not a rollback
@pytest.mark.django_db(transaction=True)
def test_asking_for_a_link_answers_the_same_for_an_address_with_bookings_and_one_without(worker, settings):
    settings.BOOKING_SIGN_IN_RATE = ""
    session = make_session()
    sell(session["_id"], ["0:0"], email="known@example.com")
    answers, commands = [], []
    for email in ("known@example.com", "nobody@example.com"):
        with counting_commands() as counter:
            response = Client().post(reverse("booking:account_sign_in"), {"email": email})
        assert response.status_code == 200
        answers.append(re.sub(r"[A-Za-z0-9]{64}", "TOKEN", response.content.decode().replace(email, "ADDRESS")))
        commands.append(counter.commands)
    assert answers[0] == answers[1]
    assert commands == [[], []]  # nothing about the address is read while the buyer waits
    wait_for(lambda: len(sign_in_mails()) == 2)  # besides the order's confirmation
    assert sorted(m.to[0] for m in sign_in_mails()) == ["known@example.com", "nobody@example.com"]


def sign_in_mails() -> list:
    return [m for m in mail.outbox if "/account/enter/" in m.body]


def wait_for(condition, seconds: float = 20):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize(
    "email", ["", "not-an-address", "a@b", "ünïcode@example.com", "x" * 250 + "@example.com", "a\u202e@example.com"]
)
def test_a_malformed_address_is_refused_with_a_message_and_nothing_is_sent(email, settings, monkeypatch):
    queued: list = []
    settings.BOOKING_SIGN_IN_RATE = ""
    monkeypatch.setattr("booking.core.work_queue.current_app.send_task", lambda *a, **k: queued.append(a))
    response = Client().post(reverse("booking:account_sign_in"), {"email": email})
    assert response.status_code == 400
    assert 'role="alert"' in response.content.decode()
    assert queued == []


def test_the_address_may_be_254_characters_and_not_one_more():
    local = "a" * 64
    domain = ("b" * 61 + ".") * 3 + "c" * (254 - 64 - 1 - 62 * 3)
    longest = f"{local}@{domain}"
    assert len(longest) == 254 and buyers.clean_email(longest) == longest
    with pytest.raises(InvalidRequest):
        buyers.clean_email(longest + "c")


def test_a_client_may_ask_as_often_as_the_rate_allows_then_gets_429_with_retry_after(settings, empty_queue):
    settings.BOOKING_SIGN_IN_RATE = "3/h"
    settings.BOOKING_SIGN_IN_RATE_PER_EMAIL = ""
    browser = Client()
    for n in range(3):
        assert browser.post(reverse("booking:account_sign_in"), {"email": f"p{n}@example.com"}).status_code == 200
    refused = browser.post(reverse("booking:account_sign_in"), {"email": "p4@example.com"})
    assert refused.status_code == 429 and refused["Retry-After"] == "3600"


def test_one_address_gets_only_so_many_links_whoever_asks(settings, empty_queue):
    settings.BOOKING_SIGN_IN_RATE = ""
    settings.BOOKING_SIGN_IN_RATE_PER_EMAIL = "2/h"
    for _ in range(2):
        assert Client().post(reverse("booking:account_sign_in"), {"email": "Victim@Example.com"}).status_code == 200
    assert Client().post(reverse("booking:account_sign_in"), {"email": "victim@example.com"}).status_code == 429


def test_without_a_broker_the_buyer_is_told_to_try_again(settings, monkeypatch):
    settings.BOOKING_SIGN_IN_RATE = ""

    def broker_down(*args, **kwargs):
        raise ConnectionError("redis is down")

    monkeypatch.setattr("booking.core.work_queue.current_app.send_task", broker_down)
    response = Client().post(reverse("booking:account_sign_in"), {"email": "ada@example.com"})
    assert response.status_code == 503 and "try again" in response.content.decode()


# --- the link ---


def test_the_mailed_link_opens_a_button_and_only_its_post_signs_in(settings):
    message = sign_in_message(email="ada@example.com", language="en")
    assert message.to == ["ada@example.com"] and "15 minutes" in message.body
    link = path_of(link_in(message), settings)
    browser = Client()
    page = browser.get(link)  # what a mail scanner does: it uses nothing up
    assert page.status_code == 200 and 'name="sesame"' in page.content.decode()
    assert browser.get(reverse("booking:account")).content.decode().count("Send me a sign-in link") == 1
    token = link.split("sesame=", 1)[1]
    assert browser.post(reverse("booking:account_enter"), {"sesame": token}).status_code == 302
    assert "Every booking made with" in browser.get(reverse("booking:account")).content.decode()


def test_a_link_works_once(settings):
    token = path_of(link_in(sign_in_message(email="ada@example.com", language="en")), settings).split("sesame=", 1)[1]
    assert Client().post(reverse("booking:account_enter"), {"sesame": token}).status_code == 302
    again = Client().post(reverse("booking:account_enter"), {"sesame": token})
    assert again.status_code == 400 and "expired or was used" in again.content.decode()


def test_a_link_expires(settings):
    settings.SESAME_MAX_AGE = 1
    token = path_of(link_in(sign_in_message(email="ada@example.com", language="en")), settings).split("sesame=", 1)[1]
    time.sleep(2.1)  # sesame signs with the wall clock, in whole seconds
    assert Client().post(reverse("booking:account_enter"), {"sesame": token}).status_code == 400


@pytest.mark.parametrize("token", ["", "garbage", "x" * 600, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"])
def test_a_forged_or_missing_token_signs_nobody_in(token):
    browser = Client()
    response = browser.post(reverse("booking:account_enter"), {"sesame": token})
    assert response.status_code == 400
    assert "Send me a sign-in link" in browser.get(reverse("booking:account")).content.decode()


def test_a_staff_member_s_token_never_signs_in_through_the_buyer_link(settings):
    staff = make_staff("anna", ["view_order"])
    from sesame.utils import get_token

    token = get_token(staff, scope=buyers.SIGN_IN_SCOPE)
    assert Client().post(reverse("booking:account_enter"), {"sesame": token}).status_code == 400


def test_a_buyer_account_has_no_password_and_no_staff_rights():
    user = buyers.buyer_user(email="ada@example.com")
    assert not user.has_usable_password() and not user.is_staff and not user.is_superuser
    assert buyers.buyer_user(email="ada@example.com").pk == user.pk  # one per address
    assert "ada" not in user.username


# --- the bookings ---


def test_a_signed_in_buyer_sees_every_booking_of_the_address_the_next_performance_first(settings):
    later, sooner = make_session(name="Later show", days=5), make_session(name="Sooner show", days=1)
    past = make_session(name="Past show", days=3)
    first = sell(later["_id"], ["0:0", "0:1"], email="ada@example.com", owner="s:guest-1")  # booked as a guest
    second = sell(sooner["_id"], ["0:0"], email="ada@example.com", owner="s:guest-2")
    canceled = sell(later["_id"], ["0:2", "0:3"], email="ada@example.com", owner="s:guest-3")
    cancel_order(canceled["_id"], by="staff", reason="asked")
    over = sell(past["_id"], ["0:0"], email="ada@example.com", owner="s:guest-4")
    mongo.orders().update_one(
        {"_id": over["_id"]}, {"$set": {"sessions.0.start": clock.now() - timedelta(days=2)}}
    )  # the performance took place
    sell(sooner["_id"], ["1:0"], email="bob@example.com", owner="s:bob")
    found = bookings_of(email="ada@example.com")
    assert [e.order["ref"] for e in found.upcoming] == [second["ref"], first["ref"]]
    assert {e.order["ref"] for e in found.other} == {canceled["ref"], over["ref"]}

    page = signed_in_client("ada@example.com", settings).get(reverse("booking:account")).content.decode()
    assert page.index("Sooner show") < page.index("Later show")
    assert second["ref"] in page and canceled["ref"] in page and "bob" not in page
    assert "Earlier and canceled" in page


def test_a_signed_in_buyer_opens_their_orders_and_no_one_else_s(settings):
    session = make_session()
    mine = sell(session["_id"], ["0:0"], email="ada@example.com", owner="s:elsewhere")
    theirs = sell(session["_id"], ["0:1"], email="bob@example.com", owner="s:bob")
    browser = signed_in_client("ada@example.com", settings)
    assert browser.get(reverse("booking:order", kwargs={"ref": mine["ref"]})).status_code == 200
    assert browser.get(reverse("booking:order_tickets", kwargs={"ref": mine["ref"]})).status_code == 200
    assert browser.get(reverse("booking:order", kwargs={"ref": theirs["ref"]})).status_code == 404


def test_signing_out_ends_it(settings):
    browser = signed_in_client("ada@example.com", settings)
    assert browser.post(reverse("booking:account_sign_out")).status_code == 302
    assert "Send me a sign-in link" in browser.get(reverse("booking:account")).content.decode()


def test_checkout_offers_the_signed_in_address(settings):
    session = make_session()
    browser = signed_in_client("ada@example.com", settings)
    browser.post(reverse("booking:toggle_seat", kwargs={"session_id": str(session["_id"])}), {"seat": "0:0"})
    page = browser.get(reverse("booking:checkout")).content.decode()
    assert 'value="ada@example.com"' in page


def test_the_sign_in_mail_is_in_the_buyer_s_language():
    message = sign_in_message(email="ada@example.com", language="de")
    assert "Anmelde" in message.subject and "15 Minuten" in message.body


@pytest.mark.django_db(transaction=True)
def test_the_worker_sends_the_link_it_was_asked_for(worker):
    send_sign_in_link.apply_async(args=["ada@example.com", "en"])
    wait_for(lambda: len(mail.outbox) == 1)
    assert mail.outbox[0].to == ["ada@example.com"] and "/account/enter/?sesame=" in mail.outbox[0].body
