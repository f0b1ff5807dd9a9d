"""The door check-in on a phone (390 x 844) in real Chromium: a ticket read by the camera (a fake
camera playing a Y4M of the ticket's QR), typed codes, a search, and a door that loses its
network, keeps admitting from its list, and reports the ticket also let in at another door once
it is back. Screenshots: test-artifacts/browser/<test>/."""

import re

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from booking.core import mongo
from booking.sales import cancels
from booking.tests.checkin_support import door_staff, sell, tickets
from booking.tests.factories import make_session
from booking.upkeep.invariants import check_invariants
from booking.venues.theaters import set_admit_whole_booking

from .fake_camera import qr_frame, write_y4m

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
PASSWORD = "a-long-test-password"


def refusals(page) -> list:
    """Console messages of the CSP refusing something (scripts from our origin only)."""
    refused = []
    page.on("console", lambda msg: refused.append(msg.text) if "Content Security Policy" in msg.text else None)
    return refused


def sign_in(page, username: str, next_url: str):
    page.goto(f"/checkin/login/?next={next_url}")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    if next_url != "/checkin/":
        expect(page.locator("#net[data-ready='1']")).to_be_attached()


def set_door(page, name: str):
    page.get_by_label("Door", exact=True).fill(name)
    page.get_by_label("Door", exact=True).dispatch_event("change")


def type_code(page, code: str):
    page.get_by_label("Ticket code").fill(code)
    # the typed code's own button (a search hit for a used ticket offers a "Check" of its own)
    page.get_by_role("region", name="Type the code").get_by_role("button", name="Check", exact=True).click()


def next_ticket(page):
    page.get_by_role("button", name="Next ticket").click()
    expect(page.locator("#result")).to_be_hidden()


@pytest.fixture
def show():
    session = make_session(name="The Seagull")
    order = sell(session, ["1:2", "1:3"], name="Ada Q. Lovelace")
    return session, order


def test_door_checks_typed_codes_green_then_red(new_page, show, shot):
    session, order = show
    other_show = make_session(name="Macbeth", days=3)
    elsewhere = sell(other_show, ["0:0"], name="Grace Hopper", email="grace@example.com")
    canceled = sell(session, ["2:0"], name="Alan Turing", email="alan@example.com")
    cancels.cancel_order(canceled["_id"], by="boss")
    door_staff("anna")
    page = new_page(PHONE)
    refused = refusals(page)
    sign_in(page, "anna", "/checkin/")
    expect(page.get_by_role("heading", name="Which performance?")).to_be_visible()
    shot(page, "pick-performance")
    page.get_by_role("link", name=re.compile("The Seagull")).click()
    expect(page.locator("#net[data-ready='1']")).to_be_attached()
    expect(page.locator("#net")).to_contain_text("Online")
    expect(page.locator("#count-sold")).to_have_text("2")
    shot(page, "door-page")

    # no door chosen yet: asked for first
    type_code(page, tickets(order)[0])
    expect(page.locator("#result.bad")).to_contain_text("Type the name of your door first")
    next_ticket(page)
    set_door(page, "North")

    type_code(page, tickets(order)[0])
    result = page.locator("#result")
    expect(result).to_have_class(re.compile(r"\bok\b"))
    expect(result).to_contain_text("Let in")
    expect(result).to_contain_text("Row B · Seat 3")
    expect(result).to_contain_text("Premium")
    expect(result).to_contain_text("Ada Q. Lovelace")
    shot(page, "green-typed-code", full_page=False)
    next_ticket(page)
    expect(page.locator("#count-in")).to_have_text("1")

    type_code(page, tickets(order)[0])
    expect(result).to_have_class(re.compile(r"\bbad\b"))
    expect(result).to_contain_text("Already used")
    expect(result).to_contain_text(re.compile(r"Used at North, \d\d:\d\d \(anna\)"))
    shot(page, "red-already-used", full_page=False)
    next_ticket(page)

    type_code(page, tickets(elsewhere)[0])
    expect(result).to_contain_text("Other performance")
    expect(result).to_contain_text("For Macbeth")
    shot(page, "red-other-performance", full_page=False)
    next_ticket(page)

    type_code(page, tickets(canceled)[0])
    expect(result).to_contain_text("Not valid")
    expect(result).to_contain_text("refunded")  # since payments a staff cancel of a paid order refunds it
    shot(page, "red-canceled", full_page=False)
    next_ticket(page)

    type_code(page, "NoSuchTicketCode1234567")
    expect(result).to_contain_text("Unknown ticket")
    next_ticket(page)

    # the door is remembered
    page.reload()
    expect(page.get_by_label("Door", exact=True)).to_have_value("North")
    expect(page.locator("#count-doors")).to_contain_text("North 1")
    shot(page, "door-remembered-counts")

    # search by name, admit from the list
    page.get_by_label("Name or booking reference").fill("lovel")
    hits = page.locator("#hits li")
    expect(hits).to_have_count(2)
    expect(hits.first).to_contain_text("Used at North")
    expect(hits.first.get_by_role("button", name="Check", exact=True)).to_be_visible()  # used: not offered as "Admit"
    expect(hits.first.get_by_role("button", name="Admit")).to_have_count(0)
    shot(page, "search-by-name")
    hits.nth(1).get_by_role("button", name="Admit").click()
    expect(result).to_have_class(re.compile(r"\bok\b"))
    expect(result).to_contain_text("Row B · Seat 4")
    next_ticket(page)
    expect(page.locator("#count-in")).to_have_text("2")
    assert refused == []
    assert check_invariants() == []


