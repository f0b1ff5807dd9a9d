"""Theater (venue) and section names in the buyer's language: staff give a theater, a
sectioned venue and each of its sections a German name in the admin (``nameDe``, like a show's
``nameDe`` and a category's); sessions copy it beside ``theaterName`` (``theaterNameDe``, and
``venueNameDe`` / ``section.nameDe`` in a stadium), what's on reads it from the listings, orders
keep it, and German pages, mails, tickets and receipts show it. English pages show the main name."""

import json
from datetime import timedelta

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import translation

from booking.core import clock, faults, mongo
from booking.core.domain import Theater
from booking.notifications import change_notices, reservation_notices
from booking.notifications import confirmations as notifications
from booking.payments import flow as payments
from booking.payments import pdf
from booking.sales import holds, listings, waiting_room
from booking.sales.demo import STUDIO_CATEGORIES, STUDIO_GRID
from booking.sales.demo_stadium import create_match, create_stadium
from booking.sales.theater_edits import update_theater
from booking.tests.control.test_admin_performances import _form as sectioned_form
from booking.tests.control.test_admin_performances import make_match
from booking.tests.control.test_admin_theaters import editor_data
from booking.tests.factories import make_session, reread
from booking.tests.headers import GERMAN, HTMX
from booking.tests.localstripe import VISA, card
from booking.tests.sales.test_exchanges import pdf_text
from booking.upkeep import reconcile
from booking.upkeep.invariants import check_invariants
from booking.venues.layouts import parse_grid
from booking.venues.theaters import create_theater
from booking.web import presenters

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


def studio(name_de: str = "Studiobühne") -> Theater:
    return create_theater("Studio Stage", parse_grid(STUDIO_GRID, STUDIO_CATEGORIES), name_de=name_de)


def test_staff_name_a_theater_in_german_and_its_upcoming_sessions_and_listings_follow(manager_client):
    page = manager_client.get("/admin/booking/theater/add/").content.decode()
    assert 'name="name_de"' in page and "Name in German" in page
    saved = manager_client.post("/admin/booking/theater/add/", {**editor_data(name="Studio Stage"), "name_de": ""})
    assert saved.status_code == 302, saved.content.decode()[:1500]
    [theater] = mongo.theaters().find()
    assert "nameDe" not in theater  # none given: the name everywhere
    show = make_session(theater)
    assert "theaterNameDe" not in reread(show["_id"])

    change = f"/admin/booking/theater/{theater['_id']}/change/"
    renamed = manager_client.post(change, {**editor_data(name="Studio Stage"), "name_de": "  Studio bühne "})
    assert renamed.status_code == 302
    assert mongo.theaters().find_one()["nameDe"] == "Studio bühne"  # spaces tidied like the name's
    assert reread(show["_id"])["theaterNameDe"] == "Studio bühne"  # the session on sale follows
    assert mongo.listings().find_one({"_id": show["_id"]})["theaterNameDe"] == "Studio bühne"  # what's on
    assert reread(show["_id"]).get("listingDue") is None  # written through due()/refresh()
    assert 'value="Studio bühne"' in manager_client.get(change).content.decode()
    assert "Studio bühne" in Client(**GERMAN).get(reverse("booking:whats_on")).content.decode()

    too_long = manager_client.post(change, {**editor_data(name="Studio Stage"), "name_de": "x" * 101})
    assert too_long.status_code == 400
    assert mongo.theaters().find_one()["nameDe"] == "Studio bühne"  # nothing changed

    emptied = manager_client.post(change, {**editor_data(name="Studio Stage"), "name_de": ""})
    assert emptied.status_code == 302
    assert "nameDe" not in mongo.theaters().find_one()
    assert "theaterNameDe" not in reread(show["_id"])
    assert "theaterNameDe" not in mongo.listings().find_one({"_id": show["_id"]})
    assert check_invariants() == []


