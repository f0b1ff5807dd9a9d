"""Hostile input against every buyer endpoint: a table of requests, each answered with a clear
message and a 4xx (never a 500), and the database exactly as it was before.

Two kinds of answer are by design not a 4xx, and the table says so where they occur:
- a seat action that loses to someone else's hold (a seat already taken, a seat that is not
  yours) comes back to htmx as 200 with the refreshed map and an error notice, so the buyer sees
  the map as it is now;
- the checkout form follows post/redirect/get: a checkout that cannot happen (no cart, replayed
  after success, hold ended) redirects to the cart page, which shows the message.
"""

from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from bson import ObjectId
from django.urls import reverse

from booking.core import clock, mongo
from booking.core.domain import CartState
from booking.sales import cart_expiry
from booking.tests.headers import HTMX
from booking.venues.seat_grid import FREE, HELD

from .support import assert_unchanged, buyer_client, csrf, snapshot

UNKNOWN_ID = "0123456789abcdef01234567"

pytestmark = pytest.mark.django_db


@dataclass
class Case:
    name: str
    method: str
    path: str  # "{sid}" is the session's id
    data: dict | str | None = None
    status: int | tuple = 400
    says: str = ""  # the message the person sees
    htmx: bool = True
    token: str = "good"  # good | missing | wrong
    extra: dict = field(default_factory=dict)
    content_type: str | None = None
    error_notice: bool = False  # 200 with an error notice on the refreshed map (by design)


