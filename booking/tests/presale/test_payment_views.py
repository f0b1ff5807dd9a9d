"""The payment pages through Django's test client: the checkout's two steps, the pay endpoint's
answers, the processing state, the return page, the receipt PDF, cancel, find my booking."""

from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.urls import reverse

from booking.core import mongo
from booking.core.domain import Order
from booking.notifications.confirmations import ticket_link
from booking.payments import base
from booking.payments.stripe_provider import StripeProvider
from booking.sales import cancels
from booking.tests.factories import make_session
from booking.tests.headers import HTMX
from booking.tests.localstripe import DECLINED, THREE_D_SECURE, VISA, authenticate, card, requests_received
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, HELD, SOLD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


@pytest.fixture
def session():
    return make_session()


def url(name, **kwargs):
    return reverse(f"booking:{name}", kwargs=kwargs)


def hold(client, session, keys=("1:2", "1:3")):
    answer = client.post(url("hold", session_id=str(session["_id"])), {"seats": ",".join(keys)}, **HTMX)
    assert answer.status_code == 200


def cells(session, keys=("1:2", "1:3")):
    seats = mongo.sessions().find_one({"_id": session["_id"]})["seats"]
    return [seats[int(k.split(":")[0])][int(k.split(":")[1])] for k in keys]


def start_card(client, session):
    hold(client, session)
    answer = client.post(url("checkout"), {"name": "Ada", "email": "ada@example.com", "method": "card"}, **HTMX)
    assert answer.status_code == 200
    return answer, mongo.orders().find_one({})


def test_checkout_shows_the_total_with_vat_and_how_to_pay_and_lets_stripe_in_only_there(client, session, settings):
    settings.BOOKING_FEE = 150
    hold(client, session)
    page = client.get(url("checkout"))
    html = page.content.decode()
    assert "How would you like to pay?" in html and 'value="card"' in html and "data-needs-js" in html
    assert "Booking fee" in html and "€71.50" in html  # 2 x 35 + 1.50
    assert "incl. 7 % VAT on €70" in html and "€4.58" in html and "incl. 19 % VAT on €1.50" in html
    assert "Pay at the box office" not in html  # not offered for this session
    assert settings.STRIPE_API_BASE in page["Content-Security-Policy"]  # Stripe.js may load here
    other = client.get(url("whats_on"))
    assert settings.STRIPE_API_BASE not in other["Content-Security-Policy"]  # and nowhere else


def test_details_then_the_card_form_in_place(client, session):
    answer, order = start_card(client, session)
    html = answer.content.decode()
    assert 'id="checkout"' in html and "data-card-form" in html and "Pay €70" in html
    assert order["ref"] in html and "<html" not in html  # a partial for htmx
    assert order["state"] == "pending_payment" and cells(session) == [HELD, HELD]
    again = client.get(url("checkout"))  # reloading the page: the payment step again
    assert "data-card-form" in again.content.decode()


def test_the_countdown_on_the_card_step_shows_the_hold_extended_for_payment(client, session, settings):
    import re

    settings.BOOKING_HOLD_SECONDS, settings.BOOKING_PAYMENT_WINDOW_SECONDS = 120, 600
    hold(client, session)
    details = client.get(url("checkout")).content.decode()
    [held] = [int(s) for s in re.findall(r'data-seconds="(\d+)"', details)]
    assert 110 <= held <= 120  # the hold: two minutes
    answer = client.post(url("checkout"), {"name": "Ada", "email": "ada@example.com", "method": "card"}, **HTMX)
    [paying] = [int(s) for s in re.findall(r'data-seconds="(\d+)"', answer.content.decode())]
    assert 590 <= paying <= 600  # extended to the payment window on the card step


def test_in_test_mode_the_card_form_names_the_test_cards_and_with_a_live_key_it_does_not(client, session, settings):
    answer, order = start_card(client, session)
    form = answer.content.decode()
    for grouped, outcome in (
        ("4242 4242 4242 4242", "pays"),
        ("4000 0027 6000 3184", "asks for 3-D Secure"),
        ("4000 0000 0000 0341", "is declined"),
    ):
        assert f"<code>{grouped}</code> {outcome}" in form
    settings.STRIPE_SECRET_KEY = "sk_live_example"  # (the page asks Stripe nothing)
    settings.STRIPE_PUBLISHABLE_KEY = "pk_live_example"
    live = client.get(url("order", ref=order["ref"])).content.decode()
    assert "data-card-form" in live and "4242" not in live and "Test mode" not in live


