"""Every command on the hot paths carries its collection's shard key (mongo.SHARD_KEYS), so on a
sharded cluster mongos sends it to one shard (or, for ``$in``, to the shards of those keys; for a
range on a ranged key, to the shards owning it). Q1 (what's on) reads the listings, ranged on
start (sales/listings.py), and the seats left by _id. The per-client held-seats limit is
counted on one document per address (client_holds, by _id): C1 and C2 stay targeted with it on.
Watched through pymongo's command monitoring."""

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from booking.core import clock, faults, mongo
from booking.core.domain import CartState, OrderState
from booking.core.errors import TooManySeats
from booking.payments import BOX_OFFICE
from booking.payments import flow as payments
from booking.sales import cart_expiry, checkin, checkout, holds, selectors
from booking.sales import carts as cart_service
from booking.sales.demo_stadium import create_match, create_stadium
from booking.tests import query_audit
from booking.tests.core.test_query_audit import buyer_flow
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep.invariants import check_invariants
from booking.venues import performance_index
from booking.webhooks import selectors as webhook_selectors

ALICE = "s:alice"


# A sale asks which theaters have a webhook endpoint switched on at most once per 5 s per process:
# whether a path sends it depends on the clock, so it is left out but where a test asks for it.
ANY_WEBHOOK_ENDPOINT = "find webhook_endpoints {'active': 'bool'}"


def untargeted(run, *, sends=True, ignore=frozenset({ANY_WEBHOOK_ENDPOINT})) -> list[str]:
    recorder = query_audit.Recorder()
    mongo.add_listener(recorder)
    try:
        run()
    finally:
        mongo.remove_listener(recorder)
    assert recorder.commands or not sends, "the path sent nothing"
    return [
        c.shape()
        for c in recorder.commands
        if c.collection in mongo.SHARD_KEYS
        and not query_audit.targets(c, mongo.SHARD_KEYS[c.collection])
        and c.shape() not in ignore
    ]


def test_every_collection_has_a_shard_key_with_an_index_that_supports_it():
    assert set(mongo.get_db().list_collection_names()) <= set(mongo.SHARD_KEYS)  # ensure_indexes made them all
    for collection, key in mongo.SHARD_KEYS.items():
        ((field, kind),) = key.items()
        if kind == "hashed":
            continue  # sh.shardCollection makes the hashed index (docs/deploy.md)
        indexes = mongo.get_db()[collection].index_information()
        assert any(spec["key"][0][0] == field for spec in indexes.values()), collection


FROM_AN_ADDRESS = holds.HoldContext(client="ip:203.0.113.7")


