"""Buyers change their own bookings (sales/buyer_changes.py) within the theater's rules
(sales/self_service.py): cancel with the fee kept, exchange through the staff's exchange service,
hand a ticket on; the limits at their exact values, the races with a door scan and with another
buyer."""

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import translation

from booking.core import clock, faults, mongo
from booking.core.errors import Conflict, InvalidRequest, SeatsTaken
from booking.notifications import change_notices
from booking.sales import buyer_changes, checkin, exchanges, holds, self_service
from booking.tests.factories import make_session, make_theater
from booking.tests.localstripe import VISA, card
from booking.tests.paying import checkout_paid
from booking.tests.threads import at_once
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, SOLD

pytestmark = pytest.mark.slow

OPEN = self_service.Rules(
    exchange=True, cancel=True, hours_before=48, fee=150, transfer=True, max_transfers=2, transfer_hours_before=2
)


def paid(session, keys, owner="s:ada", email="ada@example.com", name="Ada Lovelace"):
    cart = holds.hold_seats(session["_id"], owner, None, list(keys))
    return checkout_paid(owner, cart.cart_id, name, email)


def cell(session_id, key):
    r, c = (int(x) for x in key.split(":"))
    return mongo.sessions().find_one({"_id": session_id})["seats"][r][c]


def stored(order):
    return mongo.orders().find_one({"_id": order["_id"]})


def admits(session_id, code):
    return checkin.check_in(checkin.get_scope(session_id), door="Main", by="door", code=code)


@pytest.fixture
def theater():
    theater = make_theater()
    self_service.set_theater_rules(theater_id=theater["_id"], rules=OPEN)
    return theater


@pytest.fixture
def session(theater):
    return make_session(theater, days=5)


# --- the rules ---


def test_a_performance_s_own_rules_win_over_the_theater_s_default(theater, session):
    other = make_session(theater, days=6)
    closed = self_service.Rules(cancel=True, hours_before=72, fee=0)
    self_service.set_session_rules(session_id=other["_id"], rules=closed)
    found = self_service.rules_of_sessions([session["_id"], other["_id"]])
    assert found[session["_id"]] == OPEN and found[other["_id"]] == closed
    self_service.set_session_rules(session_id=other["_id"], rules=None)  # follows the theater again
    assert self_service.rules_of_sessions([other["_id"]])[other["_id"]] == OPEN


def test_a_theater_without_rules_allows_nothing_online():
    session = make_session(days=5)
    order = paid(session, ["0:0"])
    with pytest.raises(Conflict, match="cannot be canceled online"):
        buyer_changes.cancel_tickets(order_id=order["_id"], tickets=None, confirmed=None, now=clock.now())
    assert stored(order)["state"] == "paid"


@pytest.mark.parametrize(
    "field,bad",
    [
        ("hours_before", -1),
        ("hours_before", self_service.MAX_HOURS + 1),
        ("fee", -1),
        ("fee", self_service.MAX_FEE + 1),
        ("max_transfers", self_service.MAX_TRANSFERS + 1),
        ("fee", 1.5),
        ("fee", True),
    ],
)
def test_rules_out_of_range_are_refused(field, bad):
    values = {**self_service.as_dict(OPEN), field: bad}
    with pytest.raises(InvalidRequest, match=field):
        self_service.clean_rules(**values)


def test_rules_at_their_limits_are_taken():
    values = {**self_service.as_dict(OPEN), "hours_before": self_service.MAX_HOURS, "fee": self_service.MAX_FEE}
    assert self_service.clean_rules(**values).fee == self_service.MAX_FEE


# --- cancel ---


