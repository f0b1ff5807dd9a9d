"""A box-office reservation's notice task is published after the buyer's answer, by a thread of
the web process (booking/core/publish.py): the checkout does not wait for Redis, and the task still
arrives, once."""

import json
import threading

import pytest
import redis
from django.conf import settings as django_settings

from booking.core import publish
from booking.payments.settings import set_box_office
from booking.tests.factories import make_session
from theater_site.celery import app as celery_app

pytestmark = pytest.mark.django_db


def queued_task_names() -> list[str]:
    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    return [json.loads(raw)["headers"]["task"] for raw in client.lrange("celery", 0, -1)]


@pytest.fixture(autouse=True)
def after_the_answer(settings):
    settings.BOOKING_PUBLISH_AFTER_ANSWER = True
    settings.BOOKING_HOLD_RATE = ""
    celery_app.control.purge()
    yield
    publish.wait()
    celery_app.control.purge()


def test_the_reservation_answer_does_not_wait_for_its_notice_to_be_published(client):
    session = make_session(days=3)
    set_box_office(session["_id"], enabled=True, deadline_minutes=30)
    client.get(f"/sessions/{session['_id']}/")
    held = client.post(f"/sessions/{session['_id']}/hold", {"seats": ["1:2", "1:3"]}, HTTP_HX_REQUEST="true")
    assert held.status_code == 200
    publisher_busy = threading.Event()
    publish.soon(publisher_busy.wait, 10)  # the publisher thread is held up until the answer is back

    answer = client.post("/checkout/", {"name": "Ada", "email": "ada@example.org", "method": "box_office"})

    assert answer.status_code == 302 and "/orders/" in answer["Location"]
    assert "booking.tasks.send_change_notices" not in queued_task_names()  # the answer did not wait
    publisher_busy.set()
    publish.wait()
    assert queued_task_names().count("booking.tasks.send_change_notices") == 1
