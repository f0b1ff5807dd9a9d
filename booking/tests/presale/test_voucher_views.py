"""Gift vouchers over HTTP: the checkout's voucher field (hostile input answered 4xx with a clear
message, nothing changed), and the staff pages (search, sell, history, the PDF in both languages)."""

import pytest
from django.urls import reverse

from booking.core import clock, mongo
from booking.payments import vouchers
from booking.tests.admin_support import make_staff
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.tests.pdfs import pdf_text
from booking.upkeep.invariants import check_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]
PREMIUM_PAIR = 7000  # seats 1:2 and 1:3 of make_session's hall


@pytest.fixture
def session():
    return make_session()


def a_voucher(value):
    return vouchers.issue(value=value, sold_via="counter", now=clock.now(), by="anna", buyer="Carla Gift")


def hold(client, session):
    answer = client.post(reverse("booking:hold", args=[str(session["_id"])]), {"seats": "1:2,1:3"}, **HTMX)
    assert answer.status_code == 200


def checkout(client, code, **headers):
    data = {"name": "Ada", "email": "ada@example.com", "method": "card", "voucher": code}
    return client.post(reverse("booking:checkout"), data, **headers)


def nothing_changed(voucher):
    assert mongo.orders().count_documents({}) == 0
    assert mongo.carts().find_one({})["state"] == "active"
    if voucher is not None:
        stored = mongo.vouchers().find_one({"_id": voucher["_id"]})
        assert stored["balance"] == voucher["value"] and stored["redemptions"] == []


@pytest.mark.parametrize(
    "typed, says",
    [
        ("NOPE", "not a voucher code"),
        ("A" * 100_000, "not a voucher code"),
        ("ABCD-EFGH-JKLM-NPQ<", "not a voucher code"),
        ("ABCD-EFGH-JKLM-NPQR", "do not know this voucher code"),
    ],
)
def test_a_wrong_code_is_a_400_with_the_reason_and_changes_nothing(client, session, typed, says):
    hold(client, session)
    answer = checkout(client, typed)
    assert answer.status_code == 400
    assert says in answer.content.decode()
    nothing_changed(None)


def test_an_expired_voucher_is_a_400_naming_its_last_day(client, session):
    voucher = a_voucher(5000)
    mongo.vouchers().update_one({"_id": voucher["_id"]}, {"$set": {"expiresAt": clock.now()}})
    hold(client, session)
    answer = checkout(client, voucher["code"])
    assert answer.status_code == 400 and "This voucher expired after" in answer.content.decode()
    nothing_changed({**voucher, "expiresAt": clock.now()})


def test_a_used_up_voucher_is_a_400(client, session):
    voucher = a_voucher(5000)
    mongo.vouchers().update_one(
        {"_id": voucher["_id"]},
        {"$set": {"balance": 0, "value": 0}},  # as if spent: the invariant's sums stay right
    )
    hold(client, session)
    answer = checkout(client, voucher["code"])
    assert answer.status_code == 400 and "used up" in answer.content.decode()


def test_a_voucher_for_a_box_office_reservation_is_a_400(client, session, settings):
    voucher = a_voucher(5000)
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    hold(client, session)
    data = {"name": "Ada", "email": "ada@example.com", "method": "box_office", "voucher": voucher["code"]}
    answer = client.post(reverse("booking:checkout"), data)
    assert answer.status_code == 400 and "not a reservation" in answer.content.decode()
    nothing_changed(voucher)


def test_a_voucher_paying_part_leaves_the_rest_for_the_card(client, session):
    voucher = a_voucher(2500)
    hold(client, session)
    answer = checkout(client, vouchers.display_code(voucher["code"]).lower(), **HTMX)
    html = answer.content.decode()
    assert answer.status_code == 200 and "data-card-form" in html
    assert "Pay €45" in html and "Paid by gift voucher" in html
    assert mongo.vouchers().find_one({"_id": voucher["_id"]})["balance"] == 0


def test_a_voucher_paying_all_goes_to_the_paid_order(client, session):
    voucher = a_voucher(10_000)
    hold(client, session)
    answer = checkout(client, voucher["code"])
    order = mongo.orders().find_one({})
    assert answer.status_code == 302 and answer["Location"] == reverse("booking:order", args=[order["ref"]])
    assert order["state"] == "paid" and mongo.vouchers().find_one({})["balance"] == 10_000 - PREMIUM_PAIR
    receipt = client.get(reverse("booking:receipt", args=[order["ref"]]))
    assert receipt.status_code == 200 and "Gift voucher" in pdf_text(receipt.content)
    assert check_invariants() == []


