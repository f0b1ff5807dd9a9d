"""Check-in from a third-party scanner: the door's rules, once per ticket, also when two scanners
race for it."""

import threading

from booking.core import mongo
from booking.tests.api.support import Api, make_token
from booking.tests.checkin_support import sell
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants

CHECK_IN = "/api/v1/tickets/check-in/"


def scan(api: Api, performance, code: str, door: str = "Gate 1", **extra):
    return api.post(CHECK_IN, {"performance_id": str(performance["_id"]), "code": code, "door": door, **extra})


def test_a_ticket_lets_in_once(api, performance):
    order = sell(performance, ["0:0"])
    code = order["lines"][0]["ticket"]
    first = scan(api, performance, code)
    assert first.status_code == 200, first.content
    assert (first.json()["status"], first.json()["admitted"]) == ("admitted", True)
    assert first.json()["seat"] == "Row A · Seat 1"
    second = scan(api, performance, code, door="Gate 2")
    assert (second.json()["status"], second.json()["admitted"], second.json()["used_door"]) == ("used", False, "Gate 1")
    stored = mongo.orders().find_one({"_id": order["_id"]})["lines"][0]["checkedIn"]
    assert (stored["door"], stored["by"]) == ("Gate 1", "API token CRM")


def test_a_retried_scan_with_its_scan_id_is_admitted_again_not_used(api, performance):
    code = sell(performance, ["0:0"])["lines"][0]["ticket"]
    assert scan(api, performance, code, scan_id="scanner-7-0001").json()["status"] == "admitted"
    again = scan(api, performance, code, scan_id="scanner-7-0001").json()
    assert (again["status"], again["replay"]) == ("admitted", True)


def test_the_doors_rules_wrong_performance_unknown_and_refunded(api, theater, performance):
    code = sell(performance, ["0:0"])["lines"][0]["ticket"]
    other = make_session(theater, days=2)
    assert scan(api, other, code).json()["status"] == "wrong_session"
    assert scan(api, performance, "Z" * 24).json()["status"] == "unknown"
    paid = sell(performance, ["2:0"])
    Api(api.token).post(f"/api/v1/orders/{paid['_id']}/cancel/", {"reason": "Refund"})
    refused = scan(api, performance, paid["lines"][0]["ticket"]).json()
    assert (refused["status"], refused["admitted"]) == ("not_valid", False)


def test_two_scanners_racing_for_one_ticket_let_it_in_once(api, performance, fault_hook):
    code = sell(performance, ["0:0"])["lines"][0]["ticket"]
    answers: list[dict] = []
    barrier = threading.Barrier(2)

    def together(name):
        if name == "api.checkin.before":
            barrier.wait(5)  # both scans reach the door's update at once

    fault_hook(together)

    def go(door):
        answers.append(scan(Api(api.token), performance, code, door=door).json())

    threads = [threading.Thread(target=go, args=(f"Gate {i}",)) for i in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(a["status"] for a in answers) == ["admitted", "used"]
    assert check_invariants() == []


def test_another_theaters_performance_is_404(performance):
    from booking.tests.factories import make_theater

    code = sell(performance, ["0:0"])["lines"][0]["ticket"]
    other = Api(make_token(make_theater(name="Elsewhere")))
    assert scan(other, performance, code).status_code == 404
    assert scan(Api(make_token(make_theater(name="X"))), performance, code).json()["error"] == "not_found"


def test_bad_scans_answer_400(api, performance):
    for body in (
        {"performance_id": str(performance["_id"]), "code": "short", "door": "Gate"},
        {"performance_id": str(performance["_id"]), "code": "A" * 24, "door": ""},
        {"performance_id": str(performance["_id"]), "code": "A" * 24, "door": "x" * 41},
        {"performance_id": str(performance["_id"]), "code": "A" * 24, "door": "Gate", "scan_id": "a b"},
        {"performance_id": "nothex", "code": "A" * 24, "door": "Gate"},
    ):
        answer = api.post(CHECK_IN, body)
        assert answer.status_code == 400, (body, answer.content)