def test_door_reads_the_ticket_with_the_phone_camera(launch_chromium, live_server, show, tmp_path, shot):
    """Chromium's fake camera plays a Y4M made from the real ticket's QR code (segno PNG)."""
    session, order = show
    code = tickets(order)[0]
    video = write_y4m(tmp_path / "ticket.y4m", qr_frame(code))
    qr_frame(code).save(tmp_path / "frame.png")
    door_staff("anna")
    camera_browser = launch_chromium(
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-video-capture={video}",
    )
    try:
        context = camera_browser.new_context(
            base_url=live_server.url, viewport=PHONE, is_mobile=True, has_touch=True, permissions=["camera"]
        )
        context.set_default_timeout(10000)
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        refused = refusals(page)
        sign_in(page, "anna", f"/checkin/{session['_id']}/")
        set_door(page, "Main entrance")
        page.get_by_role("button", name="Scan with the camera").click()
        result = page.locator("#result")
        expect(result).to_have_class(re.compile(r"\bok\b"), timeout=15000)
        expect(result).to_contain_text("Row B · Seat 3")
        expect(result).to_contain_text("Ada Q. Lovelace")
        shot(page, "camera-green", full_page=False)
        line = mongo.orders().find_one({"_id": order["_id"]})["lines"][0]
        assert line["checkedIn"]["door"] == "Main entrance" and line["checkedIn"]["by"] == "anna"
        # held in front of the camera: one scan, not one per frame (the green screen clears itself)
        expect(result).to_be_hidden(timeout=6000)
        expect(page.locator("video")).to_be_visible()
        shot(page, "camera-running", full_page=False)
        assert mongo.checkin_conflicts().count_documents({}) == 0
        # shown again after a pause (camera off and on): red, used at this door
        page.get_by_role("button", name="Stop camera").click()
        page.wait_for_timeout(2700)
        page.get_by_role("button", name="Scan with the camera").click()
        expect(result).to_have_class(re.compile(r"\bbad\b"), timeout=15000)
        expect(result).to_contain_text("Already used")
        expect(result).to_contain_text("Used at Main entrance")
        shot(page, "camera-red-used", full_page=False)
        assert errors == [] and refused == []
        context.close()
    finally:
        camera_browser.close()
    assert check_invariants() == []