def test_details_with_errors_come_back_in_place_for_htmx_and_as_400_without(client, session):
    hold(client, session)
    htmx = client.post(url("checkout"), {"name": "", "email": "x", "method": "card"}, **HTMX)
    assert htmx.status_code == 200 and "Please enter your name." in htmx.content.decode()
    plain = client.post(url("checkout"), {"name": "", "email": "x", "method": "card"})
    assert plain.status_code == 400
    assert mongo.orders().count_documents({}) == 0


def test_pay_answers_declined_3d_secure_and_paid_as_json(client, session):
    _answer, order = start_card(client, session)
    pay = url("pay", ref=order["ref"])
    declined = client.post(pay, {"payment_method": card(DECLINED)}).json()
    assert declined["status"] == "failed" and "declined" in declined["message"]
    action = client.post(pay, {"payment_method": card(THREE_D_SECURE)}).json()
    assert action["status"] == "action" and action["client_secret"]
    intent = mongo.orders().find_one({})["payment"]["intent"]
    authenticate(intent, action["client_secret"])
    status = client.get(url("payment_status", ref=order["ref"]), {"format": "json"}).json()
    assert status["status"] == "paid" and status["redirect"] == url("order", ref=order["ref"])
    assert cells(session) == [SOLD, SOLD]
    assert client.post(pay, {"payment_method": card(VISA)}).json()["status"] == "paid"  # again: nothing more


def test_pay_refuses_strangers_and_missing_card(client, session):
    from django.test import Client

    _answer, order = start_card(client, session)
    assert Client().post(url("pay", ref=order["ref"]), {"payment_method": card(VISA)}).status_code == 404
    assert client.post(url("pay", ref=order["ref"]), {}).status_code == 400


def test_a_payment_still_processing_shows_so_and_the_page_moves_on_when_it_is_paid(client, session, monkeypatch):
    _answer, order = start_card(client, session)
    action = client.post(url("pay", ref=order["ref"]), {"payment_method": card(THREE_D_SECURE)}).json()
    authenticate(mongo.orders().find_one({})["payment"]["intent"], action["client_secret"])
    real = StripeProvider.retrieve

    def late(self, payment_id):  # the bank has not told Stripe yet (and no webhook either)
        found = real(self, payment_id)
        return base.Payment(**{**found.__dict__, "status": base.PROCESSING})

    monkeypatch.setattr(StripeProvider, "retrieve", late)
    page = client.get(url("order", ref=order["ref"])).content.decode()  # the return page
    assert "Your payment is being processed" in page and 'hx-trigger="load delay:2s"' in page
    still = client.get(url("payment_status", ref=order["ref"]), **HTMX)
    assert still.status_code == 200 and "being processed" in still.content.decode()
    monkeypatch.setattr(StripeProvider, "retrieve", real)
    done = client.get(url("payment_status", ref=order["ref"]), **HTMX)
    assert done.status_code == 204 and done["HX-Redirect"] == url("order", ref=order["ref"])
    assert "You're going to the theater!" in client.get(url("order", ref=order["ref"])).content.decode()


def test_while_the_card_is_being_charged_the_page_says_processing_and_moves_on_when_paid(client, session, fault_hook):
    """The buyer pressed Pay and reloaded the page while the charge was still under way at Stripe
    (held here after the attempt was claimed, before Stripe was asked): the order page shows
    "processing", offers neither a card form nor a cancel, and polls; once the charge went
    through, the poll sends the page on to the paid booking."""
    import threading

    from booking.payments import flow as payments

    _answer, order = start_card(client, session)
    claimed, go_on = threading.Event(), threading.Event()

    def hold_the_charge(name):
        if name == "pay.after_claim":
            claimed.set()
            assert go_on.wait(30)

    fault_hook(hold_the_charge)
    means, outcomes = card(VISA), []
    paying = threading.Thread(
        target=lambda: outcomes.append(payments.pay_with_card(order["ref"], order["owner"], means))
    )
    paying.start()
    try:
        assert claimed.wait(30)
        page = client.get(url("order", ref=order["ref"])).content.decode()  # the reload
        assert "Your payment is being processed" in page and 'hx-trigger="load delay:2s"' in page
        assert "data-card-form" not in page and "Cancel and release the seats" not in page
        still = client.get(url("payment_status", ref=order["ref"]), **HTMX)
        assert still.status_code == 200 and "being processed" in still.content.decode()
        assert client.get(url("payment_status", ref=order["ref"]), {"format": "json"}).json()["status"] == "processing"
        second = client.post(url("pay", ref=order["ref"]), {"payment_method": card(VISA)}).json()
        assert second["status"] == "processing"  # Pay pressed again after the reload: not charged again
        assert cells(session) == [HELD, HELD]
    finally:
        go_on.set()
        paying.join(timeout=60)
    assert [o.status for o in outcomes] == ["paid"]
    intent = mongo.orders().find_one({})["paidWith"]["id"]
    confirms = [r for r in requests_received() if r["path"] == f"/v1/payment_intents/{intent}/confirm"]
    assert len(confirms) == 1
    done = client.get(url("payment_status", ref=order["ref"]), **HTMX)
    assert done.status_code == 204 and done["HX-Redirect"] == url("order", ref=order["ref"])
    assert cells(session) == [SOLD, SOLD]


