"""The command-shape audit: every command the app sends in its main flows (buyer pages and seat
clicks, checkout, the worker's jobs, the staff pages, the operator's commands) is served by a
declared index, by the planner rule of booking/tests/query_audit.py. The scans allowed are listed
below by shape, each with why; they say so in the code with a hint on ``_id_``.

What ensure_indexes declares is checked too: a retired index is dropped, a sparse one turned
partial is rebuilt.
"""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django.utils import timezone

from booking.core import clock, mongo
from booking.notifications import confirmations as notifications
from booking.reports import summaries
from booking.sales import cart_expiry, checkin, holds, promos, retention, selectors
from booking.sales.demo_stadium import create_match, create_stadium
from booking.sales.order_search import OrderFilters, search_orders
from booking.tests import admin_support as support
from booking.tests import paying, query_audit
from booking.tests.factories import make_session
from booking.upkeep import reconcile
from booking.upkeep.invariants import check_invariants
from booking.webhooks import deliveries, endpoints
from booking.webhooks import selectors as webhook_selectors

pytestmark = pytest.mark.django_db

# Scans the app sends on purpose, each bounded or an operator's tool, each with a hint on _id_
# (an index scan: notablescan lets it through, and a reader of the code sees the choice).
ALLOWED_SCANS = {
    # the staff's canceled sessions: few, newest 200, walking the start index
    "find sessions {'status': 'str'} sort=[('start', 1), ('_id', 1)] limit=200",
    # check_invariants (tests, chaos, `manage.py check_invariants`): reads everything by design
    "find carts {} hint={'_id': 1}",
    "find client_holds {} hint={'_id': 1}",  # check_invariants: no address under-counts its held seats
    "find orders {} hint={'_id': 1}",
    "find sessions {} hint={'_id': 1}",
    "find orders {'state': {'$nin': ['str']}, 'lines.checkedIn': {'$exists': 'bool'}} hint={'_id': 1}",
    "find orders {'state': 'str'} hint={'_id': 1}",
    "find promo_codes {} hint={'_id': 1}",
    "find vouchers {} hint={'_id': 1}",  # check_invariants: every gift voucher's balance against its history
    "find session_sales {} hint={'_id': 1}",  # check_invariants: every sales summary against its orders
    "find subscriptions {} hint={'_id': 1}",  # check_invariants: every subscription (a few dozen a season)
    # reconcile: the number series (one per theater and kind) whose log has numbers to finish
    "find number_series {'open.0': {'$exists': 'bool'}} hint={'_id': 1}",
    # reconcile: invoices a crash left unnumbered, among every invoice (the sparse due-date index:
    # invoices are a few a day per theater, not the buyers' orders)
    "find orders {'invoice.due': {'$exists': 'bool'}, 'invoiceNo': {'$exists': 'bool'}} hint=invoice_due limit=200",
    # reconcile and the next closing: closings a crash left half-made (the sparse index holds just them)
    "find till_closings {'claiming': 'bool'} hint=till_claiming",
}


def audit(commands, indexes) -> list[str]:
    problems = []
    for command in commands:
        verdict, name = query_audit.judge(command, indexes.get(command.collection, {}))
        shape = command.shape()
        if verdict == "scan":
            problems.append(f"collection scan: {shape}")
        elif verdict == "sort" and (not command.limit or shape not in ALLOWED_SCANS):
            problems.append(f"an index serves only the sort (it may read every document): {shape}")
        elif verdict == "hint" and (name is None or shape not in ALLOWED_SCANS):
            problems.append(f"hinted scan not listed in ALLOWED_SCANS (or no such index): {shape}")
    return sorted(set(problems))


def recording():
    recorder = query_audit.Recorder()
    mongo.add_listener(recorder)
    return recorder


def stop(recorder):
    mongo.remove_listener(recorder)