def test_canceling_some_tickets_refunds_them_less_the_fee_and_frees_the_seats_at_once(session):
    order = paid(session, ["0:0", "0:1"])  # 2 x 20.00
    mail.outbox.clear()
    done = buyer_changes.cancel_tickets(
        order_id=order["_id"], tickets=[order["lines"][0]["ticket"]], confirmed=None, now=clock.now()
    )
    assert done["state"] == "partially_refunded" and [x["key"] for x in done["lines"]] == ["0:1"]
    [refund] = done["refunds"]
    assert refund["amount"] == 2000 - 150 and refund["keptFee"] == 150 and refund["status"] == "succeeded"
    assert cell(session["_id"], "0:0") == FREE and cell(session["_id"], "0:1") == SOLD
    assert holds.hold_seats(session["_id"], "s:bob", None, ["0:0"])  # on sale again at once
    assert not admits(session["_id"], order["lines"][0]["ticket"]).admitted
    change_notices.send_pending(order["_id"])
    [message] = mail.outbox
    assert "€18.50" in message.body.replace("EUR", "€").replace("\xa0", "") or "18.50" in message.body
    assert "1.50" in message.body and message.to == ["ada@example.com"]
    assert check_invariants() == []


def test_canceling_the_whole_order_in_german_tells_the_buyer_in_german(session):
    with translation.override("de"):
        order = paid(session, ["0:0", "0:1"])
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"language": "de"}})
    done = buyer_changes.cancel_tickets(order_id=order["_id"], tickets=None, confirmed=None, now=clock.now())
    assert done["state"] == "refunded" and done["refunds"][0]["amount"] == 4000 - 300
    mail.outbox.clear()
    change_notices.send_pending(order["_id"])
    [message] = mail.outbox
    assert "storniert" in message.subject and "Gebühr" in message.body


def test_the_cancel_window_ends_exactly_at_its_deadline(session):
    order = paid(session, ["0:0"])
    deadline = session["start"] - timedelta(hours=OPEN.hours_before)
    with pytest.raises(Conflict, match="48 hours before"):
        buyer_changes.cancel_tickets(order_id=order["_id"], tickets=None, confirmed=None, now=deadline)
    assert stored(order)["state"] == "paid"
    just_before = deadline - timedelta(milliseconds=1)
    done = buyer_changes.cancel_tickets(order_id=order["_id"], tickets=None, confirmed=None, now=just_before)
    assert done["state"] == "refunded"


def test_bad_cancel_input_changes_nothing(session):
    order = paid(session, ["0:0"])
    for tickets in ([], ["nope"], [order["lines"][0]["ticket"]] * 2, [1], "x"):
        with pytest.raises(InvalidRequest):
            buyer_changes.cancel_tickets(order_id=order["_id"], tickets=tickets, confirmed=None, now=clock.now())
    assert stored(order)["lines"] == order["lines"] and "refunds" not in stored(order)


# --- transfer ---


def test_a_transfer_gives_the_holder_a_new_code_and_the_old_one_stops_admitting(session):
    order = paid(session, ["0:0", "0:1"])
    old = order["lines"][0]["ticket"]
    mail.outbox.clear()
    done = buyer_changes.transfer_ticket(
        order_id=order["_id"], ticket=old, name="  Grace   Hopper ", email="Grace@Example.com", now=clock.now()
    )
    line = done["lines"][0]
    assert line["ticket"] != old and line["holder"]["name"] == "Grace Hopper" and line["key"] == "0:0"
    assert done["transferredLines"][0]["ticket"] == old
    outcome = admits(session["_id"], old)
    assert outcome.status == checkin.NOT_VALID and outcome.state == checkin.TRANSFERRED
    # the offline list, downloaded again, knows why too
    listed = {e["h"]: e for e in checkin.door_list(checkin.get_scope(session["_id"]))}
    assert listed[checkin.ticket_hash(old)]["state"] == "transferred" and not listed[checkin.ticket_hash(old)]["ok"]
    assert listed[checkin.ticket_hash(line["ticket"])]["ok"]
    assert listed[checkin.ticket_hash(line["ticket"])]["name"] == "Grace H."
    assert admits(session["_id"], line["ticket"]).admitted
    change_notices.send_pending(order["_id"])
    to = sorted((m.to[0], m.subject) for m in mail.outbox)
    assert [t for t, _ in to] == ["ada@example.com", "grace@example.com"]
    holder_mail = next(m for m in mail.outbox if m.to == ["grace@example.com"])
    assert "Ada Lovelace" in holder_mail.subject and len(holder_mail.attachments) == 1
    buyer_mail = next(m for m in mail.outbox if m.to == ["ada@example.com"])
    assert "Grace Hopper" in buyer_mail.body
    assert check_invariants() == []