def test_canceling_the_cart_from_a_second_tab_while_the_card_is_charged_changes_nothing(client, session, fault_hook):
    """The cart page left open in another tab, its "Cancel and release the seats" pressed while
    the card is being charged: the cart stays paying with its seats held, the buyer is sent to
    the booking's page (where the payment can be canceled), and the charge settles the order."""
    import threading

    from booking.payments import flow as payments

    _answer, order = start_card(client, session)
    claimed, go_on = threading.Event(), threading.Event()

    def hold_the_charge(name):
        if name == "pay.after_claim":
            claimed.set()
            assert go_on.wait(30)

    fault_hook(hold_the_charge)
    outcomes = []
    paying = threading.Thread(
        target=lambda: outcomes.append(payments.pay_with_card(order["ref"], order["owner"], card(VISA)))
    )
    paying.start()
    try:
        assert claimed.wait(30)
        second_tab = client.post(url("cart_cancel"), follow=True)
        cart = mongo.carts().find_one({"_id": order["cartId"]})
        assert cart["state"] == "paying" and cells(session) == [HELD, HELD]
        assert mongo.orders().find_one({})["state"] == "pending_payment"
        assert second_tab.redirect_chain[-1][0] == url("order", ref=order["ref"])
        assert "Your payment has already begun, so nothing was canceled" in second_tab.content.decode()
        first_tab = client.get(url("checkout")).content.decode()  # reloaded: it still finds its payment
        assert order["ref"] in first_tab and "being processed" in first_tab
    finally:
        go_on.set()
        paying.join(timeout=60)
    assert [o.status for o in outcomes] == ["paid"]
    paid = mongo.orders().find_one({})
    assert paid["state"] == "paid" and paid["paidWith"]["amount"] == 7000 and not paid.get("refunds")
    assert mongo.carts().find_one({"_id": order["cartId"]})["state"] == "done"
    assert cells(session) == [SOLD, SOLD] and check_invariants() == []


def test_receipt_pdf_for_the_buyer_only_and_only_when_paid(client, session):
    from django.test import Client

    _answer, order = start_card(client, session)
    receipt = url("receipt", ref=order["ref"])
    assert client.get(receipt).status_code == 404  # not paid yet
    client.post(url("pay", ref=order["ref"]), {"payment_method": card(VISA)})
    pdf = client.get(receipt)
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf" and pdf.content[:5] == b"%PDF-"
    assert Client().get(receipt).status_code == 404
    page = client.get(url("order", ref=order["ref"])).content.decode()
    assert "Receipt 000001 (PDF)" in page and "incl. 7 % VAT" in page


def test_the_buyer_cancels_the_payment_and_the_seats_are_free(client, session):
    _answer, order = start_card(client, session)
    answer = client.post(url("cancel_payment", ref=order["ref"]), follow=True)
    assert "the seats released. Nothing was charged." in answer.content.decode()
    assert mongo.orders().find_one({})["state"] == "canceled" and cells(session) == [FREE, FREE]


def test_box_office_reservation_goes_to_the_order_page(client, session):
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    hold(client, session)
    page = client.get(url("checkout")).content.decode()
    assert "Pay at the box office" in page
    answer = client.post(url("checkout"), {"name": "Ada", "email": "ada@example.com", "method": "box_office"}, **HTMX)
    order = mongo.orders().find_one({})
    assert answer.status_code == 204 and answer["HX-Redirect"] == url("order", ref=order["ref"])
    page = client.get(answer["HX-Redirect"]).content.decode()
    assert "Your seats are reserved" in page and "Reserved: pay at the box office" in page


