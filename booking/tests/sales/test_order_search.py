"""Finding orders for staff (booking/sales/order_search.py): every filter, pages that neither
repeat nor skip an order when placed times tie, both ways, cursors staff cannot forge, and the
export's stream with no page limit.

The orders are made through the services: the buyer's checkout (card, or pay at the box office)
and the counter sale (cash, card terminal, complimentary, on the phone)."""

from datetime import timedelta

import pytest
from bson import ObjectId
from django.core import signing

from booking.core import clock, mongo
from booking.core.domain import OrderState, SalesChannel
from booking.sales.order_search import InvalidCursor, OrderFilters, iter_orders, search_orders
from booking.tests.factories import make_session, stored_against_id_order
from booking.tests.order_support import make_shop, online

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_orphan_rule(settings):
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False  # one seat per order, wherever it falls


@pytest.fixture
def shop():
    return make_shop()


def refs(filters: OrderFilters, **kwargs) -> set[str]:
    return {o["ref"] for o in search_orders(filters=filters, **kwargs).orders}


def ref_of(shop, *names) -> set[str]:
    return {shop[n]["ref"] for n in names}


def test_no_filter_lists_every_order_newest_first(shop):
    page = search_orders(filters=OrderFilters())
    assert {o["ref"] for o in page.orders} == ref_of(shop, "ada", "bob", "cas", "ter", "gift", "box")
    keys = [(o["createdOn"], o["_id"]) for o in page.orders]
    assert keys == sorted(keys, reverse=True)
    assert page.next_cursor is None and page.previous_cursor is None


def test_text_finds_a_reference_exactly_or_by_its_start_a_name_by_a_word_and_an_e_mail(shop):
    ref = shop["cas"]["ref"]
    assert refs(OrderFilters(text=ref.lower())) == {ref}
    assert ref in refs(OrderFilters(text=ref[:4]))
    assert refs(OrderFilters(text=f"{ref[:4]}-{ref[4:]}")) == {ref}
    assert refs(OrderFilters(text="lovel")) == ref_of(shop, "ada")
    assert refs(OrderFilters(text="muller")) == ref_of(shop, "bob")  # accents folded
    assert refs(OrderFilters(text="BOX@Example.com")) == ref_of(shop, "box")
    assert refs(OrderFilters(text="nobody-here@example.com")) == set()
    assert refs(OrderFilters(text="   ")) == ref_of(shop, "ada", "bob", "cas", "ter", "gift", "box")  # no text


def test_performance_and_theater_filters(shop):
    hamlet, faust, lear = shop["hamlet"]["_id"], shop["faust"]["_id"], shop["lear"]["_id"]
    assert refs(OrderFilters(session_ids=(hamlet,))) == ref_of(shop, "ada", "bob", "gift")
    assert refs(OrderFilters(session_ids=(faust, lear))) == ref_of(shop, "cas", "box", "ter")
    assert refs(OrderFilters(theater_id=shop["theater"]["_id"])) == ref_of(shop, "ada", "bob", "gift", "cas", "box")
    assert refs(OrderFilters(theater_id=shop["other"]["_id"])) == ref_of(shop, "ter")
    assert refs(OrderFilters(theater_id=shop["other"]["_id"], session_ids=(hamlet,))) == set()  # not its show


def test_state_channel_and_payment_method_filters(shop):
    assert refs(OrderFilters(states=(OrderState.PENDING_PAYMENT,))) == ref_of(shop, "ada", "box")
    assert refs(OrderFilters(states=(OrderState.PAID, OrderState.PENDING_PAYMENT))) == ref_of(
        shop, "ada", "bob", "cas", "ter", "gift", "box"
    )
    assert refs(OrderFilters(channels=(SalesChannel.ONLINE,))) == ref_of(shop, "ada", "bob", "box")
    assert refs(OrderFilters(channels=(SalesChannel.BOX_OFFICE,))) == ref_of(shop, "cas")  # the gift is not
    assert refs(OrderFilters(channels=(SalesChannel.COMPLIMENTARY,))) == ref_of(shop, "gift")
    assert refs(OrderFilters(channels=(SalesChannel.PHONE, SalesChannel.COMPLIMENTARY))) == ref_of(shop, "ter", "gift")
    assert refs(OrderFilters(payment_methods=("card",))) == ref_of(shop, "ada", "bob")
    assert refs(OrderFilters(payment_methods=("cash", "card_terminal"))) == ref_of(shop, "cas", "ter")
    assert refs(OrderFilters(payment_methods=("box_office",), text="liskov")) == ref_of(shop, "box")


def test_placed_from_is_inclusive_and_placed_until_exclusive(shop):
    moment = clock.now().replace(microsecond=0)
    mongo.orders().update_many({}, {"$set": {"createdOn": moment}})
    mongo.orders().update_one({"_id": shop["ada"]["_id"]}, {"$set": {"createdOn": moment - timedelta(days=2)}})
    mongo.orders().update_one({"_id": shop["bob"]["_id"]}, {"$set": {"createdOn": moment - timedelta(days=1)}})
    day_before = moment - timedelta(days=1)
    assert refs(OrderFilters(placed_from=day_before, placed_until=moment)) == ref_of(shop, "bob")
    assert refs(OrderFilters(placed_until=day_before)) == ref_of(shop, "ada")
    assert refs(OrderFilters(placed_from=moment)) == ref_of(shop, "cas", "ter", "gift", "box")
    assert refs(OrderFilters(placed_from=moment, placed_until=moment)) == set()
    with pytest.raises(ValueError):
        search_orders(filters=OrderFilters(placed_from=day_before.replace(tzinfo=None)))