SEAT_PATHS = ["toggle", "hold", "release", "best"]
CASES = [
    # malformed and out-of-range seat coordinates
    Case("seat is not a key", "POST", "/sessions/{sid}/toggle", {"seat": "abc"}, says="not a seat"),
    Case("seat key without a column", "POST", "/sessions/{sid}/toggle", {"seat": "3"}, says="not a seat"),
    Case("negative row", "POST", "/sessions/{sid}/toggle", {"seat": "-1:0"}, says="not a seat"),
    Case("seat as float", "POST", "/sessions/{sid}/toggle", {"seat": "1.5:2"}, says="not a seat"),
    Case("no seat given", "POST", "/sessions/{sid}/toggle", {}, says="Choose a seat"),
    Case("row beyond the hall", "POST", "/sessions/{sid}/toggle", {"seat": "99:0"}, says="no seat at row 100"),
    Case("column beyond the row", "POST", "/sessions/{sid}/hold", {"seats": "0:99"}, says="no seat at row 1"),
    Case("huge coordinates", "POST", "/sessions/{sid}/hold", {"seats": "9999999:99999"}, says="not a seat"),
    Case("overlong key", "POST", "/sessions/{sid}/hold", {"seats": "1" * 40 + ":1"}, says="not a seat"),
    Case("unicode digits", "POST", "/sessions/{sid}/hold", {"seats": "²:1"}, says="not a seat"),
    Case("injection in a key", "POST", "/sessions/{sid}/hold", {"seats": "0:0'; db.dropDatabase()"}, says="not a seat"),
    Case("operator as key", "POST", "/sessions/{sid}/hold", {"seats[$ne]": "x"}, says="Choose at least one seat"),
    Case(
        "seat on a gap (aisle)", "POST", "/sessions/{sid}/hold", {"seats": "0:4"}, says="no seat at row 1, position 5"
    ),
    Case("seat on a gap, plain post", "POST", "/sessions/{sid}/hold", {"seats": "1:4"}, says="no seat", htmx=False),
    Case("duplicate seats", "POST", "/sessions/{sid}/hold", {"seats": "0:0,0:0"}, says="twice"),
    Case("duplicate seats, repeated field", "POST", "/sessions/{sid}/hold", "seats=2:1&seats=2:1", says="twice"),
    Case(
        "too many seats",
        "POST",
        "/sessions/{sid}/hold",
        {"seats": ",".join(f"2:{c}" for c in range(11))},
        says="at most",
    ),
    Case("no seats", "POST", "/sessions/{sid}/hold", {"seats": ""}, says="Choose at least one seat"),
    Case("release malformed", "POST", "/sessions/{sid}/release", {"seats": "x:y"}, says="not a seat"),
    Case("best: zero", "POST", "/sessions/{sid}/best", {"count": "0"}, says="between 1 and 10"),
    Case("best: too many", "POST", "/sessions/{sid}/best", {"count": "11"}, says="between 1 and 10"),
    Case("best: negative", "POST", "/sessions/{sid}/best", {"count": "-3"}, says="between 1 and 10"),
    Case("best: words", "POST", "/sessions/{sid}/best", {"count": "two"}, says="whole number"),
    Case("best: huge", "POST", "/sessions/{sid}/best", {"count": "9" * 400}, says="between 1 and 10"),
    Case("best: missing", "POST", "/sessions/{sid}/best", {}, says="how many seats"),
    # unknown or malformed ids
    *[
        Case(
            f"{p}: malformed session id",
            "POST",
            f"/sessions/not-an-id/{p}",
            {"seat": "0:0", "seats": "0:0", "count": "1"},
            404,
            "No such performance",
        )
        for p in SEAT_PATHS
    ],
    *[
        Case(
            f"{p}: unknown session id",
            "POST",
            f"/sessions/{UNKNOWN_ID}/{p}",
            {"seat": "0:0", "seats": "0:0", "count": "1"},
            404,
            "No such performance",
        )
        for p in ("toggle", "hold", "best")
    ],
    Case(
        "session page: malformed id",
        "GET",
        "/sessions/%3Cscript%3E/",
        status=404,
        says="No such performance",
        htmx=False,
    ),
    Case(
        "session page: unknown id",
        "GET",
        f"/sessions/{UNKNOWN_ID}/",
        status=404,
        says="No such performance",
        htmx=False,
    ),
    Case("map: malformed id", "GET", "/sessions/../map/", status=404, htmx=False),
    Case("map: unknown id", "GET", f"/sessions/{UNKNOWN_ID}/map/", status=404),
    Case("order: unknown ref", "GET", "/orders/ZZZZZZZZ/", status=404, says="could not find that booking", htmx=False),
    Case(
        "order: script as ref",
        "GET",
        "/orders/%3Cscript%3E/",
        status=404,
        says="could not find that booking",
        htmx=False,
    ),
    Case("tickets: unknown ref", "GET", "/orders/ZZZZZZZZ/tickets/", status=404, htmx=False),
    Case("QR: code too short", "GET", "/tickets/abc.svg", status=404, htmx=False),
    Case(
        "cart remove: malformed session",
        "POST",
        "/cart/remove",
        {"session": "nope", "seat": "0:0"},
        404,
        "No such performance",
        htmx=False,
    ),
    Case(
        "cart remove: malformed seat",
        "POST",
        "/cart/remove",
        {"session": UNKNOWN_ID, "seat": "0"},
        400,
        "not a seat",
        htmx=False,
    ),
    Case(
        "find booking: wrong ref",
        "POST",
        "/find-booking/",
        {"ref": "ZZZZZZZZ", "email": "a@b.org"},
        400,
        "No booking matches",
        htmx=False,
    ),
    Case("find booking: garbage", "POST", "/find-booking/", {"ref": "<script>", "email": "<script>"}, 400, htmx=False),
    Case("what's on: bad filter", "GET", "/?date=tomorrow&theater=%24ne", status=400, says="valid date", htmx=False),
    # missing or wrong CSRF token on every POST
    *[
        Case(
            f"{path}: {token} CSRF token",
            "POST",
            path,
            {"seats": "0:0", "seat": "0:0", "count": "1"},
            403,
            "CSRF",
            htmx=False,
            token=token,
        )
        for path in [
            "/sessions/{sid}/toggle",
            "/sessions/{sid}/hold",
            "/sessions/{sid}/release",
            "/sessions/{sid}/best",
            "/cart/remove",
            "/cart/cancel",
            "/checkout/",
            "/find-booking/",
        ]
        for token in ("missing", "wrong")
    ],
    # wrong HTTP methods
    *[Case(f"GET {p}", "GET", f"/sessions/{{sid}}/{p}", status=405) for p in SEAT_PATHS],
    *[
        Case(f"{m} {p}", m, p, status=405, htmx=False)
        for m in ("PUT", "DELETE", "PATCH")
        for p in ("/", "/sessions/{sid}/", "/cart/", "/checkout/", "/cart/cancel", "/sessions/{sid}/hold")
    ],
    Case("GET /cart/remove", "GET", "/cart/remove", status=405, htmx=False),
    # oversized bodies
    Case("3 MB body", "POST", "/sessions/{sid}/hold", {"seats": "0:0", "pad": "x" * 3_000_000}, 400),
    Case("3,000 fields", "POST", "/sessions/{sid}/hold", "&".join(f"f{i}=1" for i in range(3000)), 400),
    Case(
        "3 MB JSON body",
        "POST",
        "/sessions/{sid}/hold",
        "[" + "1," * 1_500_000 + "1]",
        400,
        "Choose at least one seat",
        content_type="application/json",
    ),
    # script in names and e-mails (there is no cart: nothing may happen)
    Case(
        "checkout without a cart",
        "POST",
        "/checkout/",
        {"name": "Eve", "email": "eve@example.org"},
        302,
        "no seats on hold",
        htmx=False,
    ),
]