def buyer_flow(session, stadium_match):
    """The buyer's pages and clicks, through the views (client address set by the middleware)."""
    buyer = Client()
    sid = str(session["_id"])
    assert buyer.get("/").status_code == 200
    assert buyer.get("/", {"theater": str(session["theaterId"])}).status_code == 200
    assert buyer.get(f"/performances/{stadium_match['performanceId']}/").status_code == 200
    assert buyer.get(f"/sessions/{sid}/").status_code == 200
    page = buyer.get(f"/sessions/{sid}/map/")
    assert buyer.get(f"/sessions/{sid}/map/", HTTP_IF_NONE_MATCH=page["ETag"]).status_code == 304
    assert buyer.post(f"/sessions/{sid}/hold", {"seats": ["0:0", "0:1"]}).status_code == 302
    assert buyer.post(f"/sessions/{sid}/toggle", {"seat": "2:0"}).status_code == 302
    assert buyer.post(f"/sessions/{sid}/release", {"seats": ["2:0"]}).status_code == 302
    assert buyer.post(f"/sessions/{sid}/best", {"count": "2"}).status_code == 302
    assert buyer.post("/cart/remove", {"session": sid, "seat": "0:1"}).status_code == 302
    assert buyer.get("/cart/").status_code == 200
    done = buyer.post("/checkout/", {"name": "Ada Lovelace", "email": "ada@example.com"})
    assert done.status_code == 302, done.content
    ref = done["Location"].rstrip("/").rsplit("/", 1)[-1]
    order = selectors.get_order_by_ref(ref)
    assert order is not None
    paying.pay(order)  # checkout leaves it pending_payment: pay by card
    assert buyer.get(f"/orders/{ref}/").status_code == 200
    assert buyer.get(f"/orders/{ref}/tickets/").status_code == 200
    stranger = Client()
    found = stranger.post("/find-booking/", {"ref": ref, "email": "ada@example.com"})
    assert found.status_code == 302
    giver_up = Client()
    giver_up.post(f"/sessions/{sid}/hold", {"seats": ["2:0"]})
    assert giver_up.post("/cart/cancel").status_code == 302
    return selectors.get_order_by_ref(ref)


@override_settings(BOOKING_WEBHOOK_ALLOW_LOCAL=True)
def worker_flow(session, order):
    """Expiry, reconcile with something to do in each of its steps, the mail, webhooks, compaction."""
    now = clock.now()
    # an endpoint that hears of the orders sold below (nothing listens there: each try fails)
    endpoint = endpoints.create_endpoint(
        theater_id=session["theaterId"], url="http://127.0.0.1:9/hooks", events=["order.paid", "order.placed"]
    )
    # a stale cart, and an expired one whose seats are still held (a worker killed mid-expiry)
    stale = holds.hold_seats(session["_id"], "s:stale", None, ["1:0"])
    mongo.carts().update_one({"_id": stale.cart_id}, {"$set": {"expiresAt": now - timedelta(seconds=1)}})
    killed = holds.hold_seats(session["_id"], "s:killed", None, ["1:1"])
    mongo.carts().update_one({"_id": killed.cart_id}, {"$set": {"state": "expired", "expiresAt": now}})
    # a hold whose cart is gone, a cart item whose hold is gone, a stuck checkout
    orphan = holds.hold_seats(session["_id"], "s:orphan", None, ["1:5", "1:6"])
    mongo.carts().delete_one({"_id": orphan.cart_id, "owner": "s:orphan"})
    lost = holds.hold_seats(session["_id"], "s:lost", None, ["1:7", "1:8"])
    mongo.sessions().update_one(
        {"_id": session["_id"], "reservations._id": lost.cart_id},
        {"$set": {"reservations.$.seats": ["1:7"], "seats.1.8": 0}, "$inc": {"seatsAvailable": 1}},
    )
    stuck = holds.hold_seats(session["_id"], "s:stuck", None, ["2:5"])
    mongo.carts().update_one(
        {"_id": stuck.cart_id},
        {
            "$set": {
                "state": "checking_out",
                "checkoutOn": now - timedelta(hours=1),
                "customer": {"name": "S", "email": "s@example.com"},
            }
        },
    )
    # a canceled order whose seats are not back yet, a pending mail nobody sent, a failed one due
    late = support.sell(session["_id"], ["0:0"], owner="s:late")
    mongo.orders().update_one(
        {"_id": late["_id"], "ref": late["ref"]}, {"$set": {"state": "canceled", "seatsReleased": False}}
    )
    mongo.orders().update_one(
        {"_id": order["_id"], "ref": order["ref"]}, {"$set": {"createdOn": now - timedelta(hours=1)}}
    )
    failed = support.sell(session["_id"], ["0:1"], owner="s:failed")
    mongo.orders().update_one(
        {"_id": failed["_id"], "ref": failed["ref"]},
        {"$set": {"mail": "failed", "mailRetryAt": now - timedelta(seconds=1), "mailFailures": 1}},
    )

    recorder = recording()
    try:
        cart_expiry.expire_stale_carts()
        reconcile.finish_interrupted_expiries()
        reconcile.reconcile(grace=timedelta(0))  # the orders' webhook events dispatched
        for delivery in webhook_selectors.deliveries(endpoint["_id"]):
            deliveries.attempt(delivery["_id"])
        webhook_selectors.endpoints()
        delivery_id = webhook_selectors.deliveries(endpoint["_id"])[0]["_id"]
        webhook_selectors.get_delivery(delivery_id)
        deliveries.attempt(delivery_id)
        notifications.send_confirmation(order["_id"])
        notifications.give_up(failed["_id"], "test")
        selectors.expiry_backlog()
        selectors.failed_mails()
        check_invariants()
        call_command("worker_status", "--no-ping")
        retention.compact_past_sessions(now=now + timedelta(days=30))
        summaries.refresh_marked()  # the reports' summaries of the sessions sold above
    finally:
        stop(recorder)
    return recorder.commands


