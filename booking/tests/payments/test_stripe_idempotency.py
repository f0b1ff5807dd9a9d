"""Idempotency keys: every POST to Stripe carries one made from our own ids, and a request repeated
after its answer was lost charges once and makes one PaymentIntent. Through the real ``stripe``
library against localstripe run by scripts/localstripe_server.py, which keeps a key's first answer
as Stripe does and lists the requests it received (their headers as they arrived)."""

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from booking.core import faults, mongo
from booking.payments import flow as payments
from booking.payments import refunds
from booking.payments.stripe_provider import client
from booking.sales import cancels, holds
from booking.tests.factories import make_session
from booking.tests.localstripe import DECLINED, VISA, card, configure, requests_received
from booking.tests.threads import at_once
from booking.upkeep.invariants import check_invariants

ALICE = "s:alice"
KEYS = ["1:2", "1:3"]


def intents_of(order) -> list:
    """The PaymentIntents localstripe holds for this order (every one ever made for it)."""
    found = client().v1.payment_intents.list({"limit": 100000}).data
    return [pi for pi in found if pi.metadata.to_dict().get("order") == str(order["_id"])]


def charged(order) -> list[int]:
    return [pi.amount for pi in intents_of(order) if pi.status == "succeeded"]


def start(session, owner=ALICE):
    cart = holds.hold_seats(session["_id"], owner, None, KEYS)
    return payments.start(owner, cart.cart_id, "Ada Lovelace", "ada@example.com")


def provider_posts(since: int) -> list[dict]:
    """What our side POSTed to Stripe since then (not the buyer's browser making cards)."""
    return [r for r in requests_received()[since:] if r["path"].startswith(("/v1/payment_intents", "/v1/refunds"))]


def test_every_create_confirm_cancel_and_refund_carries_a_key_made_from_our_ids():
    session = make_session()
    before = len(requests_received())
    order = start(session)
    declined, visa = card(DECLINED), card(VISA)
    assert payments.pay_with_card(order["_id"], ALICE, declined).status == "failed"
    assert payments.pay_with_card(order["_id"], ALICE, visa).status == "paid"  # attempt 2, after canceling 1
    paid = mongo.orders().find_one({"_id": order["_id"]})
    refunds.refund_tickets(paid["_id"], tickets=[paid["lines"][0]["ticket"]], by="anna")
    [refund] = mongo.orders().find_one({"_id": order["_id"]})["refunds"]
    first, second = order["payment"]["intent"], paid["paidWith"]["id"]
    sent = [(r["path"], r["key"]) for r in provider_posts(before)]
    oid = order["_id"]
    assert sent == [
        ("/v1/payment_intents", f"order-{oid}-1"),
        (f"/v1/payment_intents/{first}", f"order-{oid}-1-{declined}-pm"),  # the card onto it
        (f"/v1/payment_intents/{first}/confirm", f"order-{oid}-1-{declined}"),
        (f"/v1/payment_intents/{first}/cancel", f"cancel-{first}"),  # the refused one, before a new one
        ("/v1/payment_intents", f"order-{oid}-2"),
        (f"/v1/payment_intents/{second}", f"order-{oid}-2-{visa}-pm"),
        (f"/v1/payment_intents/{second}/confirm", f"order-{oid}-2-{visa}"),
        ("/v1/refunds", f"refund-{refund['_id']}"),
    ]


def test_a_create_whose_answer_was_lost_is_repeated_with_its_key_and_makes_one_payment(fault_hook, crash_at):
    """The process dies after Stripe made the PaymentIntent and before we wrote its id: the buyer's
    next request makes it again with the same key and gets the same PaymentIntent back."""
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)

    crash_at("pay.after_provider_start")
    with pytest.raises(faults.InjectedCrash):
        payments.start(ALICE, cart.cart_id, "Ada Lovelace", "ada@example.com")
    fault_hook(None)
    [order] = mongo.orders().find()
    assert order["payment"]["intent"] is None  # made at Stripe, unknown here
    [made] = intents_of(order)

    before = len(requests_received())
    outcome = payments.pay_with_card(order["ref"], ALICE, card(VISA))  # makes it first, then pays
    assert outcome.status == "paid"
    create = provider_posts(before)[0]
    assert create == {"path": "/v1/payment_intents", "key": f"order-{order['_id']}-1", "replayed": True}
    assert [pi.id for pi in intents_of(order)] == [made.id]  # one PaymentIntent for the order...
    assert charged(order) == [7000]  # ...charged once
    assert mongo.orders().count_documents({"state": "paid"}) == 1
    assert mongo.orders().find_one({"_id": order["_id"]})["paidWith"]["id"] == made.id
    assert check_invariants() == []