def test_german_pages_mails_tickets_and_receipts_name_the_theater_in_german(settings):
    settings.SITE_URL = "https://tickets.example.org"
    show = make_session(studio(), name="Godot", prices={"s": 2200, "r": 1500})
    listings.refresh([show["_id"]])
    buyer = Client(**GERMAN)
    whats_on = buyer.get(reverse("booking:whats_on")).content.decode()
    assert "Studiobühne" in whats_on and "Studio Stage" not in whats_on
    english = Client().get(reverse("booking:whats_on")).content.decode()
    assert "Studio Stage" in english and "Studiobühne" not in english  # the same cached page, in English

    session_url = reverse("booking:session", args=[str(show["_id"])])
    assert "· Studiobühne" in buyer.get(session_url).content.decode()
    assert "Studio Stage" in Client().get(session_url).content.decode()
    held = buyer.post(reverse("booking:toggle_seat", args=[str(show["_id"])]), {"seat": "6:2"}, **HTMX)
    assert held.status_code == 200 and "Studiobühne" in held.content.decode()  # the cart panel
    assert "Studiobühne" in buyer.get(reverse("booking:cart")).content.decode()
    assert "Studiobühne" in buyer.get(reverse("booking:checkout")).content.decode()

    done = buyer.post(reverse("booking:checkout"), {"name": "Ada", "email": "ada@example.com"})
    ref = done["Location"].rstrip("/").rsplit("/", 1)[-1]
    paid = buyer.post(reverse("booking:pay", args=[ref]), {"payment_method": card(VISA)})
    assert paid.json()["status"] == "paid"
    order = mongo.orders().find_one({"ref": ref})
    [summary] = order["sessions"]
    assert summary["theaterName"] == "Studio Stage" and summary["theaterNameDe"] == "Studiobühne"
    assert "Studiobühne" in buyer.get(reverse("booking:order", args=[ref])).content.decode()
    assert "Studiobühne" in buyer.get(reverse("booking:order_tickets", args=[ref])).content.decode()

    with translation.override("en"):  # the worker's own language does not matter: the order's does
        assert notifications.send_confirmation(order["_id"]) == "sent"
    [message] = mail.outbox
    assert ", Studiobühne" in message.body and "Studio Stage" not in message.body
    with translation.override("de"):
        assert presenters.order_tickets(order)[0]["theater"] == "Studiobühne"
        assert "Studiobühne" in str(pdf.line_rows(order, order["lines"], "EUR", lambda text, raw=False: text))
        assert "(Studiob\\374hne)" in pdf_text(change_notices.tickets_pdf(order))  # a change notice's tickets
    with translation.override("en"):
        assert presenters.order_tickets(order)[0]["theater"] == "Studio Stage"
        assert "Studio Stage" in str(pdf.line_rows(order, order["lines"], "EUR", lambda text, raw=False: text))
    assert check_invariants() == []


def test_a_stadiums_sections_and_venue_in_german_on_the_overview_and_the_section_page():
    stadium = create_stadium(seats=4000, rows=4, half=25)  # the demo's stadium, smaller: 20 sections
    assert stadium["nameDe"] == "Riverside-Stadion"
    assert [s.get("nameDe") for s in stadium["sections"][:2]] == ["Nord 1", "Nord 2"]
    first = create_match(stadium)
    assert first["theaterNameDe"] == "Riverside-Stadion – Nord 1" and first["venueNameDe"] == "Riverside-Stadion"
    assert first["section"]["nameDe"] == "Nord 1"

    overview = reverse("booking:performance", args=[str(first["performanceId"])])
    german = Client(**GERMAN).get(overview).content.decode()
    assert "<h2>Nord</h2>" in german and "<h2>Süd</h2>" in german and "Riverside-Stadion" in german
    assert "<h2>North</h2>" not in german and 'class="stand stand-north"' in german  # its place stays
    english = Client().get(overview).content.decode()
    assert "<h2>North</h2>" in english and "Riverside Stadium" in english and "Nord" not in english

    section_page = Client(**GERMAN).get(reverse("booking:session", args=[str(first["_id"])])).content.decode()
    assert "Riverside-Stadion: alle Blöcke</a>" in section_page  # the crumbs back to the overview
    assert "› Nord 1" in section_page and "Riverside-Stadion – Nord 1" in section_page
    whats_on = Client(**GERMAN).get(reverse("booking:whats_on")).content.decode()
    assert "Riverside-Stadion" in whats_on and "Riverside Stadium" not in whats_on