def _request(client, case: Case, session_id: str):
    path = case.path.format(sid=session_id)
    headers = dict(case.extra)
    if case.htmx:
        headers.update(HTMX)
    if case.token == "good":
        headers.update(csrf(client))
    elif case.token == "wrong":
        headers["HTTP_X_CSRFTOKEN"] = "x" * 32
    kwargs = {}
    if case.data is not None:
        if isinstance(case.data, str):
            kwargs = {"data": case.data, "content_type": case.content_type or "application/x-www-form-urlencoded"}
        else:
            kwargs = {"data": case.data}
    return getattr(client, case.method.lower())(path, **kwargs, **headers)


def _message(client, response) -> str:
    """What the person reads: the page, or the page a redirect leads to."""
    if response.status_code == 302:
        return client.get(response["Location"]).content.decode()
    return response.content.decode(errors="replace")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hostile_request_gets_a_clear_4xx_and_changes_nothing(case, session, buyer):
    before = snapshot()
    response = _request(buyer, case, str(session["_id"]))
    expected = case.status if isinstance(case.status, tuple) else (case.status,)
    assert response.status_code in expected, response.content[:500]
    text = _message(buyer, response)
    if case.says:
        assert case.says.lower() in text.lower()
    assert "Traceback" not in text
    assert_unchanged(before, snapshot())


# --- another buyer's seats and cart ---


@pytest.fixture
def held_by_alice(session):
    """Alice holds 0:0 and 0:1; returns her client."""
    alice = buyer_client()
    response = alice.post(
        reverse("booking:hold", args=[str(session["_id"])]), {"seats": "0:0,0:1"}, **HTMX, **csrf(alice)
    )
    assert response.status_code == 200
    return alice


def _cell(session, key):
    r, c = (int(x) for x in key.split(":"))
    return mongo.sessions().find_one({"_id": session["_id"]})["seats"][r][c]


@pytest.mark.parametrize(
    "what, path, data, status",
    [
        ("release her seats", "/sessions/{sid}/release", {"seats": "0:0"}, 200),
        ("click her seat", "/sessions/{sid}/toggle", {"seat": "0:0"}, 200),
        ("hold her seats", "/sessions/{sid}/hold", {"seats": "0:0,0:1"}, 200),
        ("remove her seat from a cart", "/cart/remove", {"session": "{sid}", "seat": "0:0"}, 404),
    ],
)
def test_nobody_can_touch_another_buyers_seats(what, path, data, status, session, held_by_alice):
    mallory = buyer_client()
    sid = str(session["_id"])
    before = snapshot()
    body = {k: v.format(sid=sid) for k, v in data.items()}
    response = mallory.post(path.format(sid=sid), body, **HTMX, **csrf(mallory))
    assert response.status_code == status
    text = response.content.decode()
    if status == 200:  # the refreshed map with an error notice: the seat is shown as someone else's
        assert "msg-error" in text
    assert _cell(session, "0:0") == HELD
    assert_unchanged(before, snapshot())


def test_a_cart_id_cannot_be_smuggled_in(session, held_by_alice):
    """No URL or field takes a cart id: the cart is the one in the buyer's own Django session."""
    alice_cart = mongo.carts().find_one({})
    mallory = buyer_client()
    before = snapshot()
    for path, data in [
        (
            "/checkout/",
            {"name": "M", "email": "m@example.org", "cart": str(alice_cart["_id"]), "cart_id": str(alice_cart["_id"])},
        ),
        ("/cart/cancel", {"cart": str(alice_cart["_id"]), "cart_id": str(alice_cart["_id"])}),
        (f"/sessions/{session['_id']}/release", {"seats": "0:0", "cart_id": str(alice_cart["_id"])}),
    ]:
        response = mallory.post(path, data, **csrf(mallory))
        assert response.status_code in (200, 302, 400, 404)
    assert mongo.carts().find_one({"_id": alice_cart["_id"]})["state"] == CartState.ACTIVE
    assert_unchanged(before, snapshot())