class LosingProxy:
    """A tiny HTTP proxy in front of localstripe that forwards every request and, for the first
    request whose path is ``lose``, drops the answer (closes the connection without it), as a
    network failure after Stripe did the work would. The ``stripe`` library then retries with
    the same Idempotency-Key."""

    def __init__(self, upstream: str, lose: str, before_stripe: bool = False):
        address = urlsplit(upstream)
        self.host, self.port, self.lose, self.lost = address.hostname or "127.0.0.1", address.port, lose, 0
        self.before_stripe = before_stripe  # drop that request itself, not only its answer
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                self.forward()

            def do_POST(self):  # noqa: N802
                self.forward()

            def forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                losing = self.command == "POST" and self.path == proxy.lose and not proxy.lost
                if losing and proxy.before_stripe:
                    proxy.lost += 1
                    self.close_connection = True  # never reached Stripe
                    return
                upstream = http.client.HTTPConnection(proxy.host, proxy.port, timeout=20)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                upstream.close()
                if losing:
                    proxy.lost += 1
                    self.close_connection = True  # done at Stripe; the answer never arrives
                    return
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def losing_proxy(settings, localstripe_url):
    made = []

    def through(lose: str, before_stripe: bool = False) -> LosingProxy:
        proxy = LosingProxy(localstripe_url, lose, before_stripe)
        made.append(proxy)
        settings.STRIPE_API_BASE = proxy.url  # the app's client is made again for the new address
        return proxy

    yield through
    for proxy in made:
        proxy.close()


def test_a_create_answer_lost_on_the_network_is_retried_by_the_library_and_makes_one_payment(losing_proxy):
    proxy = losing_proxy("/v1/payment_intents")
    session = make_session()
    before = len(requests_received())
    order = start(session)
    assert proxy.lost == 1
    sent = provider_posts(before)
    key = f"order-{order['_id']}-1"
    assert [(r["key"], r["replayed"]) for r in sent] == [(key, False), (key, True)]  # the library's retry
    assert [pi.id for pi in intents_of(order)] == [order["payment"]["intent"]]  # not two
    assert payments.pay_with_card(order["_id"], ALICE, card(VISA)).status == "paid"
    assert charged(order) == [7000]
    assert check_invariants() == []


def test_a_confirm_answer_lost_on_the_network_charges_once_and_the_order_is_paid(losing_proxy):
    session = make_session()
    order = start(session)
    proxy = losing_proxy(f"/v1/payment_intents/{order['payment']['intent']}/confirm")
    before = len(requests_received())
    outcome = payments.pay_with_card(order["_id"], ALICE, card(VISA))
    assert proxy.lost == 1 and outcome.status == "paid"
    confirms = [r for r in provider_posts(before) if r["path"].endswith("/confirm")]
    assert [r["replayed"] for r in confirms] == [False, True]  # the retry got the first answer again
    assert charged(order) == [7000]
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"
    assert check_invariants() == []


@pytest.mark.parametrize("keys", ["honoured", "ignored"])
def test_a_refund_answer_lost_on_the_network_refunds_once(losing_proxy, keys, request):
    """Once with Stripe's idempotency keys doing their work, once with them ignored (plain
    localstripe): our own lookup by id must then keep the retry from refunding again."""
    from booking.tests.paying import pay

    if keys == "ignored":
        request.getfixturevalue("keys_ignored")
    session = make_session()
    paid = pay(start(session))
    losing_proxy("/v1/refunds")
    refunds.refund_tickets(paid["_id"], tickets=[paid["lines"][0]["ticket"]], by="anna")
    [refund] = mongo.orders().find_one({"_id": paid["_id"]})["refunds"]
    assert refund["status"] == "succeeded"
    at_stripe = client().v1.refunds.list({"payment_intent": paid["paidWith"]["id"]}).data
    assert [r.amount for r in at_stripe] == [3500]
    assert check_invariants() == []


