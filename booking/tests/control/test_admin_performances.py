"""A sectioned venue in the admin: its performance listed once with its sections,
sales summed, whole sections blocked and released, the whole performance canceled at once; and
sectioned venues drawn and edited in the admin."""

import pytest

from booking.core import mongo
from booking.sales import cancels, holds, performance_details, performances
from booking.sales.sessions import create_session
from booking.tests.admin_support import last_log, sell
from booking.tests.factories import CATEGORIES
from booking.upkeep.invariants import check_invariants
from booking.venues.layouts import parse_grid
from booking.venues.seat_grid import BLOCKED, FREE, HELD
from booking.venues.sections_text import parse_sections, sections_to_text
from booking.venues.theaters import create_sectioned_theater

GRID = "A: ssss\nB: pppp\n"


def make_venue(count=3):
    sections = [{"name": f"North {n}", "layout": parse_grid(GRID, CATEGORIES)} for n in range(1, count + 1)]
    return create_sectioned_theater("Arena", sections)


def make_match(venue):
    from datetime import timedelta

    from booking.core import clock

    start = clock.now() + timedelta(days=3)
    first = create_session(
        venue["_id"],
        published=True,
        name="Cup Final",
        description="",
        start=start,
        end=start + timedelta(hours=2),
        prices={"s": 1000, "p": 2000},
    )
    return first["performanceId"], performance_details.sections_of(first["performanceId"])


def test_the_session_list_shows_a_sectioned_performance_once_with_its_sales_summed(manager_client):
    pid, sections = make_match(make_venue(3))
    sell(sections[0]["_id"], ["0:0", "0:1"])
    sell(sections[2]["_id"], ["1:0", "1:1"])
    page = manager_client.get("/admin/booking/session/")
    html = page.content.decode()
    assert html.count("Cup Final") == 1 and "(3 sections)" in html
    assert f"/admin/booking/session/performance/{pid}/" in html
    row = next(s for s in page.context["sessions"] if s.get("performance"))
    assert row["counts"]["sold"] == 4 and row["counts"]["total"] == 24 and row["theaterName"] == "Arena"


def test_the_performance_page_lists_each_section_with_its_counts(manager_client):
    pid, sections = make_match(make_venue(3))
    sell(sections[1]["_id"], ["0:0"])
    page = manager_client.get(f"/admin/booking/session/performance/{pid}/")
    assert page.status_code == 200
    html = page.content.decode()
    for section in sections:
        assert f"/admin/booking/session/{section['_id']}/seats/" in html
    assert page.context["total"]["sold"] == 1 and page.context["total"]["free"] == 23
    assert manager_client.get("/admin/booking/session/performance/000000000000000000000000/").status_code == 404


def test_whole_sections_are_blocked_and_released_at_once_leaving_held_seats_alone(manager_client):
    pid, sections = make_match(make_venue(3))
    holds.hold_seats(sections[0]["_id"], "s:buyer", None, ["0:0", "0:1"])
    url = f"/admin/booking/session/performance/{pid}/"
    chosen = [str(sections[0]["_id"]), str(sections[1]["_id"])]
    response = manager_client.post(url, {"action": "block", "sections": chosen})
    assert response.status_code == 302
    first = mongo.sessions().find_one({"_id": sections[0]["_id"]})
    assert first["seats"][0][:2] == [HELD, HELD] and first["seats"][0][2] == BLOCKED and first["seatsAvailable"] == 0
    assert mongo.sessions().find_one({"_id": sections[2]["_id"]})["seatsAvailable"] == 8  # not ticked
    assert "Blocked 14 seats in 2 sections." in last_log("session").change_message
    assert check_invariants() == []
    manager_client.post(url, {"action": "unblock", "sections": chosen})
    assert mongo.sessions().find_one({"_id": sections[1]["_id"]})["seats"][0] == [FREE] * 4
    assert check_invariants() == []


@pytest.mark.parametrize(
    "data", [{"action": "block"}, {"action": "explode", "sections": []}, {"action": "block", "sections": ["nope"]}]
)
def test_bad_section_actions_are_400_and_change_nothing(manager_client, data):
    pid, sections = make_match(make_venue(2))
    response = manager_client.post(f"/admin/booking/session/performance/{pid}/", data)
    assert response.status_code == 400
    assert all(mongo.sessions().find_one({"_id": s["_id"]})["seatsAvailable"] == 8 for s in sections)
    assert check_invariants() == []


def test_a_section_of_another_performance_is_refused():
    pid, _sections = make_match(make_venue(2))
    _other, others = make_match(make_venue(1))
    with pytest.raises(Exception, match="sections of this performance"):
        performances.set_sections_blocked(pid, [others[0]["_id"]], True)


