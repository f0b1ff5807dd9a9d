"""Ticket types: the price table, the per-seat choice, the price locked at hold time,
the companion rule, max per type, order lines carrying the type."""

import pytest

from booking.core import mongo
from booking.core.errors import InvalidRequest, NotFound
from booking.payments import flow as payments
from booking.sales import holds, offers, selectors
from booking.tests.factories import CATEGORIES, TYPES, make_session, make_theater
from booking.upkeep.invariants import check_invariants
from booking.venues.layouts import parse_grid
from booking.venues.theaters import create_theater

ALICE = "s:alice"


@pytest.fixture(autouse=True)
def _no_orphan_rule(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False  # these tests pick seats for their types, not their places


def priced_session(**kw):
    theater = kw.pop("theater", None) or make_theater()
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    table = kw.pop("table", {"reduced": {"s": 1500, "p": 2500}, "companion": {"s": 0}})
    offers.set_price_table(session["_id"], {"s": 2000, "p": 3500}, table)
    return session


def item(cart, key):
    return next(i for i in cart["items"] if i["key"] == key)


def test_default_is_full_price_only_and_existing_sessions_keep_working():
    session = make_session()
    result = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    it = result.cart["items"][0]
    assert it["ticketType"] == "full" and it["price"] == 2000
    assert it["offers"] == [{"code": "full", "name": "Full price", "price": 2000}]
    order = payments.start(ALICE, result.cart_id, "Ada", "ada@example.com")
    assert order["lines"][0]["ticketType"] == "full" and order["lines"][0]["ticketTypeName"] == "Full price"
    assert order["total"] == 2000
    assert check_invariants() == []


def test_price_table_offers_per_category_missing_cell_not_offered():
    session = priced_session()
    result = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "1:2"], allow_orphans=True)  # s and p
    s_item, p_item = item(result.cart, "0:0"), item(result.cart, "1:2")
    assert [o["code"] for o in s_item["offers"]] == ["full", "reduced", "companion"]
    assert [o["code"] for o in p_item["offers"]] == ["full", "reduced"]  # no companion cell for p
    with pytest.raises(InvalidRequest, match="not offered"):
        offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "1:2", "companion")


def test_choice_changes_price_and_total_and_order_charges_it():
    session = priced_session()
    result = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1", "0:2"])
    assert result.cart["total"] == 6000
    cart = offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "0:1", "reduced")
    assert item(cart, "0:1")["price"] == 1500 and cart["total"] == 5500
    cart = offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "0:1", "full")
    assert cart["total"] == 6000
    offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "0:2", "reduced")
    order = payments.start(ALICE, result.cart_id, "Ada", "ada@example.com")
    assert [(line["ticketType"], line["price"]) for line in order["lines"]] == [
        ("full", 2000),
        ("full", 2000),
        ("reduced", 1500),
    ]
    assert order["total"] == 5500
    assert check_invariants() == []


def test_staff_price_change_during_the_hold_never_changes_what_the_buyer_was_shown():
    session = priced_session()
    result = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    offers.set_price_table(session["_id"], {"s": 9900, "p": 9900}, {"reduced": {"s": 8800}})
    cart = selectors.get_cart(ALICE, result.cart_id)
    assert cart["total"] == 4000  # unchanged
    cart = offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "0:1", "reduced")
    assert item(cart, "0:1")["price"] == 1500  # the row as it was at hold time
    cart = offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "0:1", "full")
    assert item(cart, "0:1")["price"] == 2000
    # a seat held now is priced by the new table (the hold's filter names priceRev: no stale price)
    later = holds.hold_seats(session["_id"], ALICE, result.cart_id, ["0:2"])
    assert item(later.cart, "0:2")["price"] == 9900
    assert {o["code"]: o["price"] for o in item(later.cart, "0:2")["offers"]} == {"full": 9900, "reduced": 8800}
    order = payments.start(ALICE, result.cart_id, "Ada", "ada@example.com")
    assert sorted(line["price"] for line in order["lines"]) == [2000, 2000, 9900]
    assert check_invariants() == []


def test_staff_changing_only_the_reduced_and_companion_prices_inside_a_holds_window_gives_the_new_prices(
    fault_hook,
):
    """The price table changes between the hold's read of the session and its write, the full
    prices untouched: the write misses (it names the table's revision) and the seat is held with
    the new reduced and companion prices, never the ones read."""
    session = priced_session()  # reduced 15.00, companion 0.00 in stalls
    changed: list[str] = []

    def staff_save_the_price_table(name):
        if name == "hold.before_session" and not changed:
            changed.append(name)
            offers.set_price_table(
                session["_id"], {"s": 2000, "p": 3500}, {"reduced": {"s": 1200, "p": 2500}, "companion": {"s": 500}}
            )

    fault_hook(staff_save_the_price_table)
    result = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    assert changed
    held = item(result.cart, "0:0")
    assert {o["code"]: o["price"] for o in held["offers"]} == {"full": 2000, "reduced": 1200, "companion": 500}
    stored = selectors.get_cart(ALICE, result.cart_id)
    assert item(stored, "0:0")["offers"] == held["offers"]
    cart = offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "0:0", "reduced")
    assert item(cart, "0:0")["price"] == 1200 and cart["total"] == 1200
    order = payments.start(ALICE, result.cart_id, "Ada", "ada@example.com")
    assert [(line["ticketType"], line["price"]) for line in order["lines"]] == [("reduced", 1200)]
    assert order["total"] == 1200 and check_invariants() == []


