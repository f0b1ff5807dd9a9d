"""The admin's "Sell" pages (booking/control/counter.py): permission, the seat actions through the
buyer's engine under the staff member's cart, bad input (4xx, nothing changes), the sale, tickets."""

from datetime import timedelta

import pytest
from django.urls import reverse

from booking.core import clock, mongo
from booking.sales import counter, offers
from booking.sales import sessions as session_service
from booking.tests.admin_support import every_booking_perm, make_staff
from booking.tests.factories import TYPES, make_session
from booking.tests.headers import HTMX
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import BLOCKED, FREE, HELD, SOLD


@pytest.fixture
def seller(db):
    return make_staff("anna", ["view_session", "sell_at_counter"])


@pytest.fixture
def seller_client(client, seller):
    client.force_login(seller)
    return client


def url(name, *args):
    return reverse(f"admin:booking_session_{name}", args=[str(a) for a in args])


def cells(session, keys):
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    return [seats[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


def test_sell_needs_its_own_permission(client, db):
    session = make_session()
    client.force_login(make_staff("viewer", every_booking_perm()))  # every other permission
    assert client.get(url("sell", session["_id"])).status_code == 403
    assert client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"}).status_code == 403
    assert cells(session, ["0:0"]) == [FREE]
    client.logout()
    assert client.get(url("sell", session["_id"])).status_code == 302  # to the login


def test_seller_sees_the_map_with_house_seats_choosable(seller_client):
    session = make_session()
    session_service.set_blocked(session["_id"], [(0, 0)], True)
    page = seller_client.get(url("sell", session["_id"]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="s0-0"' in html and "house seat" in html and 'class="s hs' in html
    assert page.context["version"] == mongo.sessions().find_one({"_id": session["_id"]})["version"]


def test_clicks_hold_under_the_staff_cart_including_a_house_seat(seller_client, seller):
    session = make_session()
    session_service.set_blocked(session["_id"], [(0, 0)], True)
    answer = seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    assert answer.status_code == 200 and 'id="cart-summary"' in answer.content.decode()
    seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:1"}, **HTMX)
    assert cells(session, ["0:0", "0:1"]) == [HELD, HELD]
    cart = counter.current_cart(counter.staff_owner(seller.pk))
    assert {i["key"] for i in cart["items"]} == {"0:0", "0:1"}
    seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)  # again: released
    assert cells(session, ["0:0", "0:1"]) == [BLOCKED, HELD]
    assert check_invariants() == []


def test_the_map_poll_answers_304_when_nothing_changed(seller_client):
    session = make_session()
    first = seller_client.get(url("sell_map", session["_id"]))
    assert first.status_code == 200
    again = seller_client.get(url("sell_map", session["_id"]), HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("sell_toggle", {"seat": "nonsense"}),
        ("sell_toggle", {"seat": "99:99"}),
        ("sell_toggle", {}),
        ("sell_best", {"count": "0"}),
        ("sell_best", {"count": "lots"}),
        ("sell_ticket_type", {"session": "x", "seat": "0:0"}),
    ],
)
def test_bad_input_is_a_400_with_a_message_and_changes_nothing(seller_client, name, data):
    session = make_session()
    before = mongo.sessions().find_one({"_id": session["_id"]})["version"]
    answer = seller_client.post(url(name, session["_id"]), data, **HTMX)
    assert answer.status_code == 400
    assert 'class="msg msg-error"' in answer.content.decode()
    assert mongo.sessions().find_one({"_id": session["_id"]})["version"] == before
    assert check_invariants() == []


def test_unknown_session_is_a_404(seller_client):
    assert seller_client.get(url("sell", "000000000000000000000000")).status_code == 404
    assert seller_client.get(url("sell", "junk")).status_code == 404


def test_counter_sale_with_cash_end_to_end(seller_client, seller):
    session = make_session()
    seller_client.post(url("sell_best", session["_id"]), {"count": "2"}, **HTMX)
    done = seller_client.post(
        url("sell_checkout", session["_id"]), {"channel": "box_office", "name": "Grace Hopper", "method": "cash"}
    )
    assert done.status_code == 302
    order = mongo.orders().find_one({"name": "Grace Hopper"}, hint=[("_id", 1)])
    assert done["Location"] == url("sold", order["ref"])
    assert order["state"] == "paid" and order["soldBy"]["name"] == "anna" and order["channel"] == "box_office"
    page = seller_client.get(done["Location"])
    assert page.status_code == 200 and order["ref"] in page.content.decode()
    for layout in ("page", "thermal"):
        pdf = seller_client.get(url("sold_tickets", order["ref"]) + f"?layout={layout}")
        assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
        assert pdf.content.startswith(b"%PDF")
        assert pdf.content.count(b"/Type /Page") - pdf.content.count(b"/Type /Pages") == 2  # one page per ticket
    assert seller_client.get(url("sold_tickets", order["ref"]) + "?layout=poster").status_code == 400
    assert check_invariants() == []


def test_sale_form_errors_are_shown_with_a_400_and_the_seats_stay_held(seller_client):
    session = make_session(days=3)
    seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    for data in (
        {"channel": "phone", "name": "", "method": "cash"},
        {"channel": "phone", "name": "Ada", "method": "complimentary"},
        {"channel": "phone", "name": "Ada", "method": "invoice"},
        {"channel": "phone", "name": "Ada", "method": "invoice", "due": "not a date"},
        {"channel": "fax", "name": "Ada", "method": "cash"},
    ):
        answer = seller_client.post(url("sell_checkout", session["_id"]), data)
        assert answer.status_code == 400, data
        assert "errorlist" in answer.content.decode() or "errornote" in answer.content.decode()
    assert cells(session, ["0:0"]) == [HELD]
    assert mongo.orders().count_documents({}, hint=[("_id", 1)]) == 0
    assert check_invariants() == []


def test_phone_sale_on_invoice_reserves_and_prints_nothing_until_paid(seller_client):
    session = make_session(days=4)
    seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    due = (clock.now() + timedelta(days=2)).date().isoformat()
    done = seller_client.post(
        url("sell_checkout", session["_id"]),
        {"channel": "phone", "name": "Ada Lovelace", "email": "ada@example.com", "method": "invoice", "due": due},
    )
    assert done.status_code == 302
    order = mongo.orders().find_one({"name": "Ada Lovelace"}, hint=[("_id", 1)])
    assert order["state"] == "pending_payment" and order["channel"] == "phone"
    assert seller_client.get(url("sold_tickets", order["ref"])).status_code == 409
    assert cells(session, ["0:0"]) == [HELD]
    assert check_invariants() == []


def test_ticket_type_and_promo_code_at_the_counter(seller_client, seller):
    session = make_session()
    offers.set_theater_ticket_types(session["theaterId"], TYPES)
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1500, "p": 2500}})
    from booking.sales import promos

    promos.create_code("HALF", "percent", 50, cap=3)
    seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    answer = seller_client.post(
        url("sell_ticket_type", session["_id"]),
        {"session": str(session["_id"]), "seat": "0:0", "ticket_type": "reduced"},
        **HTMX,
    )
    assert answer.status_code == 200
    bad = seller_client.post(url("sell_promo", session["_id"]), {"code": "NOPE"}, **HTMX)
    assert bad.status_code == 400
    seller_client.post(url("sell_promo", session["_id"]), {"code": "HALF"}, **HTMX)
    cart = counter.current_cart(counter.staff_owner(seller.pk))
    assert cart["items"][0]["price"] == 1500 and cart["promo"]["code"] == "HALF"
    seller_client.post(
        url("sell_checkout", session["_id"]), {"channel": "box_office", "name": "Bo", "method": "card_terminal"}
    )
    order = mongo.orders().find_one({"name": "Bo"}, hint=[("_id", 1)])
    assert order["total"] == 750 and order["lines"][0]["ticketType"] == "reduced" and order["state"] == "paid"
    assert check_invariants() == []


