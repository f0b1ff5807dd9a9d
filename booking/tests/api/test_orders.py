"""Orders through the API: reservations and complimentary orders made by the counter's own sale,
paid, canceled and refunded through the staff's services; idempotency keys, also under a race;
the list with the back office's filters and a cursor; customers' data only with its scope."""

import threading
import time

import pytest
from django.utils import timezone

from booking.core import mongo
from booking.core.faults import InjectedCrash
from booking.sales.selectors import get_session
from booking.tests.api.support import Api, make_token
from booking.tests.checkin_support import sell
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import HELD, SOLD

ORDERS = "/api/v1/orders/"


def reservation(performance, seats=("0:0", "0:1"), **extra) -> dict:
    return {
        "performance_id": str(performance["_id"]),
        "seats": list(seats),
        "kind": "reservation",
        "customer": {"name": "Grace Hopper", "email": "grace@example.com", "phone": "+49 30 1234567"},
        "due": timezone.localdate().isoformat(),
        **extra,
    }


def complimentary(performance, seats=("2:0", "2:1")) -> dict:
    return {
        "performance_id": str(performance["_id"]),
        "seats": list(seats),
        "kind": "complimentary",
        "customer": {"name": "Press Desk"},
        "reason": "Review copy",
        "channel": "phone",
    }


def state_of(performance, key: str) -> int:
    row, col = map(int, key.split(":"))
    return get_session(performance["_id"])["seats"][row][col]


def test_a_reservation_holds_the_seats_until_paid_at_the_box_office(api, performance):
    made = api.post(ORDERS, reservation(performance))
    assert made.status_code == 201, made.content
    order = made.json()
    assert (order["state"], order["method"], order["channel"]) == ("pending_payment", "invoice", "box_office")
    assert order["customer"] == {"name": "Grace Hopper", "email": "grace@example.com", "phone": "+49 30 1234567"}
    assert [t["seat_key"] for t in order["tickets"]] == ["0:0", "0:1"]
    assert state_of(performance, "0:0") == HELD
    paid = api.post(f"{ORDERS}{order['id']}/mark-paid/")
    assert paid.status_code == 200, paid.content
    assert paid.json()["state"] == "paid"
    assert state_of(performance, "0:0") == SOLD
    stored = mongo.orders().find_one({"ref": order["ref"]})
    assert stored["soldBy"]["name"] == "API token CRM"
    assert check_invariants() == []


def test_a_complimentary_order_is_sold_at_once_for_nothing(api, performance):
    made = api.post(ORDERS, complimentary(performance))
    assert made.status_code == 201, made.content
    order = made.json()
    assert (order["state"], order["channel"], order["total"]) == ("paid", "complimentary", 0)
    assert state_of(performance, "2:0") == SOLD
    assert mongo.orders().find_one({"ref": order["ref"]})["compReason"] == "Review copy"


def test_seats_taken_are_refused_and_nothing_is_held(api, performance):
    sell(performance, ["0:1"])
    refused = api.post(ORDERS, reservation(performance, seats=("0:0", "0:1")))
    assert refused.status_code == 409
    assert refused.json()["error"] == "conflict"
    assert state_of(performance, "0:0") == 0  # all or nothing
    assert check_invariants() == []


def test_a_sale_refused_for_its_fields_holds_nothing(api, performance):
    no_reason = {**complimentary(performance), "reason": ""}
    refused = api.post(ORDERS, no_reason)
    assert refused.status_code == 400
    assert "reason" in refused.json()["fields"]
    past_due = reservation(performance, due="2020-01-01")
    refused = api.post(ORDERS, past_due)
    assert refused.status_code == 400
    assert "due" in refused.json()["fields"]
    assert state_of(performance, "0:0") == 0 and state_of(performance, "2:0") == 0
    assert mongo.carts().count_documents({"state": "active"}) == 0


def test_cancel_frees_the_seats_through_the_staff_cancel(api, performance):
    order = api.post(ORDERS, reservation(performance)).json()
    canceled = api.post(f"{ORDERS}{order['id']}/cancel/", {"reason": "Customer called"})
    assert canceled.status_code == 200, canceled.content
    assert canceled.json()["state"] == "canceled"
    assert state_of(performance, "0:0") == 0
    again = api.post(f"{ORDERS}{order['id']}/cancel/", {"reason": "Customer called"})
    assert again.status_code == 409
    assert check_invariants() == []