def tied_orders(count: int) -> list:
    """``count`` orders placed at three moments (ties in each), stored against the expected order;
    their ids newest first, _id breaking ties."""
    session = make_session(days=3)
    for n in range(count):
        row, column = divmod(n, 8)
        online(session, f"s:p{n}", f"{row}:{column + (column >= 4)}", f"Person {n}")  # column 4 is the aisle
    base = clock.now().replace(microsecond=0)
    docs = list(mongo.orders().find({}).hint([("_id", 1)]))
    for n, doc in enumerate(sorted(docs, key=lambda d: d["_id"])):
        doc["createdOn"] = base - timedelta(minutes=n % 3)
    stored_against_id_order(mongo.orders(), docs, descending=True)
    return [d["_id"] for d in sorted(docs, key=lambda d: (d["createdOn"], d["_id"]), reverse=True)]


def walk(filters, limit, cursor=None, *, back=False) -> list[list]:
    pages = []
    while True:
        page = search_orders(filters=filters, cursor=cursor, limit=limit)
        pages.append([o["_id"] for o in page.orders])
        cursor = page.previous_cursor if back else page.next_cursor
        if cursor is None:
            return pages


def test_pages_with_tied_times_neither_repeat_nor_skip_and_walk_back_the_same(db):
    expected = tied_orders(8)
    for limit in (1, 3, 4, 8):
        pages = walk(OrderFilters(), limit)
        assert [i for page in pages for i in page] == expected
        assert all(len(page) == limit for page in pages[:-1]) and 0 < len(pages[-1]) <= limit
    forward = walk(OrderFilters(), 3)
    last = search_orders(filters=OrderFilters(), limit=3)
    for _ in range(len(forward) - 1):
        last = search_orders(filters=OrderFilters(), cursor=last.next_cursor, limit=3)
    back = walk(OrderFilters(), 3, last.previous_cursor, back=True)
    assert list(reversed(back)) == forward[:-1]
    first_again = search_orders(filters=OrderFilters(), cursor=last.previous_cursor, limit=3)
    assert first_again.next_cursor is not None


def test_a_page_of_exactly_the_limit_has_no_next_page(db):
    expected = tied_orders(3)
    exact = search_orders(filters=OrderFilters(), limit=3)
    assert [o["_id"] for o in exact.orders] == expected and exact.next_cursor is None
    short = search_orders(filters=OrderFilters(), limit=2)
    assert short.next_cursor is not None
    assert [o["_id"] for o in search_orders(filters=OrderFilters(), cursor=short.next_cursor).orders] == expected[2:]


def test_paging_keeps_to_the_filters(shop):
    hamlet = OrderFilters(session_ids=(shop["hamlet"]["_id"],))
    assert {i for page in walk(hamlet, 1) for i in page} == {shop[n]["_id"] for n in ("ada", "bob", "gift")}


SALT = "booking.sales.order_search.cursor"
FORGED = {
    "garbage": lambda: "garbage",
    "too long": lambda: "x" * 5000,
    "signed, but not as a page cursor": lambda: signing.dumps([0, "0" * 24, 1]),
    "not an order id": lambda: signing.dumps([0, "not-an-id", 1], salt=SALT),
    "not a time": lambda: signing.dumps(["soon", "0" * 24, 1], salt=SALT),
    "past the calendar": lambda: signing.dumps([10**18, "0" * 24, 1], salt=SALT),
}


@pytest.mark.parametrize("forged", sorted(FORGED))
def test_a_cursor_the_server_did_not_give_out_is_refused(shop, forged):
    with pytest.raises(InvalidCursor):
        search_orders(filters=OrderFilters(), cursor=FORGED[forged]())


def test_an_empty_cursor_is_the_first_page(shop):
    assert len(search_orders(filters=OrderFilters(), cursor="").orders) == 6


def test_a_tampered_cursor_is_refused(db):
    tied_orders(3)
    cursor = search_orders(filters=OrderFilters(), limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidCursor):
        search_orders(filters=OrderFilters(), cursor=cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB"))
    assert issubclass(InvalidCursor, ValueError)


def test_hostile_text_is_plain_text(shop):
    for text in (".*", "^", "a|b", "(", "$where", "{'$gt': ''}", "\\", "ß" * 500, "\x00"):
        assert refs(OrderFilters(text=text)) <= ref_of(shop, "ada", "bob", "cas", "ter", "gift", "box")
    assert refs(OrderFilters(text=".*")) == set()


def test_iter_orders_streams_every_match_past_the_page_cap(db):
    session = make_session()
    order = online(session, "s:one", "0:0", "Ada Lovelace")
    # more orders of the performance than a page holds (copies: only the list reads them)
    stored = mongo.orders().find_one({"_id": order["_id"]})
    copies = [{**stored, "_id": ObjectId(), "ref": f"C{n:07d}", "cartId": ObjectId()} for n in range(260)]
    mongo.orders().insert_many(copies)
    streamed = list(iter_orders(filters=OrderFilters(session_ids=(session["_id"],))))
    assert len(streamed) == 261
    keys = [(o["createdOn"], o["_id"]) for o in streamed]
    assert keys == sorted(keys, reverse=True)
    assert list(iter_orders(filters=OrderFilters(text="nobody@example.com"))) == []
