"""Theaters in the admin: the layout editor, its preview, import/export, delete."""

import json

import pytest
from django.contrib.admin.models import ADDITION, DELETION
from django.core.files.uploadedfile import SimpleUploadedFile

from booking.core import mongo
from booking.tests.admin_support import last_log
from booking.tests.factories import make_session, make_theater

pytestmark = pytest.mark.django_db


def editor_data(name="Studio", grid="A: sss.sss\nB: ssS.Sss\n", categories=(("s", "Stalls", "#3b82f6"),)):
    data = {
        "name": name,
        "grid": grid,
        "cat-TOTAL_FORMS": "6",
        "cat-INITIAL_FORMS": "0",
        "cat-MIN_NUM_FORMS": "6",
        "cat-MAX_NUM_FORMS": "6",
    }
    for i in range(6):
        code, cat_name, color = categories[i] if i < len(categories) else ("", "", "#000000")
        data.update({f"cat-{i}-code": code, f"cat-{i}-name": cat_name, f"cat-{i}-color": color})
    return data


def test_list_shows_name_seats_and_sessions(manager_client):
    theater = make_theater(name="Grand Hall")
    make_session(theater)
    make_session(theater, days=2)
    page = manager_client.get("/admin/booking/theater/").content.decode()
    assert "Grand Hall" in page
    assert f"/admin/booking/theater/{theater['_id']}/change/" in page
    assert ">24<" in page  # seats
    assert ">2</a>" in page  # sessions


def test_drawing_a_theater_stores_the_layout_and_logs_it(manager_client, manager):
    response = manager_client.post("/admin/booking/theater/add/", editor_data())

    theater = mongo.theaters().find_one({"name": "Studio"})
    assert response.status_code == 302
    assert response["Location"] == f"/admin/booking/theater/{theater['_id']}/change/"
    assert theater["seatCount"] == 12
    row_b = theater["layout"]["rows"][1]
    assert row_b["label"] == "B"
    assert row_b["cells"][2] == {"label": "3", "cat": "s", "wheelchair": True}
    assert row_b["cells"][1]["companion"] is True
    entry = last_log("theater")
    assert (entry.object_id, entry.action_flag, entry.user_id) == (str(theater["_id"]), ADDITION, manager.pk)
    assert entry.object_repr == "Studio"
    assert entry.get_admin_url() == f"/admin/booking/theater/{theater['_id']}/change/"


def test_a_bad_character_is_refused_with_its_row_and_column(manager_client):
    response = manager_client.post("/admin/booking/theater/add/", editor_data(grid="A: ssss\nB: ssxs\n"))

    assert response.status_code == 400
    errors = response.context["form"].errors["grid"]
    assert errors == [
        "Row 2, column 3: 'x' is not a seat category (s), its upper case (wheelchair space) or '.' (gap)."
    ]
    page = response.content.decode()
    assert "ss<mark>x</mark>s" in page  # the preview marks the character
    assert mongo.theaters().count_documents({}) == 0


def test_category_rows_need_a_letter_and_a_name(manager_client):
    data = editor_data(categories=(("s", "Stalls", "#3b82f6"), ("p", "", "#a855f7")))
    response = manager_client.post("/admin/booking/theater/add/", data)
    assert response.status_code == 400
    assert response.context["formset"].forms[1].errors["name"] == ["Give this category a name."]
    assert mongo.theaters().count_documents({}) == 0


def test_the_live_preview_draws_the_map_or_points_at_the_mistake(manager_client):
    good = manager_client.post("/admin/booking/theater/preview/", editor_data(), headers={"HX-Request": "true"})
    assert good.status_code == 200
    body = good.content.decode()
    assert "12 seats" in body and body.count('<td class="seat') == 12 and "♿" in body
    bad = manager_client.post("/admin/booking/theater/preview/", editor_data(grid="A: sss\nB: s?s\n"))
    body = bad.content.decode()
    assert "Row 2, column 2" in body and "s<mark>?</mark>s" in body
    assert mongo.theaters().count_documents({}) == 0  # the preview stores nothing


def test_editing_a_theater_changes_its_template(manager_client):
    theater = make_theater(name="Old Name")
    page = manager_client.get(f"/admin/booking/theater/{theater['_id']}/change/").content.decode()
    assert "A: ssss.ssss" in page  # the stored layout comes back as the text grid
    response = manager_client.post(
        f"/admin/booking/theater/{theater['_id']}/change/", editor_data(name="New Name", grid="A: ss\nB: ss\n")
    )
    assert response.status_code == 302
    stored = mongo.theaters().find_one({"_id": theater["_id"]})
    assert (stored["name"], stored["seatCount"]) == ("New Name", 4)
    assert last_log("theater").change_message == "Changed name/layout (4 seats)."