@pytest.mark.parametrize("client_limit", [0, 40], ids=["no client limit", "client limit on"])
def test_q2_q3_c1_to_c4_carry_the_shard_key(settings, client_limit):
    """With the per-client held-seats limit on, a hold also reserves on the address's document
    (client_holds, by _id), a release and a cancel give back there, checkout ends the cart's entry."""
    settings.BOOKING_MAX_HELD_SEATS_PER_CLIENT = client_limit
    session = make_session()
    other = make_session(days=2)
    sid = session["_id"]
    state: dict[str, Any] = {}

    def c1_new_cart():
        state["cart"] = holds.hold_seats(sid, ALICE, None, ["0:0", "0:1"], context=FROM_AN_ADDRESS).cart_id

    def c1_more_seats_and_another_session():
        holds.hold_seats(sid, ALICE, state["cart"], ["1:0", "1:1"], context=FROM_AN_ADDRESS)
        holds.hold_seats(other["_id"], ALICE, state["cart"], ["0:0", "0:1"], context=FROM_AN_ADDRESS)

    paths = {
        "Q2 seat map": lambda: (selectors.get_session(sid), selectors.get_session_head(sid)),
        "Q3 live refresh": lambda: selectors.session_version(sid),
        "C1 hold, new cart": c1_new_cart,
        "C1 hold, cart and session known": c1_more_seats_and_another_session,
        "C1 best available": lambda: holds.hold_best_available(sid, ALICE, state["cart"], 2, context=FROM_AN_ADDRESS),
        "C1/C2 seat click": lambda: holds.toggle_seat(sid, ALICE, state["cart"], "0:1", context=FROM_AN_ADDRESS),
        "C2 release": lambda: holds.release_seats(sid, ALICE, state["cart"], ["1:1"]),
    }
    for name, run in paths.items():
        assert untargeted(run) == [], name

    state["order"] = None
    paying = untargeted(lambda: state.update(order=checkout_paid(ALICE, state["cart"], "Ada", "ada@example.com")))
    assert set(paying) <= {ANY_WEBHOOK_ENDPOINT}
    assert untargeted(lambda: selectors.get_order_by_ref(state["order"]["ref"])) == []  # the confirmation page
    assert untargeted(lambda: selectors.find_order(state["order"]["ref"], "ada@example.com")) == []

    late = holds.hold_seats(sid, "s:bob", None, ["2:0", "2:1"], context=FROM_AN_ADDRESS)
    holds.hold_seats(other["_id"], "s:bob", late.cart_id, ["2:0"], context=FROM_AN_ADDRESS)
    mongo.carts().update_one(
        {"_id": late.cart_id, "owner": "s:bob"}, {"$set": {"expiresAt": clock.now() - timedelta(seconds=1)}}
    )
    assert untargeted(lambda: cart_service.expire_cart(late.cart_id, owner="s:bob")) == [], "C4"
    gives_up = holds.hold_seats(sid, "s:carol", None, ["2:5"], context=FROM_AN_ADDRESS)
    assert untargeted(lambda: cart_service.cancel_cart(gives_up.cart_id, "s:carol")) == []
    counted = mongo.client_holds().find_one({"_id": "ip:203.0.113.7"})
    assert (counted is not None) == bool(client_limit)  # the limit's commands were among those watched


def test_a_hold_on_seats_an_ended_cart_still_holds_is_targeted(settings):
    """C1's rare path during an on-sale: the seat is still held by a cart whose hold ended (the
    worker has not swept it yet), an active one or a paying one (a box-office reservation past its
    deadline). The hold reads those carts by _id and owner (the reservation names its owner), ends
    them through their owner, their order's reference and their sessions, and takes the seat."""
    settings.BOOKING_PREVENT_ORPHAN_SEATS = False
    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    ended = holds.hold_seats(session["_id"], "s:bob", None, ["0:0"])
    reserved = holds.hold_seats(session["_id"], "s:carol", None, ["0:5"])
    payments.start("s:carol", reserved.cart_id, "Carol", "carol@example.org", BOX_OFFICE)
    past = clock.now() - timedelta(seconds=1)
    for cart in (ended, reserved):
        mongo.carts().update_one({"_id": cart.cart_id}, {"$set": {"expiresAt": past}})
    assert untargeted(lambda: holds.hold_seats(session["_id"], ALICE, None, ["0:0"])) == []
    assert untargeted(lambda: holds.hold_seats(session["_id"], "s:dan", None, ["0:5"])) == []
    assert [c["state"] for c in mongo.carts().find({"_id": {"$in": [ended.cart_id, reserved.cart_id]}})] == [
        CartState.EXPIRED,
        CartState.EXPIRED,
    ]
    assert mongo.orders().find_one({"cartId": reserved.cart_id})["state"] == OrderState.EXPIRED
    assert check_invariants() == []


def test_the_expiry_sweep_ends_each_cart_by_its_shard_keys():
    """C4 from the worker: only the sweep's own read of the due carts asks every shard; each
    cart's expiry, a paying one's (its order, its sessions) included, is targeted."""
    session = make_session()
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    active = holds.hold_seats(session["_id"], "s:bob", None, ["0:0"])
    reserved = holds.hold_seats(session["_id"], "s:carol", None, ["2:5"])
    payments.start("s:carol", reserved.cart_id, "Carol", "carol@example.org", BOX_OFFICE)
    past = clock.now() - timedelta(seconds=1)
    for cart in (active, reserved):
        mongo.carts().update_one({"_id": cart.cart_id}, {"$set": {"expiresAt": past}})
    assert untargeted(cart_expiry.expire_stale_carts) == [
        "find carts {'state': {'$in': ['str']}, 'expiresAt': {'$lte': 'datetime'}} sort=[('expiresAt', 1)] limit=500"
    ]
    assert mongo.orders().find_one({"cartId": reserved.cart_id})["state"] == OrderState.EXPIRED
    assert check_invariants() == []


