"""Staff set a theater's address and directions on its change page."""

import pytest

from booking.tests.admin_support import last_log, make_staff
from booking.tests.factories import make_theater
from booking.venues.addresses import LINE_LONGEST, address_of, update_address

pytestmark = pytest.mark.django_db


def address_url(theater) -> str:
    return f"/admin/booking/theater/{theater['_id']}/address/"


def form(**fields) -> dict:
    given = {"street": "Opernplatz 1", "postal_code": "60313", "city": "Frankfurt", "directions": "U6.", **fields}
    return {f"address-{name}": value for name, value in given.items()}


def test_the_change_page_shows_the_address_form_with_what_is_stored(manager_client):
    theater = make_theater()
    update_address(theater_id=theater["_id"], street="Opernplatz 1", postal_code="60313", city="Frankfurt")
    page = manager_client.get(f"/admin/booking/theater/{theater['_id']}/change/").content.decode()
    assert "Address and directions" in page and 'value="Opernplatz 1"' in page
    assert f'action="{address_url(theater)}"' in page


def test_staff_save_an_address_and_the_admin_log_says_so(manager_client):
    theater = make_theater()
    response = manager_client.post(address_url(theater), form(directions_de="U6 bis Alte Oper."))
    assert response.status_code == 302
    stored = address_of(theater["_id"])
    assert stored is not None
    assert stored["street"] == "Opernplatz 1" and stored["directionsDe"] == "U6 bis Alte Oper."
    assert last_log("theater").change_message == "Address: Opernplatz 1, 60313 Frankfurt"
    page = manager_client.get(response["Location"]).content.decode()
    assert "Address saved: Opernplatz 1, 60313 Frankfurt" in page


def test_a_refused_address_says_why_and_changes_nothing(manager_client):
    theater = make_theater()
    update_address(theater_id=theater["_id"], street="Opernplatz 1", postal_code="", city="Frankfurt")
    too_long = manager_client.post(address_url(theater), form(street="x" * (LINE_LONGEST["street"] + 1)), follow=True)
    assert too_long.status_code == 200 and "at most 120 characters" in too_long.content.decode()
    no_city = manager_client.post(address_url(theater), form(city=""), follow=True)
    assert "street and the city" in no_city.content.decode()
    assert address_of(theater["_id"])["street"] == "Opernplatz 1"


def test_empty_fields_remove_the_address(manager_client):
    theater = make_theater()
    update_address(theater_id=theater["_id"], street="Opernplatz 1", postal_code="", city="Frankfurt")
    manager_client.post(address_url(theater), form(street="", postal_code="", city="", directions=""))
    assert address_of(theater["_id"]) is None


def test_staff_who_may_only_look_cannot_change_the_address(client):
    theater = make_theater()
    client.force_login(make_staff("viewer", ["view_theater"]))
    assert client.post(address_url(theater), form()).status_code == 403
    assert client.get(address_url(theater)).status_code == 405
    assert address_of(theater["_id"]) is None


def test_an_unknown_or_malformed_theater_is_a_404(manager_client):
    assert manager_client.post("/admin/booking/theater/0123456789abcdef01234567/address/", form()).status_code == 404
    assert manager_client.post("/admin/booking/theater/not-an-id/address/", form()).status_code == 404