def test_the_same_key_with_other_parameters_is_refused_as_stripe_does():
    import stripe

    payments_api = client().v1.payment_intents
    first = payments_api.create({"amount": 1000, "currency": "eur"}, {"idempotency_key": "k-same-params"})
    again = payments_api.create({"amount": 1000, "currency": "eur"}, {"idempotency_key": "k-same-params"})
    assert again.id == first.id
    with pytest.raises(stripe.IdempotencyError):
        payments_api.create({"amount": 2000, "currency": "eur"}, {"idempotency_key": "k-same-params"})


# --- our own guards, with the keys ignored as plain localstripe ignores them ---


@pytest.fixture
def keys_ignored():
    """localstripe answers every POST afresh, whatever its Idempotency-Key (its own way): what is
    left to keep a retry from charging or refunding twice is ours."""
    configure("idempotency", {"honour": False})
    yield
    configure("idempotency", {"honour": True})


def test_with_the_keys_ignored_a_double_submit_charges_once(keys_ignored):
    """Two checkouts and four payments of the same cart at the same moment: one order, one charge
    (the claim of the attempt lets one request confirm), and the keys sent are the same each time."""
    session = make_session()
    cart = holds.hold_seats(session["_id"], ALICE, None, KEYS)
    before = len(requests_received())
    started = at_once(lambda: payments.start(ALICE, cart.cart_id, "Ada Lovelace", "ada@example.com"), 2)
    assert len({o["_id"] for o in started}) == 1 and mongo.orders().count_documents({}) == 1
    [order] = mongo.orders().find()
    creates = [r for r in provider_posts(before) if r["path"] == "/v1/payment_intents"]
    assert {r["key"] for r in creates} == {f"order-{order['_id']}-1"} and not any(r["replayed"] for r in creates)
    means = card(VISA)
    outcomes = at_once(lambda: payments.pay_with_card(order["_id"], ALICE, means).status, 4)
    assert "paid" in outcomes and set(outcomes) <= {"paid", "processing"}
    assert payments.pay_with_card(order["_id"], ALICE, card(VISA)).status == "paid"  # and again, later
    intent = order["payment"]["intent"]
    confirms = [r for r in provider_posts(before) if r["path"].endswith("/confirm")]
    assert [r["path"] for r in confirms] == [f"/v1/payment_intents/{intent}/confirm"]  # one charge asked for
    assert charged(order) == [7000]
    assert mongo.orders().find_one({"_id": order["_id"]})["state"] == "paid"
    assert check_invariants() == []


def test_with_the_keys_ignored_a_confirm_answer_lost_on_the_network_charges_once(keys_ignored, losing_proxy):
    session = make_session()
    order = start(session)
    proxy = losing_proxy(f"/v1/payment_intents/{order['payment']['intent']}/confirm")
    outcome = payments.pay_with_card(order["_id"], ALICE, card(VISA))
    assert proxy.lost == 1 and outcome.status == "paid"
    assert charged(order) == [7000]
    assert check_invariants() == []


def test_with_the_keys_ignored_a_refund_retried_after_a_crash_refunds_once(keys_ignored, fault_hook, crash_at):
    """Refunded at Stripe, then the process died before writing it down: reconcile asks again, and
    finds the refund by our own id instead of making another."""
    from datetime import timedelta

    from booking.core import clock
    from booking.tests.paying import pay
    from booking.upkeep.reconcile import reconcile

    session = make_session()
    paid = pay(start(session))

    crash_at("refund.after_provider")
    with pytest.raises(faults.InjectedCrash):
        cancels.cancel_order(paid["_id"], by="staff")
    fault_hook(None)
    before = len(requests_received())
    reconcile(now=clock.now() + timedelta(minutes=2), grace=timedelta(0))
    reconcile(now=clock.now() + timedelta(minutes=30), grace=timedelta(0))
    done = mongo.orders().find_one({"_id": paid["_id"]})
    assert done["state"] == "refunded" and done["refunds"][0]["status"] == "succeeded"
    assert [r["path"] for r in provider_posts(before)] == []  # looked up, not made again
    at_stripe = client().v1.refunds.list({"payment_intent": paid["paidWith"]["id"]}).data
    assert [r.amount for r in at_stripe] == [7000]
    assert check_invariants() == []


