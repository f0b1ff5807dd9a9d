"""Invoices and credit notes (payments/invoices.py, credit_notes.py): an invoice sale at the
counter gets its number, the theater's seller data, a due date and its mail; a refund, a partial
cancel or an unpaid invoice called off gets a credit note naming the original; numbers stay
gap-free and unique under racing sales and refunds and across a crash between the writes."""

import threading
from datetime import timedelta

import pytest
from django.core import mail

from booking.core import clock, faults, mongo
from booking.core.errors import InvalidRequest
from booking.notifications import change_notices
from booking.payments import credit_notes, invoices, number_series, receipts, refunds
from booking.payments import flow as payment_flow
from booking.payments.invoice_pdf import credit_note_pdf, invoice_pdf
from booking.sales import cancels, cart_expiry, counter, exchanges, holds
from booking.tests.factories import make_session
from booking.tests.pdfs import pdf_text
from booking.upkeep.reconcile import reconcile


@pytest.fixture(autouse=True)
def single_seats(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False  # each sale takes one seat of a row


COMPANY = invoices.Billing(company="Acme GmbH", address="Hauptstr. 5\n10115 Berlin", vat_id="DE 123 456 789")


def counter_sale(session, keys, method=counter.INVOICE, owner=None, **fields):
    owner = owner or counter.staff_owner(7)
    held = holds.hold_seats(session["_id"], owner, None, list(keys), context=holds.BOX_OFFICE)
    sale = counter.CounterSale(
        **{"name": "Grace Hopper", "email": "grace@example.com", "method": method, "by": "anna", "by_id": 7, **fields}
    )
    return counter.sell(owner, held.cart_id, sale)


def order_of(order):
    return mongo.orders().find_one({"_id": order["_id"]})


def test_an_invoice_sale_gets_a_number_the_theaters_seller_data_a_due_date_and_its_mail(settings):
    settings.BOOKING_INVOICE_DUE_DAYS = 14
    session = make_session(days=30)
    invoices.set_seller(
        session["theaterId"],
        name="Stadttheater Musterstadt GmbH",
        address="Theaterplatz 1\n12345 Musterstadt",
        vat_id="DE999999999",
        tax_number="12/345/67890",
        bank="IBAN DE02 1203 0000 0000 2020 51",
    )
    mail.outbox.clear()
    order = counter_sale(session, ["0:0", "0:1"], billing=COMPANY)
    stored = order_of(order)
    assert stored["invoiceNo"] == 1 and stored["state"] == "pending_payment"
    assert stored["invoice"]["seller"]["vatId"] == "DE999999999"
    assert stored["invoice"]["buyer"] == {
        "company": "Acme GmbH",
        "address": "Hauptstr. 5\n10115 Berlin",
        "vatId": "DE123456789",
    }
    today = clock.now().astimezone().date()
    assert stored["invoice"]["due"] == (today + timedelta(days=14)).isoformat()
    assert change_notices.send_pending(order["_id"]) == ["sent"]
    (sent,) = mail.outbox
    assert "INV-000001" in sent.subject
    (name, body, _kind) = next(a for a in sent.attachments if a[0].startswith("invoice-"))
    text = pdf_text(body)
    for expected in ("INV-000001", "DE999999999", "12/345/67890", "Acme GmbH", "DE123456789", "IBAN DE02"):
        assert expected in text, expected
    assert f"{stored['total'] / 100:.2f}" in text


def test_the_due_date_defaults_to_the_setting_but_never_after_the_performance(settings):
    settings.BOOKING_INVOICE_DUE_DAYS = 14
    session = make_session(days=3)
    order = counter_sale(session, ["0:0"], billing=COMPANY)
    assert order_of(order)["invoice"]["due"] == session["start"].astimezone().date().isoformat()


def test_a_pay_later_reservation_without_a_billing_address_gets_no_invoice():
    session = make_session(days=5)
    due = (clock.now() + timedelta(days=2)).date()
    order = counter_sale(session, ["0:0"], due=due)
    assert "invoice" not in order_of(order) and "invoiceNo" not in order_of(order)


@pytest.mark.parametrize(
    ("billing", "field"),
    [
        (invoices.Billing(company="Acme GmbH"), "billing_address"),
        (invoices.Billing(vat_id="DE123456789"), "billing_address"),
        (invoices.Billing(address="x\n" * 7), "billing_address"),
        (invoices.Billing(address="a" * 401), "billing_address"),
        (invoices.Billing(address="Street 1", vat_id="123"), "buyer_vat_id"),
        (invoices.Billing(company="c" * 201, address="Street 1"), "company"),
    ],
)
def test_bad_billing_data_is_refused_and_nothing_is_sold_or_numbered(billing, field):
    session = make_session(days=5)
    owner = counter.staff_owner(7)
    held = holds.hold_seats(session["_id"], owner, None, ["0:0"], context=holds.BOX_OFFICE)
    sale = counter.CounterSale(name="Grace", method=counter.INVOICE, by="anna", by_id=7, billing=billing)
    with pytest.raises(InvalidRequest) as refused:
        counter.sell(owner, held.cart_id, sale)
    assert field in refused.value.details["fields"]
    assert mongo.orders().count_documents({}) == 0
    assert number_series.series_documents().count_documents({}) == 0


def test_limits_at_their_exact_value_are_taken():
    session = make_session(days=5)
    billing = invoices.Billing(company="c" * 200, address="\n".join(["a" * 60] * 6)[:400])
    order = counter_sale(session, ["0:0"], billing=billing)
    assert order_of(order)["invoiceNo"] == 1


def test_seller_data_is_checked_and_a_theater_keeps_what_staff_set():
    session = make_session(days=5)
    with pytest.raises(InvalidRequest) as refused:
        invoices.set_seller(session["theaterId"], name="", address="", vat_id="nonsense")
    assert set(refused.value.details["fields"]) == {"seller_name", "seller_address", "vat_id"}
    assert "seller" not in mongo.theaters().find_one({"_id": session["theaterId"]})
    invoices.set_seller(session["theaterId"], name="T GmbH", address="Platz 1", vat_id="", tax_number="1/2/3")
    assert invoices.seller_of(mongo.theaters().find_one({"_id": session["theaterId"]})).tax_number == "1/2/3"


def test_marking_an_invoice_paid_records_how_and_the_reference():
    session = make_session(days=5)
    order = counter_sale(session, ["0:0"], billing=COMPANY)
    paid = payment_flow.mark_paid_at_counter(order["_id"], by="bea", means="bank_transfer", reference="SEPA 4711")
    assert paid["state"] == "paid"
    assert paid["paidWith"]["means"] == "bank_transfer" and paid["paidWith"]["reference"] == "SEPA 4711"
    assert "Paid on" in pdf_text(invoice_pdf(paid))


def test_a_partial_refund_of_a_paid_invoice_gets_a_credit_note_naming_it_and_the_mail_attaches_it():
    session = make_session(days=5)
    order = counter_sale(session, ["0:0", "0:1"], billing=COMPANY)
    payment_flow.mark_paid_at_counter(order["_id"], by="bea", means="bank_transfer")
    first = order_of(order)["lines"][0]
    mail.outbox.clear()
    refunds.refund_tickets(order["_id"], tickets=[first["ticket"]], by="bea")
    (note,) = credit_notes.of_order(order["_id"])
    assert note["creditNo"] == 1 and note["refersTo"] == {"kind": "invoice", "number": 1, "label": "INV-000001"}
    assert note["amount"] == first["price"] and [line["ticket"] for line in note["lines"]] == [first["ticket"]]
    assert "creditNoteDue" not in order_of(order)
    text = pdf_text(credit_note_pdf(note))
    assert "CN-000001" in text and "INV-000001" in text and "Acme GmbH" in text
    change_notices.send_pending(order["_id"])
    changed = next(m for m in mail.outbox if "canceled" in m.subject)
    assert "CN-000001" in changed.body
    assert any(a[0] == "credit-note-CN-000001.pdf" for a in changed.attachments)
    # handed back at the counter: the buyer is told to collect it there
    assert "collect" in changed.body and "box office" in changed.body


def test_a_cash_sale_refunded_gets_a_credit_note_naming_its_receipt():
    session = make_session(days=5)
    order = counter_sale(session, ["0:0"], method=counter.CASH)
    cancels.cancel_order(order["_id"], by="bea", reason="customer ill")
    (note,) = credit_notes.of_order(order["_id"])
    assert note["refersTo"]["kind"] == "receipt" and note["refersTo"]["number"] == order_of(order)["receiptNo"]


def test_an_unpaid_invoice_called_off_is_credited_in_full():
    session = make_session(days=5)
    order = counter_sale(session, ["0:0", "0:1"], billing=COMPANY)
    cancels.cancel_order(order["_id"], by="bea", reason="ordered twice")
    (note,) = credit_notes.of_order(order["_id"])
    assert note["kind"] == "void" and note["amount"] == order["total"] and len(note["lines"]) == 2


def test_a_complimentary_sale_refunded_has_nothing_to_credit_but_a_receipt_still_gets_its_note():
    session = make_session(days=5)
    order = counter_sale(session, ["0:0"], method=counter.COMPLIMENTARY, reason="press")
    cancels.cancel_order(order["_id"], by="bea")
    notes = credit_notes.of_order(order["_id"])
    assert all(n["amount"] == 0 for n in notes)


@pytest.mark.parametrize("point", ["series.after_take", "credit_note.after_write", "refund.after_seats"])
def test_a_crash_between_the_refund_and_its_numbered_note_leaves_no_gap(crash_at, point):
    session = make_session(days=5)
    orders = [counter_sale(session, [f"0:{n}"], method=counter.CASH, owner=counter.staff_owner(n)) for n in range(3)]
    cancels.cancel_order(orders[0]["_id"], by="bea")
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        cancels.cancel_order(orders[1]["_id"], by="bea")
    faults.set_hook(None)
    cancels.cancel_order(orders[2]["_id"], by="bea")
    reconcile()
    numbers = sorted(n["creditNo"] for n in credit_notes.documents().find().hint([("orderId", 1), ("createdOn", 1)]))
    assert numbers == [1, 2, 3]
    assert mongo.orders().count_documents({"creditNoteDue": True}) == 0


def test_a_crash_after_the_invoice_order_is_stored_is_numbered_by_reconcile(crash_at):
    session = make_session(days=5)
    crash_at("counter.after_order")
    with pytest.raises(faults.InjectedCrash):
        counter_sale(session, ["0:0"], billing=COMPANY)
    faults.set_hook(None)
    second = counter_sale(session, ["0:1"], billing=COMPANY, owner=counter.staff_owner(8))
    reconcile()
    numbered = mongo.orders().find({"invoice.due": {"$exists": True}}).hint("invoice_due")
    assert sorted(o["invoiceNo"] for o in numbered) == [1, 2]
    assert order_of(second)["invoiceNo"] in (1, 2)


BIG_GRID = "\n".join(f"{chr(65 + r)}: ssssssssss" for r in range(8)) + "\n"


def test_racing_invoice_sales_and_refunds_get_gap_free_unique_numbers():
    """Sellers sell on invoice and in cash while others refund at once: every invoice number and
    every credit note number is given exactly once, none skipped."""
    session = make_session(days=5, grid=BIG_GRID)
    sellers = 6
    sold: list = []
    lock = threading.Lock()
    cash = [
        counter_sale(session, [f"0:{n}"], method=counter.CASH, owner=counter.staff_owner(100 + n)) for n in range(8)
    ]

    def sell(n):
        for k in range(3):
            order = counter_sale(
                session, [f"{1 + n}:{k}"], billing=COMPANY, owner=counter.staff_owner(200 + 10 * n + k)
            )
            with lock:
                sold.append(order)

    def refund(n):
        cancels.cancel_order(cash[n]["_id"], by="bea")

    threads = [threading.Thread(target=sell, args=(n,)) for n in range(sellers)]
    threads += [threading.Thread(target=refund, args=(n,)) for n in range(len(cash))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(sold) == sellers * 3
    invoice_numbers = sorted(order_of(o)["invoiceNo"] for o in sold)
    assert invoice_numbers == list(range(1, sellers * 3 + 1))
    credit_numbers = sorted(
        n["creditNo"] for n in credit_notes.documents().find().hint([("orderId", 1), ("createdOn", 1)])
    )
    assert credit_numbers == list(range(1, len(cash) + 1))


def lapse_time(order):
    return mongo.carts().find_one({"_id": order_of(order)["cartId"]})["expiresAt"] + timedelta(seconds=1)


def credit_numbers():
    return sorted(n["creditNo"] for n in credit_notes.documents().find().hint([("orderId", 1), ("createdOn", 1)]))


def test_an_unpaid_invoice_that_lapses_at_its_due_date_is_credited_in_full():
    session = make_session(days=5)
    order = counter_sale(session, ["0:0", "0:1"], billing=COMPANY)
    due = invoices.due_day(lapse_time(order) - timedelta(seconds=1))
    reservation = counter_sale(session, ["0:2"], owner=counter.staff_owner(8), due=due)  # no invoice document
    deadline = lapse_time(order) - timedelta(seconds=1)
    assert cart_expiry.expire_stale_carts(deadline - timedelta(seconds=1)).carts_expired == 0
    assert credit_notes.of_order(order["_id"]) == []  # not a second early
    cart_expiry.expire_stale_carts(max(deadline, lapse_time(reservation)) + timedelta(seconds=1))
    stored = order_of(order)
    assert stored["state"] == "expired" and "creditNoteDue" not in stored
    (note,) = credit_notes.of_order(order["_id"])
    assert note["kind"] == credit_notes.VOID and note["amount"] == order["total"] and len(note["lines"]) == 2
    assert note["refersTo"] == {"kind": "invoice", "number": stored["invoiceNo"], "label": "INV-000001"}
    assert credit_notes.of_order(reservation["_id"]) == []
    assert "CN-000001" in pdf_text(credit_note_pdf(note))
    cart_expiry.expire_stale_carts(lapse_time(order) + timedelta(seconds=5))  # again: nothing more
    assert credit_numbers() == [1]


def test_invoices_lapsing_in_parallel_get_gap_free_unique_credit_notes():
    session = make_session(days=5, grid=BIG_GRID)
    sold = [counter_sale(session, [f"0:{n}"], billing=COMPANY, owner=counter.staff_owner(300 + n)) for n in range(8)]
    later = max(lapse_time(order) for order in sold)
    threads = [
        threading.Thread(target=payment_flow.expire_paying_cart, args=(order_of(o)["cartId"], later)) for o in sold
    ]
    threads.append(threading.Thread(target=cart_expiry.expire_stale_carts, args=(later,)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(order_of(o)["state"] == "expired" for o in sold)
    assert credit_numbers() == list(range(1, len(sold) + 1))
    assert {n["orderId"] for n in credit_notes.documents().find().hint([("orderId", 1), ("createdOn", 1)])} == {
        o["_id"] for o in sold
    }


@pytest.mark.parametrize("point", ["pay.expire_before_credit_note", "credit_note.after_write", "series.after_take"])
def test_a_crash_while_an_invoice_lapses_leaves_its_credit_note_to_reconcile_without_a_gap(crash_at, point):
    session = make_session(days=5)
    first, crashing, third = (
        counter_sale(session, [f"0:{n}"], billing=COMPANY, owner=counter.staff_owner(400 + n)) for n in range(3)
    )
    payment_flow.expire_paying_cart(order_of(first)["cartId"], lapse_time(first))
    crash_at(point)
    with pytest.raises(faults.InjectedCrash):
        payment_flow.expire_paying_cart(order_of(crashing)["cartId"], lapse_time(crashing))
    faults.set_hook(None)
    assert order_of(crashing)["state"] == "expired" and order_of(crashing)["creditNoteDue"] is True
    payment_flow.expire_paying_cart(order_of(third)["cartId"], lapse_time(third))
    reconcile()
    assert credit_numbers() == [1, 2, 3]
    assert len(credit_notes.of_order(crashing["_id"])) == 1
    assert mongo.orders().count_documents({"creditNoteDue": True}) == 0


@pytest.mark.parametrize("billing", [COMPANY, None])
def test_an_exchange_to_cheaper_seats_credits_the_refunded_difference_against_the_invoice_or_receipt(billing):
    session = make_session(days=5)
    method = counter.INVOICE if billing else counter.CASH
    order = counter_sale(session, ["1:2", "1:3"], method=method, billing=billing)  # two premium seats
    if billing:
        payment_flow.mark_paid_at_counter(order["_id"], by="anna", means="bank_transfer")
    else:
        receipts.assign(order["_id"])
    tickets = [line["ticket"] for line in order["lines"]]
    done = exchanges.exchange(
        order["_id"], tickets, session["_id"], ["0:0", "0:1"], settle=exchanges.COUNTER, by="anna"
    )
    difference = order["total"] - done["total"]
    assert difference > 0
    (note,) = credit_notes.of_order(order["_id"])
    assert note["kind"] == credit_notes.EXCHANGE and note["amount"] == difference and note["creditNo"] == 1
    assert note["refersTo"]["kind"] == ("invoice" if billing else "receipt")
    assert sorted(line["ticket"] for line in note["lines"]) == sorted(tickets)
    assert sum(v["gross"] for v in note["vat"]) == difference
    assert note["refunds"] == [r["_id"] for r in done["refunds"] if r.get("exchange")]
    assert "creditNoteDue" not in order_of(order)
    assert "CN-000001" in pdf_text(credit_note_pdf(note))


def test_an_exchange_to_cheaper_seats_of_an_order_with_neither_invoice_nor_receipt_has_nothing_to_credit():
    session = make_session(days=5)
    order = counter_sale(session, ["1:2"], method=counter.CASH)
    mongo.orders().update_one({"_id": order["_id"]}, {"$unset": {"receiptNo": ""}})
    exchanges.exchange(order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["0:0"], settle=exchanges.COUNTER)
    assert credit_notes.of_order(order["_id"]) == []


def test_a_crash_right_after_the_exchange_switch_leaves_the_credit_note_to_reconcile(crash_at):
    session = make_session(days=5)
    order = counter_sale(session, ["1:2"], method=counter.CASH)
    receipts.assign(order["_id"])
    crash_at("exchange.after_switch")
    with pytest.raises(faults.InjectedCrash):
        exchanges.exchange(
            order["_id"], [order["lines"][0]["ticket"]], session["_id"], ["0:0"], settle=exchanges.COUNTER
        )
    faults.set_hook(None)
    assert order_of(order)["creditNoteDue"] is True
    reconcile()
    (note,) = credit_notes.of_order(order["_id"])
    assert note["creditNo"] == 1 and note["kind"] == credit_notes.EXCHANGE


def test_the_customer_of_a_lapsed_invoice_is_mailed_its_credit_note_once():
    session = make_session(days=5)
    order = counter_sale(session, ["0:0", "0:1"], billing=COMPANY)
    change_notices.send_pending(order["_id"])  # the invoice's own mail
    mail.outbox.clear()
    cart_expiry.expire_stale_carts(lapse_time(order) + timedelta(seconds=1))
    assert change_notices.send_pending(order["_id"]) == ["sent"]
    (sent,) = mail.outbox
    assert sent.to == ["grace@example.com"] and order["ref"] in sent.subject
    assert "Invoice INV-000001 is canceled by credit note CN-000001" in sent.body
    (name, body, _kind) = next(a for a in sent.attachments if a[0].startswith("credit-note-"))
    assert name == "credit-note-CN-000001.pdf" and "CN-000001" in pdf_text(body)
    assert change_notices.send_pending(order["_id"]) == []  # once


def test_an_unbilled_counter_reservation_that_lapses_gets_no_credit_note_mail():
    session = make_session(days=5)
    reservation = counter_sale(session, ["0:2"], due=invoices.due_day(clock.now() + timedelta(days=1)))
    mail.outbox.clear()
    cart_expiry.expire_stale_carts(lapse_time(reservation) + timedelta(seconds=1))
    assert change_notices.send_pending(reservation["_id"]) == []
    assert mail.outbox == []
