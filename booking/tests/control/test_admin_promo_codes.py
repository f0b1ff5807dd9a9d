"""The admin's promo code and voucher pages: create and edit codes with every kind of
term, generate a voucher batch and export it as CSV; bad input is a form error (400, never a
500) that changes nothing; each page needs its permission."""

import csv
import io

import pytest

from booking.core import mongo
from booking.sales import offers, promos
from booking.tests.admin_support import make_staff
from booking.tests.factories import TYPES, make_session, make_theater

pytestmark = pytest.mark.django_db

LIST = "/admin/booking/promocode/"
ADD = "/admin/booking/promocode/add/"
BATCH_ADD = "/admin/booking/promocode/batch/add/"


def change_url(doc):
    return f"/admin/booking/promocode/{doc['_id']}/change/"


def code_post(**overrides):
    data = {"code": "SPRING-24", "kind": "percent", "value": "15", "scope": "all", "cap": "100"}
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def stored(code="SPRING-24"):
    return mongo.promo_codes().find_one({"code": code})


def every_code():
    return list(mongo.promo_codes().find({}, hint=[("_id", 1)]))


def test_create_a_percent_code_for_everything(manager_client):
    assert "Add a promo code" in manager_client.get(ADD).content.decode()
    response = manager_client.post(ADD, code_post(code=" spring-24 "))
    assert response.status_code == 302
    doc = stored()
    assert (doc["kind"], doc["value"], doc["cap"], doc["uses"]) == ("percent", 15, 100, 0)
    assert not {"sessionId", "series", "ticketTypes", "categories", "validFrom", "perOrder"} & set(doc)
    page = manager_client.get(LIST).content.decode()
    assert "SPRING-24" in page and "15 % off" in page and "0 / 100" in page


def test_create_fixed_amount_for_one_session_with_types_categories_window_and_caps(manager_client):
    theater = make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    data = code_post(
        kind="amount",
        value="5.50",
        scope="session",
        session=str(session["_id"]),
        ticket_types=["reduced", "full"],
        categories=["p"],
        valid_from="2030-01-01T10:00",
        valid_until="2030-02-01T10:00",
        cap="20",
        per_order="2",
    )
    assert manager_client.post(ADD, data).status_code == 302
    doc = stored()
    assert doc["kind"] == "amount" and doc["value"] == 550 and doc["sessionId"] == session["_id"]
    assert doc["ticketTypes"] == ["full", "reduced"] and doc["categories"] == ["p"]
    assert doc["cap"] == 20 and doc["perOrder"] == 2
    assert doc["validFrom"].year == 2030 and doc["validUntil"] > doc["validFrom"]


def test_create_a_fixed_price_code_for_a_series(manager_client):
    session = make_session(name="Hamlet")
    data = code_post(kind="price", value="10", scope="series", session=str(session["_id"]))
    assert manager_client.post(ADD, data).status_code == 302
    doc = stored()
    assert doc["kind"] == "price" and doc["value"] == 1000
    assert doc["series"] == {"name": "Hamlet", "theaterId": session["theaterId"]} and "sessionId" not in doc
    assert "series “Hamlet”" in manager_client.get(LIST).content.decode()