def test_with_the_keys_ignored_a_refund_that_never_reached_stripe_is_made_once_with_the_same_key(
    keys_ignored, losing_proxy
):
    from booking.tests.paying import pay

    session = make_session()
    paid = pay(start(session))
    proxy = losing_proxy("/v1/refunds", before_stripe=True)
    before = len(requests_received())
    refunds.refund_tickets(paid["_id"], tickets=[paid["lines"][0]["ticket"]], by="anna")
    assert proxy.lost == 1
    [refund] = mongo.orders().find_one({"_id": paid["_id"]})["refunds"]
    assert refund["status"] == "succeeded"
    made = [r for r in provider_posts(before) if r["path"] == "/v1/refunds"]
    assert [r["key"] for r in made] == [f"refund-{refund['_id']}"]  # the lost try never arrived; the next, same key
    at_stripe = client().v1.refunds.list({"payment_intent": paid["paidWith"]["id"]}).data
    assert [r.amount for r in at_stripe] == [3500]
    assert check_invariants() == []


# --- Stripe's 5xx answers, which it keeps under their idempotency key ---


@pytest.fixture
def refunds_answered_500():
    """refunds_answered_500(times): the next refund creates answer 500 at "Stripe", having done
    nothing, and the wrapper keeps each answer under its key as Stripe does (for a day)."""
    yield lambda times: configure("fail_next", {"path": "/v1/refunds", "times": times})
    configure("fail_next", {"path": "/v1/refunds", "times": 0})


def refund_keys_sent(since: int) -> list[str]:
    return [r["key"] for r in provider_posts(since) if r["path"] == "/v1/refunds"]


def test_a_refund_answered_500_is_tried_again_under_a_new_key_and_refunds_once(refunds_answered_500):
    """With the same key the retry would only get the kept 500 again."""
    from booking.tests.paying import pay

    paid = pay(start(make_session()))
    refunds_answered_500(1)
    before = len(requests_received())
    refunds.refund_tickets(paid["_id"], tickets=[paid["lines"][0]["ticket"]], by="anna")
    [refund] = mongo.orders().find_one({"_id": paid["_id"]})["refunds"]
    assert refund["status"] == "succeeded"
    assert refund_keys_sent(before) == [f"refund-{refund['_id']}", f"refund-{refund['_id']}-1-1"]
    at_stripe = client().v1.refunds.list({"payment_intent": paid["paidWith"]["id"]}).data
    assert [r.amount for r in at_stripe] == [3500]
    assert check_invariants() == []


@pytest.mark.parametrize("retried_by", ["reconcile", "staff"])
def test_a_refund_that_met_only_500s_succeeds_on_its_next_attempt_under_keys_not_used_before(
    refunds_answered_500, retried_by
):
    """Every try of the first attempt answered 500 (and Stripe keeps those answers for a day):
    the refund is marked failed and retried later (by reconcile, or by staff's "Retry refund",
    which starts its count of tries again), and that attempt's keys are new, so it succeeds at
    once instead of meeting the kept 500s until they expire."""
    from datetime import timedelta

    from booking.core import clock
    from booking.payments.stripe_provider import REFUND_TRIES
    from booking.tests.paying import pay

    paid = pay(start(make_session()))
    refunds_answered_500(REFUND_TRIES)
    before = len(requests_received())
    refunds.refund_tickets(paid["_id"], tickets=[paid["lines"][0]["ticket"]], by="anna")
    [refund] = mongo.orders().find_one({"_id": paid["_id"]})["refunds"]
    assert refund["status"] == "failed" and refund["tries"] == 1
    first_keys = refund_keys_sent(before)
    assert len(first_keys) == REFUND_TRIES == len(set(first_keys))
    later = len(requests_received())
    if retried_by == "reconcile":
        assert refunds.retry_due(now=clock.now() + timedelta(days=1)) == 1
    else:
        assert refunds.retry(paid["_id"], refund["_id"]) == "succeeded"
    [refund] = mongo.orders().find_one({"_id": paid["_id"]})["refunds"]
    assert refund["status"] == "succeeded" and refund["claims"] == 2
    assert refund_keys_sent(later) == [f"refund-{refund['_id']}-2-0"]
    assert not [r for r in requests_received()[later:] if r["replayed"]]
    at_stripe = client().v1.refunds.list({"payment_intent": paid["paidWith"]["id"]}).data
    assert [r.amount for r in at_stripe] == [3500]
    assert check_invariants() == []