# What the buyer's pages still send to every shard, for a reason no key can change
# (docs/architecture.md, "Shard keys"; docs/deploy.md): what's on's theater filter lists the
# theaters whole (tiny: keep the collection unsharded, one shard); a sale asks which theaters have a
# webhook endpoint switched on (a handful of documents, once per 5 s per process).
BUYER_PAGES_SCATTER = {
    "find theaters {} sort=[('name', 1), ('_id', 1)]",
    ANY_WEBHOOK_ENDPOINT,
}


@pytest.mark.django_db
def test_the_buyers_whole_flow_through_the_views_carries_the_shard_keys_but_the_one_listed():
    """What's on, a stadium's performance, a session's page and map (and its 304), hold, seat
    click, release, best available, the cart, checkout, paying, the order and its tickets, find my
    booking, cancel: every command through the views, from the buyer's address, the per-client
    limit on."""
    session = make_session(name="Hamlet")
    match = create_match(create_stadium("Shard Stadium", seats=3 * 40, rows=4, half=5))
    webhook_selectors.forget_endpoint_presence()  # as a process's first sale asks it (then every 5 s)
    assert set(untargeted(lambda: buyer_flow(session, match), ignore=frozenset())) == BUYER_PAGES_SCATTER


def stadium_page(performance_id) -> tuple[Any, list[query_audit.Command]]:
    """GET the performance page through the view; its answer and the commands it sent."""
    recorder = query_audit.Recorder()
    mongo.add_listener(recorder)
    try:
        page = Client().get(f"/performances/{performance_id}/")
    finally:
        mongo.remove_listener(recorder)
    return page, recorder.commands


@pytest.mark.django_db
def test_a_stadium_performance_page_asks_only_the_shards_of_its_performance_and_sections():
    """A stadium on-sale's first page: the section ids by the performance's id (performances,
    hashed _id: one shard), then the sections by ``_id: {$in}`` naming exactly those ids (the
    shards owning them), never a read by performanceId (every shard)."""
    match = create_match(create_stadium("Shard Stadium", seats=3 * 40, rows=4, half=5))
    section_ids = [s["_id"] for s in mongo.sessions().find({"performanceId": match["performanceId"]}, {"_id": 1})]
    holds.hold_seats(match["_id"], ALICE, None, ["0:0", "0:1"])
    page, commands = stadium_page(match["performanceId"])
    assert page.status_code == 200
    assert [c.collection for c in commands] == ["performances", "sessions"]
    for command in commands:
        assert query_audit.targets(command, mongo.SHARD_KEYS[command.collection]), command.shape()
    assert commands[0].filter == {"_id": match["performanceId"]}
    assert commands[1].filter is not None and list(commands[1].filter) == ["_id"]  # by the ids alone
    assert sorted(commands[1].filter["_id"]["$in"]) == sorted(section_ids)
    text = page.content.decode()
    assert text.count(": 40 seats free") == 2 and ": 38 seats free" in text  # each section, the hold seen


@pytest.mark.django_db
def test_the_targeted_stadium_page_shows_what_the_read_by_performance_shows():
    """A performance without its document (made before the collection) is read by performanceId,
    as the page always did: the page is the same both ways; ensure_indexes' backfill writes the
    document, and the page is targeted again."""
    match = create_match(create_stadium("Shard Stadium", seats=3 * 40, rows=4, half=5))
    holds.hold_seats(match["_id"], ALICE, None, ["1:0"])
    targeted, commands = stadium_page(match["performanceId"])
    assert [c.collection for c in commands] == ["performances", "sessions"]
    written = mongo.performances().find_one({"_id": match["performanceId"]})
    mongo.performances().delete_one({"_id": match["performanceId"]})
    by_performance, commands = stadium_page(match["performanceId"])
    assert [c.shape() for c in commands][-1] == (
        "find sessions {'performanceId': 'ObjectId'} sort=[('section.index', 1)]"
    )
    for key in ("card", "stands"):
        assert targeted.context[key] == by_performance.context[key], key
    out = StringIO()
    call_command("ensure_indexes", stdout=out)
    assert "performance documents written for older performances: 1" in out.getvalue()
    assert mongo.performances().find_one({"_id": match["performanceId"]}) == written
    assert performance_index.backfill() == 0  # never twice, never over one there
    _page, commands = stadium_page(match["performanceId"])
    assert [c.collection for c in commands] == ["performances", "sessions"]