def staff_flow(client, session, order):
    sid = str(session["_id"])
    pages = [
        "/admin/booking/theater/",
        "/admin/booking/session/",
        "/admin/booking/session/?when=past",
        "/admin/booking/session/?when=canceled",
        "/admin/booking/session/?when=all",
        f"/admin/booking/session/?theater={session['theaterId']}",
        f"/admin/booking/session/?day={timezone.localdate(clock.now()).isoformat()}",
        f"/admin/booking/session/{sid}/change/",
        f"/admin/booking/session/{sid}/seats/",
        "/admin/booking/cart/",
        "/admin/booking/cart/?state=done",
        "/admin/booking/cart/?state=all",
        f"/admin/booking/cart/{order['cartId']}/change/",
        "/admin/booking/order/",
        "/admin/booking/order/?q=ada",
        "/admin/booking/order/?q=Lovelace",
        "/admin/booking/order/?q=ada@example.com",
        f"/admin/booking/order/?q={order['ref'][:6]}",
        f"/admin/booking/order/?session={session['_id']}&state=paid&channel=online",
        "/admin/booking/order/?state=refunded",
        "/admin/booking/order/?channel=box_office",
        "/admin/booking/order/?channel=complimentary",
        "/admin/booking/order/?channel=online",
        "/admin/booking/order/?method=cash",
        "/admin/booking/order/?method=card&state=paid",
        f"/admin/booking/order/?session={session['_id']}",
        f"/admin/booking/order/export.csv?session={session['_id']}",
        "/admin/booking/order/export.xlsx?channel=complimentary",
        f"/admin/booking/order/?since={timezone.localdate(clock.now()).isoformat()}&until={timezone.localdate(clock.now()).isoformat()}",
        f"/admin/booking/report/session/{sid}/",
        f"/admin/booking/report/series/{sid}/",
        f"/admin/booking/report/session/{sid}/sales.csv",
        f"/admin/booking/report/session/{sid}/attendees.csv",
        f"/admin/booking/order/{order['_id']}/change/",
    ]
    for page in pages:
        assert client.get(page).status_code == 200, page
    assert client.get(f"/admin/booking/order/?q={order['ref']}").status_code == 302  # opens the order
    with override_settings(BOOKING_REPORTS_GROUP_ON_SERVER=True):  # the reports' $group pipelines
        assert client.get(f"/admin/booking/report/series/{sid}/").status_code == 200
    live = holds.hold_seats(session["_id"], "s:staff-expired", None, ["2:0"])
    assert client.post(f"/admin/booking/cart/{live.cart_id}/expire/").status_code == 302
    response = support.cancel_confirmed(client, order, "audit")
    assert response.status_code == 302, response.content
    assert search_orders(filters=OrderFilters(text="Ada Lovelace")).orders


def offers_flow(client, session):
    """The staff pages for promo codes and vouchers, and a buyer redeeming a series code."""
    sid = str(session["_id"])
    code = {"code": "AUDIT-1", "kind": "percent", "value": "10", "scope": "series", "session": sid, "cap": "5"}
    assert client.post("/admin/booking/promocode/add/", code).status_code == 302
    batch = client.post(
        "/admin/booking/promocode/batch/add/", {"count": "3", "kind": "amount", "value": "2", "scope": "all"}
    )
    assert batch.status_code == 302
    doc = mongo.promo_codes().find_one({"code": "AUDIT-1"})
    for page in ["/admin/booking/promocode/", f"/admin/booking/promocode/{doc['_id']}/change/", batch["Location"]]:
        assert client.get(page).status_code == 200, page
    assert client.get(batch["Location"] + "csv/").status_code == 200
    hold = holds.hold_seats(session["_id"], "s:promo", None, ["2:0"])
    promos.apply_code("s:promo", hold.cart_id, "AUDIT-1")
    promos.remove_code("s:promo", hold.cart_id)


def checkin_flow(session, order):
    """The door: scans online and offline (a conflict), a pick by hash, the list, counts, search."""
    scope = checkin.get_scope(session["_id"])
    first, second = (line["ticket"] for line in order["lines"][:2])
    assert checkin.check_in(scope, code=first, door="North", by="anna").admitted
    checkin.check_in(scope, code=first, door="South", by="ben", offline=True, at=clock.now())  # a conflict
    checkin.check_in(scope, code="x" * 24, door="North", by="anna")  # unknown
    checkin.check_in(scope, digest=checkin.ticket_hash(second), door="North", by="anna")
    checkin.door_list(scope)
    checkin.counts(scope)
    checkin.search(scope, "Lovelace")
    checkin.search(scope, order["ref"][:4])
    for conflict in checkin.conflicts(scope):
        checkin.acknowledge_conflict(scope, conflict["_id"], "anna")
    checkin.door_sessions()