def test_canceling_the_performance_cancels_every_section_once_confirmed(manager_client):
    pid, sections = make_match(make_venue(3))
    order = sell(sections[0]["_id"], ["0:0"])
    holds.hold_seats(sections[2]["_id"], "s:other", None, ["1:0", "1:1"])
    url = f"/admin/booking/session/performance/{pid}/cancel/"
    refused = manager_client.post(url, {})
    assert refused.status_code == 409
    assert all(s["status"] == "on_sale" for s in performance_details.sections_of(pid))
    done = manager_client.post(url, {"cancel_orders": "on"})
    assert done.status_code == 302
    assert all(s["status"] == "canceled" for s in performance_details.sections_of(pid))

    for section in sections:  # the worker's task per section (sales/session_cancel.py)
        cancels.cancel_session_orders(section["_id"])
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] in ("canceled", "refunded")
    assert mongo.sessions().find_one({"_id": sections[2]["_id"]})["seats"][1][:2] == [FREE, FREE]
    assert check_invariants() == []


def test_cancel_needs_the_delete_permission(client, db):
    from booking.tests.admin_support import make_staff

    pid, _sections = make_match(make_venue(1))
    client.force_login(make_staff("viewer", ["view_session", "change_session"]))
    assert client.post(f"/admin/booking/session/performance/{pid}/cancel/", {}).status_code == 403
    assert check_invariants() == []


# --- sectioned venues drawn in the admin ---

FORM = {
    "name": "Harbour Arena",
    "sections": "[West]\nA: ssss\nB: pppp\n\n[East]\nA: ssSs\n",
    "cat-TOTAL_FORMS": "2",
    "cat-INITIAL_FORMS": "0",
    "cat-MIN_NUM_FORMS": "0",
    "cat-MAX_NUM_FORMS": "1000",
    "cat-0-code": "s",
    "cat-0-name": "Stand",
    "cat-0-color": "#3b82f6",
    "cat-1-code": "p",
    "cat-1-name": "Premium",
    "cat-1-color": "#a855f7",
}


def _form(manager_client, **changes):
    management = manager_client.get("/admin/booking/theater/add-sectioned/").context["formset"].management_form
    data = {**FORM, **{f"cat-{k}": v for k, v in management.initial.items()}, **changes}
    data["cat-TOTAL_FORMS"] = str(management.initial["TOTAL_FORMS"])
    return data


def test_a_sectioned_venue_is_created_edited_and_used_for_a_performance(manager_client):
    response = manager_client.post("/admin/booking/theater/add-sectioned/", _form(manager_client))
    assert response.status_code == 302, response.content.decode()[:2000]
    venue = mongo.theaters().find_one({"name": "Harbour Arena"})
    assert [s["name"] for s in venue["sections"]] == ["West", "East"] and venue["seatCount"] == 12
    edit = f"/admin/booking/theater/{venue['_id']}/sections/"
    page = manager_client.get(edit)
    assert "[West]" in page.content.decode() and "A: ssSs" in page.content.decode()
    changed = _form(manager_client, name="Harbour Arena", sections=FORM["sections"] + "\n[South]\nA: pp\n")
    assert manager_client.post(edit, changed).status_code == 302
    venue = mongo.theaters().find_one({"_id": venue["_id"]})
    assert [s["name"] for s in venue["sections"]] == ["West", "East", "South"] and venue["seatCount"] == 14
    pid, sections = make_match(venue)
    assert len(sections) == 3 and sections[2]["seatsTotal"] == 2
    assert check_invariants() == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A: ssss\n", "start with a section name in brackets"),
        ("[West]\nA: sxss\n", "Section “West”"),
        ("[West]\nA: ss\n[West]\nA: ss\n", "used twice"),
        ("", "This field is required"),
    ],
)
def test_a_wrong_sectioned_venue_is_refused_with_a_message_and_nothing_stored(manager_client, text, message):
    response = manager_client.post("/admin/booking/theater/add-sectioned/", _form(manager_client, sections=text))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert mongo.theaters().count_documents({}) == 0


def test_sections_text_round_trips():
    sections = parse_sections("[West]\nA: ss.S\n[East]\nA: pp\n", CATEGORIES)
    assert parse_sections(sections_to_text(sections), CATEGORIES) == sections


