"""The admin's order changes (booking/staff/order_changes.py): moving tickets with a preview,
the order's history, the session cancellation's progress; permissions and bad input."""

import re

import pytest

from booking import mongo
from booking.invariants import check_invariants
from booking.seat_grid import FREE, SOLD
from booking.services import session_cancel
from booking.tests.admin_support import assert_consistent, last_log, make_staff, sell
from booking.tests.factories import make_session

pytestmark = pytest.mark.slow


def cell(session, key):
    r, c = (int(x) for x in key.split(":"))
    return mongo.sessions().find_one({"_id": session["_id"]})["seats"][r][c]


def url(order):
    return f"/admin/booking/order/{order['_id']}/exchange/"


def test_staff_preview_then_move_tickets_and_see_it_in_the_history(manager_client):
    session = make_session()
    order = sell(session["_id"], ["1:2", "1:3"])
    page = manager_client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert "Move tickets…" in page and "History" in page and "Booked" in page

    page = manager_client.get(url(order))
    assert page.status_code == 200 and 'name="seats" value="0:0"' in page.content.decode()
    assert 'name="seats" value="1:2"' not in page.content.decode()  # its own, sold: not offered
    own = re.findall(r'<td class="seat st-sold mine"[^>]*title="([^"]+)"', page.content.decode())
    assert len(own) == 2 and all(t.endswith("– this booking") for t in own)  # where the customer sits now

    code = order["lines"][0]["ticket"]
    form = {"tickets": [code], "session": str(session["_id"]), "seats": ["0:0"], "settle": "provider", "reason": "view"}
    preview = manager_client.post(url(order), {**form, "action": "preview"})
    text = preview.content.decode()
    assert preview.status_code == 200 and "Preview" in text and "gets <strong>€15</strong> back" in text
    assert cell(session, "0:0") == FREE and "exchanges" not in mongo.orders().find_one({"_id": order["_id"]})

    done = manager_client.post(url(order), {**form, "action": "confirm"})
    assert done.status_code == 302
    after = mongo.orders().find_one({"_id": order["_id"]})
    assert sorted(line["key"] for line in after["lines"]) == ["0:0", "1:3"]
    assert cell(session, "0:0") == SOLD and cell(session, "1:2") == FREE
    log = last_log("order")
    assert log is not None and log.change_message.startswith("Moved B3 to A1")
    page = manager_client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert '<strong data-state="paid">Paid</strong>' in page  # the state's label, not its code
    assert "Tickets moved" in page and "B3 → A1" in page and "E-mail to the customer" in page
    assert_consistent()


def test_bad_input_is_a_clear_4xx_and_changes_nothing(manager_client):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    code = order["lines"][0]["ticket"]
    base = {"tickets": [code], "session": str(session["_id"]), "settle": "provider", "action": "preview"}
    cases = [
        ({**base, "seats": ["0:5", "0:6"]}, 400, "as many new seats"),
        ({**base, "seats": ["0:1"]}, 409, "just taken"),
        ({**base, "seats": ["banana"]}, 400, "not a seat"),
        ({**base, "seats": ["9:9"]}, 400, "not a seat of this session"),
        ({**base, "tickets": ["nope"], "seats": ["0:5"]}, 400, "Select a valid choice"),
        ({**base, "session": "x" * 24, "seats": ["0:5"]}, 400, "Select a valid choice"),
        ({**base, "settle": "barter", "seats": ["0:5"]}, 400, "Select a valid choice"),
        ({**base, "seats": ["0:5"], "action": "confirm", "settle": ""}, 400, "This field is required"),
    ]
    for data, status, text in cases:
        response = manager_client.post(url(order), data)
        assert response.status_code == status, (data, response.status_code)
        assert text in response.content.decode(), (data, text)
    assert mongo.orders().find_one({"_id": order["_id"]})["lines"] == order["lines"]
    assert manager_client.get("/admin/booking/order/not-an-id/exchange/").status_code == 404
    assert_consistent()


def test_moving_tickets_needs_the_change_permission(client, db):
    session = make_session()
    order = sell(session["_id"], ["0:0", "0:1"])
    client.force_login(make_staff("viewer", ["view_order"]))
    assert client.get(f"/admin/booking/order/{order['_id']}/change/").status_code == 200
    assert "Move tickets…" not in client.get(f"/admin/booking/order/{order['_id']}/change/").content.decode()
    assert client.get(url(order)).status_code == 403
    data = {"tickets": [order["lines"][0]["ticket"]], "session": str(session["_id"]), "seats": ["0:5"]}
    assert client.post(url(order), {**data, "settle": "provider", "action": "confirm"}).status_code == 403
    assert mongo.orders().find_one({"_id": order["_id"]})["lines"] == order["lines"]
    client.logout()
    assert client.get(url(order)).status_code == 302  # to the login
    assert check_invariants() == []


def test_the_session_page_shows_the_cancellation_progress(manager_client):
    session = make_session()
    sell(session["_id"], ["0:0", "0:1"])
    response = manager_client.post(f"/admin/booking/session/{session['_id']}/cancel/", {"cancel_orders": "on"})
    assert response.status_code == 302
    page = manager_client.get(f"/admin/booking/session/{session['_id']}/cancel/").content.decode()
    assert "0 of 1 orders canceled and refunded" in page
    session_cancel.run(session["_id"])
    page = manager_client.get(f"/admin/booking/session/{session['_id']}/cancel/").content.decode()
    assert "1 of 1 orders canceled and refunded" in page and "done" in page
    assert_consistent()