def test_an_offline_door_keeps_admitting_and_reports_the_conflict_when_back(new_page, show, shot):
    session, order = show
    first, second = tickets(order)
    door_staff("anna")
    door_staff("ben")
    east = new_page(PHONE)
    refused = refusals(east)
    sign_in(east, "anna", f"/checkin/{session['_id']}/")
    set_door(east, "East")
    expect(east.locator("#net")).to_contain_text("2 tickets on this phone")
    # the service worker keeps the page and its scripts: the phone says when it is ready
    expect(east.locator("#net[data-offline='1']")).to_be_attached()
    expect(east.locator("#net")).to_contain_text("Online · ready offline")

    east.context.set_offline(True)
    expect(east.locator("#net")).to_contain_text("Offline", timeout=8000)
    type_code(east, first)
    result = east.locator("#result")
    expect(result).to_have_class(re.compile(r"\bok\b"))
    expect(result).to_contain_text("Row B · Seat 3")
    expect(result).to_contain_text("Offline · syncs when back online")
    expect(result).to_contain_text("Ada L.")
    shot(east, "offline-green", full_page=False)
    next_ticket(east)
    expect(east.locator("#net")).to_contain_text("1 to sync")
    shot(east, "offline-queued")
    # signing out would lose the queue: the phone asks (and staying is the default)
    asked = []
    east.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    east.get_by_role("button", name="Sign out").click()
    expect(east.locator("#net")).to_contain_text("1 to sync")
    for _ in range(100):  # the dialog's event reaches Python a moment after the click (later on a busy machine)
        if asked:
            break
        east.wait_for_timeout(50)
    assert asked and "not synced yet" in asked[0]

    # reload without network: the page comes from the service worker, the list from IndexedDB
    east.reload()
    expect(east.locator("#net[data-ready='1']")).to_be_attached()
    expect(east.locator("#net")).to_contain_text("Offline")
    expect(east.locator("#net")).to_contain_text("1 to sync")
    expect(east.get_by_label("Door", exact=True)).to_have_value("East")
    type_code(east, first)
    expect(result).to_contain_text("Already used")
    expect(result).to_contain_text("(this phone)")
    shot(east, "offline-red-used-here", full_page=False)
    next_ticket(east)
    east.get_by_label("Name or booking reference").fill("ada")
    expect(east.locator("#hits li")).to_have_count(2)
    assert mongo.orders().find_one({"_id": order["_id"]})["lines"][0].get("checkedIn") is None  # not synced yet

    # meanwhile West (online) lets the same ticket in
    west = new_page(PHONE)
    sign_in(west, "ben", f"/checkin/{session['_id']}/")
    set_door(west, "West")
    type_code(west, first)
    expect(west.locator("#result")).to_have_class(re.compile(r"\bok\b"))
    next_ticket(west)

    # East is back: the queue syncs and the conflict is shown
    east.context.set_offline(False)
    expect(east.locator("#net")).to_contain_text("Online", timeout=10000)
    expect(east.locator("#net")).not_to_contain_text("to sync", timeout=10000)
    conflicts = east.locator("#conflicts")
    expect(conflicts).to_be_visible(timeout=10000)
    expect(conflicts).to_contain_text("Row B · Seat 3")
    expect(conflicts).to_contain_text(
        re.compile(r"Let in twice: at East, \d\d:\d\d offline \(anna\) and at West, \d\d:\d\d \(ben\)\.")
    )
    expect(east.locator("#conflict-count")).to_have_text("1")
    shot(east, "conflict-after-sync")
    stored = mongo.checkin_conflicts().find_one({})
    assert stored["offline"]["door"] == "East" and stored["first"]["door"] == "West"

    # West sees it on its next refresh
    expect(west.locator("#conflicts")).to_contain_text("Let in twice", timeout=10000)
    shot(west, "other-door-sees-conflict")
    west.locator("#conflicts").get_by_role("button", name="Seen").click()
    expect(west.locator("#conflict-count")).to_have_text("0")
    expect(west.locator("#conflicts")).to_contain_text("Seen by ben")

    # and the second ticket is admitted online at East now
    type_code(east, second)
    expect(result).to_have_class(re.compile(r"\bok\b"))
    expect(result).not_to_contain_text("Offline")
    assert refused == []

    # the manager sees the same on the session's admin page
    User.objects.create_superuser("boss", "boss@theater.example", PASSWORD)
    admin = new_page({"width": 1280, "height": 900})
    admin.goto(f"/admin/booking/session/{session['_id']}/change/")
    admin.get_by_label("Username").fill("boss")
    admin.get_by_label("Password").fill(PASSWORD)
    admin.get_by_role("button", name="Log in").click()
    summary = admin.locator("#checkin-summary")
    expect(summary).to_contain_text("2 of 2 tickets checked in: East 1, West 1.")
    expect(summary).to_contain_text("1 conflict (0 not seen yet)")
    expect(summary).to_contain_text("Seen by ben")
    shot(admin, "admin-session-check-in")
    assert check_invariants() == []