def test_the_holder_is_written_to_in_the_language_they_booked_in(session):
    with translation.override("de"):
        earlier = paid(session, ["2:0"], owner="s:grete", email="grete@example.com", name="Grete")
    mongo.orders().update_one({"_id": earlier["_id"]}, {"$set": {"language": "de"}})
    order = paid(session, ["0:0"])
    buyer_changes.transfer_ticket(
        order_id=order["_id"],
        ticket=order["lines"][0]["ticket"],
        name="Grete",
        email="grete@example.com",
        now=clock.now(),
    )
    mail.outbox.clear()
    change_notices.send_pending(order["_id"])
    holder_mail = next(m for m in mail.outbox if m.to == ["grete@example.com"])
    buyer_mail = next(m for m in mail.outbox if m.to == ["ada@example.com"])
    assert holder_mail.subject == "Ein Ticket für Sie von Ada Lovelace" and "Reihe A, Platz 1" in holder_mail.body
    assert "handed on" in buyer_mail.subject


def test_the_transfer_limit_per_order_holds_at_its_exact_value(theater, session):
    order = paid(session, ["0:0", "0:1", "0:2", "0:3"])
    codes = [x["ticket"] for x in order["lines"]]
    for n, code in enumerate(codes[:2]):
        buyer_changes.transfer_ticket(
            order_id=order["_id"], ticket=code, name=f"Friend {n}", email=f"f{n}@example.com", now=clock.now()
        )
    with pytest.raises(Conflict, match="2 times"):
        buyer_changes.transfer_ticket(
            order_id=order["_id"], ticket=codes[2], name="Third", email="third@example.com", now=clock.now()
        )
    assert len(stored(order)["transfers"]) == 2 and stored(order)["lines"][2]["ticket"] == codes[2]


def test_two_transfers_racing_for_the_last_one_allowed_cannot_both_win(theater, session):
    self_service.set_theater_rules(theater_id=theater["_id"], rules=self_service.Rules(transfer=True, max_transfers=1))
    order = paid(session, ["0:0", "0:1"])
    codes = iter([x["ticket"] for x in order["lines"]])

    def hand_on():
        code = next(codes)
        try:
            buyer_changes.transfer_ticket(
                order_id=order["_id"],
                ticket=code,
                name="Friend",
                email=f"{code[-6:].lower()}@example.com",
                now=clock.now(),
            )
            return "won"
        except Conflict as exc:
            return exc.message

    results = at_once(hand_on, 2)
    assert sorted(results)[-1] == "won" and results.count("won") == 1, results
    assert len(stored(order)["transfers"]) == 1


def test_the_transfer_cut_off_is_exact(session):
    order = paid(session, ["0:0"])
    cut_off = session["start"] - timedelta(hours=OPEN.transfer_hours_before)
    with pytest.raises(Conflict, match="2 hours before"):
        buyer_changes.transfer_ticket(
            order_id=order["_id"], ticket=order["lines"][0]["ticket"], name="G", email="g@example.com", now=cut_off
        )
    done = buyer_changes.transfer_ticket(
        order_id=order["_id"],
        ticket=order["lines"][0]["ticket"],
        name="G",
        email="g@example.com",
        now=cut_off - timedelta(milliseconds=1),
    )
    assert done["lines"][0]["holder"]["email"] == "g@example.com"


@pytest.mark.parametrize(
    "name,email,message",
    [
        ("", "g@example.com", "name"),
        ("G", "not-an-address", "valid e-mail"),
        ("x" * 201, "g@example.com", "200"),
        ("G\u200b", "g@example.com", "visible"),
        ("Ada", "ada@example.com", "holds this ticket"),
    ],
)
def test_bad_holder_input_changes_nothing(session, name, email, message):
    order = paid(session, ["0:0"])
    with pytest.raises(InvalidRequest, match=message):
        buyer_changes.transfer_ticket(
            order_id=order["_id"], ticket=order["lines"][0]["ticket"], name=name, email=email, now=clock.now()
        )
    assert stored(order)["lines"] == order["lines"] and "transfers" not in stored(order)


