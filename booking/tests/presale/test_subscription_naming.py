"""A subscription's cart, checkout and order pages name the subscription, in both languages,
instead of showing only a ticket per performance."""

from datetime import timedelta

import pytest
from django.urls import reverse

from booking.core import clock, mongo
from booking.payments import flow
from booking.sales import subscriptions
from booking.tests.factories import make_session, make_theater
from booking.tests.localstripe import VISA, card

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


@pytest.fixture
def bought(client):
    hall = make_theater()
    sessions = [make_session(hall, days=2 + i) for i in range(3)]
    now = clock.now()
    sub = subscriptions.create_subscription(
        name="Season A",
        name_de="Abo A",
        session_ids=[s["_id"] for s in sessions],
        prices={"s": 6000, "p": 9000},
        sale_opens=now - timedelta(hours=1),
        sale_closes=now + timedelta(days=1),
    )
    answer = client.post(reverse("booking:subscription_buy", args=[str(sub["_id"])]), {"seat": "1:3"})
    assert answer.status_code == 302
    return sub


@pytest.mark.parametrize(
    ("language", "named"),
    [("en", "Subscription Season A: 3 performances"), ("de", "Abonnement Abo A: 3 Vorstellungen")],
)
def test_the_cart_checkout_and_order_pages_name_the_subscription(client, bought, language, named):
    client.cookies["django_language"] = language
    headers = {"HTTP_ACCEPT_LANGUAGE": language}
    assert named in client.get(reverse("booking:cart"), **headers).content.decode()
    assert named in client.get(reverse("booking:checkout"), **headers).content.decode()
    client.post(reverse("booking:checkout"), {"name": "Ada", "email": "ada@example.com", "method": "card"}, **headers)
    order = mongo.orders().find_one({"subscription._id": bought["_id"]})
    flow.pay_with_card(order["_id"], order["owner"], card(VISA))
    page = client.get(reverse("booking:order", args=[order["ref"]]), **headers).content.decode()
    assert named in page
