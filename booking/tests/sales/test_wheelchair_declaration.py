"""A wheelchair space is held, before its release to general sale, only for a buyer who says they
need it (sales/holds.py: the hold's one conditional update requires the declaration or a start
within the release period). At the exact release moment it is an ordinary seat to everyone."""

from datetime import datetime, timedelta

import pytest
from bson import ObjectId
from django.conf import settings
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import translation

from booking.core import clock, mongo
from booking.core.errors import WheelchairSpaceNotDeclared
from booking.notifications import change_notices
from booking.notifications import confirmations as notifications
from booking.payments import pdf
from booking.sales import holds
from booking.sales.hold_facts import known_sale_facts
from booking.tests.factories import make_session, make_theater, reread
from booking.tests.headers import HTMX
from booking.tests.localstripe import VISA, card
from booking.tests.sales.test_exchanges import pdf_text
from booking.upkeep.invariants import check_invariants
from booking.venues.seat_grid import FREE, HELD, best_available, longest_block
from booking.web import ticket_pdf

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]

# Row A: wheelchair spaces at both ends, companion seats beside them; row B: ordinary seats.
GRID = "A: Ssss.sssS\nB: ssss.ssss\n"
SPACE = "0:0"


@pytest.fixture
def at(monkeypatch):
    def set_now(moment):
        monkeypatch.setattr(clock, "now", lambda: moment)

    return set_now


@pytest.fixture
def show():
    return make_session(make_theater(GRID), days=2, prices={"s": 2000, "p": 3500})


def released_at(show) -> datetime:
    return show["start"] - settings.BOOKING_WHEELCHAIR_RELEASE_BEFORE


def untouched(show, version: int) -> bool:
    session = reread(show["_id"])
    return session["seats"][0][0] == FREE and session["version"] == version


def test_a_millisecond_before_the_release_a_space_is_held_only_for_a_buyer_who_needs_it(show, at):
    at(released_at(show) - timedelta(milliseconds=1))
    version = reread(show["_id"])["version"]
    with pytest.raises(WheelchairSpaceNotDeclared, match=r"Row A, seat 1 is a wheelchair space"):
        holds.hold_seats(show["_id"], "s:anyone", None, [SPACE])
    assert untouched(show, version) and mongo.carts().count_documents({}) == 0

    held = holds.hold_seats(show["_id"], "s:needs-it", None, [SPACE], needs_wheelchair=True)
    [item] = mongo.carts().find_one({"_id": held.cart_id})["items"]
    assert item["wheelchair"] is True and reread(show["_id"])["seats"][0][0] == HELD
    assert check_invariants() == []


def test_at_the_exact_release_moment_it_is_an_ordinary_seat_even_before_the_task_ran(show, at):
    at(released_at(show))
    assert reread(show["_id"])["layout"]["rows"][0]["cells"][0]["wheelchair"] is True  # not released yet
    holds.hold_seats(show["_id"], "s:anyone", None, [SPACE])
    assert reread(show["_id"])["seats"][0][0] == HELD
    assert check_invariants() == []


def test_a_process_that_knows_the_layout_is_refused_by_the_write_itself(show, at):
    """No read before the write (the process keeps the layout and prices): the write's filter
    carries the rule, misses, and the read after it says why; nothing changed."""
    at(released_at(show) - timedelta(milliseconds=1))
    holds.hold_seats(show["_id"], "s:someone", None, ["1:0", "1:1"])
    assert known_sale_facts(show["_id"]) is not None
    version = reread(show["_id"])["version"]
    with pytest.raises(WheelchairSpaceNotDeclared):
        holds.hold_seats(show["_id"], "s:anyone", None, [SPACE])
    assert untouched(show, version)


