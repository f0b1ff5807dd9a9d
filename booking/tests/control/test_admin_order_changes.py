"""The admin's order changes (booking/control/order_changes.py): moving tickets with a preview,
the order's history, the session cancellation's progress; permissions and bad input."""

import re
from datetime import timedelta

import pytest
from django.utils import dateformat, timezone

from booking.core import clock, mongo
from booking.sales import cancels
from booking.sales.performance_details import sections_of
from booking.sales.sessions import create_session
from booking.tests.admin_support import assert_consistent, last_log, make_staff, sell
from booking.tests.factories import CATEGORIES, make_session, make_theater
from booking.upkeep.invariants import check_invariants
from booking.venues.layouts import parse_grid
from booking.venues.seat_grid import FREE, SOLD
from booking.venues.theaters import create_sectioned_theater

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
    form = {
        "tickets": [code],
        "session": str(session["_id"]),
        "map": str(session["_id"]),
        "seats": ["0:0"],
        "settle": "provider",
        "reason": "view",
    }
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
    base = {
        "tickets": [code],
        "session": str(session["_id"]),
        "map": str(session["_id"]),
        "settle": "provider",
        "action": "preview",
    }
    cases = [
        ({**base, "seats": ["0:5", "0:6"]}, 400, "as many new seats"),
        ({**base, "seats": ["0:1"]}, 409, "just taken"),
        ({**base, "seats": ["banana"]}, 400, "not a seat"),
        ({**base, "seats": ["9:9"]}, 400, "not a seat of this session"),
        ({**base, "tickets": ["nope"], "seats": ["0:5"]}, 400, "Select a valid choice"),
        ({**base, "session": "x" * 24, "seats": ["0:5"]}, 400, "Select a valid choice"),
        ({**base, "settle": "barter", "seats": ["0:5"]}, 400, "Select a valid choice"),
        ({**base, "seats": ["0:5"], "action": "confirm", "settle": ""}, 400, "This field is required"),
        ({**base, "seats": ["0:5"], "map": ""}, 400, "seat map was not sent"),
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
    cancels.cancel_session_orders(session["_id"])
    page = manager_client.get(f"/admin/booking/session/{session['_id']}/cancel/").content.decode()
    assert "1 of 1 orders canceled and refunded" in page and "done" in page
    assert_consistent()


def options(page: str) -> list[tuple[str, bool]]:
    """The target performances offered, in order: (id, selected)."""
    select = re.search(r'<select name="session".*?</select>', page, re.S)
    assert select is not None, "no list of performances"
    return [(i, bool(s)) for i, s in re.findall(r'<option value="([0-9a-f]{24})"( selected)?>', select.group(0))]


def map_of(page: str) -> str:
    """The performance the seat map shown belongs to (the form sends it back with the seats)."""
    found = re.search(r'<input type="hidden" name="map" value="([0-9a-f]{24})"', page)
    assert found is not None, "no seat map"
    return found.group(1)


def stadium_sooner(count: int, days: float = 1) -> list[dict]:
    """A stadium-like venue of ``count`` tiny sections with one match: ``count`` on-sale section
    sessions, all starting ``days`` from now."""
    sections = [
        {"name": f"Block {n}", "layout": parse_grid("A: ssss.ssss\nB: ssss.ssss\nC: ssss.ssss\n", CATEGORIES)}
        for n in range(1, count + 1)
    ]
    venue = create_sectioned_theater("Arena", sections)
    start = clock.now() + timedelta(days=days)
    first = create_session(
        venue["_id"],
        published=True,
        name="Cup Final",
        description="",
        start=start,
        end=start + timedelta(hours=2),
        prices={"s": 1000},
    )
    return sections_of(first["performanceId"])


def test_the_orders_own_performance_is_first_and_shown_when_many_others_start_sooner(manager_client):
    """More performances on sale before the order's own than the list holds (a stadium's sections
    each count as one): the order's own performance is still first, chosen, and its map is shown."""
    own = make_session(days=5, name="Hamlet")
    order = sell(own["_id"], ["1:2", "1:3"])
    stadium_sooner(70)
    page = manager_client.get(url(order)).content.decode()
    offered = options(page)
    assert offered[0] == (str(own["_id"]), True) and [s for _, s in offered].count(True) == 1
    assert map_of(page) == str(own["_id"])
    assert len(offered) == 1 + 50 and "20 more performances match" in page  # never cut off silently


def test_preview_refuses_seats_ticked_on_another_performances_map(manager_client):
    """The list says one performance, the seats were ticked on the map of another: a 400 that says
    so, nothing changes, and the page then shows the map of the performance chosen in the list."""
    own = make_session(days=5, name="Hamlet")
    order = sell(own["_id"], ["1:2", "1:3"])
    sections = stadium_sooner(70)
    other = sections[0]
    before = mongo.orders().find_one({"_id": order["_id"]})
    code = order["lines"][0]["ticket"]
    form = {"tickets": [code], "session": str(other["_id"]), "map": str(own["_id"]), "seats": ["0:0"]}
    for action in ("preview", "confirm"):
        response = manager_client.post(url(order), {**form, "settle": "provider", "action": action})
        page = response.content.decode()
        assert response.status_code == 400, action
        assert "ticked on the seat map of another performance" in page, action
        assert map_of(page) == str(other["_id"]) and "checked" not in re.sub(r'name="(tickets|settle)"[^>]*', "", page)
    after = mongo.orders().find_one({"_id": order["_id"]})
    assert after["lines"] == before["lines"] and "exchanges" not in after
    assert cell(other, "0:0") == FREE and cell(own, "0:0") == FREE
    assert_consistent()


def test_choosing_another_performance_shows_its_map_and_forgets_the_seats_ticked(manager_client):
    own = make_session(days=5, name="Hamlet")
    order = sell(own["_id"], ["1:2", "1:3"])
    studio = make_session(make_theater(name="Studio"), days=6, name="Endgame")
    code = order["lines"][0]["ticket"]
    shown = {"tickets": [code], "session": str(studio["_id"]), "map": str(own["_id"]), "seats": ["0:0"]}
    page = manager_client.post(url(order), {**shown, "action": "show"}).content.decode()
    assert map_of(page) == str(studio["_id"]) and options(page)[0] == (str(own["_id"]), False)
    assert (str(studio["_id"]), True) in options(page)
    assert 'value="0:0" checked' not in page  # ticked on Hamlet's map: not carried to Endgame's
    assert "Endgame · Studio" in page  # the map says whose it is


def test_target_performances_are_found_by_title_and_by_date(manager_client):
    own = make_session(days=5, name="Hamlet")
    order = sell(own["_id"], ["1:2", "1:3"])
    stadium_sooner(70)
    later = make_session(make_theater(name="Studio"), days=9, name="Endgame")
    code = order["lines"][0]["ticket"]
    base = {"tickets": [code], "session": str(own["_id"]), "map": str(own["_id"]), "action": "search"}
    assert str(later["_id"]) not in dict(options(manager_client.get(url(order)).content.decode()))

    by_title = manager_client.post(url(order), {**base, "find": "endg"}).content.decode()
    assert [i for i, _ in options(by_title)] == [str(own["_id"]), str(later["_id"])]
    assert map_of(by_title) == str(own["_id"]) and "more performances match" not in by_title

    day = later["start"].astimezone(timezone.get_current_timezone()).date().isoformat()
    by_date = manager_client.post(url(order), {**base, "day": day}).content.decode()
    assert [i for i, _ in options(by_date)] == [str(own["_id"]), str(later["_id"])]

    by_hall = manager_client.post(url(order), {**base, "find": "block 7"}).content.decode()
    found = [label for _, label in re.findall(r'<option value="([0-9a-f]{24})"[^>]*>([^<]*)', by_hall)]
    assert [label.split(" · ")[1] for label in found[1:]] == ["Arena – Block 7", "Arena – Block 70"]

    nothing = manager_client.post(url(order), {**base, "find": "zzz"}).content.decode()
    assert options(nothing) == [(str(own["_id"]), True)] and "No other performance matches" in nothing
    bad_day = manager_client.post(url(order), {**base, "day": "31.02.2030"})
    assert bad_day.status_code == 400 and "Enter a valid date" in bad_day.content.decode()


def test_the_preview_names_performance_hall_and_date_of_both_sides(manager_client):
    own = make_session(days=5, name="Hamlet")
    order = sell(own["_id"], ["1:2", "1:3"])
    studio = make_session(make_theater(name="Studio"), days=6, name="Endgame")
    code = order["lines"][0]["ticket"]
    form = {"tickets": [code], "session": str(studio["_id"]), "map": str(studio["_id"]), "seats": ["0:0"]}
    page = manager_client.post(url(order), {**form, "settle": "provider", "action": "preview"}).content.decode()
    preview = page[page.index("exchange-preview") :]
    own_when, studio_when = (dateformat.format(timezone.localtime(s["start"]), "D j M Y, H:i") for s in (own, studio))
    assert re.search(rf"From.*Hamlet.*Test Hall.*{own_when}.*To.*Endgame.*Studio.*{studio_when}", preview, re.S)
    assert "another hall" in preview and "another date" in preview
