"""Gift vouchers bought online: pending until the card payment succeeded, activated once (return
page, webhook and reconcile racing), one mail with the PDF in the buyer's language."""

import threading
import time
from datetime import timedelta

import pytest
from bson import ObjectId
from django.core import mail

from booking.core import clock, faults, mongo
from booking.core.errors import InvalidRequest
from booking.notifications import voucher_mail
from booking.payments import base, voucher_purchases, vouchers
from booking.payments.stripe_provider import StripeProvider
from booking.tests.localstripe import DECLINED, VISA, card, events_for, signed
from booking.tests.pdfs import pdf_text
from booking.tests.threads import PerThreadClient
from booking.upkeep.invariants import check_invariants
from booking.upkeep.reconcile import reconcile


def buy(value=2500, *, buyer="Ada Lovelace", email="ada@example.com", language="en"):
    return voucher_purchases.start_purchase(
        theater_id=ObjectId(), value=value, buyer=buyer, email=email, language=language
    )


def token_of(voucher):
    return voucher["purchase"]["token"]


def current(voucher):
    return mongo.vouchers().find_one({"_id": voucher["_id"]})


def count_vouchers():
    return mongo.vouchers().count_documents({}, hint=[("_id", 1)])


@pytest.mark.parametrize("value", [500, 50_000])
def test_a_voucher_at_either_limit_is_sold_pending_until_paid(settings, value):
    assert (settings.BOOKING_VOUCHER_MIN_VALUE, settings.BOOKING_VOUCHER_MAX_VALUE) == (500, 50_000)
    voucher = buy(value)
    assert voucher["state"] == "pending" and voucher["balance"] == value and voucher["purchase"]["intent"]
    with pytest.raises(InvalidRequest, match="not paid yet"):
        vouchers.usable(voucher["code"], clock.now())
    payment = StripeProvider().retrieve(voucher["purchase"]["intent"])
    assert payment.amount == value and payment.status == base.OPEN


@pytest.mark.parametrize("value", [499, 50_001, 0, -500, True, "2500"])
def test_a_value_outside_the_limits_is_refused_and_nothing_is_stored(value):
    with pytest.raises(InvalidRequest) as refused:
        buy(value)
    assert "value" in refused.value.details["fields"] and "from" in refused.value.message
    assert count_vouchers() == 0


@pytest.mark.parametrize(
    ("buyer", "email", "field"),
    [("", "ada@example.com", "name"), ("x" * 101, "ada@example.com", "name"), ("Ada", "not-an-address", "email")],
)
def test_a_bad_name_or_address_is_refused_and_nothing_is_stored(buyer, email, field):
    with pytest.raises(InvalidRequest) as refused:
        buy(buyer=buyer, email=email)
    assert field in refused.value.details["fields"]
    assert count_vouchers() == 0


def test_the_value_typed_in_whole_units_is_taken_at_the_limits():
    assert voucher_purchases.clean_value_text("5") == 500
    assert voucher_purchases.clean_value_text("500") == 50_000
    for typed in ("4", "501", "", "25.5", "-5", "1e3", "９", "99999999999"):
        with pytest.raises(InvalidRequest):
            voucher_purchases.clean_value_text(typed)


def test_paying_activates_the_voucher_and_the_buyer_gets_one_mail_with_code_and_pdf_in_german():
    voucher = buy(4000, language="de")
    bought, payment = voucher_purchases.pay(token=token_of(voucher), means=card(VISA))
    assert payment.status == base.SUCCEEDED and bought["state"] == "active" and bought["mail"] == "pending"
    assert vouchers.usable(voucher["code"], clock.now())["balance"] == 4000
    assert voucher_mail.send_voucher(voucher["_id"]) == "sent"
    assert voucher_mail.send_voucher(voucher["_id"]) == "nothing to send"
    [sent] = mail.outbox
    assert sent.to == ["ada@example.com"] and "Gutschein" in sent.subject
    assert vouchers.display_code(voucher["code"]) in sent.body
    [(name, pdf, kind)] = sent.attachments
    assert kind == "application/pdf" and name.endswith(".pdf")
    assert vouchers.display_code(voucher["code"]) in pdf_text(pdf)
    assert current(voucher)["mail"] == "sent"
    assert check_invariants() == []


def test_a_declined_card_leaves_the_voucher_pending_and_a_second_card_pays():
    voucher = buy()
    bought, payment = voucher_purchases.pay(token=token_of(voucher), means=card(DECLINED))
    assert payment.status == base.FAILED and payment.failure and bought["state"] == "pending"
    assert current(voucher)["purchase"]["previous"] == [voucher["purchase"]["intent"]]
    bought, payment = voucher_purchases.pay(token=token_of(voucher), means=card(VISA))
    assert payment.status == base.SUCCEEDED and bought["state"] == "active"


