"""Receipt numbers: gap-free per theater, even when a process dies between the two writes and
when threads race for the next number; the receipt PDF."""

import threading
from datetime import UTC, datetime

import pytest
from bson import ObjectId
from django.utils import translation

from booking.core import faults, mongo
from booking.core.domain import Order
from booking.payments import flow as payments
from booking.payments import pdf, receipts
from booking.sales import holds
from booking.tests.factories import make_session, make_theater
from booking.tests.localstripe import card
from booking.tests.pdf_reading import collisions, drawn_strings
from booking.tests.sales.test_offer_documents import pdf_text
from booking.upkeep.invariants import check_invariants

pytest_plugins = ["booking.tests.localstripe"]  # a real localstripe for the card payments

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


def test_a_crash_between_the_series_and_the_order_keeps_the_number_for_the_order(crash_at):
    a, b = an_order(), an_order()
    crash_at("series.after_take")
    with pytest.raises(faults.InjectedCrash):
        receipts.assign(a["_id"])
    faults.set_hook(None)
    assert "receiptNo" not in mongo.orders().find_one({"_id": a["_id"]})  # died before its write
    assert receipts.assign(b["_id"]) == 2
    assert receipts.assign(a["_id"]) == 1  # a, trying again, gets the number it took
    assert numbers() == [1, 2]
    assert mongo.orders().find_one({"_id": a["_id"]})["receiptTheater"] == THEATER


def test_every_order_crashing_once_still_leaves_no_gap_and_no_duplicate(crash_at):
    orders = [an_order() for _ in range(6)]
    for order in orders[::2]:  # every other one dies between its writes
        crash_at("series.after_take")
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


def test_a_rush_of_card_payments_at_one_theater_all_get_paid_and_numbered(no_hold_rate_limit):
    """The benchmark's seed scenario in small: buyers of seats of their own in three performances
    of one hall check out and pay by card all at once; none fails for another's receipt number."""
    theater = make_theater()
    blocks = [[f"{row}:{c}" for c in cols] for row in range(3) for cols in (range(4), range(5, 9))]
    plans = [(make_session(theater, days=d)["_id"], block) for d in (1, 2, 3) for block in blocks]
    failures: list[str] = []
    start = threading.Barrier(len(plans))

    def buyer(index, session_id, seats):
        owner = f"s:rush{index}"
        try:
            cart = holds.hold_seats(session_id, owner, None, seats)
            order = payments.start(owner, cart.cart_id, f"Buyer {index}", f"buyer{index}@example.org")
            start.wait()
            paid = payments.pay_with_card(order["ref"], owner, card())
            if paid.status != "paid":
                failures.append(f"{paid.status}: {paid.message}")
        except Exception as exc:  # noqa: BLE001 - every failure is the test's finding
            failures.append(repr(exc))
            start.abort()

    threads = [threading.Thread(target=buyer, args=(i, *plan)) for i, plan in enumerate(plans)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert failures == []
    assert numbers(theater["_id"]) == list(range(1, len(plans) + 1))
    assert check_invariants() == []


def test_a_theater_numbered_by_the_former_counter_goes_on_after_its_last_number():
    """Its last holder gets its number first (the counter's write may have been its last)."""
    last_holder, fresh = an_order(), an_order()
    mongo.get_db()["receipt_counters"].insert_one(
        {"_id": THEATER, "last": 17, "lastOrder": last_holder["_id"], "lastRef": last_holder["ref"]}
    )
    assert receipts.assign(fresh["_id"]) == 18
    assert numbers() == [17, 18]


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


def a_crowded_receipt_order() -> Order:
    """Every kind of row a receipt has, with long German words: a wheelchair space, a refunded and
    an exchanged ticket, a promo code, the booking fee and an exchange's top-up at the counter."""
    session = {
        "_id": ObjectId(),
        "theaterId": THEATER,
        "name": "The Magic Flute",
        "nameDe": "Die Zauberflöte",
        "theaterName": "Grand Hall",
        "theaterNameDe": "Großes Haus",
        "start": datetime(2026, 11, 29, 18, 30, tzinfo=UTC),
        "categories": {"b": "Back stalls", "p": "Premium"},
        "categoriesDe": {"b": "Hinteres Parkett"},
    }

    def line(seat, cat, price, kind, name, name_de="", **extra):
        german = {"ticketTypeNameDe": name_de} if name_de else {}
        return {
            "sessionId": session["_id"],
            "row": "G",
            "seat": seat,
            "cat": cat,
            "price": price,
            "vat": "7",
            "ticket": f"t{seat}",
            "ticketType": kind,
            "ticketTypeName": name,
            **german,
            **extra,
        }

    return an_order(
        name="Ada Lovelace",
        email="ada@example.com",
        currency="EUR",
        sessions=[session],
        lines=[
            line("20", "b", 4000, "full", "Full price", discount=400),
            line("21", "b", 2000, "concession", "Concession", "Ermäßigt"),
            line("22", "b", 1000, "child", "Child (under 14)", "Kind (unter 14)", wheelchair=True),
            line("23", "p", 0, "companion", "Companion", "Begleitperson"),
        ],
        refundedLines=[line("24", "b", 4000, "full", "Full price")],
        exchangedLines=[line("19", "b", 4000, "full", "Full price")],
        fee={"amount": 150, "vat": "19"},
        total=6750,
        promo={"code": "SPRING-24"},
        topUps=[{"provider": "box_office", "amount": 500}],
        paidWith={"provider": "box_office", "amount": 6750},
        paidOn=datetime(2026, 11, 20, 9, 0, tzinfo=UTC),
    )


@pytest.mark.parametrize("language", ["de", "en"])
def test_the_receipts_columns_never_run_into_each_other(language):
    """Measured where the PDF draws each string: no two strings on a line overlap, headers
    included ("Kategorie, Ticket" ran into "MwSt."), and nothing leaves the page's margins."""
    with translation.override(language):
        drawn = drawn_strings(pdf.receipt_pdf(a_crowded_receipt_order()))
    words = " ".join(d.text for d in drawn)
    head = ("Kategorie," if language == "de" else "Category,", "MwSt." if language == "de" else "VAT")
    assert all(word in words for word in head), words
    assert ("(umgebucht)" in words) == (language == "de")  # the exchanged ticket's old seat
    assert collisions(drawn) == []
    page_width = 595.28
    assert [d.text for d in drawn if d.x < pdf.MARGIN or d.end > page_width - pdf.MARGIN] == []