def test_the_hold_write_alone_refuses_an_undeclared_space_and_takes_a_declared_one(show, at):
    """The rule is in the conditional update (not only in the checks before it)."""
    now = released_at(show) - timedelta(milliseconds=1)
    at(now)
    holds.hold_seats(show["_id"], "s:someone", None, ["1:0", "1:1"])  # the facts are kept now
    facts = known_sale_facts(show["_id"])
    assert facts is not None
    plan = holds.HoldPlan(show["_id"], ObjectId(), [(0, 0)], facts, now, False)
    assert holds._send_hold_write(plan, False, holds.WRITE_ANSWER_FIELDS) is None
    assert reread(show["_id"])["seats"][0][0] == FREE
    declared = holds.HoldPlan(plan.session_id, plan.cart_id, plan.coords, facts, now, False, needs_wheelchair=True)
    assert holds._send_hold_write(declared, False, holds.WRITE_ANSWER_FIELDS) is not None
    assert reread(show["_id"])["seats"][0][0] == HELD


def test_the_companion_seat_beside_it_stays_an_ordinary_seat(show, at):
    at(released_at(show) - timedelta(hours=1))
    holds.hold_seats(show["_id"], "s:needs-it", None, [SPACE], needs_wheelchair=True)
    holds.hold_seats(show["_id"], "s:anyone", None, ["0:1", "0:2", "0:3"])  # a companion seat: for anyone
    assert reread(show["_id"])["seats"][0][1] == HELD


def test_staff_at_the_counter_sell_a_space_on_the_buyers_word(show, at):
    at(released_at(show) - timedelta(hours=1))
    holds.hold_seats(show["_id"], "staff:1", None, [SPACE], context=holds.HoldContext(house_seats=True))
    assert reread(show["_id"])["seats"][0][0] == HELD


def test_best_available_holds_spaces_when_asked_for_them_and_never_otherwise(show):
    session = reread(show["_id"])
    assert longest_block(session["layout"]) == 4  # "ssss" beside the space, not "Ssss"
    picked = best_available(session["layout"], session["seats"], 4)
    cells = session["layout"]["rows"]
    assert picked and not any(cells[r]["cells"][c].get("wheelchair") for r, c in picked)
    held = holds.hold_best_available(show["_id"], "s:needs-it", None, 1, wheelchair=True)
    assert any(cells[r]["cells"][c].get("wheelchair") for r, c in held.seats)


def test_the_seat_click_without_the_declaration_is_400_and_changes_nothing(client, show):
    version = reread(show["_id"])["version"]
    toggle = reverse("booking:toggle_seat", args=[str(show["_id"])])
    answer = client.post(toggle, {"seat": SPACE}, **HTMX)
    assert answer.status_code == 400
    assert "Row A, seat 1 is a wheelchair space" in answer.content.decode()
    hold = client.post(reverse("booking:hold", args=[str(show["_id"])]), {"seats": f"{SPACE},0:1"}, **HTMX)
    assert hold.status_code == 400 and "is a wheelchair space" in hold.content.decode()
    plain = client.post(toggle, {"seat": SPACE})  # without JavaScript: back to the map, which says why
    assert plain.status_code == 302
    page = client.get(plain["Location"]).content.decode()
    assert "is a wheelchair space" in page and "wheelchair option" in page
    assert untouched(show, version) and mongo.carts().count_documents({}) == 0

    declared = client.post(toggle, {"seat": SPACE, "wheelchair": "1"}, **HTMX)
    assert declared.status_code == 200 and reread(show["_id"])["seats"][0][0] == HELD
    again = client.post(toggle, {"seat": SPACE}, **HTMX)  # letting it go needs no declaration
    assert again.status_code == 200 and reread(show["_id"])["seats"][0][0] == FREE