def test_refunding_some_tickets_of_a_card_order(api, performance):
    paid = sell(performance, ["0:0", "0:1"])
    first_ticket = paid["lines"][0]["ticket"]
    refunded = api.post(f"{ORDERS}{paid['_id']}/refund/", {"tickets": [first_ticket], "reason": "Seat broken"})
    assert refunded.status_code == 200, refunded.content
    body = refunded.json()
    assert body["state"] == "partially_refunded"
    assert body["refunded_tickets"] == [first_ticket]
    assert state_of(performance, paid["lines"][0]["key"]) == 0
    unknown = api.post(f"{ORDERS}{paid['_id']}/refund/", {"tickets": ["X" * 24], "reason": "No"})
    assert unknown.status_code == 400
    assert check_invariants() == []


def test_a_retried_create_returns_the_first_answer_and_makes_no_second_order(api, performance):
    headers = {"Idempotency-Key": "create-1"}
    first = api.post(ORDERS, complimentary(performance), headers=headers)
    second = api.post(ORDERS, complimentary(performance), headers=headers)
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    assert second["Idempotent-Replayed"] == "true"
    assert mongo.orders().count_documents({}) == 1


def test_a_key_reused_for_another_request_is_refused(api, performance):
    headers = {"Idempotency-Key": "create-2"}
    assert api.post(ORDERS, complimentary(performance), headers=headers).status_code == 201
    other = api.post(ORDERS, complimentary(performance, seats=("2:2", "2:3")), headers=headers)
    assert other.status_code == 422
    assert other.json()["error"] == "idempotency_key_reused"
    assert mongo.orders().count_documents({}) == 1


def test_a_refusal_is_kept_for_the_key_too(api, performance):
    sell(performance, ["2:0"])
    headers = {"Idempotency-Key": "create-3"}
    first = api.post(ORDERS, complimentary(performance), headers=headers)
    assert first.status_code == 409
    again = api.post(ORDERS, complimentary(performance), headers=headers)
    assert (again.status_code, again.json()) == (409, first.json())


def test_keys_belong_to_their_token(theater, performance):
    one, two = Api(make_token(theater, name="One")), Api(make_token(theater, name="Two"))
    headers = {"Idempotency-Key": "same-key"}
    assert one.post(ORDERS, complimentary(performance), headers=headers).status_code == 201
    assert two.post(ORDERS, complimentary(performance, seats=("2:2", "2:3")), headers=headers).status_code == 201
    assert mongo.orders().count_documents({}) == 2


def test_two_identical_requests_racing_make_one_order_and_get_the_same_answer(api, performance, fault_hook):
    entered = threading.Event()

    def slow_sale(name):
        if name == "counter.after_cart" and not entered.is_set():
            entered.set()
            time.sleep(0.5)  # the second request arrives while the first is selling

    fault_hook(slow_sale)
    answers = []

    def create():
        answers.append(Api(api.token).post(ORDERS, complimentary(performance), headers={"Idempotency-Key": "race"}))

    threads = [threading.Thread(target=create) for _ in range(2)]
    threads[0].start()
    assert entered.wait(5)
    threads[1].start()
    for thread in threads:
        thread.join(15)
    assert [a.status_code for a in answers] == [201, 201]
    assert answers[0].json() == answers[1].json()
    assert sorted(a.get("Idempotent-Replayed", "") for a in answers) == ["", "true"]
    assert mongo.orders().count_documents({}) == 1
    assert check_invariants() == []


def test_malformed_idempotency_keys_are_refused(api, performance):
    for key in ("", "has space", "x" * 256, "ümlaut"):
        answer = api.post(ORDERS, complimentary(performance), headers={"Idempotency-Key": key})
        assert answer.status_code == 400, key
    assert mongo.orders().count_documents({}) == 0


