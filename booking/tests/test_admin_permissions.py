"""Who sees the booking pages of the admin site: Django's permissions decide."""

import pytest

from booking.tests.admin_support import make_staff
from booking.tests.factories import make_session

pytestmark = pytest.mark.django_db

LIST_URLS = ["/admin/booking/theater/", "/admin/booking/session/", "/admin/booking/cart/", "/admin/booking/order/"]


def test_the_index_lists_the_booking_pages_beside_users_and_groups(admin_client):
    page = admin_client.get("/admin/").content.decode()
    for name in ("Users", "Groups", "Theaters", "Sessions", "Carts", "Orders"):
        assert name in page
    assert 'href="/admin/booking/theater/add/"' in page
    assert 'href="/admin/booking/cart/add/"' not in page  # carts come from buyers only


def test_staff_without_the_booking_permission_sees_nothing_of_it(client):
    session = make_session()
    client.force_login(make_staff("clerk"))
    index = client.get("/admin/").content.decode()
    assert "Theaters" not in index and "Booking" not in index
    for url in [*LIST_URLS, "/admin/booking/theater/add/", f"/admin/booking/session/{session['_id']}/seats/"]:
        assert client.get(url).status_code == 403, url


def test_a_view_only_user_can_look_but_not_change(client):
    session = make_session()
    client.force_login(make_staff("viewer", ["view_theater", "view_session"]))
    assert client.get("/admin/booking/theater/").status_code == 200
    assert client.get("/admin/booking/session/").status_code == 200
    assert client.get("/admin/booking/theater/add/").status_code == 403
    assert client.get("/admin/booking/order/").status_code == 403
    response = client.post(f"/admin/booking/session/{session['_id']}/seats/", {"action": "block", "seats": ["0:0"]})
    assert response.status_code == 403
    response = client.get(f"/admin/booking/session/{session['_id']}/seats/")
    assert response.status_code == 200
    assert b"Block ticked seats" not in response.content
    assert client.post(f"/admin/booking/session/{session['_id']}/cancel/").status_code == 403


def test_anonymous_visitors_are_sent_to_the_login(client):
    for url in LIST_URLS:
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_malformed_and_unknown_ids_are_404(admin_client):
    assert admin_client.get("/admin/booking/theater/not-an-id/change/").status_code == 404
    assert admin_client.get("/admin/booking/session/64b7f0c2a1b2c3d4e5f60718/seats/").status_code == 404
    assert admin_client.get("/admin/booking/order/64b7f0c2a1b2c3d4e5f60718/change/").status_code == 404