def test_staff_name_a_sectioned_venue_and_its_sections_in_german(manager_client):
    text = "[West | Westkurve]\nA: ssSs\n\n[East]\nA: pppp\n"
    response = manager_client.post(
        "/admin/booking/theater/add-sectioned/",
        sectioned_form(manager_client, sections=text, name_de="Hafenarena"),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    venue = mongo.theaters().find_one({"name": "Harbour Arena"})
    assert venue["nameDe"] == "Hafenarena"
    assert [(s["name"], s.get("nameDe")) for s in venue["sections"]] == [("West", "Westkurve"), ("East", None)]
    edit = f"/admin/booking/theater/{venue['_id']}/sections/"
    form = manager_client.get(edit).content.decode()
    assert "[West | Westkurve]" in form and 'value="Hafenarena"' in form

    wrong = manager_client.post(edit, sectioned_form(manager_client, sections="[West | Kurve_1]\nA: ss\n"))
    assert wrong.status_code == 400 and "German name" in wrong.content.decode()
    assert mongo.theaters().find_one({"_id": venue["_id"]})["sections"][0]["nameDe"] == "Westkurve"


def test_a_renamed_sectioned_venue_reaches_its_performances_sections_and_listings(manager_client):
    response = manager_client.post(
        "/admin/booking/theater/add-sectioned/", sectioned_form(manager_client, sections="[West | Westkurve]\nA: ss\n")
    )
    assert response.status_code == 302
    venue = mongo.theaters().find_one({"name": "Harbour Arena"})
    performance_id, sections = make_match(venue)
    [west] = sections
    assert west["theaterNameDe"] == "Harbour Arena – Westkurve" and "venueNameDe" not in west  # no German venue yet

    edit = f"/admin/booking/theater/{venue['_id']}/sections/"
    renamed = sectioned_form(manager_client, sections="[West | Westkurve]\nA: ss\n", name_de="Hafenarena")
    assert manager_client.post(edit, renamed).status_code == 302
    west = reread(west["_id"])
    assert west["theaterNameDe"] == "Hafenarena – Westkurve" and west["venueNameDe"] == "Hafenarena"
    listing = mongo.listings().find_one({"_id": west["_id"]})
    assert listing["theaterNameDe"] == "Hafenarena – Westkurve" and listing["venueNameDe"] == "Hafenarena"
    assert "Hafenarena" in Client(**GERMAN).get(reverse("booking:whats_on")).content.decode()
    overview = Client(**GERMAN).get(reverse("booking:performance", args=[str(performance_id)])).content.decode()
    assert "Hafenarena" in overview and "<h2>Westkurve</h2>" in overview
    assert check_invariants() == []


def test_the_reservation_mail_and_the_waiting_room_name_the_theater_in_german():
    show = make_session(studio(), name="Godot", prices={"s": 2200, "r": 1500})
    cart = holds.hold_seats(show["_id"], "s:ada", None, ["6:2"])
    order = payments.start("s:ada", cart.cart_id, "Ada", "ada@example.com")
    with translation.override("de"):
        assert reservation_notices.reservation_context(order)["theaters"] == "Studiobühne"
    with translation.override("en"):
        assert reservation_notices.reservation_context(order)["theaters"] == "Studio Stage"

    now = clock.now()
    premiere = make_session(studio(), name="Premiere", days=3, prices={"s": 2200, "r": 1500})
    waiting_room.enable(
        premiere["_id"], opens_at=now - timedelta(minutes=5), on_sale_at=now + timedelta(hours=1), rate=600
    )
    queue = Client(**GERMAN).get(reverse("booking:session", args=[str(premiere["_id"])]), follow=True)
    assert "· Studiobühne</p>" in queue.content.decode()
    english = Client().get(reverse("booking:session", args=[str(premiere["_id"])]), follow=True)
    assert "· Studio Stage</p>" in english.content.decode()


def test_the_german_names_travel_with_an_exported_and_imported_venue(manager_client):
    stadium = create_stadium(seats=2000, rows=2, half=25)
    exported = manager_client.get(f"/admin/booking/theater/{stadium['_id']}/export/").content
    assert json.loads(exported)["nameDe"] == "Riverside-Stadion"
    upload = SimpleUploadedFile("venue.json", exported, content_type="application/json")
    assert manager_client.post("/admin/booking/theater/import/", {"name": "Copy", "file": upload}).status_code == 302
    copy = mongo.theaters().find_one({"name": "Copy"})
    assert copy["nameDe"] == "Riverside-Stadion" and copy["sections"][0]["nameDe"] == "Nord 1"

    hall = studio()
    exported = manager_client.get(f"/admin/booking/theater/{hall['_id']}/export/").content
    upload = SimpleUploadedFile("hall.json", exported, content_type="application/json")
    assert manager_client.post("/admin/booking/theater/import/", {"name": "", "file": upload}).status_code == 302
    assert mongo.theaters().count_documents({"name": "Studio Stage", "nameDe": "Studiobühne"}) == 2


def test_a_rename_that_crashed_before_the_listing_is_on_whats_on_after_reconcile(crash_at):
    hall = studio(name_de="")
    show = make_session(hall, prices={"s": 2200, "r": 1500})
    crash_at("listing.before_write")
    with pytest.raises(faults.InjectedCrash):
        update_theater(hall["_id"], "Studio Stage", hall["layout"], name_de="Studiobühne")
    faults.set_hook(None)
    assert reread(show["_id"])["theaterNameDe"] == "Studiobühne" and reread(show["_id"])["listingDue"] is True
    assert "theaterNameDe" not in mongo.listings().find_one({"_id": show["_id"]})  # lagging until reconcile

    assert reconcile.reconcile().listings_written == 1
    assert mongo.listings().find_one({"_id": show["_id"]})["theaterNameDe"] == "Studiobühne"
    assert "listingDue" not in reread(show["_id"])
    assert check_invariants() == []