def test_the_buyers_cart_order_and_tickets_say_wheelchair_space(show, at):
    """Seen in the end-to-end screenshots: a wheelchair space bought read "Row F, seat 1 Standard"
    everywhere after the map, so neither the buyer nor the usher at the door could tell."""
    at(released_at(show) - timedelta(hours=1))
    buyer = Client(HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9")
    session_url = reverse("booking:session", args=[str(show["_id"])])
    toggle = reverse("booking:toggle_seat", args=[str(show["_id"])])
    assert buyer.post(toggle, {"seat": SPACE, "wheelchair": "1"}, **HTMX).status_code == 200
    assert buyer.post(toggle, {"seat": "1:0"}, **HTMX).status_code == 200  # an ordinary seat beside it
    assert "Stalls · Rollstuhlplatz" in buyer.get(session_url).content.decode()  # the cart panel
    cart_page = buyer.get(reverse("booking:cart")).content.decode()
    assert cart_page.count("Rollstuhlplatz") == 1

    done = buyer.post(reverse("booking:checkout"), {"name": "Ada", "email": "ada@example.com"})
    ref = done["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert buyer.post(reverse("booking:pay", args=[ref]), {"payment_method": card(VISA)}).json()["status"] == "paid"
    order = mongo.orders().find_one({"ref": ref})
    assert sorted(bool(line.get("wheelchair")) for line in order["lines"]) == [False, True]
    order_page = buyer.get(reverse("booking:order", args=[ref])).content.decode()
    assert order_page.count("Stalls · Rollstuhlplatz · Normalpreis") == 2  # its line and its e-ticket
    tickets = buyer.get(reverse("booking:order_tickets", args=[ref])).content.decode()
    assert tickets.count("Rollstuhlplatz") == 1
    assert check_invariants() == []


@pytest.mark.parametrize(("language", "words"), [("de-DE,de;q=0.9", "Rollstuhlplatz"), ("en", "wheelchair space")])
def test_the_payment_page_mail_and_receipt_say_wheelchair_space_and_the_category(show, at, language, words):
    """The reviewer's gaps: the payment page's lines named no category, and the
    confirmation mail and the receipt PDF did not mark the wheelchair space the cart, order page
    and tickets mark."""
    at(released_at(show) - timedelta(hours=1))
    buyer = Client(HTTP_ACCEPT_LANGUAGE=language)
    toggle = reverse("booking:toggle_seat", args=[str(show["_id"])])
    assert buyer.post(toggle, {"seat": SPACE, "wheelchair": "1"}, **HTMX).status_code == 200
    assert buyer.post(toggle, {"seat": "1:0"}, **HTMX).status_code == 200
    done = buyer.post(reverse("booking:checkout"), {"name": "Ada", "email": "ada@example.com"})
    ref = done["Location"].rstrip("/").rsplit("/", 1)[-1]

    payment_page = buyer.get(done["Location"]).content.decode()
    summary = payment_page.split('class="order-lines"', 1)[1].split("</ul>", 1)[0]
    assert summary.count(f"Stalls · {words} · ") == 1  # the space: its category and what it is
    assert summary.count("Stalls · ") == 2  # the ordinary seat: its category too

    assert buyer.post(reverse("booking:pay", args=[ref]), {"payment_method": card(VISA)}).json()["status"] == "paid"
    order = mongo.orders().find_one({"ref": ref})
    mail.outbox.clear()
    assert notifications.send_confirmation(order["_id"]) == "sent"
    [message] = mail.outbox
    assert message.body.count(f"(Stalls · {words}, ") == 1 and message.body.count("(Stalls, ") == 1
    html = str(message.alternatives[0][0])
    assert html.count(f"Stalls · {words}") == 1
    with translation.override(order["language"]):
        rows = pdf.line_rows(order, order["lines"], "EUR", lambda text, raw=False: text)
    assert [words in str(row) for row in rows].count(True) == 1
    with translation.override(order["language"]):  # the tickets a change notice attaches say it too
        assert pdf_text(change_notices.tickets_pdf(order)).count(words) == 1
        assert pdf_text(ticket_pdf.tickets_pdf(order, ticket_pdf.PAGE)).count(words) == 1  # printed at the counter
    assert check_invariants() == []
