"""Receipt numbers: gap-free per theater, even when a process dies between the two writes and
when threads race for the next number; the receipt PDF."""

import threading

import pytest
from bson import ObjectId

from booking import faults, mongo
from booking.payments import pdf, receipts
from booking.tests.test_offer_documents import pdf_text

THEATER = ObjectId()
OTHER = ObjectId()


def an_order(theater=THEATER, **extra):
    order = {
        "_id": ObjectId(),
        "cartId": ObjectId(),
        "ref": str(ObjectId())[-8:].upper(),
        "sessions": [{"_id": ObjectId(), "theaterId": theater, "name": "Hamlet", "categories": {"p": "Premium"}}],
        **extra,
    }
    mongo.orders().insert_one(order)
    return order


def numbers(theater=THEATER):
    ids = [s["_id"] for s in mongo.orders().find({"sessions.theaterId": theater}, {"_id": 1}).hint("_id_")]
    return sorted(o["receiptNo"] for o in mongo.orders().find({"_id": {"$in": ids}, "receiptNo": {"$exists": True}}))


@pytest.fixture
def crash_at():
    def arm(point_name):
        def hook(name):
            if name == point_name:
                raise faults.InjectedCrash(name)

        faults.set_hook(hook)

    yield arm
    faults.set_hook(None)


def test_numbers_count_up_per_theater_and_repeat_calls_keep_the_number():
    a, b, c = an_order(), an_order(), an_order(OTHER)
    assert receipts.assign(a["_id"]) == 1
    assert receipts.assign(b["_id"]) == 2
    assert receipts.assign(c["_id"]) == 1  # its own sequence
    assert receipts.assign(a["_id"]) == 1
    assert numbers() == [1, 2]


def test_a_crash_between_counter_and_order_is_rolled_forward_by_the_next_assignment(crash_at):
    a, b = an_order(), an_order()
    crash_at("receipt.after_counter")
    with pytest.raises(faults.InjectedCrash):
        receipts.assign(a["_id"])
    faults.set_hook(None)
    assert "receiptNo" not in mongo.orders().find_one({"_id": a["_id"]})  # died before its write
    assert receipts.assign(b["_id"]) == 2  # the next one first gives a its number
    assert mongo.orders().find_one({"_id": a["_id"]})["receiptNo"] == 1
    assert receipts.assign(a["_id"]) == 1  # and a, trying again, keeps it
    assert numbers() == [1, 2]


def test_a_crashed_order_trying_again_before_anyone_else_takes_its_own_number(crash_at):
    a, b = an_order(), an_order()
    crash_at("receipt.after_counter")
    with pytest.raises(faults.InjectedCrash):
        receipts.assign(a["_id"])
    faults.set_hook(None)
    assert receipts.assign(a["_id"]) == 1
    assert receipts.assign(b["_id"]) == 2
    assert numbers() == [1, 2]


def test_every_order_crashing_once_still_leaves_no_gap_and_no_duplicate(crash_at):
    orders = [an_order() for _ in range(6)]
    for order in orders[::2]:  # every other one dies between its writes
        crash_at("receipt.after_counter")
        with pytest.raises(faults.InjectedCrash):
            receipts.assign(order["_id"])
        faults.set_hook(None)
        receipts.assign(orders[orders.index(order) + 1]["_id"])
    for order in orders:
        receipts.assign(order["_id"])
    assert numbers() == [1, 2, 3, 4, 5, 6]


def test_threads_racing_for_numbers_get_each_number_once():
    orders = [an_order() for _ in range(40)]
    errors = []

    def work(chunk):
        try:
            for order in chunk:
                receipts.assign(order["_id"])
                receipts.assign(orders[(orders.index(order) * 7) % len(orders)]["_id"])  # others' too
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(orders[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert numbers() == list(range(1, 41))
    counter = receipts.counters().find_one({"_id": THEATER})
    assert counter["last"] == 40


def test_receipt_pdf_is_a_pdf_with_the_number_and_vat():
    order = an_order(
        name="Ada Lovelace",
        email="ada@example.com",
        currency="EUR",
        lines=[
            {"sessionId": ObjectId(), "row": "B", "seat": "3", "cat": "p", "price": 3500, "vat": "7", "ticket": "t"}
        ],
        fee={"amount": 150, "vat": "19"},
        total=3650,
        paidWith={"provider": "stripe", "id": "pi_x", "amount": 3650},
    )
    receipts.assign(order["_id"])
    data = pdf.receipt_pdf(mongo.orders().find_one({"_id": order["_id"]}))
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    text = pdf_text(data)
    assert "000001" in text  # its number from the theater's sequence
    # net, VAT and gross per rate: 35.00 at 7 % (32.71 + 2.29), the 1.50 fee at 19 % (1.26 + 0.24)
    assert "7 % 32.71 EUR 2.29 EUR 35.00 EUR" in text
    assert "19 % 1.26 EUR 0.24 EUR 1.50 EUR" in text
    assert "36.50 EUR" in text