# --- staff ---


def test_staff_find_a_voucher_by_code_or_buyer_and_see_its_history(manager_client, session):
    voucher = a_voucher(2500)
    other = a_voucher(1000)
    mongo.vouchers().update_one({"_id": other["_id"]}, {"$set": {"buyer": "Someone Else"}})
    listing = reverse("admin:booking_giftvoucher_changelist")
    by_code = manager_client.get(listing, {"q": vouchers.display_code(voucher["code"])[:9]}).content.decode()
    assert voucher["code"][:4] in by_code and other["code"][-4:] not in by_code
    by_name = manager_client.get(listing, {"q": "carla"}).content.decode()
    assert voucher["code"][-4:] in by_name and other["code"][-4:] not in by_name
    hold(manager_client, session)
    checkout(manager_client, voucher["code"])
    page = manager_client.get(reverse("admin:booking_giftvoucher_change", args=[str(voucher["_id"])]))
    html = page.content.decode()
    assert page.status_code == 200 and "Paid a booking" in html and mongo.orders().find_one({})["ref"] in html


@pytest.mark.parametrize("value", ["-5", "0", "4.99", "500.01", "1e9", "abc", ""])
def test_staff_selling_a_voucher_outside_the_limits_is_a_400_and_sells_nothing(manager_client, value):
    answer = manager_client.post(reverse("admin:booking_giftvoucher_add"), {"value": value, "means": "cash"})
    assert answer.status_code == 400
    assert mongo.vouchers().count_documents({}) == 0


def test_staff_sell_a_voucher_at_the_limits_and_print_it_in_both_languages(manager_client):
    for value, cents in (("5.00", 500), ("500.00", 50_000)):
        answer = manager_client.post(
            reverse("admin:booking_giftvoucher_add"), {"value": value, "means": "card_terminal", "buyer": "Carla"}
        )
        assert answer.status_code == 302
        [voucher] = [v for v in vouchers.search("") if v["value"] == cents]
        assert voucher["state"] == "active" and voucher["method"] == "card_terminal"
    english = manager_client.get(reverse("admin:booking_giftvoucher_pdf", args=[str(voucher["_id"]), "en"]))
    german = manager_client.get(reverse("admin:booking_giftvoucher_pdf", args=[str(voucher["_id"]), "de"]))
    english_text, german_text = pdf_text(english.content), pdf_text(german.content)
    assert "Gift voucher" in english_text and "Geschenkgutschein" in german_text
    assert vouchers.display_code(voucher["code"]) in english_text.replace(" ", "")
    assert "500.00" in english_text and "500,00" in german_text
    nowhere = manager_client.get(reverse("admin:booking_giftvoucher_pdf", args=[str(voucher["_id"]), "fr"]))
    assert nowhere.status_code == 404


# --- at the counter ---


@pytest.fixture
def seller_client(client, db):
    client.force_login(make_staff("anna", ["view_session", "sell_at_counter"]))
    return client


def counter_url(name, *args):
    return reverse(f"admin:booking_session_{name}", args=[str(a) for a in args])


@pytest.mark.parametrize("typed", ["ABCD", "ABCD-EFGH-JKLM-NPQR"])
def test_the_counter_refuses_a_wrong_voucher_with_a_400_and_the_seats_stay_held(seller_client, session, typed):
    seller_client.post(counter_url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    sale = {"channel": "box_office", "name": "Bea", "method": "cash", "voucher": typed}
    answer = seller_client.post(counter_url("sell_checkout", session["_id"]), sale)
    assert answer.status_code == 400 and "voucher code" in answer.content.decode()
    assert mongo.orders().count_documents({}) == 0
    assert mongo.carts().find_one({})["state"] == "active"


def test_the_counter_takes_a_voucher_and_shows_what_is_left_to_take(seller_client, session):
    voucher = a_voucher(1500)
    seller_client.post(counter_url("sell_toggle", session["_id"]), {"seat": "0:0"}, **HTMX)
    sale = {"channel": "box_office", "name": "Bea", "method": "cash", "voucher": voucher["code"]}
    done = seller_client.post(counter_url("sell_checkout", session["_id"]), sale)
    assert done.status_code == 302
    page = seller_client.get(done["Location"]).content.decode()
    # a €20 seat: €15 by the voucher, €5 in cash
    assert "Paid by gift voucher" in page and "to take: <strong>€5</strong>" in page
    assert mongo.vouchers().find_one({"_id": voucher["_id"]})["balance"] == 0
    assert check_invariants() == []
