"""The staff order list: pages by cursor (Next, Previous), every filter from the form, a
performance picked by title and date, rows with the performance and seats, the CSV and XLSX
export of exactly what is filtered, who may see it, and bad input answered with a message."""

import csv
import io
import re
from html import unescape

import pytest
from django.utils import timezone, translation
from openpyxl import load_workbook

from booking.core import mongo
from booking.tests.admin_support import make_staff
from booking.tests.order_support import make_shop

pytestmark = pytest.mark.django_db

LIST = "/admin/booking/order/"
ALL = ("ada", "bob", "cas", "ter", "gift", "box")


@pytest.fixture(autouse=True)
def _no_orphan_rule(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False


@pytest.fixture
def shop():
    return make_shop()


def listed(client, **params) -> list[str]:
    response = client.get(LIST, params)
    assert response.status_code == 200, response.content
    return [o["ref"] for o in response.context["orders"]]


def refs(shop, *names) -> set[str]:
    return {shop[n]["ref"] for n in names}


def link(page: str, rel: str) -> str | None:
    found = re.search(rf'rel="{rel}" href="([^"]+)"', page)
    return unescape(found.group(1)) if found else None


def test_pages_follow_next_and_previous_links_without_repeating_an_order(manager_client, shop, monkeypatch):
    monkeypatch.setattr("booking.control.orders.ORDER_PAGE_SIZE", 4)
    first = manager_client.get(LIST)
    assert link(first.content.decode(), "prev") is None
    next_href = link(first.content.decode(), "next")
    assert next_href is not None
    second = manager_client.get(LIST + next_href)
    assert link(second.content.decode(), "next") is None
    seen = [o["ref"] for o in first.context["orders"]] + [o["ref"] for o in second.context["orders"]]
    assert sorted(seen) == sorted(refs(shop, *ALL)) and len(seen) == 6
    prev_href = link(second.content.decode(), "prev")
    assert prev_href is not None
    back = manager_client.get(LIST + prev_href)
    assert [o["ref"] for o in back.context["orders"]] == [o["ref"] for o in first.context["orders"]]


def test_filters_keep_to_the_next_page(manager_client, shop, monkeypatch):
    monkeypatch.setattr("booking.control.orders.ORDER_PAGE_SIZE", 1)
    first = manager_client.get(LIST, {"session": str(shop["hamlet"]["_id"])})
    seen = []
    page = first
    while True:
        seen += [o["ref"] for o in page.context["orders"]]
        href = link(page.content.decode(), "next")
        if href is None:
            break
        assert "session=" in href
        page = manager_client.get(LIST + href)
    assert sorted(seen) == sorted(refs(shop, "ada", "bob", "gift"))


def test_each_filter_of_the_form(manager_client, shop):
    assert set(listed(manager_client, q="lovelace")) == refs(shop, "ada")
    assert set(listed(manager_client, q="box@example.com")) == refs(shop, "box")
    assert set(listed(manager_client, q=shop["cas"]["ref"][:5])) >= refs(shop, "cas")
    assert set(listed(manager_client, session=str(shop["faust"]["_id"]))) == refs(shop, "cas", "box")
    assert set(listed(manager_client, state="pending_payment")) == refs(shop, "ada", "box")
    assert set(listed(manager_client, channel="phone")) == refs(shop, "ter")
    assert set(listed(manager_client, channel="complimentary")) == refs(shop, "gift")
    assert set(listed(manager_client, method="card_terminal")) == refs(shop, "ter")
    assert set(listed(manager_client, method="card", state="paid")) == refs(shop, "bob")
    today = timezone.localtime(mongo.orders().find_one({"_id": shop["ada"]["_id"]})["createdOn"]).date()
    assert set(listed(manager_client, since=str(today), until=str(today))) == refs(shop, *ALL)


def test_a_performance_is_picked_by_title_and_date(manager_client, shop):
    page = manager_client.get(LIST).content.decode()
    options = dict(re.findall(r'<option value="([0-9a-f]{24})">([^<]+)</option>', page))
    assert "Faust" in options[str(shop["faust"]["_id"])] and "Test Hall" in options[str(shop["faust"]["_id"])]
    assert "Studio" in options[str(shop["lear"]["_id"])]
    assert re.search(r"\d", options[str(shop["hamlet"]["_id"])])  # its date


def test_rows_show_the_performance_and_seats(manager_client, shop):
    page = manager_client.get(LIST, {"q": "Grace"}).content.decode()
    assert "Faust" in page and "Row A, seat 1" in page and "Cash" not in page.split("result_list")[0][-10:]


def export_rows(client, kind, **params) -> list[list]:
    response = client.get(LIST + f"export.{kind}", params)
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    if kind == "csv":
        body = b"".join(response.streaming_content).decode()
        return list(csv.reader(io.StringIO(body)))
    book = load_workbook(io.BytesIO(response.content), read_only=True)
    return [["" if v is None else v for v in row] for row in book.active.iter_rows(values_only=True)]


@pytest.mark.parametrize("kind", ["csv", "xlsx"])
@pytest.mark.parametrize(
    "params",
    [{}, {"session": "hamlet"}, {"channel": "online", "state": "pending_payment"}, {"q": "hopper"}, {"method": "cash"}],
)
def test_the_export_is_exactly_what_is_filtered(manager_client, shop, kind, params):
    query = {k: str(shop[v]["_id"]) if k == "session" else v for k, v in params.items()}
    rows = export_rows(manager_client, kind, **query)
    assert rows[0][0] == "Reference"
    assert sorted(r[0] for r in rows[1:]) == sorted(listed(manager_client, **query))


def test_the_export_names_performance_seats_method_and_total(manager_client, shop):
    rows = export_rows(manager_client, "csv", q="hopper")
    header, row = rows
    named = dict(zip(header, row, strict=True))
    assert named["Performance"].startswith("Faust ") and named["Seats"] == "Row A, seat 1"
    assert named["Payment method"] == "Cash" and named["Channel"] == "Box office" and named["State"] == "Paid"
    assert named["Total"] == "20.00" and named["Tickets"] == "1"


def test_the_export_ignores_the_page_cursor(manager_client, shop):
    response = manager_client.get(LIST + "export.csv", {"cursor": "anything"})
    body = b"".join(response.streaming_content).decode()
    assert len(list(csv.reader(io.StringIO(body)))) == 7


def test_customer_text_in_the_csv_is_never_a_formula(manager_client, shop):
    mongo.orders().update_one({"_id": shop["ada"]["_id"]}, {"$set": {"name": "=HYPERLINK(1)"}})
    rows = export_rows(manager_client, "csv", q="lovelace")
    assert rows[1][2] == "'=HYPERLINK(1)"


@pytest.mark.parametrize(
    "params",
    [
        {"cursor": "forged"},
        {"session": "not-an-id"},
        {"method": "barter"},
        {"state": "stolen"},
        {"since": "2026-13-01"},
        {"q": "x" * 500},
        {"since": "2026-05-02", "until": "2026-05-01"},
    ],
)
def test_bad_input_is_a_400_with_a_message_and_the_export_refuses_it(manager_client, shop, params):
    response = manager_client.get(LIST, params)
    assert response.status_code == 400
    assert b"errornote" in response.content
    if "cursor" not in params:
        assert manager_client.get(LIST + "export.csv", params).status_code == 400
        assert manager_client.get(LIST + "export.xlsx", params).status_code == 400


def test_a_seller_may_see_and_export_orders_a_viewer_of_shows_may_not(client, shop):
    client.force_login(make_staff("seller", ["sell_at_counter"]))
    assert client.get(LIST).status_code == 200
    assert client.get(LIST + "export.csv").status_code == 200
    client.force_login(make_staff("viewer", ["view_session"]))
    for url in (LIST, LIST + "export.csv", LIST + "export.xlsx"):
        assert client.get(url).status_code == 403
    client.logout()
    assert client.get(LIST + "export.csv").status_code == 302  # to the login page


def test_the_list_in_german(manager_client, shop):
    with translation.override("de"):
        page = manager_client.get(LIST, HTTP_ACCEPT_LANGUAGE="de").content.decode()
    for german in ("Zahlungsart", "Jede Vorstellung", "Vorstellung und Plätze", "Das Gefilterte exportieren"):
        assert german in page, german