BAD_CODES = [
    pytest.param({"code": "ab"}, "code", id="code-too-short"),
    pytest.param({"code": "NO SPACES!"}, "code", id="code-bad-characters"),
    pytest.param({"kind": "bogus"}, "kind", id="unknown-kind"),
    pytest.param({"value": "150"}, "value", id="percent-over-100"),
    pytest.param({"value": "12.5"}, "value", id="percent-with-decimals"),
    pytest.param({"value": "0"}, "value", id="percent-zero"),
    pytest.param({"value": "-3"}, "value", id="negative"),
    pytest.param({"value": "abc"}, "value", id="not-a-number"),
    pytest.param({"kind": "amount", "value": "99999999"}, "value", id="amount-too-big"),
    pytest.param({"cap": "0"}, "cap", id="cap-zero"),
    pytest.param({"cap": ""}, "cap", id="cap-missing"),
    pytest.param({"per_order": "0"}, "per_order", id="per-order-zero"),
    pytest.param({"scope": "session"}, "session", id="session-scope-without-session"),
    pytest.param({"scope": "series", "session": "0123456789abcdef01234567"}, "session", id="unknown-session"),
    pytest.param({"scope": "session", "session": "../../etc"}, "session", id="bad-session-id"),
    pytest.param({"valid_from": "2030-02-01T10:00", "valid_until": "2030-01-01T10:00"}, "valid_until", id="until<from"),
    pytest.param({"valid_from": "tomorrow"}, "valid_from", id="bad-date"),
    pytest.param({"ticket_types": ["vip"]}, "ticket_types", id="unknown-ticket-type"),
    pytest.param({"categories": ["z"]}, "categories", id="unknown-category"),
]


@pytest.mark.parametrize(("overrides", "field"), BAD_CODES)
def test_bad_code_input_is_a_form_error_and_creates_nothing(manager_client, overrides, field):
    make_session()  # a theater with categories s and p, a session to choose
    response = manager_client.post(ADD, code_post(**overrides))
    assert response.status_code == 400
    assert field in response.context["form"].errors, response.context["form"].errors
    assert every_code() == []


def test_a_code_that_exists_is_a_form_error(manager_client):
    promos.create_code("SPRING-24", "percent", 10, cap=3)
    response = manager_client.post(ADD, code_post(value="50"))
    assert response.status_code == 400 and "Exists already" in response.content.decode()
    assert stored()["value"] == 10 and len(every_code()) == 1


def test_edit_a_code_changes_its_terms_and_clears_the_emptied_ones(manager_client):
    session = make_session()
    doc = promos.create_code("SPRING-24", "percent", 10, cap=5, session_id=session["_id"], per_order=1)
    page = manager_client.get(change_url(doc)).content.decode()
    assert "Used 0 of 5 times" in page and 'value="10"' in page
    data = code_post(code=None, kind="amount", value="3", scope="all", cap="7")
    assert manager_client.post(change_url(doc), data).status_code == 302
    after = stored()
    assert (after["kind"], after["value"], after["cap"]) == ("amount", 300, 7)
    assert "sessionId" not in after and "perOrder" not in after and after["code"] == "SPRING-24"


def test_the_cap_cannot_go_below_the_uses_taken(manager_client):
    doc = promos.create_code("SPRING-24", "percent", 10, cap=5)
    mongo.promo_codes().update_one({"_id": doc["_id"]}, {"$set": {"uses": 3}})
    response = manager_client.post(change_url(doc), code_post(code=None, cap="2", value="50"))
    assert response.status_code == 400 and "used 3 times already" in response.content.decode()
    assert stored()["cap"] == 5 and stored()["value"] == 10
    assert manager_client.post(change_url(doc), code_post(code=None, cap="3")).status_code == 302
    assert stored()["cap"] == 3


def test_bad_edit_changes_nothing(manager_client):
    doc = promos.create_code("SPRING-24", "percent", 10, cap=5)
    before = stored()
    assert manager_client.post(change_url(doc), code_post(code=None, value="101")).status_code == 400
    assert manager_client.post(change_url(doc), {}).status_code == 400
    assert stored() == before


@pytest.mark.parametrize("path", ["nonsense", "0123456789abcdef01234567"])
def test_unknown_code_is_404(manager_client, path):
    assert manager_client.get(f"/admin/booking/promocode/{path}/change/").status_code == 404
    assert manager_client.get(f"/admin/booking/promocode/batch/{path}/").status_code == 404
    assert manager_client.get(f"/admin/booking/promocode/batch/{path}/csv/").status_code == 404


