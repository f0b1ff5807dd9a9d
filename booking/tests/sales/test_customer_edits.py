"""Staff correct a customer's name and e-mail: kept with the old values in the order's history,
found by the new name, refused when someone changed them since the page was shown (also when two
staff members race), and bad input changes nothing."""

import threading

import pytest

from booking.core import mongo
from booking.core.errors import Conflict, InvalidRequest
from booking.sales.customer_edits import EMAIL_MAX, NAME_MAX, change_customer
from booking.sales.order_search import OrderFilters, search_orders
from booking.tests.factories import make_session
from booking.tests.order_support import online

pytestmark = pytest.mark.django_db


@pytest.fixture
def order():
    return online(make_session(), "s:ada", "0:0", "Ada Lovelace")


def edit(order, **fields):
    seen = {"seen_name": order["name"], "seen_email": order["email"], "by": "anna"}
    return change_customer(order["_id"], **{"name": order["name"], "email": order["email"], **seen, **fields})


def test_a_corrected_name_and_e_mail_are_kept_with_the_old_ones(order):
    changed, did = edit(order, name="  Augusta   King ", email="Augusta@Example.org")
    assert did and changed["name"] == "Augusta King" and changed["email"] == "augusta@example.org"
    [record] = changed["customerEdits"]
    assert record["old"] == {"name": "Ada Lovelace", "email": "ada@example.com"}
    assert record["new"] == {"name": "Augusta King", "email": "augusta@example.org"}
    assert record["by"] == "anna"
    found = search_orders(filters=OrderFilters(text="king")).orders
    assert [o["ref"] for o in found] == [order["ref"]]
    assert search_orders(filters=OrderFilters(text="lovelace")).orders == []


def test_the_same_values_write_nothing(order):
    changed, did = edit(order)
    assert not did and "customerEdits" not in mongo.orders().find_one({"_id": order["_id"]})


def test_an_edit_since_the_page_was_shown_is_refused(order):
    edit(order, name="Augusta King")
    with pytest.raises(Conflict):
        edit(order, name="Someone Else")  # still shows Ada Lovelace
    assert mongo.orders().find_one({"_id": order["_id"]})["name"] == "Augusta King"


def test_two_staff_members_at_once_one_wins(order):
    outcomes = []
    start = threading.Barrier(2)

    def one(name):
        start.wait()
        try:
            outcomes.append(edit(order, name=name)[1])
        except Conflict:
            outcomes.append("refused")

    threads = [threading.Thread(target=one, args=(n,)) for n in ("First Name", "Second Name")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(str, outcomes)) == ["True", "refused"]
    assert len(mongo.orders().find_one({"_id": order["_id"]})["customerEdits"]) == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "   "},
        {"name": "x" * (NAME_MAX + 1)},
        {"email": "not-an-address"},
        {"email": "a" * (EMAIL_MAX - len("@example.org") + 1) + "@example.org"},
    ],
)
def test_bad_input_changes_nothing(order, fields):
    with pytest.raises(InvalidRequest):
        edit(order, **fields)
    assert mongo.orders().find_one({"_id": order["_id"]})["name"] == "Ada Lovelace"


def test_a_name_of_exactly_the_limit_and_no_e_mail_are_taken(order):
    changed, _ = edit(order, name="y" * NAME_MAX, email="")
    assert changed["name"] == "y" * NAME_MAX and changed["email"] == ""