def test_release_all_gives_the_seats_back(seller_client):
    session = make_session()
    seller_client.post(url("sell_best", session["_id"]), {"count": "3"}, **HTMX)
    seller_client.post(url("sell_release", session["_id"]), **HTMX)
    assert mongo.sessions().find_one({"_id": session["_id"]})["seatsAvailable"] == session["seatsAvailable"]
    assert check_invariants() == []


def test_someone_elses_sale_is_not_shown_to_a_user_without_the_permission(client, seller_client, db):
    session = make_session()
    seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    seller_client.post(url("sell_checkout", session["_id"]), {"channel": "box_office", "name": "Cy", "method": "cash"})
    order = mongo.orders().find_one({"name": "Cy"}, hint=[("_id", 1)])
    client.force_login(make_staff("other", ["view_session"]))
    assert client.get(url("sold", order["ref"])).status_code == 403
    assert client.get(url("sold_tickets", order["ref"])).status_code == 403
    assert cells(session, ["0:0"]) == [SOLD]


def test_staff_mark_an_invoice_paid_on_the_order_page(seller_client, manager):
    from django.test import Client

    manager_client = Client()
    manager_client.force_login(manager)
    session = make_session(days=4)
    seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    due = (clock.now() + timedelta(days=1)).date().isoformat()
    sale = {"channel": "phone", "name": "Ida", "method": "invoice", "due": due}
    seller_client.post(url("sell_checkout", session["_id"]), sale)
    order = mongo.orders().find_one({"name": "Ida"}, hint=[("_id", 1)])
    page = manager_client.get(reverse("admin:booking_order_change", args=[str(order["_id"])]))
    assert "sold on the phone by anna" in page.content.decode()
    assert (
        manager_client.post(
            reverse("admin:booking_order_mark_paid", args=[str(order["_id"])]), {"means": "cash"}
        ).status_code
        == 302
    )
    paid = mongo.orders().find_one({"_id": order["_id"]})
    assert paid["state"] == "paid" and cells(session, ["0:0"]) == [SOLD]
    assert seller_client.get(url("sold_tickets", order["ref"])).status_code == 200
    assert check_invariants() == []


def test_without_javascript_a_click_is_a_plain_post_back_to_the_page_with_its_message(seller_client):
    session = make_session()
    sell_url = url("sell", session["_id"])
    response = seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:0"})
    assert response.status_code == 302 and response["Location"] == sell_url
    assert cells(session, ["0:0"]) == [HELD]
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"status": "canceled"}})
    refused = seller_client.post(url("sell_toggle", session["_id"]), {"seat": "0:1"}, follow=True)
    assert "not on sale" in refused.content.decode() and cells(session, ["0:1"]) == [FREE]
    assert check_invariants() == []