def test_generate_a_voucher_batch_and_export_it_as_csv(manager_client):
    session = make_session(name="Hamlet")
    data = {
        "count": "25",
        "voucher_prefix": "gift",
        "kind": "price",
        "value": "0",
        "scope": "series",
        "session": str(session["_id"]),
        "valid_until": "2031-01-01T00:00",
    }
    response = manager_client.post(BATCH_ADD, data)
    assert response.status_code == 302
    vouchers = every_code()
    assert len(vouchers) == 25 and len({v["batch"] for v in vouchers}) == 1
    assert all(v["cap"] == 1 and v["code"].startswith("GIFT") and v["series"]["name"] == "Hamlet" for v in vouchers)
    batch = vouchers[0]["batch"]
    assert response["Location"] == f"/admin/booking/promocode/batch/{batch}/"
    page = manager_client.get(response["Location"]).content.decode()
    assert "25, 0 used" in page and "Hamlet" in page
    listing = manager_client.get(LIST).content.decode()
    assert batch in listing and "0 / 25" in listing
    assert "GIFT" not in listing  # vouchers are not listed one by one

    mongo.promo_codes().update_one({"_id": vouchers[0]["_id"]}, {"$set": {"uses": 1}})
    export = manager_client.get(f"/admin/booking/promocode/batch/{batch}/csv/")
    assert export.status_code == 200 and export["Content-Type"].startswith("text/csv")
    assert f'filename="vouchers-{batch}.csv"' in export["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert sorted(r["code"] for r in rows) == sorted(v["code"] for v in vouchers)
    assert [r["used"] for r in rows].count("yes") == 1
    assert all(r["kind"] == "price" and r["value"] == "0" for r in rows)


@pytest.mark.parametrize(
    "overrides",
    [
        {"count": "0"},
        {"count": "10001"},
        {"count": "x"},
        {"voucher_prefix": "no-dash"},
        {"voucher_prefix": "toolongprefix"},
        {"kind": "percent", "value": "0"},
        {"scope": "session"},
    ],
)
def test_bad_batch_input_is_a_form_error_and_generates_nothing(manager_client, overrides):
    data = {"count": "5", "voucher_prefix": "", "kind": "amount", "value": "5", "scope": "all", **overrides}
    response = manager_client.post(BATCH_ADD, data)
    assert response.status_code == 400
    assert every_code() == []


def test_a_voucher_is_not_edited_on_its_own(manager_client):
    batch = promos.generate_batch(2, "percent", 10)
    voucher = mongo.promo_codes().find_one({"batch": batch})
    assert manager_client.get(change_url(voucher))["Location"] == f"/admin/booking/promocode/batch/{batch}/"
    with pytest.raises(Exception, match="cannot be edited"):
        promos.update_code(voucher["_id"], "percent", 90, cap=100)
    assert mongo.promo_codes().find_one({"_id": voucher["_id"]})["cap"] == 1


def test_permissions(client):
    doc = promos.create_code("SPRING-24", "percent", 10, cap=5)
    batch = promos.generate_batch(2, "percent", 10)
    pages = [LIST, ADD, BATCH_ADD, change_url(doc), f"{LIST}batch/{batch}/", f"{LIST}batch/{batch}/csv/"]
    client.force_login(make_staff("clerk", ["view_session"]))
    assert [client.get(p).status_code for p in pages] == [403] * 6
    assert client.post(ADD, code_post(code="OTHER-1")).status_code == 403

    client.force_login(make_staff("viewer", ["view_promocode"]))
    assert [client.get(p).status_code for p in pages] == [200, 403, 403, 200, 200, 200]
    assert client.post(change_url(doc), code_post(code=None, value="90")).status_code == 403
    assert client.post(BATCH_ADD, {"count": "3", "kind": "percent", "value": "5", "scope": "all"}).status_code == 403
    assert "Add a promo code" not in client.get(LIST).content.decode()

    client.force_login(make_staff("creator", ["view_promocode", "add_promocode"]))
    assert client.post(change_url(doc), code_post(code=None, value="90")).status_code == 403
    assert client.post(ADD, code_post(code="OTHER-1")).status_code == 302
    assert stored()["value"] == 10 and len(every_code()) == 4
    client.logout()
    assert client.get(LIST).status_code == 302  # to the login page