def test_companion_only_with_a_wheelchair_space_in_the_same_cart():
    theater = create_theater("Access Hall", parse_grid("A: sS..ssss\nB: ssssssss\n", CATEGORIES))
    session = priced_session(theater=theater, table={"reduced": {"s": 1500}, "companion": {"s": 0}})
    result = holds.hold_seats(session["_id"], ALICE, None, ["1:0", "1:1"], allow_orphans=True)
    with pytest.raises(InvalidRequest, match="only available together with a wheelchair space"):
        offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "1:0", "companion")
    result = holds.hold_seats(session["_id"], ALICE, result.cart_id, ["0:1"], allow_orphans=True)
    assert item(result.cart, "0:1")["wheelchair"] is True
    cart = offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "1:0", "companion")
    assert item(cart, "1:0")["price"] == 0
    with pytest.raises(InvalidRequest, match="one companion per space"):
        offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "1:1", "companion")
    # giving the wheelchair space back leaves a companion alone: checkout refuses, nothing changes
    holds.release_seats(session["_id"], ALICE, result.cart_id, ["0:1"])
    with pytest.raises(InvalidRequest, match="wheelchair space"):
        payments.start(ALICE, result.cart_id, "Ada", "ada@example.com")
    assert selectors.get_cart(ALICE, result.cart_id)["state"] == "active"


def test_the_types_offered_for_a_seat_are_exactly_those_choosing_accepts(settings):
    """The cart offers a type only if choosing it now passes the rules that refuse it (a companion
    ticket needs a wheelchair space, a type's limit per booking): tried for every seat and type."""
    settings.BOOKING_MAX_PER_TICKET_TYPE = {"reduced": 1}
    theater = create_theater("Access Hall", parse_grid("A: sS..ssss\nB: ssssssss\n", CATEGORIES))
    session = priced_session(theater=theater, table={"reduced": {"s": 1500}, "companion": {"s": 0}})
    cart_id = holds.hold_seats(session["_id"], ALICE, None, ["1:0", "1:1"], allow_orphans=True).cart_id

    def offered() -> dict[str, list[str]]:
        items = selectors.get_cart(ALICE, cart_id)["items"]
        return {i["key"]: [o["code"] for o in offers.choosable_offers(items, i)] for i in items}

    def accepted() -> dict[str, list[str]]:
        chosen: dict[str, list[str]] = {}
        for it in selectors.get_cart(ALICE, cart_id)["items"]:
            chosen[it["key"]] = []
            for offer in offers.item_offers(it):
                try:
                    offers.choose_ticket_type(ALICE, cart_id, session["_id"], it["key"], offer["code"])
                except InvalidRequest:
                    continue
                chosen[it["key"]].append(offer["code"])
                offers.choose_ticket_type(ALICE, cart_id, session["_id"], it["key"], offers.item_type(it))  # back
        return chosen

    assert offered() == accepted() == {"1:0": ["full", "reduced"], "1:1": ["full", "reduced"]}  # no companion
    offers.choose_ticket_type(ALICE, cart_id, session["_id"], "1:0", "reduced")
    assert offered() == accepted() == {"1:0": ["full", "reduced"], "1:1": ["full"]}  # one reduced per booking
    holds.hold_seats(session["_id"], ALICE, cart_id, ["0:1"], allow_orphans=True)  # a wheelchair space
    companions = {"1:0": ["full", "reduced", "companion"], "1:1": ["full", "companion"], "0:1": ["full"]}
    assert offered() == accepted() == companions  # not for the wheelchair space itself


def test_max_per_type_per_order(settings):
    settings.BOOKING_MAX_PER_TICKET_TYPE = {"reduced": 1}
    session = priced_session()
    result = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "0:0", "reduced")
    with pytest.raises(InvalidRequest, match="At most 1 “Reduced”"):
        offers.choose_ticket_type(ALICE, result.cart_id, session["_id"], "0:1", "reduced")


def test_only_the_owner_can_choose():
    session = priced_session()
    result = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    with pytest.raises(NotFound):
        offers.choose_ticket_type("s:mallory", result.cart_id, session["_id"], "0:0", "reduced")
    assert selectors.get_cart(ALICE, result.cart_id)["items"][0]["ticketType"] == "full"


def test_bad_price_table_and_types_are_refused():
    theater = make_theater()
    with pytest.raises(InvalidRequest):
        offers.set_theater_ticket_types(theater["_id"], [{"code": "Bad Code!", "name": "x"}])
    with pytest.raises(InvalidRequest):
        offers.set_theater_ticket_types(theater["_id"], [{"code": "a", "name": "A"}, {"code": "a", "name": "B"}])
    offers.set_theater_ticket_types(theater["_id"], TYPES)
    session = make_session(theater)
    with pytest.raises(InvalidRequest, match="Unknown ticket type"):
        offers.set_price_table(session["_id"], {"s": 1, "p": 1}, {"vip": {"s": 100}})
    with pytest.raises(InvalidRequest):
        offers.set_price_table(session["_id"], {"s": 1, "p": 1}, {"reduced": {"s": -1}})
    with pytest.raises(InvalidRequest):
        offers.set_price_table(session["_id"], {"s": -5, "p": 1}, {})
    assert "typePrices" not in mongo.sessions().find_one({"_id": session["_id"]})