def test_every_command_of_the_main_flows_is_served_by_an_index(manager_client):
    session = make_session(name="Hamlet")
    stadium = create_stadium("Audit Stadium", seats=3 * 40, rows=4, half=5)
    match = create_match(stadium)
    recorder = recording()
    try:
        order = buyer_flow(session, match)
        checkin_flow(session, order)
        staff_flow(manager_client, make_session(name="Faust"), order)
        offers_flow(manager_client, make_session(name="Faust"))
    finally:
        stop(recorder)
    commands = recorder.commands + worker_flow(make_session(name="Lear"), order)
    indexes = query_audit.declared_indexes(mongo.get_db())
    assert len(commands) > 150
    problems = audit(commands, indexes)
    assert not problems, "\n".join(problems)
    seen = {c.shape() for c in commands}
    assert not ALLOWED_SCANS - seen, f"allowed scans the flows no longer send: {ALLOWED_SCANS - seen}"


def test_the_planner_rule_flags_what_mongodb_would_scan():
    indexes = query_audit.declared_indexes(mongo.get_db())
    judge = query_audit.judge

    def verdict(collection, flt, sort=()):
        return judge(query_audit.Command("find", collection, flt, list(sort)), indexes[collection])[0]

    # the shapes the review found
    assert verdict("sessions", {"reservations.0": {"$exists": True}}) == "scan"
    assert verdict("orders", {"name": {"$regex": "ada", "$options": "i"}}) == "scan"
    assert verdict("orders", {"$or": [{"name": {"$regex": "ada"}}, {"ref": "ABCDEFGH"}]}) == "scan"
    assert verdict("carts", {"items.sessionId": 1, "total": 3}) == "scan"
    assert verdict("carts", {}, [("total", 1)]) == "scan"
    assert verdict("orders", {"seatsReleased": False}) == "scan"
    # a partial index serves only a filter that implies its expression
    assert verdict("orders", {"state": {"$in": ["canceled", "failed"]}, "seatsReleased": False}) == "index"
    assert verdict("carts", {"items.sessionId": 1}) == "scan"
    # the staff order list's filters: state and channel have their index
    assert verdict("orders", {"state": "canceled"}) == "index"
    assert verdict("orders", {"channel": {"$in": [None, "online"]}}, [("createdOn", -1), ("_id", -1)]) == "index"
    # the per-client limit counts on its own document (client_holds, by _id), not carts by address
    assert verdict("carts", {"client": "1.2.3.4"}) == "scan"
    # sorts served by an index, equality on a leading field, $elemMatch into an array index
    assert verdict("carts", {"state": "done"}, [("createdOn", -1), ("_id", -1)]) == "index"
    assert verdict("orders", {}, [("createdOn", -1), ("_id", -1)]) == "index"
    assert verdict("orders", {"lines": {"$elemMatch": {"ticket": "x", "sessionId": 1}}}) == "index"
    assert verdict("orders", {"$or": [{"nameKeys": {"$regex": "^ada"}}, {"ref": "ABCDEFGH"}]}) == "index"


def test_ensure_indexes_drops_retired_indexes_and_rebuilds_changed_ones():
    mongo.orders().create_index([("lines.ticket", 1), ("ref", 1)], name="ticket_code")  # the seed's, never dropped
    mongo.carts().create_index([("client", 1), ("state", 1), ("expiresAt", 1)], name="client_live")  # retired
    mongo.orders().drop_index("mail_pending")
    mongo.orders().create_index([("mail", 1), ("createdOn", 1)], name="mail_pending", sparse=True)
    mongo.ensure_indexes()
    assert "ticket_code" not in mongo.orders().index_information()
    assert "client_live" not in mongo.carts().index_information()
    mail_pending = mongo.orders().index_information()["mail_pending"]
    assert mail_pending["partialFilterExpression"] == {"mail": "pending"}
    assert "sparse" not in mail_pending
    assert set(mongo.ensure_indexes()) == {
        name
        for c in mongo.get_db().list_collection_names()
        for name in mongo.get_db()[c].index_information()
        if name != "_id_"
    }


def test_reconcile_reads_only_the_sessions_that_hold_seats():
    held = make_session()
    make_session(days=2)  # nothing held: never read
    holds.hold_seats(held["_id"], "s:a", None, ["0:0"])
    recorder = recording()
    try:
        reconcile.reconcile(grace=timedelta(0))
    finally:
        stop(recorder)
    reads = [c for c in recorder.commands if c.name == "find" and c.collection == "sessions"]
    assert reads and reads[0].filter == {"reservations._id": {"$gte": reconcile.LOWEST_OBJECT_ID}}
    assert mongo.sessions().count_documents(reads[0].filter) == 1