def race_scan_and_transfer(session, order, scan_first: bool) -> dict:
    """A door scans the old code while the buyer hands the ticket on: which of the two won."""
    old = order["lines"][0]["ticket"]
    outcomes: dict = {}

    def scan():
        outcomes["scan"] = admits(session["_id"], old).admitted

    def hand_on():
        try:
            buyer_changes.transfer_ticket(
                order_id=order["_id"], ticket=old, name="Grace", email="grace@example.com", now=clock.now()
            )
            outcomes["transfer"] = True
        except Conflict:
            outcomes["transfer"] = False

    steps = iter([scan, hand_on] if scan_first else [hand_on, scan])
    at_once(lambda: next(steps)(), 2)
    return outcomes


def test_a_transfer_racing_a_door_scan_of_the_old_code_never_lets_both_win(session):
    for n, (row, col) in enumerate([(0, 0), (0, 5), (1, 0), (1, 5), (2, 0), (2, 5)]):
        order = paid(session, [f"{row}:{col}", f"{row}:{col + 1}"], owner=f"s:r{n}")
        old = order["lines"][0]["ticket"]
        outcomes = race_scan_and_transfer(session, order, scan_first=bool(n % 2))
        assert outcomes["scan"] != outcomes["transfer"], outcomes  # exactly one of the two
        after = stored(order)
        if outcomes["scan"]:
            assert after["lines"][0]["ticket"] == old and after["lines"][0]["checkedIn"]
            assert "transfers" not in after
        else:
            assert after["lines"][0]["ticket"] != old and "checkedIn" not in after["lines"][0]


def test_a_ticket_used_at_the_door_is_not_handed_on(session):
    order = paid(session, ["0:0"])
    assert admits(session["_id"], order["lines"][0]["ticket"]).admitted
    with pytest.raises(Conflict, match="already used"):
        buyer_changes.transfer_ticket(
            order_id=order["_id"],
            ticket=order["lines"][0]["ticket"],
            name="G",
            email="g@example.com",
            now=clock.now(),
        )


# --- exchange ---


def test_an_exchange_to_cheaper_seats_of_another_performance_refunds_less_the_fee(theater, session):
    later = make_session(theater, days=7)
    order = paid(session, ["1:2", "1:3"])  # premium 2 x 35.00
    done = buyer_changes.exchange_tickets(
        order_id=order["_id"],
        tickets=[x["ticket"] for x in order["lines"]],
        session_id=later["_id"],
        keys=["0:0", "0:1"],
        now=clock.now(),
    )
    assert [(x["sessionId"], x["key"]) for x in done["lines"]] == [(later["_id"], "0:0"), (later["_id"], "0:1")]
    assert done["refunds"][-1]["amount"] == 2 * (3500 - 2000) - 2 * 150
    assert cell(session["_id"], "1:2") == FREE and cell(later["_id"], "0:0") == SOLD
    assert check_invariants() == []


def test_an_exchange_to_another_show_is_refused(theater, session):
    other_show = make_session(theater, days=7, name="Macbeth")
    order = paid(session, ["0:0"])
    with pytest.raises(InvalidRequest, match="same show"):
        buyer_changes.exchange_tickets(
            order_id=order["_id"],
            tickets=[order["lines"][0]["ticket"]],
            session_id=other_show["_id"],
            keys=["0:0"],
            now=clock.now(),
        )
    assert stored(order)["lines"] == order["lines"]


def test_a_dearer_exchange_waits_for_the_buyer_s_card_with_the_fee_in_the_difference(session):
    order = paid(session, ["0:0"])
    done = buyer_changes.exchange_tickets(
        order_id=order["_id"],
        tickets=[order["lines"][0]["ticket"]],
        session_id=session["_id"],
        keys=["1:2"],
        now=clock.now(),
    )
    [record] = done["exchanges"]
    assert record["state"] == "awaiting_payment" and record["difference"] == 3500 - 2000 + 150
    assert done["lines"] == order["lines"]  # the old ticket stays valid until the difference is paid
    assert cell(session["_id"], "1:2") == SOLD and cell(session["_id"], "0:0") == SOLD


