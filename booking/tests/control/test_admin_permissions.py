"""Who sees the booking pages of the admin site: Django's permissions decide; each grants what its
name promises, and the ready-made groups do what the README says they do."""

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import timedelta

import pytest
from django.apps import apps as django_apps
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations import AlterModelOptions, CreateModel, RunPython
from django.urls import reverse
from django.utils import timezone

from booking.control.groups import create_groups
from booking.core import mongo
from booking.tests.admin_support import assert_consistent, make_staff, sell
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.venues.seat_grid import BLOCKED

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


# --- what a permission's name promises, it grants ---


def sell_url(name: str, *args) -> str:
    return reverse(f"admin:booking_session_{name}", args=[str(a) for a in args])


def counter_sale(client, session, **sale) -> dict:
    """A sale through the counter's pages: a seat clicked, the customer's details, the order."""
    assert client.post(sell_url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX).status_code == 200
    done = client.post(sell_url("sell_checkout", session["_id"]), {"channel": "box_office", **sale})
    order = mongo.orders().find_one({"name": sale["name"]}, hint=[("_id", 1)])
    assert done.status_code == 302 and done["Location"] == sell_url("sold", order["ref"])
    return order


# Pages a counter seller has no business on (each needs a permission of its own).
NOT_FOR_SELLERS = [
    "/admin/booking/theater/",
    "/admin/booking/theater/add/",
    "/admin/booking/session/add/",
    "/admin/booking/cart/",
    "/admin/booking/report/",
    "/admin/booking/promocode/",
    "/admin/booking/waitingroom/",
    "/admin/auth/user/",
    "/checkin/",
]


def test_the_counter_permission_alone_reaches_everything_a_counter_sale_needs(client):
    session = make_session(days=4)
    client.force_login(make_staff("till", ["sell_at_counter"]))

    index = client.get("/admin/")
    assert index.status_code == 200
    page = index.content.decode()
    assert "permission to view or edit anything" not in page
    assert 'href="/admin/booking/boxoffice/"' in page and "Box office" in page
    entry = client.get("/admin/booking/boxoffice/")
    assert entry.status_code == 302 and entry["Location"] == "/admin/booking/session/"
    listing = client.get("/admin/booking/session/")
    assert listing.status_code == 200 and f'href="{sell_url("sell", session["_id"])}"' in listing.content.decode()
    assert client.get(sell_url("sell", session["_id"])).status_code == 200

    order = counter_sale(client, session, name="Grace Hopper", method="cash")
    sold = client.get(sell_url("sold", order["ref"]))
    order_page = reverse("admin:booking_order_change", args=[str(order["_id"])])
    assert sold.status_code == 200 and f'href="{order_page}"' in sold.content.decode()
    assert client.get(order_page).status_code == 200
    assert client.get("/admin/booking/order/", {"q": "Grace"}).status_code == 200  # a customer asks at the counter

    for path in NOT_FOR_SELLERS:
        assert client.get(path).status_code in (302, 403), path
    # seeing a session or an order is not changing it
    assert client.post(f"/admin/booking/order/{order['_id']}/cancel/", {"reason": "customer called"}).status_code == 403
    edit = client.post(f"/admin/booking/session/{session['_id']}/change/", {"name": "Renamed"})
    assert edit.status_code == 403
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"
    assert mongo.sessions().find_one({"_id": session["_id"]})["name"] == session["name"]


def test_a_counter_seller_takes_the_payment_of_an_invoice_sale(client):
    session = make_session(days=4)
    client.force_login(make_staff("till", ["sell_at_counter"]))
    due = (timezone.localdate() + timedelta(days=1)).isoformat()
    order = counter_sale(client, session, name="Ida", method="invoice", due=due, channel="phone")
    assert order["state"] == "pending_payment"
    order_page = reverse("admin:booking_order_change", args=[str(order["_id"])])
    assert "Mark paid at the box office" in client.get(order_page).content.decode()
    assert (
        client.post(reverse("admin:booking_order_mark_paid", args=[str(order["_id"])]), {"means": "cash"}).status_code
        == 302
    )
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"
    assert_consistent()


# --- the ready-made groups (README, "Staff accounts and groups") ---


@pytest.fixture
def groups():
    """The groups as the data migration makes them. (A test that empties the database, as a live
    server's does, takes them away for the tests after it.)"""
    create_groups(django_apps)


def member(group: str, *, staff: bool = True) -> User:
    user = User.objects.create_user(group.lower().replace(" ", "-"), "member@theater.example", None, is_staff=staff)
    user.groups.add(Group.objects.get(name=group))
    return user


def statuses(client, paths) -> dict[str, int]:
    return {path: client.get(path).status_code for path in paths}


def test_a_box_office_seller_sells_and_looks_up_bookings_and_nothing_else(client, groups):
    session = make_session(days=4)
    client.force_login(member("Box office seller"))
    order = counter_sale(client, session, name="Grace Hopper", method="cash")
    allowed = ["/admin/booking/session/", sell_url("sell", session["_id"]), "/admin/booking/order/"]
    assert set(statuses(client, [*allowed, f"/admin/booking/order/{order['_id']}/change/"]).values()) == {200}
    assert all(code in (302, 403) for code in statuses(client, NOT_FOR_SELLERS).values())