def test_another_buyers_order_is_not_visible(session, held_by_alice):
    response = held_by_alice.post("/checkout/", {"name": "Alice", "email": "alice@example.org"}, **csrf(held_by_alice))
    ref = response["Location"].rstrip("/").rsplit("/", 1)[1]
    order = mongo.orders().find_one({"ref": ref})
    mallory = buyer_client()
    for path in (f"/orders/{ref}/", f"/orders/{ref}/tickets/"):
        page = mallory.get(path)
        assert page.status_code == 404
        assert order["lines"][0]["ticket"] not in page.content.decode()


# --- checkout: script in names and e-mails, replays, expired carts ---


def _checkout(client, name, email):
    return client.post("/checkout/", {"name": name, "email": email}, **csrf(client))


@pytest.mark.parametrize(
    "name, email, says",
    [
        ("Eve", "<script>alert(1)</script>@example.org", "valid e-mail"),
        ("Eve", "eve@example.org\nBcc: everyone@example.org", "valid e-mail"),
        ("Eve", "", "valid e-mail"),
        ("", "eve@example.org", "enter your name"),
        ("E" * 101, "eve@example.org", "at most 100 characters"),
        ("Eve", "e" * 250 + "@example.org", "valid e-mail"),
    ],
)
def test_checkout_refuses_bad_names_and_emails_and_keeps_the_hold(name, email, says, session, held_by_alice):
    before = snapshot()
    response = _checkout(held_by_alice, name, email)
    assert response.status_code == 400
    assert says in response.content.decode()
    assert_unchanged(before, snapshot())


def test_script_in_a_name_is_stored_as_text_and_shown_escaped(session, held_by_alice):
    response = _checkout(held_by_alice, "<script>alert('x')</script> Eve", "eve@example.org")
    assert response.status_code == 302
    page = held_by_alice.get(response["Location"]).content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; Eve" in page


def test_checkout_replayed_after_success_buys_nothing_more(session, held_by_alice):
    from booking.tests.localstripe import card

    first = _checkout(held_by_alice, "Alice", "alice@example.org")
    assert first.status_code == 302 and "/orders/" in first["Location"]
    ref = first["Location"].rstrip("/").rsplit("/", 1)[1]
    paid = held_by_alice.post(f"/orders/{ref}/pay", {"payment_method": card()}, **csrf(held_by_alice))
    assert paid.json()["status"] == "paid"  # since payments, success is the payment
    before = snapshot()
    again = _checkout(held_by_alice, "Alice", "alice@example.org")
    assert again.status_code == 302
    assert again["Location"] == first["Location"]  # the same order, paid once; the cart is forgotten now
    once_more = _checkout(held_by_alice, "Alice", "alice@example.org")
    assert "/orders/" not in once_more["Location"]
    assert "no seats on hold" in held_by_alice.get(once_more["Location"]).content.decode()
    assert_unchanged(before, snapshot())
    assert mongo.orders().count_documents({}) == 1


def test_checkout_of_an_expired_cart_sells_nothing(session, held_by_alice):
    mongo.carts().update_many({}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    cart_expiry.expire_stale_carts()  # what the worker does; the checkout below must change nothing more
    before = snapshot()
    response = _checkout(held_by_alice, "Alice", "alice@example.org")
    assert response.status_code == 302
    assert "/orders/" not in response["Location"]
    assert "hold has ended" in held_by_alice.get(response["Location"]).content.decode()
    assert_unchanged(before, snapshot())
    assert _cell(session, "0:0") == FREE
    assert mongo.orders().count_documents({}) == 0


def test_checkout_at_the_moment_the_hold_ends_is_refused_and_frees_the_seats(session, held_by_alice):
    mongo.carts().update_many({}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}})
    response = _checkout(held_by_alice, "Alice", "alice@example.org")
    assert response.status_code == 302 and "/orders/" not in response["Location"]
    assert mongo.orders().count_documents({}) == 0
    assert _cell(session, "0:0") == FREE
    assert mongo.carts().find_one({})["state"] == CartState.EXPIRED


def test_unknown_object_ids_everywhere_are_404_not_500(buyer):
    oid = str(ObjectId())
    for path in (f"/sessions/{oid}/", f"/sessions/{oid}/map/"):
        assert buyer.get(path).status_code == 404