def test_the_list_pages_newest_first_with_the_back_offices_filters(api, performance):
    seats = [("2:0",), ("2:1",), ("2:2", "2:3")]
    made = [api.post(ORDERS, complimentary(performance, seats=keys)).json() for keys in seats]
    made.append(api.post(ORDERS, reservation(performance, seats=("0:0",))).json())
    first = api.get(ORDERS, {"limit": 2}).json()
    assert [o["ref"] for o in first["orders"]] == [made[3]["ref"], made[2]["ref"]]
    rest = api.get(ORDERS, {"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [o["ref"] for o in rest["orders"]] == [made[1]["ref"], made[0]["ref"]]
    assert rest["next_cursor"] is None
    pending = api.get(ORDERS, {"state": "pending_payment"}).json()["orders"]
    assert [o["ref"] for o in pending] == [made[3]["ref"]]
    given = api.get(ORDERS, {"channel": "complimentary"}).json()["orders"]
    assert len(given) == 3
    by_method = api.get(ORDERS, {"payment_method": ["invoice", "cash"]}).json()["orders"]
    assert [o["ref"] for o in by_method] == [made[3]["ref"]]
    by_text = api.get(ORDERS, {"q": "grace@example.com"}).json()["orders"]
    assert [o["ref"] for o in by_text] == [made[3]["ref"]]
    mine = api.get(ORDERS, {"performance_id": str(performance["_id"])}).json()["orders"]
    assert len(mine) == 4


def test_bad_list_filters_answer_400(api):
    for params in (
        {"cursor": "forged"},
        {"state": "lost"},
        {"channel": "pigeon"},
        {"payment_method": "gold"},
        {"limit": 0},
        {"limit": 201},
        {"limit": "ten"},
        {"placed_from": "yesterday"},
        {"performance_id": "nothex"},
    ):
        answer = api.get(ORDERS, params)
        assert answer.status_code == 400, (params, answer.content)
        assert answer.json()["fields"], params


def test_customers_names_and_emails_need_their_scope(theater, performance):
    writer = Api(make_token(theater, ["orders:write"]))
    order = writer.post(ORDERS, reservation(performance)).json()
    reader = Api(make_token(theater, ["orders:read"]))
    assert reader.get(f"{ORDERS}{order['id']}/").json()["customer"] is None
    assert reader.get(ORDERS).json()["orders"][0]["customer"] is None
    searching = reader.get(ORDERS, {"q": "Grace"})
    assert searching.status_code == 403
    full = Api(make_token(theater, ["orders:read", "customers:read"]))
    assert full.get(f"{ORDERS}{order['id']}/").json()["customer"]["email"] == "grace@example.com"


def test_another_theaters_orders_are_invisible(api, performance):
    from booking.tests.factories import make_theater

    order = api.post(ORDERS, complimentary(performance)).json()
    other = Api(make_token(make_theater(name="Elsewhere")))
    assert other.get(f"{ORDERS}{order['id']}/").status_code == 404
    assert other.post(f"{ORDERS}{order['id']}/cancel/", {"reason": "x"}).status_code == 404
    assert other.get(ORDERS).json()["orders"] == []
    assert other.post(ORDERS, complimentary(performance, seats=("2:5",))).status_code == 404


@pytest.mark.parametrize("point", ["hold.after_cart", "counter.after_cart", "counter.after_order"])
def test_a_retry_after_a_crash_finishes_the_first_try_instead_of_selling_twice(api, performance, crash_at, point):
    headers = {"Idempotency-Key": "crash-once"}
    crash_at(point)
    with pytest.raises(InjectedCrash):
        api.post(ORDERS, reservation(performance), headers=headers)
    crash_at("nowhere")
    retried = api.post(ORDERS, reservation(performance), headers=headers)
    assert retried.status_code == 201, retried.content
    assert mongo.orders().count_documents({}) == 1
    assert [t["seat_key"] for t in retried.json()["tickets"]] == ["0:0", "0:1"]
    assert state_of(performance, "0:0") == HELD
    assert api.post(ORDERS, reservation(performance), headers=headers).json() == retried.json()
    assert check_invariants() == []


def test_a_retried_cancel_answers_as_the_first_time(api, performance):
    order = api.post(ORDERS, reservation(performance)).json()
    headers = {"Idempotency-Key": "cancel-1"}
    first = api.post(f"{ORDERS}{order['id']}/cancel/", {"reason": "Called"}, headers=headers)
    again = api.post(f"{ORDERS}{order['id']}/cancel/", {"reason": "Called"}, headers=headers)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again["Idempotent-Replayed"] == "true"


def test_only_a_reservation_can_be_marked_paid(api, performance):
    order = api.post(ORDERS, complimentary(performance)).json()
    refused = api.post(f"{ORDERS}{order['id']}/mark-paid/")
    assert refused.status_code == 409


def test_an_order_whose_summaries_do_not_name_the_theater_is_found_by_its_sessions(api, performance):
    order = api.post(ORDERS, complimentary(performance)).json()
    stored = mongo.orders().find_one({"ref": order["ref"]})
    mongo.orders().update_one({"_id": stored["_id"], "ref": stored["ref"]}, {"$unset": {"sessions.$[].theaterId": ""}})
    assert api.get(f"{ORDERS}{order['id']}/").status_code == 200


def test_a_refunded_order_stays_in_the_theaters_list(api, performance):
    paid = sell(performance, ["0:0"])
    api.post(f"{ORDERS}{paid['_id']}/cancel/", {"reason": "Customer called"})
    listed = api.get(ORDERS, {"state": "refunded"}).json()["orders"]
    assert [o["ref"] for o in listed] == [paid["ref"]]
    by_performance = api.get(ORDERS, {"performance_id": str(performance["_id"])}).json()["orders"]
    assert [o["ref"] for o in by_performance] == [paid["ref"]]