def test_adding_a_performance_in_a_sectioned_venue_opens_the_performance(manager_client):
    venue = make_venue(2)
    data = {"name": "Derby", "description": "", "start": "2031-05-01 18:00", "end": "2031-05-01 20:00"}
    data.update({"price_s": "10", "price_p": "20"})
    response = manager_client.post(f"/admin/booking/session/add/?theater={venue['_id']}", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    first = mongo.sessions().find_one({"name": "Derby"}, hint=[("_id", 1)])
    assert response["Location"] == f"/admin/booking/session/performance/{first['performanceId']}/"


def test_a_sectioned_venue_exported_as_json_is_imported_again(manager_client):
    import json

    venue = make_venue(2)
    exported = manager_client.get(f"/admin/booking/theater/{venue['_id']}/export/").content.decode()
    response = manager_client.post("/admin/booking/theater/import/", {"name": "Arena II", "text": exported})
    assert response.status_code == 302
    copy = mongo.theaters().find_one({"name": "Arena II"})
    assert copy["sections"] == venue["sections"] and copy["seatCount"] == 16
    broken = json.loads(exported)
    broken["sections"][1]["name"] = broken["sections"][0]["name"]
    refused = manager_client.post("/admin/booking/theater/import/", {"name": "Arena III", "text": json.dumps(broken)})
    assert refused.status_code == 400 and "used twice" in refused.content.decode()


def test_details_and_prices_are_changed_for_every_section_at_once(manager_client):
    pid, sections = make_match(make_venue(3))
    url = f"/admin/booking/session/performance/{pid}/change/"
    page = manager_client.get(url)
    assert page.status_code == 200 and page.context["form"].initial["name"] == "Cup Final"
    data = {
        "name": "Cup Final (replay)",
        "description": "Again",
        "start": "2031-06-01 18:00",
        "end": "2031-06-01 20:00",
    }
    refused = manager_client.post(url, {**data, "price_s": "12", "price_p": "-1"})
    assert refused.status_code == 400
    assert all(s["name"] == "Cup Final" for s in performance_details.sections_of(pid))  # nothing written
    assert manager_client.post(url, {**data, "price_s": "12", "price_p": "25"}).status_code == 302
    for section in performance_details.sections_of(pid):
        assert section["name"] == "Cup Final (replay)" and section["prices"] == {"s": 1200, "p": 2500}
    assert check_invariants() == []


def _details(name, prices):
    from datetime import timedelta

    from booking.core import clock

    start = (clock.now() + timedelta(days=10)).replace(microsecond=0)
    return {"name": name, "description": "", "start": start, "end": start + timedelta(hours=2), "prices": prices}


@pytest.mark.parametrize(
    ("point", "written_before"),
    [("performance.after_intent", 0), ("performance.after_section", 1)],
    ids=["recorded, no section written", "one section written"],
)
def test_a_details_change_a_crash_left_half_written_is_finished_by_reconcile(crash_at, point, written_before):
    from booking.core import faults
    from booking.upkeep.reconcile import reconcile

    pid, _ = make_match(make_venue(3))
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        performances.update_details(pid, **_details("Cup Final (replay)", {"s": 1200, "p": 2500}))
    faults.set_hook(None)
    names = ["Cup Final (replay)"] * written_before + ["Cup Final"] * (3 - written_before)
    assert [s["name"] for s in performance_details.sections_of(pid)] == names
    report = reconcile()
    assert report.sections_updated == 3 - written_before
    for section in performance_details.sections_of(pid):
        assert section["name"] == "Cup Final (replay)" and section["prices"] == {"s": 1200, "p": 2500}
    assert "open" not in performance_details.sections_of(pid)[0]["detailsChange"]
    assert reconcile().sections_updated == 0
    assert check_invariants() == []


def test_the_performance_page_finishes_a_half_written_change_before_showing_it(manager_client, crash_at):
    from booking.core import faults

    pid, _ = make_match(make_venue(2))
    crash_at("performance.after_section")
    with pytest.raises(faults.InjectedCrash):
        performances.update_details(pid, **_details("Derby", {"s": 900, "p": 1900}))
    faults.set_hook(None)
    page = manager_client.get(f"/admin/booking/session/performance/{pid}/")
    assert page.status_code == 200
    assert [s["name"] for s in performance_details.sections_of(pid)] == ["Derby", "Derby"]
    assert check_invariants() == []


def test_an_older_half_written_change_never_overwrites_a_newer_save(crash_at):
    from booking.core import faults

    pid, _ = make_match(make_venue(3))
    crash_at("performance.after_section")
    with pytest.raises(faults.InjectedCrash):
        performances.update_details(pid, **_details("First try", {"s": 1100, "p": 2100}))
    faults.set_hook(None)
    older = performance_details.sections_of(pid)[0]["detailsChange"]
    performances.update_details(pid, **_details("Second try", {"s": 1300, "p": 2300}))
    performance_details.apply_details(
        pid, performance_details.sections_of(pid)[0]["_id"], older
    )  # the first request, late
    for section in performance_details.sections_of(pid):
        assert section["name"] == "Second try" and section["prices"] == {"s": 1300, "p": 2300}
    assert check_invariants() == []