@pytest.mark.django_db
def test_a_performance_whose_making_crashed_before_its_sections_is_no_page(crash_at):
    """The performance document is written first: a crash before the sections leaves ids that
    find nothing, and the page answers 404 as for no performance (nothing listed, nothing sold)."""
    stadium = create_stadium("Shard Stadium", seats=3 * 40, rows=4, half=5)
    crash_at("performance.before_sections")
    with pytest.raises(faults.InjectedCrash):
        create_match(stadium)
    (performance,) = mongo.performances().find({"_id": {"$gte": performance_index.LOWEST_ID}})
    page, _commands = stadium_page(performance["_id"])
    assert page.status_code == 404
    assert selectors.upcoming_sessions() == []
    assert check_invariants() == []


def test_door_check_in_finds_the_order_by_the_reference_its_ticket_code_starts_with():
    session = make_session()
    hold = holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"])
    order = checkout_paid(ALICE, hold.cart_id, "Ada", "ada@example.com")
    scope = checkin.get_scope(session["_id"])
    first, second = (line["ticket"] for line in order["lines"])
    assert len(first) == 24 and checkout.ref_of_ticket(first) == order["ref"]
    assert untargeted(lambda: checkin.check_in(scope, code=first, door="North", by="anna")) == []
    # used already: the update misses, the reason is read, all by the reference
    assert untargeted(lambda: checkin.check_in(scope, code=first, door="South", by="ben")) == []
    assert checkin.check_in(scope, code=second, door="North", by="anna").admitted
    assert checkout.ref_of_ticket("a-b_cdefghijklmnopqrstuvw") is None  # a code made before: by code alone


@pytest.mark.parametrize("code", ["ABCDEFGH" + "x" * 16, "a-b_cdefghijklmnopqrstuvw"], ids=["reference-like", "not"])
def test_a_ticket_code_from_before_codes_carried_the_reference_still_checks_in(code):
    """A session from before its tickets' codes began with their order's reference (no
    ``ticketCodesByRef``) is looked up by the code alone (every shard), whatever the code looks like."""
    session = make_session()
    hold = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    order = checkout_paid(ALICE, hold.cart_id, "Ada", "ada@example.com")
    mongo.orders().update_one({"_id": order["_id"], "ref": order["ref"]}, {"$set": {"lines.0.ticket": code}})
    mongo.sessions().update_one({"_id": session["_id"]}, {"$unset": {"ticketCodesByRef": ""}})
    outcome = checkin.check_in(checkin.get_scope(session["_id"]), code=code, door="North", by="anna")
    assert outcome.admitted


@pytest.mark.parametrize("sectioned", [False, True], ids=["a session", "a stadium's gate"])
@pytest.mark.parametrize("offline", [False, True], ids=["online", "offline"])
def test_an_unknown_code_at_a_door_is_answered_without_asking_every_shard(sectioned, offline):
    """Every ticket of a session made since codes carry the reference starts with its order's
    reference: a code that does not, or whose reference finds nothing, is unknown, by one shard."""
    if sectioned:
        stadium = create_stadium("Shard Stadium", seats=3 * 40, rows=4, half=5)
        session = mongo.sessions().find_one({"performanceId": create_match(stadium)["performanceId"]})
    else:
        session = make_session()
    hold = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    checkout_paid(ALICE, hold.cart_id, "Ada", "ada@example.com")
    scope = checkin.get_scope(session["_id"])
    at = clock.now() if offline else None
    for code in ("ABCDEFGH" + "x" * 16, "a-b_cdefghijklmnopqrstuvw"):
        outcomes: list[checkin.Outcome] = []

        def scan(code=code, outcomes=outcomes):
            outcomes.append(checkin.check_in(scope, code=code, door="North", by="anna", offline=offline, at=at))

        assert untargeted(scan, sends=False) == [], code  # (online, a code with no reference: nothing sent)
        assert outcomes[0].status == checkin.UNKNOWN
    if offline:  # each stored as a conflict, by its scan id
        assert mongo.checkin_conflicts().count_documents({"scopeId": scope.id}) == 2