def test_door_staff_check_in_at_the_door_without_admin_access(client, groups):
    session = make_session()
    client.force_login(member("Door staff", staff=False))
    assert client.get("/checkin/").status_code == 200
    assert client.get(f"/checkin/{session['_id']}/").status_code == 200
    admin = client.get("/admin/")
    assert admin.status_code == 302 and "/admin/login/" in admin["Location"]


def test_a_manager_runs_the_house_but_not_the_user_accounts(client, groups):
    session = make_session(days=4)
    client.force_login(member("Manager"))
    pages = [
        "/admin/booking/theater/add/",
        "/admin/booking/session/add/",
        f"/admin/booking/session/{session['_id']}/change/",
        sell_url("sell", session["_id"]),
        "/admin/booking/order/",
        "/admin/booking/cart/",
        "/admin/booking/report/",
        f"/admin/booking/report/session/{session['_id']}/",
        "/admin/booking/promocode/add/",
        "/admin/booking/waitingroom/add/",
        "/checkin/",
    ]
    assert set(statuses(client, pages).values()) == {200}
    blocked = client.post(f"/admin/booking/session/{session['_id']}/seats/", {"action": "block", "seats": ["1:0"]})
    assert blocked.status_code == 302 and mongo.sessions().find_one({"_id": session["_id"]})["seats"][1][0] == BLOCKED
    order = counter_sale(client, session, name="Grace Hopper", method="cash")
    assert client.get(f"/admin/booking/order/{order['_id']}/change/").status_code == 200
    assert client.get("/admin/auth/user/").status_code == 403
    assert client.get("/admin/auth/group/").status_code == 403


def test_an_accountant_reads_the_figures_and_orders_and_changes_nothing(client, groups):
    session = make_session(days=4)
    order = sell(session["_id"], ["0:0"])
    client.force_login(member("Accountant"))
    pages = [
        "/admin/booking/report/",
        f"/admin/booking/report/session/{session['_id']}/",
        f"/admin/booking/report/session/{session['_id']}/sales.csv",
        "/admin/booking/order/",
        f"/admin/booking/order/{order['_id']}/change/",
        "/admin/booking/session/",
        "/admin/booking/theater/",
        "/admin/booking/promocode/",
    ]
    assert set(statuses(client, pages).values()) == {200}
    refused = [sell_url("sell", session["_id"]), "/admin/booking/theater/add/", "/admin/booking/cart/", "/checkin/"]
    assert set(statuses(client, refused).values()) == {403}
    assert client.post(f"/admin/booking/order/{order['_id']}/cancel/", {"reason": "no"}).status_code == 403
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"


@pytest.mark.slow
def test_a_fresh_database_gets_the_groups_from_its_migrations(tmp_path):
    """``manage.py migrate`` on an empty SQLite database: permissions do not exist yet while the
    migrations run (Django makes them after), so the data migration makes the ones it needs."""
    database = tmp_path / "fresh.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "DEV_ENV_FILE": ""}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=settings.BASE_DIR,
        env=env,
        check=True,
        timeout=120,
    )
    with closing(sqlite3.connect(database)) as db:
        rows = db.execute(
            "SELECT g.name, p.codename FROM auth_group g"
            " JOIN auth_group_permissions gp ON gp.group_id = g.id"
            " JOIN auth_permission p ON p.id = gp.permission_id"
        ).fetchall()
    granted: dict[str, set[str]] = {}
    for name, codename in rows:
        granted.setdefault(name, set()).add(codename)
    assert granted["Box office seller"] == {
        "sell_at_counter",
        "view_session",
        "view_order",
        "view_giftvoucher",
        "add_giftvoucher",
    }
    assert granted["Door staff"] == {"checkin_tickets"}
    assert {"sell_at_counter", "checkin_tickets", "view_reports", "add_theater", "delete_session"} <= granted["Manager"]
    assert "view_reports" in granted["Accountant"] and "sell_at_counter" not in granted["Accountant"]


def test_the_groups_are_granted_again_after_the_last_migration_that_adds_permissions():
    """Django makes a new model's permissions after migrate; the groups get them only from a later
    run of create_groups, so an operator's Manager would lack a page added without one."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    [leaf] = loader.graph.leaf_nodes("booking")
    plan = [loader.graph.nodes[key] for key in loader.graph.forwards_plan(leaf) if key[0] == "booking"]

    def adds_permissions(migration) -> bool:
        return any(isinstance(op, (CreateModel, AlterModelOptions)) for op in migration.operations)

    def grants(migration) -> bool:
        return any(isinstance(op, RunPython) and op.code is create_groups for op in migration.operations)

    last_adding = max(i for i, migration in enumerate(plan) if adds_permissions(migration))
    assert any(grants(migration) for migration in plan[last_adding:]), plan[last_adding].name