def test_return_page_and_webhooks_racing_activate_once_and_send_one_mail(monkeypatch, fault_hook, caplog):
    voucher = buy()
    intent = voucher["purchase"]["intent"]
    StripeProvider().confirm(intent, card(VISA), idempotency_key="t-race")  # paid; nobody heard yet
    paid = StripeProvider().retrieve(intent)
    clients = PerThreadClient()
    monkeypatch.setattr(mongo, "get_client", clients.get)
    everyone_read = threading.Barrier(3, timeout=20)

    def wait_for_the_others(name):
        if name == "voucher_purchase.before_activate":
            everyone_read.wait()  # all three saw it pending before any of them writes

    fault_hook(wait_for_the_others)
    caplog.set_level("INFO", logger="booking.vouchers")
    done: list[str] = []
    runs = [
        lambda: done.append(str(voucher_purchases.activate_paid(paid))),  # a webhook
        lambda: done.append(voucher_purchases.check(token=token_of(voucher))["state"]),  # the return page
        lambda: done.append(str(voucher_purchases.activate_paid(paid))),  # the same event redelivered
    ]
    threads = [threading.Thread(target=run) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    faults.set_hook(None)
    clients.close()
    monkeypatch.undo()
    assert len(done) == 3 and "active" in done
    assert sum("paid online: active" in r.getMessage() for r in caplog.records) == 1  # one winner
    assert current(voucher)["state"] == "active"
    sends = [voucher_mail.send_voucher(voucher["_id"]) for _ in range(3)]
    assert sends.count("sent") == 1 and len(mail.outbox) == 1


def test_activation_is_one_conditional_update_only_the_first_caller_wins():
    voucher = buy()
    intent = voucher["purchase"]["intent"]
    StripeProvider().confirm(intent, card(VISA), idempotency_key="t-once")
    paid = StripeProvider().retrieve(intent)
    assert [voucher_purchases.activate_paid(paid) for _ in range(3)] == [True, False, False]


def test_the_webhook_activates_a_voucher_paid_while_the_page_was_closed(client):
    voucher = buy()
    intent = voucher["purchase"]["intent"]
    StripeProvider().confirm(intent, card(VISA), idempotency_key="t-webhook")
    succeeded = next(e for e in events_for(intent) if e["type"] == "payment_intent.succeeded")
    body, signature = signed(succeeded)
    answer = client.post(
        "/payments/stripe/webhook/", body, content_type="application/json", HTTP_STRIPE_SIGNATURE=signature
    )
    assert answer.status_code == 200 and b"voucher" in answer.content
    assert current(voucher)["state"] == "active" and current(voucher)["mail"] == "pending"
    again = client.post(
        "/payments/stripe/webhook/", body, content_type="application/json", HTTP_STRIPE_SIGNATURE=signature
    )
    assert again.status_code == 200
    assert voucher_purchases.check(token=token_of(voucher))["state"] == "active"
    assert voucher_mail.send_voucher(voucher["_id"]) == "sent" and len(mail.outbox) == 1


def test_a_crash_after_the_payment_is_finished_by_reconcile(crash_at, settings):
    voucher = buy()
    crash_at("voucher_purchase.after_payment")
    with pytest.raises(faults.InjectedCrash):
        voucher_purchases.pay(token=token_of(voucher), means=card(VISA))
    faults.set_hook(None)
    assert current(voucher)["state"] == "pending"  # paid at Stripe, not spendable yet
    grace = timedelta(seconds=settings.BOOKING_PAYMENT_CHECK_GRACE_SECONDS)
    report = reconcile(now=current(voucher)["purchase"]["until"] + grace)
    assert report.vouchers_bought_activated == 1
    assert current(voucher)["state"] == "active" and current(voucher)["mail"] == "pending"
    assert reconcile(now=current(voucher)["purchase"]["until"] + grace).vouchers_bought_activated == 0
    assert voucher_mail.send_voucher(voucher["_id"]) == "sent"


def test_a_purchase_never_paid_is_canceled_after_the_late_period_and_never_spendable(settings):
    voucher = buy()
    until = current(voucher)["purchase"]["until"]
    grace = timedelta(seconds=settings.BOOKING_PAYMENT_CHECK_GRACE_SECONDS)
    late = timedelta(seconds=settings.BOOKING_PAYMENT_LATE_SECONDS)
    assert late > grace
    assert voucher_purchases.reconcile_purchases(until + late - timedelta(seconds=1))["canceled"] == 0
    assert current(voucher)["purchase"]["status"] == base.OPEN
    assert voucher_purchases.reconcile_purchases(until + late)["canceled"] == 1
    assert current(voucher)["purchase"]["status"] == "canceled" and current(voucher)["state"] == "pending"
    assert StripeProvider().retrieve(voucher["purchase"]["intent"]).status == base.CANCELED
    with pytest.raises(InvalidRequest, match="canceled"):
        voucher_purchases.pay(token=token_of(voucher), means=card(VISA))
    with pytest.raises(InvalidRequest, match="not paid yet"):
        vouchers.usable(voucher["code"], until + late + timedelta(days=1))
    assert vouchers.redeem(code=voucher["code"], order_id=voucher["_id"], ref="X", wanted=100, now=until) is None


def test_the_worker_sends_the_mail_queued_by_the_activation(worker):
    voucher = buy(language="en")
    voucher_purchases.pay(token=token_of(voucher), means=card(VISA))
    deadline = time.monotonic() + 20
    while current(voucher)["mail"] != "sent" and time.monotonic() < deadline:
        time.sleep(0.1)
    [sent] = mail.outbox
    assert "Your gift voucher" in sent.subject and current(voucher)["mail"] == "sent"
