"""The buyer's pages through Django's test client: full pages, htmx partials, 304s, ownership,
bad input and escaping. The engine's own rules are tested elsewhere; here: what a browser sees."""

from datetime import timedelta

import pytest
from bson import ObjectId
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from booking.core import clock, mongo
from booking.sales import holds, selectors
from booking.tests.factories import make_session, make_theater
from booking.tests.headers import HTMX
from booking.tests.localstripe import VISA, card
from booking.venues.seat_grid import FREE, HELD
from booking.web import buyer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


@pytest.fixture
def session():
    return make_session()


def url(name, **kwargs):
    return reverse(f"booking:{name}", kwargs=kwargs)


def seat_state(session_id, key):
    r, c = (int(x) for x in key.split(":"))
    return selectors.get_session(session_id)["seats"][r][c]


def toggle(client, session, key, htmx=True):
    return client.post(url("toggle_seat", session_id=str(session["_id"])), {"seat": key}, **(HTMX if htmx else {}))


# --- what's on ---


def test_whats_on_lists_sessions_by_day_with_prices_and_seats_left(client, session):
    sold_out = make_session(name="Sold Out Show", days=2)
    mongo.sessions().update_one({"_id": sold_out["_id"]}, {"$set": {"seatsAvailable": 0}})
    page = client.get("/").content.decode()
    assert "Hamlet" in page
    assert "€20 – €35" in page
    assert "24 seats left" in page
    assert "Sold out" in page
    assert page.index("Hamlet") < page.index("Sold Out Show")  # by day


def test_whats_on_filters_by_theater_and_date(client, session):
    other = make_session(make_theater(name="Studio"), name="Godot", days=3)
    page = client.get("/", {"theater": str(other["theaterId"])}).content.decode()
    assert "Godot" in page and "Hamlet" not in page
    day = clock.now() + timedelta(days=1)
    from django.utils import timezone

    page = client.get("/", {"date": timezone.localtime(day).date().isoformat()}).content.decode()
    assert "Hamlet" in page and "Godot" not in page


def test_whats_on_htmx_gets_the_list_only_and_bad_filter_is_400(client, session):
    partial = client.get("/", **HTMX).content.decode()
    assert 'id="listing"' in partial and "<html" not in partial
    response = client.get("/", {"date": "yesterday-ish", "theater": "nope"})
    assert response.status_code == 400
    assert "valid date" in response.content.decode()


# --- session page and map ---


def test_session_page_shows_map_with_accessible_seats_and_legend(client, session):
    response = client.get(url("session", session_id=str(session["_id"])))
    page = response.content.decode()
    assert response.status_code == 200
    assert 'aria-label="Row B, seat 3, Premium, €35, available"' in page
    assert 'name="seat" value="1:2"' in page
    assert "Stage" in page and "Premium" in page and "Held by others" in page
    assert 'hx-headers=\'{"X-CSRFToken"' in page