def test_an_offline_door_says_why_an_exchanged_or_refunded_ticket_does_not_admit(new_page, show, shot):
    """The phone's list carries the tickets an exchange replaced and the canceled bookings, with
    their reason: offline the door shows the same red answer as online, never "unknown"."""
    from booking.sales import checkin, exchanges

    session, order = show
    moved = tickets(order)[1]  # B4 (premium) -> B6 (premium): no money changes hands
    exchanges.exchange(order["_id"], [moved], session["_id"], ["1:5"], settle=exchanges.COUNTER, by="anna")
    new_seat = next(line for line in mongo.orders().find_one({"_id": order["_id"]})["lines"] if line["key"] == "1:5")
    gone = sell(session, ["2:0"], name="Bob Canceled")
    cancels.cancel_order(gone["_id"], by="anna")
    # and one moved to another performance: the order has no ticket for this one any more
    macbeth = make_session(name="Macbeth", days=3)
    elsewhere = sell(session, ["0:0"], name="Cy Moved", email="cy@example.com")
    exchanges.exchange(elsewhere["_id"], tickets(elsewhere), macbeth["_id"], ["0:0"], settle=exchanges.COUNTER)
    moved_order = mongo.orders().find_one({"_id": elsewhere["_id"]})
    went = checkin.replacement_seat(moved_order, tickets(elsewhere)[0], checkin.get_scope(session["_id"]))
    when = went["show"]["when"]
    door_staff("anna")
    east = new_page(PHONE)
    sign_in(east, "anna", f"/checkin/{session['_id']}/")
    set_door(east, "East")
    expect(east.locator("#net")).to_contain_text("5 tickets on this phone")
    expect(east.locator("#net")).to_contain_text("Online · ready offline")
    replaced = f"Replaced by an exchange — new seat: Row {new_seat['row']} · Seat {new_seat['seat']}."
    result = east.locator("#result")
    type_code(east, moved)  # online first: the server's answer
    expect(result).to_have_class(re.compile(r"\bbad\b"))
    expect(result).to_contain_text(replaced)
    next_ticket(east)

    east.context.set_offline(True)
    expect(east.locator("#net")).to_contain_text("Offline", timeout=8000)
    type_code(east, moved)
    expect(result).to_have_class(re.compile(r"\bbad\b"))
    expect(result).to_contain_text("Not valid")
    expect(result).to_contain_text(replaced)
    expect(result).to_contain_text("Offline · checked against this phone's list")
    shot(east, "offline-red-exchanged", full_page=False)
    next_ticket(east)
    type_code(east, tickets(gone)[0])
    expect(result).to_have_class(re.compile(r"\bbad\b"))
    expect(result).to_contain_text("The ticket was refunded.")  # a paid booking canceled by staff is refunded
    shot(east, "offline-red-canceled", full_page=False)
    next_ticket(east)
    type_code(east, tickets(elsewhere)[0])
    expect(result).to_have_class(re.compile(r"\bbad\b"))
    expect(result).to_contain_text(f"Replaced by an exchange — new seat: Row A · Seat 1, Macbeth, {when}.")
    shot(east, "offline-red-moved-to-another-show", full_page=False)
    east.set_viewport_size({"width": 1366, "height": 768})  # a laptop at the box office's door
    expect(result).to_contain_text("Macbeth")
    shot(east, "offline-red-moved-to-another-show-laptop", full_page=False)
    east.set_viewport_size(PHONE)
    next_ticket(east)
    east.context.set_offline(False)
    assert check_invariants() == []