def test_delete_is_refused_while_the_theater_has_sessions(manager_client):
    theater = make_theater()
    make_session(theater)
    page = manager_client.get(f"/admin/booking/theater/{theater['_id']}/delete/").content.decode()
    assert "cannot be deleted while it has sessions" in page
    response = manager_client.post(f"/admin/booking/theater/{theater['_id']}/delete/")
    assert response.status_code == 409
    assert "still has sessions" in response.content.decode()
    assert mongo.theaters().count_documents({"_id": theater["_id"]}) == 1


def test_delete_removes_a_theater_without_sessions_and_logs_it(manager_client):
    theater = make_theater(name="Gone")
    response = manager_client.post(f"/admin/booking/theater/{theater['_id']}/delete/")
    assert response.status_code == 302
    assert mongo.theaters().count_documents({}) == 0
    entry = last_log("theater")
    assert (entry.action_flag, entry.object_repr) == (DELETION, "Gone")


def test_export_then_import_gives_the_same_layout(manager_client):
    theater = make_theater(name="Export Me")
    exported = manager_client.get(f"/admin/booking/theater/{theater['_id']}/export/")
    assert exported["Content-Type"].startswith("application/json")
    assert 'filename="export-me-layout.json"' in exported["Content-Disposition"]
    doc = json.loads(exported.content)
    assert doc["layout"] == theater["layout"]

    upload = SimpleUploadedFile("hall.json", exported.content, content_type="application/json")
    response = manager_client.post("/admin/booking/theater/import/", {"name": "Copy", "file": upload})
    assert response.status_code == 302
    copy = mongo.theaters().find_one({"name": "Copy"})
    assert copy["layout"] == theater["layout"]
    assert "Imported layout from JSON" in last_log("theater").change_message


def test_import_refuses_broken_json_and_bad_layouts(manager_client):
    response = manager_client.post("/admin/booking/theater/import/", {"name": "X", "text": "{not json"})
    assert response.status_code == 400
    assert "This is not valid JSON" in response.context["form"].errors["text"][0]
    bad_layout = json.dumps(
        {"categories": [{"code": "s", "name": "S"}], "rows": [{"label": "A", "cells": [{"cat": "q", "label": "1"}]}]}
    )
    response = manager_client.post("/admin/booking/theater/import/", {"name": "X", "text": bad_layout})
    assert response.status_code == 400
    assert response.context["form"].errors["text"] == ["Row 1, column 1: Seat 1 has an unknown category 'q'."]
    assert mongo.theaters().count_documents({}) == 0


def surrogate_in_name(layout: dict) -> bytes:
    return json.dumps({"name": "Hall \ud800", "layout": layout}).encode()  # "\\ud800": ASCII, valid JSON


def surrogate_in_category(layout: dict) -> bytes:
    categories = [{**layout["categories"][0], "name": "S\udfff"}, *layout["categories"][1:]]
    return json.dumps({"name": "Hall", "layout": {**layout, "categories": categories}}).encode()


def surrogate_as_bytes(layout: dict) -> bytes:
    """The three bytes UTF-8 would give a surrogate: json reads them back as one."""
    return b'{"name": "Hall \xed\xa0\x80", "layout": ' + json.dumps(layout).encode() + b"}"


@pytest.mark.parametrize(
    ("field", "document"),
    [
        ("text", surrogate_in_name),
        ("text", surrogate_in_category),
        ("file", surrogate_in_name),
        ("file", surrogate_in_category),
        ("file", surrogate_as_bytes),  # a browser's form post is UTF-8: only a file brings these bytes
    ],
)
def test_import_refuses_json_with_a_lone_surrogate_as_a_form_error(manager_client, field, document):
    raw = document(make_theater()["layout"])
    mongo.theaters().delete_many({})
    if field == "text":
        data = {"text": raw.decode()}
    else:
        data = {"file": SimpleUploadedFile("hall.json", raw, content_type="application/json")}
    response = manager_client.post("/admin/booking/theater/import/", data)
    assert response.status_code == 400
    message = "This JSON has a character that is not text in it (a lone surrogate such as \\ud800)."
    assert response.context["form"].errors[field] == [message]
    assert message in response.content.decode()
    assert mongo.theaters().count_documents({}) == 0


def test_a_sectioned_venue_is_shown_and_exported_not_broken(manager_client):
    from booking.tests.factories import CATEGORIES
    from booking.venues.layouts import parse_grid
    from booking.venues.theaters import create_sectioned_theater

    sections = [{"name": n, "layout": parse_grid("A: ssss\nB: ssss\n", CATEGORIES)} for n in ("North", "South")]
    venue = create_sectioned_theater("Arena", sections)
    page = manager_client.get(f"/admin/booking/theater/{venue['_id']}/change/", follow=True)  # its own editor
    assert page.status_code == 200 and "[North]" in page.content.decode()
    exported = json.loads(manager_client.get(f"/admin/booking/theater/{venue['_id']}/export/").content)
    assert [s["name"] for s in exported["sections"]] == ["North", "South"]
    assert manager_client.get("/admin/booking/theater/").status_code == 200