def test_two_buyers_exchanging_into_the_same_seat_one_wins_the_other_is_told(session):
    first = paid(session, ["0:0"], owner="s:ada")
    second = paid(session, ["0:1"], owner="s:bob", email="bob@example.com")

    def move(order):
        try:
            buyer_changes.exchange_tickets(
                order_id=order["_id"],
                tickets=[order["lines"][0]["ticket"]],
                session_id=session["_id"],
                keys=["2:0"],
                now=clock.now(),
            )
            return "won"
        except (Conflict, SeatsTaken) as exc:
            return exc.message

    orders = iter([first, second])
    results = at_once(lambda: move(next(orders)), 2)
    assert results.count("won") == 1, results
    [lost] = [r for r in results if r != "won"]
    assert "taken" in lost
    # the winner's move costs the fee more: it waits for the card, then switches
    [winner] = [o for o in (first, second) if stored(o).get("exchangeOpen")]
    [loser] = [o for o in (first, second) if o is not winner]
    status, after, _message = exchanges.pay_difference(winner["_id"], card(VISA))
    assert status == "paid" and [x["key"] for x in after["lines"]] == ["2:0"]
    assert stored(loser)["lines"] == loser["lines"]  # nothing lost: the old ticket still admits
    assert admits(session["_id"], loser["lines"][0]["ticket"]).admitted
    assert cell(session["_id"], "2:0") == SOLD and cell(session["_id"], winner["lines"][0]["key"]) == FREE
    assert check_invariants() == []


def test_a_transfer_is_one_write_so_a_crash_leaves_all_of_it_or_none(session, crash_at):
    order = paid(session, ["0:0", "0:1"])
    old = order["lines"][0]["ticket"]
    crash_at("transfer.before_write")
    with pytest.raises(faults.InjectedCrash):
        buyer_changes.transfer_ticket(
            order_id=order["_id"], ticket=old, name="G", email="g@example.com", now=clock.now()
        )
    assert stored(order)["lines"] == order["lines"] and "changeNotices" not in stored(order)
    crash_at("transfer.after_write")
    with pytest.raises(faults.InjectedCrash):
        buyer_changes.transfer_ticket(
            order_id=order["_id"], ticket=old, name="G", email="g@example.com", now=clock.now()
        )
    after = stored(order)
    assert after["lines"][0]["ticket"] != old and after["transferredLines"][0]["ticket"] == old
    # the mails were stored with the change: whoever sends pending notices (reconcile) sends both
    mail.outbox.clear()
    assert change_notices.send_pending(order["_id"]) == ["sent", "sent"]
    assert sorted(m.to[0] for m in mail.outbox) == ["ada@example.com", "g@example.com"]


def test_a_staff_exchange_of_a_handed_on_ticket_keeps_its_holder(session):
    order = paid(session, ["0:0", "0:1"])
    handed = buyer_changes.transfer_ticket(
        order_id=order["_id"],
        ticket=order["lines"][0]["ticket"],
        name="Grace Hopper",
        email="grace@example.com",
        now=clock.now(),
    )
    moved = handed["lines"][0]
    done = exchanges.exchange(order["_id"], [moved["ticket"]], session["_id"], ["0:5"], by="staff", reason="view")
    [line] = [x for x in done["lines"] if x["key"] == "0:5"]
    assert line["holder"] == {
        "name": "Grace Hopper",
        "email": "grace@example.com",
        "language": moved["holder"]["language"],
    }
    assert line["ticket"] != moved["ticket"]
    listed = {e["h"]: e for e in checkin.door_list(checkin.get_scope(session["_id"]))}
    assert listed[checkin.ticket_hash(line["ticket"])]["name"] == "Grace H."  # the door greets the holder
    assert [x for x in done["lines"] if x["key"] == "0:1"][0].get("holder") is None
    assert check_invariants() == []
