"""The admin's ticket types (theater) and price table (session) pages: saving, bad input (a form
error, never a 500) and permissions."""

import pytest

from booking.core import mongo
from booking.sales import offers
from booking.tests.admin_support import make_staff
from booking.tests.factories import TYPES, make_session, make_theater

pytestmark = pytest.mark.django_db


def types_url(theater):
    return f"/admin/booking/theater/{theater['_id']}/ticket-types/"


def prices_url(session):
    return f"/admin/booking/session/{session['_id']}/prices/"


def types_post(rows):
    data = {"types-TOTAL_FORMS": str(len(rows)), "types-INITIAL_FORMS": "0"}
    for n, row in enumerate(rows):
        data.update({f"types-{n}-{k}": v for k, v in row.items()})
    return data


def test_staff_edit_ticket_types(manager_client):
    theater = make_theater()
    assert "Full price" in manager_client.get(types_url(theater)).content.decode()
    rows = [
        {"code": "full", "name": "Full price"},
        {"code": "reduced", "name": "Reduced", "description": "Students; show proof"},
        {"code": "companion", "name": "Companion", "companion": "on"},
        {"code": "", "name": ""},  # an empty extra row
    ]
    assert manager_client.post(types_url(theater), types_post(rows)).status_code == 302
    stored = mongo.theaters().find_one({"_id": theater["_id"]})["ticketTypes"]
    assert [t["code"] for t in stored] == ["full", "reduced", "companion"] and stored[2]["companion"] is True


def test_staff_give_a_ticket_type_a_german_name_and_a_condition_in_both_languages(manager_client):
    theater = make_theater()
    rows = [
        {"code": "full", "name": "Full price", "name_de": "Normalpreis"},
        {
            "code": "concession",
            "name": "Concession",
            "name_de": "Ermäßigt",
            "description": "Students and seniors; show ID at the door",
            "description_de": "Studierende und Senioren; Ausweis am Einlass zeigen",
        },
        {"code": "child", "name": "Child (under 14)"},
    ]
    assert manager_client.post(types_url(theater), types_post(rows)).status_code == 302
    stored = mongo.theaters().find_one({"_id": theater["_id"]})["ticketTypes"]
    assert stored == [
        {"code": "full", "name": "Full price", "nameDe": "Normalpreis", "description": ""},
        {
            "code": "concession",
            "name": "Concession",
            "nameDe": "Ermäßigt",
            "description": "Students and seniors; show ID at the door",
            "descriptionDe": "Studierende und Senioren; Ausweis am Einlass zeigen",
        },
        {"code": "child", "name": "Child (under 14)", "description": ""},  # German pages: the English name
    ]
    page = manager_client.get(types_url(theater)).content.decode()
    assert 'value="Ermäßigt"' in page and 'value="Studierende und Senioren; Ausweis am Einlass zeigen"' in page


@pytest.mark.parametrize(
    "rows",
    [
        [{"code": "Bad code!", "name": "x"}],
        [{"code": "a", "name": "A"}, {"code": "a", "name": "B"}],
        [{"code": "nameless", "name": ""}],
    ],
)
def test_bad_ticket_types_are_a_form_error(manager_client, rows):
    theater = make_theater()
    response = manager_client.post(types_url(theater), types_post(rows))
    assert response.status_code == 400
    assert "ticketTypes" not in mongo.theaters().find_one({"_id": theater["_id"]})


def test_staff_edit_the_price_table(manager_client):
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    page = manager_client.get(prices_url(session)).content.decode()
    assert "Reduced" in page and "Companion" in page
    data = {"full__s": "20.00", "full__p": "35.00", "reduced__s": "15.50", "reduced__p": "", "companion__s": "0"}
    assert manager_client.post(prices_url(session), data).status_code == 302
    stored = mongo.sessions().find_one({"_id": session["_id"]})
    assert stored["prices"] == {"s": 2000, "p": 3500}
    assert stored["typePrices"] == {"reduced": {"s": 1550}, "companion": {"s": 0}}
    assert stored["priceRev"] == 1


@pytest.mark.parametrize(
    "data",
    [
        {"full__s": "20.00", "full__p": "35.00", "reduced__s": "-1"},  # negative
        {"full__s": "", "full__p": "35.00"},  # full price missing
        {"full__s": "20.00", "full__p": "abc"},
    ],
)
def test_bad_price_table_is_a_form_error(manager_client, data):
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    response = manager_client.post(prices_url(session), data)
    assert response.status_code == 400
    assert "typePrices" not in mongo.sessions().find_one({"_id": session["_id"]})


def test_unknown_ticket_type_in_the_post_changes_nothing_of_it(manager_client):
    session = make_session()  # theater without types: full price only
    response = manager_client.post(prices_url(session), {"full__s": "20", "full__p": "30", "vip__s": "5"})
    assert response.status_code == 302
    assert mongo.sessions().find_one({"_id": session["_id"]})["typePrices"] == {}


def test_permissions(client):
    theater = make_theater()
    session = make_session(theater)
    client.force_login(make_staff("clerk"))
    assert client.get(types_url(theater)).status_code == 403
    assert client.get(prices_url(session)).status_code == 403
    client.force_login(make_staff("viewer", ["view_theater", "view_session"]))
    assert client.get(types_url(theater)).status_code == 200
    assert client.get(prices_url(session)).status_code == 200
    assert client.post(types_url(theater), types_post([{"code": "x", "name": "X"}])).status_code == 403
    assert client.post(prices_url(session), {"full__s": "1", "full__p": "1"}).status_code == 403
    assert "ticketTypes" not in mongo.theaters().find_one({"_id": theater["_id"]})
    assert mongo.sessions().find_one({"_id": session["_id"]})["prices"] == {"s": 2000, "p": 3500}
    client.logout()
    assert client.get(types_url(theater)).status_code == 302