def reserve_at_the_box_office(client, session) -> Order:
    mongo.sessions().update_one({"_id": session["_id"]}, {"$set": {"boxOffice": {"enabled": True}}})
    hold(client, session)
    answer = client.post(url("checkout"), {"name": "Ada", "email": "ada@example.com", "method": "box_office"})
    assert answer.status_code == 302
    return mongo.orders().find_one({})


def csrf_post(browser, path: str):
    return browser.post(path, {"csrfmiddlewaretoken": browser.cookies["csrftoken"].value}, follow=True)


def test_the_mails_link_opens_a_reservation_that_its_visitor_can_cancel(client, session):
    """The reservation mail's link (reference + e-mail) in another browser: the page offers to
    cancel, and cancelling works there (with the CSRF token the page's form carries)."""
    order = reserve_at_the_box_office(client, session)
    elsewhere = Client(enforce_csrf_checks=True)
    link = urlsplit(ticket_link(order))
    page = elsewhere.get(f"{link.path}?{link.query}")
    assert page.status_code == 200 and "Cancel this reservation" in page.content.decode()
    cancel = url("cancel_payment", ref=order["ref"])
    assert elsewhere.post(cancel).status_code == 403  # no CSRF token: refused, nothing changes
    assert mongo.orders().find_one({})["state"] == "pending_payment" and cells(session) == [HELD, HELD]
    answer = csrf_post(elsewhere, cancel)
    assert answer.status_code == 200 and "the seats released. Nothing was charged." in answer.content.decode()
    assert mongo.orders().find_one({})["state"] == "canceled" and cells(session) == [FREE, FREE]


def test_a_stranger_without_the_e_mail_cannot_cancel_a_reservation_and_is_told_so(client, session):
    order = reserve_at_the_box_office(client, session)
    stranger = Client(enforce_csrf_checks=True)
    wrong = stranger.get(url("order", ref=order["ref"]) + "?email=eve@example.com")
    assert wrong.status_code == 404 and "We could not find that booking" in wrong.content.decode()
    answer = csrf_post(stranger, url("cancel_payment", ref=order["ref"]))
    assert answer.status_code == 404 and "We could not find that booking" in answer.content.decode()
    assert mongo.orders().find_one({})["state"] == "pending_payment" and cells(session) == [HELD, HELD]


@pytest.mark.parametrize(
    "step, state, badge",
    [
        ("pending", "pending_payment", "Waiting for payment"),
        ("paid", "paid", "Paid"),
        ("refunded", "refunded", "Refunded"),
    ],
)
def test_find_my_booking_shows_pending_paid_and_refunded(client, session, step, state, badge):

    _answer, order = start_card(client, session)
    if step in ("paid", "refunded"):
        client.post(url("pay", ref=order["ref"]), {"payment_method": card(VISA)})
    if step == "refunded":
        cancels.cancel_order(order["_id"], by="staff", reason="show moved")
    stranger = Client()
    found = stranger.post(url("find_booking"), {"ref": order["ref"], "email": "ada@example.com"}, follow=True)
    page = found.content.decode()
    assert mongo.orders().find_one({})["state"] == state
    assert f'<span class="badge badge-{state}">{badge}</span>' in page
    if step == "pending":  # someone else's browser: the booking, but no card form to pay it from
        assert "data-card-form" not in page and "only in the browser it was booked in" in page
    if step == "refunded":
        assert "Refunded so far: <strong>€70</strong>" in page


@pytest.mark.parametrize("means", ["x", "pm_" + "a" * 40, "card_nothere", "' OR 1=1 --", "a" * 300])
def test_pay_with_a_bogus_payment_method_is_refused_without_a_500_and_the_buyer_can_go_on(client, session, means):
    _answer, order = start_card(client, session)
    answer = client.post(url("pay", ref=order["ref"]), {"payment_method": means})
    assert answer.status_code in (200, 400) and answer.json()["status"] in ("open", "failed")
    assert mongo.orders().find_one({})["state"] == "pending_payment"
    assert client.post(url("pay", ref=order["ref"]), {"payment_method": card(VISA)}).json()["status"] == "paid"


def test_payment_endpoints_answer_404_for_unknown_references(client):
    for name in ("pay", "cancel_payment"):
        assert client.post(url(name, ref="NOPE2345"), {"payment_method": "x"}).status_code == 404
    assert client.get(url("payment_status", ref="NOPE2345")).status_code == 404
    assert client.get(url("receipt", ref="NOPE2345")).status_code == 404
    assert client.post("/payments/stripe/webhook/", b"not json", content_type="application/json").status_code == 400
