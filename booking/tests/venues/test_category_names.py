"""Seat categories in the buyer's language: staff give a category a German name in the theater's
layout editor (``nameDe``, like a show's ``nameDe``); German pages show it on the map (legend,
seat labels), best available's words, the cart, checkout, the order page, the tickets, the mail and
the receipt. English pages, and categories without a German name, show the main name."""

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import translation

from booking.core import mongo
from booking.notifications import confirmations as notifications
from booking.payments import pdf
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.tests.control.test_admin_theaters import editor_data
from booking.tests.factories import make_session, make_theater, reread
from booking.tests.headers import GERMAN, HTMX
from booking.tests.localstripe import VISA, card
from booking.venues import seat_words
from booking.web import presenters

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


def with_german_names(data: dict, **names: str) -> dict:
    """editor_data with ``cat-<i>-name_de`` filled for the rows given by index."""
    return {**data, **{f"cat-{key.removeprefix('c')}-name_de": value for key, value in names.items()}}


def test_staff_set_a_categorys_german_name_in_the_layout_editor(manager_client):
    page = manager_client.get("/admin/booking/theater/add/").content.decode()
    assert 'name="cat-0-name_de"' in page and "In German (optional)" in page
    data = editor_data(categories=(("s", "Standard", "#3b82f6"), ("r", "Reduced view", "#f59e0b")))
    data["grid"] = "A: sss.rrr\nB: ssS.rrr\n"
    saved = manager_client.post("/admin/booking/theater/add/", with_german_names(data, c1="Eingeschränkte Sicht"))
    assert saved.status_code == 302, saved.content.decode()[:1500]
    [theater] = mongo.theaters().find()
    assert theater["layout"]["categories"][:2] == [
        {"code": "s", "name": "Standard", "color": "#3b82f6"},  # none given: the main name everywhere
        {"code": "r", "name": "Reduced view", "nameDe": "Eingeschränkte Sicht", "color": "#f59e0b"},
    ]
    form = manager_client.get(f"/admin/booking/theater/{theater['_id']}/change/").content.decode()
    assert 'value="Eingeschränkte Sicht"' in form  # back in the editor

    too_long = manager_client.post(
        f"/admin/booking/theater/{theater['_id']}/change/", with_german_names(data, c1="x" * 41)
    )
    assert too_long.status_code == 400
    assert mongo.theaters().find_one()["layout"]["categories"][1]["nameDe"] == "Eingeschränkte Sicht"


def test_german_pages_mails_tickets_and_receipts_name_the_category_in_german(settings):
    settings.SITE_URL = "https://tickets.example.org"
    show = make_session(make_theater(STUDIO_GRID, STUDIO_CATEGORIES), name="Godot", prices={"s": 2200, "r": 1500})
    session_url = reverse("booking:session", args=[str(show["_id"])])
    buyer = Client(**GERMAN)
    page = buyer.get(session_url).content.decode()
    assert "Eingeschränkte Sicht <strong>15\xa0€</strong>" in page  # the legend
    assert 'aria-label="Reihe G, Platz 3, Eingeschränkte Sicht, 15\xa0€' in page  # the seat's own name
    assert "Reduced view" not in page
    english = Client().get(session_url).content.decode()
    assert "Reduced view <strong>€15</strong>" in english and "Eingeschränkte Sicht" not in english

    held = buyer.post(reverse("booking:toggle_seat", args=[str(show["_id"])]), {"seat": "6:2"}, **HTMX)
    assert held.status_code == 200 and "Eingeschränkte Sicht" in held.content.decode()  # the cart panel
    with translation.override("de"):
        assert "Eingeschränkte Sicht" in seat_words.describe_seats(reread(show["_id"]), [(6, 2), (6, 3)])
    assert "Eingeschränkte Sicht" in buyer.get(reverse("booking:cart")).content.decode()
    assert "Eingeschränkte Sicht" in buyer.get(reverse("booking:checkout")).content.decode()

    done = buyer.post(reverse("booking:checkout"), {"name": "Ada", "email": "ada@example.com"})
    ref = done["Location"].rstrip("/").rsplit("/", 1)[-1]
    paid = buyer.post(reverse("booking:pay", args=[ref]), {"payment_method": card(VISA)})
    assert paid.json()["status"] == "paid"
    order = mongo.orders().find_one({"ref": ref})
    [summary] = order["sessions"]
    assert summary["categoriesDe"] == {"r": "Eingeschränkte Sicht"}  # kept for the mails to come
    assert "Eingeschränkte Sicht" in buyer.get(reverse("booking:order", args=[ref])).content.decode()
    assert "Eingeschränkte Sicht" in buyer.get(reverse("booking:order_tickets", args=[ref])).content.decode()

    with translation.override("en"):  # the worker's own language does not matter: the order's does
        assert notifications.send_confirmation(order["_id"]) == "sent"
    [message] = mail.outbox
    assert "(Eingeschränkte Sicht, Normalpreis)" in message.body
    with translation.override("de"):
        [ticket] = presenters.order_tickets(order)
        assert ticket["category"] == "Eingeschränkte Sicht"
        rows = pdf.line_rows(order, order["lines"], "EUR", lambda text, raw=False: text)
        assert "Eingeschränkte Sicht" in str(rows)
    with translation.override("en"):
        assert presenters.order_tickets(order)[0]["category"] == "Reduced view"
