"""A gift voucher sold at the counter gets a receipt (its own gap-free series, no VAT) and is in the
takings as "gift vouchers sold", apart from ticket money and in the seller's till; a voucher paying
an order is a payment method of its own; a crash between the sale and its number is numbered when
the receipt is printed."""

from datetime import timedelta

import pytest
from django.urls import reverse

from booking.core import clock, faults, mongo
from booking.payments import flow as payments
from booking.payments import refunds, voucher_pdf, voucher_sales, vouchers
from booking.payments.counter import CARD_TERMINAL, CASH
from booking.reports import takings, tills
from booking.sales import holds
from booking.tests.factories import make_session
from booking.tests.paying import pay
from booking.tests.pdfs import pdf_text
from booking.upkeep.invariants import check_invariants

STALLS = 2000


def today():
    day = clock.now().astimezone().date()
    return takings.build(day - timedelta(days=1), day + timedelta(days=1))


def row(rows, key):
    return next(r for r in rows if r.key == key)


def test_counter_sales_are_numbered_in_a_series_of_their_own_and_the_receipt_has_no_vat(db):
    first = voucher_sales.sell_at_counter(value=2500, means=CASH, by="anna")
    second = voucher_sales.sell_at_counter(value=5000, means=CARD_TERMINAL, by="anna")
    assert (first["receiptNo"], second["receiptNo"]) == (1, 2)
    assert voucher_sales.number_receipt(first["_id"]) == 1  # repeated: the same number
    english = pdf_text(voucher_pdf.sale_receipt_pdf(first, "en"))
    assert "Receipt G-000001" in english and "25.00 EUR" in english and "No VAT" in english and "Cash" in english
    assert first["code"] not in english  # the code is on the voucher, not on the receipt
    german = pdf_text(voucher_pdf.sale_receipt_pdf(second, "de"))
    assert "Quittung G-000002" in german and "50,00 EUR" in german and "Kartenterminal" in german


def test_a_crash_before_the_number_leaves_a_spendable_voucher_numbered_when_printed(db, crash_at):
    crash_at("voucher.sold_before_receipt")
    with pytest.raises(faults.InjectedCrash):
        voucher_sales.sell_at_counter(value=2500, means=CASH, by="anna")
    faults.set_hook(None)
    [voucher] = mongo.vouchers().find()
    assert "receiptNo" not in voucher and voucher["state"] == "active"
    assert [m.ref for m in today().moves] == ["…" + voucher["code"][-4:]]  # listed by its code meanwhile
    assert voucher_sales.number_receipt(voucher["_id"]) == 1
    assert voucher_sales.sell_at_counter(value=1000, means=CASH, by="anna")["receiptNo"] == 2  # no gap


def test_takings_show_vouchers_sold_apart_and_the_till_holds_their_cash(db):
    voucher_sales.sell_at_counter(value=2500, means=CASH, by="anna")
    voucher_sales.sell_at_counter(value=5000, means=CARD_TERMINAL, by="anna")
    report = today()
    assert [(r.key, r.sales, r.taken) for r in report.vouchers_sold] == [(CASH, 1, 2500), (CARD_TERMINAL, 1, 5000)]
    assert report.vouchers_total.taken == 7500 and report.total.taken == 7500
    assert {m.kind for m in report.moves} == {takings.VOUCHER_SALE}
    assert tills.open_till("anna").cash_in == 2500  # the cash is in her drawer
    tables = takings.tables(report)
    assert "Gift vouchers sold" in [t.title for t in tables]


def test_a_voucher_paying_an_order_is_a_payment_method_and_a_refund_goes_back_under_it(db):
    session = make_session()
    voucher = vouchers.issue(value=1500, sold_via="online", now=clock.now(), by="")
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["0:0"])
    order = pay(payments.start("s:ada", cart.cart_id, "Ada", "ada@example.com", voucher_code=voucher["code"]))
    refunds.refund_tickets(order["_id"], reason="ill", by="staff")
    report = today()
    redeemed = row(report.by_method, takings.VOUCHER)
    assert (redeemed.label, redeemed.taken, redeemed.given_back) == ("Gift voucher redeemed", 1500, 1500)
    assert row(report.by_method, takings.ONLINE_CARD).taken == STALLS - 1500
    assert report.vouchers_sold == []  # sold online: not a counter sale
    assert check_invariants() == []


def test_staff_print_the_receipt_in_both_languages_and_only_of_a_counter_sale(manager_client):
    voucher = voucher_sales.sell_at_counter(value=2500, means=CASH, by="anna")
    detail = manager_client.get(reverse("admin:booking_giftvoucher_change", args=[str(voucher["_id"])]))
    assert "Receipt (English)" in detail.content.decode()
    for language, says in (("en", "Receipt G-000001"), ("de", "Quittung G-000001")):
        answer = manager_client.get(reverse("admin:booking_giftvoucher_receipt", args=[str(voucher["_id"]), language]))
        assert answer.status_code == 200 and says in pdf_text(answer.content)
    wrong = reverse("admin:booking_giftvoucher_receipt", args=[str(voucher["_id"]), "fr"])
    assert manager_client.get(wrong).status_code == 404
    online = vouchers.issue(value=2500, sold_via="online", now=clock.now(), by="")
    online_url = reverse("admin:booking_giftvoucher_receipt", args=[str(online["_id"]), "en"])
    assert manager_client.get(online_url).status_code == 404
    assert manager_client.get(reverse("admin:booking_giftvoucher_receipt", args=["nope", "en"])).status_code == 404