def test_an_offline_door_refuses_a_ticket_handed_on_after_its_next_list_and_admits_the_new_one(new_page, shot):
    """The buyer hands a ticket to a friend (sales/buyer_changes.py): once the door phone has
    downloaded its list again, offline it refuses the old code saying why and admits the new one."""
    from booking.core import clock
    from booking.sales import buyer_changes, holds, self_service
    from booking.tests.factories import make_theater
    from booking.tests.paying import checkout_paid

    theater = make_theater()
    self_service.set_theater_rules(theater_id=theater["_id"], rules=self_service.Rules(transfer=True))
    session = make_session(theater, name="The Seagull")
    cart = holds.hold_seats(session["_id"], "s:ada", None, ["1:2", "1:3"])
    order = checkout_paid("s:ada", cart.cart_id, "Ada Lovelace", "ada@example.com")
    old = order["lines"][0]["ticket"]
    door_staff("anna")
    door = new_page(PHONE)
    sign_in(door, "anna", f"/checkin/{session['_id']}/")
    set_door(door, "East")
    expect(door.locator("#net")).to_contain_text("2 tickets on this phone")
    handed = buyer_changes.transfer_ticket(
        order_id=order["_id"], ticket=old, name="Grace Hopper", email="grace@example.com", now=clock.now()
    )
    new = handed["lines"][0]["ticket"]
    door.reload()  # the phone's next refresh: the list is downloaded again
    set_door(door, "East")
    expect(door.locator("#net")).to_contain_text("3 tickets on this phone")
    expect(door.locator("#net")).to_contain_text("Online · ready offline")
    door.context.set_offline(True)
    expect(door.locator("#net")).to_contain_text("Offline", timeout=8000)
    result = door.locator("#result")
    type_code(door, old)
    expect(result).to_have_class(re.compile(r"\bbad\b"))
    expect(result).to_contain_text("Handed to someone else: only their new ticket admits.")
    shot(door, "offline-red-handed-on", full_page=False)
    next_ticket(door)
    type_code(door, new)
    expect(result).not_to_have_class(re.compile(r"\bbad\b"))
    expect(result).to_contain_text("Grace H.")
    shot(door, "offline-green-new-holder", full_page=False)
    next_ticket(door)
    door.context.set_offline(False)


def test_an_offline_door_admits_the_whole_booking_on_one_scan_and_syncs_each_ticket_once(new_page, shot):
    """Where the theater lets one scan admit the whole booking, a phone without network does so
    from its list; back online, every ticket of the booking is checked in once, at this door."""
    session = make_session(name="The Seagull")
    set_admit_whole_booking(session["theaterId"], allowed=True)
    family = sell(session, ["1:2", "1:3", "1:5"], name="Ada Q. Lovelace")
    other = sell(session, ["0:0"], name="Grace Hopper")
    door_staff("anna")
    east = new_page(PHONE)
    sign_in(east, "anna", f"/checkin/{session['_id']}/")
    set_door(east, "East")
    expect(east.locator("#net")).to_contain_text("4 tickets on this phone")
    expect(east.locator("#net[data-offline='1']")).to_be_attached()

    east.context.set_offline(True)
    expect(east.locator("#net")).to_contain_text("Offline", timeout=8000)
    type_code(east, tickets(family)[1])
    result = east.locator("#result")
    expect(result).to_have_class(re.compile(r"\bok\b"))
    expect(result).to_contain_text("The whole booking: 3 people let in.")
    expect(result).to_contain_text("Offline · syncs when back online")
    shot(east, "offline-whole-booking", full_page=False)
    next_ticket(east)
    expect(east.locator("#net")).to_contain_text("3 to sync")
    type_code(east, tickets(family)[0])  # one of the party: already in, on this phone
    expect(result).to_contain_text("Already used")
    next_ticket(east)
    assert all("checkedIn" not in line for line in mongo.orders().find_one({"_id": family["_id"]})["lines"])

    east.context.set_offline(False)
    expect(east.locator("#net")).to_contain_text("Online", timeout=10000)
    expect(east.locator("#net")).not_to_contain_text("to sync", timeout=10000)
    lines = mongo.orders().find_one({"_id": family["_id"]})["lines"]
    assert [line["checkedIn"]["door"] for line in lines] == ["East"] * 3
    assert all(line["checkedIn"]["offline"] for line in lines)
    assert "checkedIn" not in mongo.orders().find_one({"_id": other["_id"]})["lines"][0]  # another booking
    expect(east.locator("#conflict-count")).to_have_text("0")
    shot(east, "offline-whole-booking-synced")
    assert check_invariants() == []