def test_session_page_htmx_returns_the_map_panel_only(client, session):
    partial = client.get(url("session", session_id=str(session["_id"])), **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="seatmap"') and "<html" not in partial


@pytest.mark.parametrize("bad", ["nope", "0" * 24, "../../etc"])
def test_unknown_or_malformed_session_is_404(client, bad):
    assert client.get(f"/sessions/{bad}/").status_code == 404
    assert client.get(f"/sessions/{bad}/map/").status_code == 404
    assert client.post(f"/sessions/{bad}/toggle", {"seat": "0:0"}).status_code == 404


def test_live_map_answers_304_while_version_is_unchanged(client, session):
    map_url = url("seat_map", session_id=str(session["_id"]))
    first = client.get(map_url)
    assert first.status_code == 200 and first["ETag"] == f'"{session["version"]}"'
    again = client.get(map_url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again.content == b""
    holds.hold_seats(session["_id"], "s:other", None, ["0:0"])
    changed = client.get(map_url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200
    assert "Row A, seat 1, Stalls, €20, held by someone else" in changed.content.decode()


def test_304_costs_one_tiny_read(client, session):
    from booking.tests.commands import counting_commands

    map_url = url("seat_map", session_id=str(session["_id"]))
    etag = f'"{session["version"]}"'
    client.get(map_url)  # the client's pool is warm
    with counting_commands() as commands:
        assert client.get(map_url, HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert commands.commands == [("find", "sessions")]


# --- holding seats ---


def test_click_holds_then_releases_with_oob_cart(client, session):
    response = toggle(client, session, "1:3")
    page = response.content.decode()
    assert response.status_code == 200
    assert seat_state(session["_id"], "1:3") == HELD
    assert "Row B, seat 4, Premium, €35, held by you" in page
    assert 'id="cart-summary" class="panel cart-summary" aria-label="Your seats" hx-swap-oob="true"' in page
    assert "€35" in page and "Held for you for" in page
    toggle(client, session, "1:3")
    assert seat_state(session["_id"], "1:3") == FREE


def test_seat_taken_by_someone_else_is_a_message_on_the_refreshed_map(client, session):
    holds.hold_seats(session["_id"], "s:other", None, ["0:0"])
    response = toggle(client, session, "0:0")
    page = response.content.decode()
    assert response.status_code == 200
    assert "just taken by someone else" in page
    assert 'id="seatmap"' in page


def test_plain_form_post_redirects_back_with_a_message(client, session):
    response = toggle(client, session, "0:0", htmx=False)
    assert response.status_code == 302 and response["Location"] == url("session", session_id=str(session["_id"]))
    assert seat_state(session["_id"], "0:0") == HELD
    holds.hold_seats(session["_id"], "s:other", None, ["2:0"])
    response = toggle(client, session, "2:0", htmx=False)
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "just taken by someone else" in page


@pytest.mark.parametrize("seat", ["", "a:b", "1", "-1:2", "99:99", "1:4", "1:2:3", "x" * 50])
def test_bad_seat_is_400_with_a_message_and_changes_nothing(client, session, seat):
    before = selectors.get_session(session["_id"])
    for htmx in (True, False):
        response = toggle(client, session, seat, htmx=htmx)
        assert response.status_code == 400, seat
        assert "seat" in response.content.decode().lower()
    after = selectors.get_session(session["_id"])
    assert after["seats"] == before["seats"] and after["version"] == before["version"]


def test_orphan_rule_is_a_400_message(client, session):
    response = toggle(client, session, "0:1")  # would leave A1 alone
    assert response.status_code == 400
    assert "on its own" in response.content.decode()


def test_without_javascript_a_refused_choice_returns_to_the_map_with_the_reason(client, session):
    response = toggle(client, session, "0:1", htmx=False)  # would leave A1 alone
    assert response.status_code == 302 and response["Location"] == url("session", session_id=str(session["_id"]))
    page = client.get(response["Location"]).content.decode()
    assert "on its own" in page and 'name="seat" value="0:1"' in page
    assert seat_state(session["_id"], "0:1") == FREE  # nothing held


def test_best_available_holds_and_highlights(client, session):
    response = client.post(url("best_available", session_id=str(session["_id"])), {"count": "3"}, **HTMX)
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count("s me pk") == 3
    assert "highlighted on the map" in page
    again = client.post(url("best_available", session_id=str(session["_id"])), {"count": "2"}, **HTMX)
    page = again.content.decode()
    assert page.count("s me pk") == 2  # the answer swaps in the new picks, highlighted
    assert page.count("<button") == 2 and "Total (5 seats)" in page  # and the cart with all five
    assert again["HX-Reswap"] == "none"  # the map stays; the live refresh brings the rest
    fresh = client.get(url("seat_map", session_id=str(session["_id"]))).content.decode()
    assert fresh.count("s me ") == 5
    assert again["X-Seatmap-Version"] == fresh.split('data-version="')[1].split('"')[0]


@pytest.mark.parametrize("count", ["0", "11", "abc", "", "-3", "1e9"])
def test_best_available_bad_count_is_400(client, session, count):
    response = client.post(url("best_available", session_id=str(session["_id"])), {"count": count})
    assert response.status_code == 400


def test_hold_and_release_endpoints_take_several_seats(client, session):
    sid = str(session["_id"])
    assert client.post(url("hold", session_id=sid), {"seats": "2:0,2:1"}, **HTMX).status_code == 200
    assert seat_state(session["_id"], "2:1") == HELD
    assert client.post(url("release", session_id=sid), {"seats": ["2:0", "2:1"]}, **HTMX).status_code == 200
    assert seat_state(session["_id"], "2:0") == FREE
    assert client.post(url("release", session_id=sid), {"seats": "2:0"}).status_code == 400


def test_csrf_is_required_for_seat_posts(session):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    assert strict.post(url("toggle_seat", session_id=str(session["_id"])), {"seat": "0:0"}).status_code == 403
    page = strict.get(url("session", session_id=str(session["_id"])))
    token = page.cookies["csrftoken"].value
    ok = strict.post(url("toggle_seat", session_id=str(session["_id"])), {"seat": "0:0"}, HTTP_X_CSRFTOKEN=token)
    assert ok.status_code == 302


# --- cart, ownership ---


def test_cart_groups_seats_and_removes_one(client, session):
    toggle(client, session, "0:0")
    toggle(client, session, "0:1")
    page = client.get(url("cart")).content.decode()
    assert "Row A, seat 1" in page and "Row A, seat 2" in page and "€40" in page
    assert "Hamlet" in page and "held for" in page
    response = client.post(url("cart_remove"), {"session": str(session["_id"]), "seat": "0:1"})
    assert response.status_code == 302
    assert seat_state(session["_id"], "0:1") == FREE
    assert "Row A, seat 2" not in client.get(url("cart")).content.decode()


def signed_buyer_cookie(value: str) -> str:
    response = HttpResponse()
    response.set_signed_cookie(buyer.COOKIE_NAME, value, salt=buyer.SALT)
    return response.cookies[buyer.COOKIE_NAME].value


def buyer_cookie(client) -> tuple[str, str]:
    request = HttpRequest()
    request.COOKIES[buyer.COOKIE_NAME] = client.cookies[buyer.COOKIE_NAME].value
    owner, _, cart_id = request.get_signed_cookie(buyer.COOKIE_NAME, salt=buyer.SALT).partition("|")
    return owner, cart_id


def test_the_buyer_cookie_is_signed_http_only_and_a_tampered_one_is_ignored(client, session):
    toggle(client, session, "0:0")
    morsel = client.cookies[buyer.COOKIE_NAME]
    assert morsel["httponly"] and morsel["samesite"] == "Lax"
    owner, cart_id = buyer_cookie(client)
    assert owner.startswith("s:") and ObjectId.is_valid(cart_id)
    assert "Row A, seat 1" in client.get(url("cart")).content.decode()
    value = morsel.value
    client.cookies[buyer.COOKIE_NAME] = value.replace(owner, "s:someone-else")  # signature no longer matches
    assert "Row A, seat 1" not in client.get(url("cart")).content.decode()
    client.cookies[buyer.COOKIE_NAME] = value
    assert "Row A, seat 1" in client.get(url("cart")).content.decode()


def test_a_seat_click_reads_no_database_row(client, session, django_assert_num_queries):
    toggle(client, session, "0:0")
    with django_assert_num_queries(0):
        assert toggle(client, session, "0:1").status_code == 200


def test_another_browsers_cart_is_unreachable(client, session):
    from django.test import Client

    toggle(client, session, "0:0")
    thief = Client()
    thief.get("/")
    # The thief knows the cart id and signs a buyer cookie with it (as if SECRET_KEY had leaked):
    # every cart query also names the owner token, so it finds nothing.
    cart_id = buyer_cookie(client)[1]
    assert cart_id == str(selectors.get_session(session["_id"])["reservations"][0]["_id"])
    thief.cookies[buyer.COOKIE_NAME] = signed_buyer_cookie(f"s:thief|{cart_id}")
    assert buyer_cookie(thief) == ("s:thief", cart_id)
    assert "Row A, seat 1" not in thief.get(url("cart")).content.decode()
    response = thief.post(url("cart_remove"), {"session": str(session["_id"]), "seat": "0:0"})
    assert response.status_code == 404
    thief.post(url("cart_cancel"))
    assert seat_state(session["_id"], "0:0") == HELD
    assert thief.post(url("checkout"), {"name": "Eve", "email": "eve@example.com"}).status_code == 302
    assert seat_state(session["_id"], "0:0") == HELD


def test_expired_hold_shows_a_clear_screen_and_frees_the_seats(client, session, settings):
    toggle(client, session, "0:0")
    mongo.carts().update_many({}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    page = client.get(url("cart")).content.decode()
    assert "Your hold has expired" in page
    assert seat_state(session["_id"], "0:0") == FREE
    assert "Your cart is empty" in client.get(url("cart")).content.decode()


def test_cancel_releases_everything(client, session):
    toggle(client, session, "0:0")
    assert client.post(url("cart_cancel")).status_code == 302
    assert seat_state(session["_id"], "0:0") == FREE


# --- checkout and orders ---


def test_checkout_errors_inline_then_confirmation_with_tickets(client, session):
    toggle(client, session, "0:0")
    toggle(client, session, "0:1")
    bad = client.post(url("checkout"), {"name": "", "email": "not-an-email"})
    page = bad.content.decode()
    assert bad.status_code == 400
    assert "Please enter your name." in page and "Please enter a valid e-mail address." in page
    ok = client.post(url("checkout"), {"name": "Ada <b>Lovelace</b>", "email": "ada@example.com"})
    assert ok.status_code == 302
    order = mongo.orders().find_one({})
    assert ok["Location"] == url("order", ref=order["ref"])
    waiting = client.get(ok["Location"]).content.decode()  # since payments: the card form first
    assert order["ref"] in waiting and "Pay €40" in waiting and "data-card-form" in waiting
    paid = client.post(url("pay", ref=order["ref"]), {"payment_method": card(VISA)})
    assert paid.json()["status"] == "paid" and paid.json()["redirect"] == ok["Location"]
    page = client.get(ok["Location"]).content.decode()
    assert order["ref"] in page and "€40" in page
    assert "Ada &lt;b&gt;Lovelace&lt;/b&gt;" in page and "<b>Lovelace" not in page
    for line in order["lines"]:
        assert url("ticket_qr", code=line["ticket"]) in page
    qr = client.get(url("ticket_qr", code=order["lines"][0]["ticket"]))
    assert qr.status_code == 200 and qr["Content-Type"] == "image/svg+xml" and b"<svg" in qr.content
    printable = client.get(url("order_tickets", ref=order["ref"]))
    assert printable.status_code == 200 and printable.content.decode().count('class="ticket"') == 2
    assert client.get(url("cart")).content.decode().count("Row A") == 0


def test_orders_need_the_buyer_or_ref_and_email(client, session):
    from django.test import Client

    toggle(client, session, "0:0")
    client.post(url("checkout"), {"name": "Ada", "email": "ada@example.com"})
    ref = mongo.orders().find_one({})["ref"]
    stranger = Client()
    assert stranger.get(url("order", ref=ref)).status_code == 404
    assert stranger.get(url("order_tickets", ref=ref)).status_code == 404
    wrong = stranger.post(url("find_booking"), {"ref": ref, "email": "eve@example.com"})
    assert wrong.status_code == 400 and "No booking matches" in wrong.content.decode()
    found = stranger.post(url("find_booking"), {"ref": ref.lower(), "email": "ADA@example.com"})
    assert found.status_code == 302
    assert stranger.get(found["Location"]).status_code == 200


def test_the_confirmation_mail_link_opens_the_order_on_another_device(client, session, settings):
    from django.test import Client

    from booking.notifications.confirmations import confirmation_message

    toggle(client, session, "0:0")
    client.post(url("checkout"), {"name": "Ada", "email": "ada@example.com"})
    order = mongo.orders().find_one({})
    link = next(word for word in confirmation_message(order).body.split() if "/orders/" in word)
    path = link.removeprefix(settings.SITE_URL)
    phone = Client()
    assert phone.get(path).status_code == 200
    assert phone.get(url("order_tickets", ref=order["ref"])).status_code == 200  # remembered
    assert Client().get(url("order", ref=order["ref"]) + "?email=eve@example.com").status_code == 404


def test_names_are_escaped_everywhere(client):
    evil = "<script>alert(1)</script>"
    theater = make_theater(name="Hall <img src=x onerror=alert(1)>")
    session = make_session(theater, name=evil, description=evil)
    for page in (client.get("/"), client.get(url("session", session_id=str(session["_id"])))):
        html = page.content.decode()
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;" in html


def test_security_headers(client, session):
    response = client.get(url("session", session_id=str(session["_id"])))
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_unknown_ticket_code_shapes_are_404(client):
    assert client.get("/tickets/short.svg").status_code == 404
    assert client.get("/tickets/" + "a" * 80 + ".svg").status_code == 404


def test_session_ids_never_a_500(client):
    for path in ["/sessions/%00/", "/sessions/" + "f" * 300 + "/", f"/sessions/{ObjectId()}/map/"]:
        assert client.get(path).status_code == 404
