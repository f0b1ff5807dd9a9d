"""Canceling a performance with staff's own words to its buyers (English and German) and a fee
kept per ticket: the mail names the canceled performance (title and date) and says what was kept,
and the refund is each ticket's price less the fee."""

import pytest
from django.core import mail

from booking.core import mongo
from booking.core.errors import InvalidRequest
from booking.core.formatting import mail_time
from booking.notifications import change_notices
from booking.sales import cancels, holds, session_cancel
from booking.sales.sessions import cancel_session
from booking.tests.factories import make_session
from booking.tests.paying import checkout_paid
from booking.upkeep.invariants import check_invariants

pytestmark = pytest.mark.slow


@pytest.fixture
def mails(settings):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    mail.outbox.clear()
    return mail.outbox


def paid(parts, owner):
    cart_id = None
    for session, keys in parts:
        cart_id = holds.hold_seats(session["_id"], owner, cart_id, list(keys)).cart_id
    return checkout_paid(owner, cart_id, owner.split(":")[1].title(), f"{owner.split(':')[1]}@example.com")


def stored(order):
    return mongo.orders().find_one({"_id": order["_id"]})


def test_the_mail_names_the_canceled_performance_of_two_with_the_staff_message_and_the_kept_fee(mails):
    tonight = make_session(name="Hamlet")
    tomorrow = make_session(name="Macbeth", days=2)
    both = paid([(tonight, ["0:0", "0:1"]), (tomorrow, ["0:0"])], "s:ada")
    cancel_session(
        tonight["_id"],
        cancel_orders=True,
        by="anna",
        message="The lead actor is ill. Your other tickets stay valid.",
        message_de="Der Hauptdarsteller ist krank.",
        kept_per_ticket=150,
    )
    cancels.cancel_session_orders(tonight["_id"])

    after = stored(both)
    [refund] = after["refunds"]
    assert refund["amount"] == 2 * (2000 - 150) and refund["keptFee"] == 300
    assert check_invariants() == []
    assert change_notices.send_pending(both["_id"]) == ["sent"]
    [message] = mails
    body = message.body
    assert "this performance of your booking" in body
    assert f"- Hamlet, {mail_time(tonight['start'])}" in body
    assert "Macbeth, " + mail_time(tomorrow["start"]) in body.split("Your tickets now:")[1]  # still valid, not canceled
    assert "- Macbeth" not in body.split("Your tickets now:")[0]
    assert "The lead actor is ill. Your other tickets stay valid." in body
    assert "Der Hauptdarsteller" not in body
    assert "The theater keeps a fee of" in body and "3.00" in body
    html = message.alternatives[0][0]
    assert "<strong>Hamlet</strong>" in html and "The lead actor is ill." in html


def test_a_german_buyer_reads_the_german_message(mails):
    session = make_session(name="Hamlet", name_de="Hamlet (deutsch)")
    order = paid([(session, ["0:0"])], "s:bea")
    mongo.orders().update_one({"_id": order["_id"]}, {"$set": {"language": "de"}})
    cancel_session(
        session["_id"],
        cancel_orders=True,
        by="anna",
        message="The lead is ill.",
        message_de="Der Hauptdarsteller ist krank.",
    )
    cancels.cancel_session_orders(session["_id"])
    change_notices.send_pending(order["_id"])
    [message] = mails
    assert "Der Hauptdarsteller ist krank." in message.body and "The lead is ill." not in message.body
    assert "Hamlet (deutsch)" in message.body
    assert "Das Theater behält" not in message.body  # no fee kept: nothing said about one


def test_a_fee_above_a_tickets_price_keeps_that_ticket_whole_and_refunds_nothing_of_it():
    session = make_session(prices={"s": 2000, "p": 3500})
    order = paid([(session, ["0:0"])], "s:cy")
    cancel_session(session["_id"], cancel_orders=True, by="anna", kept_per_ticket=2500)
    cancels.cancel_session_orders(session["_id"])
    [refund] = stored(order)["refunds"]
    assert (refund["amount"], refund["keptFee"]) == (0, 2000)
    assert stored(order)["state"] == "refunded"
    assert check_invariants() == []


@pytest.mark.parametrize(
    ("terms", "field"),
    [
        ({"message": "x" * (session_cancel.MESSAGE_MAX + 1)}, "message"),
        ({"message_de": "x" * (session_cancel.MESSAGE_MAX + 1)}, "message_de"),
        ({"kept_per_ticket": -1}, "kept_per_ticket"),
        ({"kept_per_ticket": session_cancel.KEPT_MAX + 1}, "kept_per_ticket"),
    ],
)
def test_terms_past_their_limits_are_refused_and_nothing_is_canceled(terms, field):
    session = make_session()
    with pytest.raises(InvalidRequest) as refused:
        cancel_session(session["_id"], **terms)
    assert field in refused.value.details["fields"]
    assert mongo.sessions().find_one({"_id": session["_id"]})["status"] == "on_sale"


def test_terms_at_their_limits_are_taken():
    session = make_session()
    cancel_session(
        session["_id"],
        message="x" * session_cancel.MESSAGE_MAX,
        message_de="y" * session_cancel.MESSAGE_MAX,
        kept_per_ticket=session_cancel.KEPT_MAX,
    )
    run = mongo.sessions().find_one({"_id": session["_id"]})["cancelRun"]
    assert (len(run["message"]), len(run["messageDe"]), run["keptPerTicket"]) == (1000, 1000, 100_000)