def test_the_client_limit_refused_and_its_ended_holds_pruned_stay_targeted(settings, monkeypatch):
    """The rare paths of the per-client limit: a refusal reads the address's document, and a
    refusal with ended holds in it prunes them (a compare-and-set by _id) and reserves again."""
    settings.BOOKING_MAX_HELD_SEATS_PER_CLIENT = 3
    session = make_session()
    holds.hold_seats(session["_id"], ALICE, None, ["0:0", "0:1"], context=FROM_AN_ADDRESS)

    def refused():
        with pytest.raises(TooManySeats):
            holds.hold_seats(session["_id"], "s:bob", None, ["2:0", "2:1"], context=FROM_AN_ADDRESS)

    assert untargeted(refused) == []
    later = clock.now() + timedelta(seconds=settings.BOOKING_HOLD_SECONDS + 1)
    monkeypatch.setattr(clock, "now", lambda: later)
    assert (
        untargeted(lambda: holds.hold_seats(session["_id"], "s:bob", None, ["2:0", "2:1"], context=FROM_AN_ADDRESS))
        == []
    )
    assert mongo.client_holds().find_one({"_id": "ip:203.0.113.7"})["held"] == 2  # Alice's ended entry pruned


def test_q1_whats_on_is_targeted_on_the_listings_ranged_start():
    """The listings' range on start goes to the shards owning those dates; the seats left are
    read by _id. Unfiltered, by day and by theater."""
    session = make_session()
    tomorrow = {"start_from": clock.now(), "start_before": clock.now() + timedelta(days=2)}
    for query in ({}, tomorrow, {"theater_id": session["theaterId"]}):
        listed: list[dict] = []
        assert untargeted(lambda query=query, listed=listed: listed.extend(selectors.upcoming_sessions(**query))) == []
        assert [s["_id"] for s in listed] == [session["_id"]]


def test_a_range_on_a_hashed_key_is_scatter_gather():
    """The rule the test above relies on: the same range on the sessions (hashed _id) is not targeted."""
    make_session()
    scattered = untargeted(lambda: list(mongo.sessions().find({"start": {"$gt": clock.now()}})))
    assert scattered == ["find sessions {'start': {'$gt': 'datetime'}}"]


def test_an_order_reference_another_cart_took_gives_the_cart_a_new_one_and_one_order(crash_at):
    session = make_session()
    first = holds.hold_seats(session["_id"], ALICE, None, ["0:0"])
    taken = payments.start(ALICE, first.cart_id, "Ada", "ada@example.com")
    second = holds.hold_seats(session["_id"], "s:bob", None, ["2:0"])
    crash_at("pay.after_cart")  # the cart is paying under its reference, its order not stored yet
    with pytest.raises(faults.InjectedCrash):
        payments.start("s:bob", second.cart_id, "Bob", "b@x.org")
    faults.set_hook(None)
    mongo.carts().update_one({"_id": second.cart_id, "owner": "s:bob"}, {"$set": {"orderRef": taken["ref"]}})
    # the submit again finds the reference taken; a retry finds the order it stored
    orders = [payments.start("s:bob", second.cart_id, "Bob", "b@x.org") for _ in range(2)]
    assert orders[0]["ref"] != taken["ref"] and orders[0]["ref"] == orders[1]["ref"]
    assert mongo.carts().find_one({"_id": second.cart_id})["orderRef"] == orders[0]["ref"]
    assert mongo.orders().count_documents({"cartId": second.cart_id}) == 1
    assert all(line["ticket"].startswith(orders[0]["ref"]) for line in orders[0]["lines"])
