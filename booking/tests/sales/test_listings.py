"""What's on reads the listings (sales/listings.py): every staff change to a listed field shows
at once, a crash between the session write and its listing's is repaired by reconcile, and a slow
writer never puts an older revision back."""

from datetime import timedelta

import pytest

from booking.core import clock, faults, mongo
from booking.sales import listings, offers, selectors, series
from booking.sales import sessions as session_service
from booking.tests.factories import make_session, make_theater
from booking.upkeep import reconcile


def listed() -> dict:
    return {s["_id"]: s for s in selectors.upcoming_sessions()}


def edit_name(session: dict, name: str) -> None:
    session_service.update_session_details(
        session["_id"],
        name=name,
        description=session["description"],
        start=session["start"],
        end=session["end"],
        prices=session["prices"],
    )


def test_a_new_session_is_listed_with_what_the_page_shows():
    session = make_session(name="Hamlet", prices={"s": 2000, "p": 3500})
    listing = mongo.listings().find_one({"_id": session["_id"]})
    assert listing["start"] == session["start"] and listing["name"] == "Hamlet" and listing["status"] == "on_sale"
    assert "seats" not in listing and "layout" not in listing and "seatsAvailable" not in listing
    assert listed()[session["_id"]]["seatsAvailable"] == session["seatsAvailable"]
    assert "listingDue" not in mongo.sessions().find_one({"_id": session["_id"]})  # written: the flag is gone


def test_every_staff_change_to_a_listed_field_shows_at_once():
    theater = make_theater()
    session = make_session(theater, name="Hamlet")
    edit_name(session, "Hamlet (new staging)")
    assert listed()[session["_id"]]["name"] == "Hamlet (new staging)"

    later = session["start"] + timedelta(days=3)
    session_service.update_session_details(
        session["_id"],
        name="Hamlet",
        description="",
        start=later,
        end=later + timedelta(hours=2),
        prices=session["prices"],
    )
    assert listed()[session["_id"]]["start"] == later

    offers.set_price_table(session["_id"], {"s": 2500, "p": 4000}, {})
    assert listed()[session["_id"]]["prices"] == {"s": 2500, "p": 4000}

    session_service.set_sale_window(session["_id"], published=False, sale_opens=None, sale_closes=None)
    assert session["_id"] not in listed()  # back to draft: off what's on
    session_service.set_sale_window(session["_id"], published=True, sale_opens=None, sale_closes=None)
    assert session["_id"] in listed()

    session_service.cancel_session(session["_id"])
    assert session["_id"] not in listed()


def test_a_series_published_in_one_go_is_listed():
    theater = make_theater()
    shows = [make_session(theater, name="Faust", days=d) for d in (1, 2)]
    for show in shows:
        session_service.set_sale_window(show["_id"], published=False, sale_opens=None, sale_closes=None)
    assert not {s["_id"] for s in shows} & set(listed())
    done = series.apply(shows[0]["_id"], series.PUBLISH, [s["_id"] for s in shows])
    assert len(done.done) == 2
    assert {s["_id"] for s in shows} <= set(listed())


def test_a_crash_after_the_session_write_is_repaired_by_reconcile(crash_at):
    session = make_session(name="Hamlet")
    crash_at("listing.before_write")
    with pytest.raises(faults.InjectedCrash):
        edit_name(session, "Macbeth")
    faults.set_hook(None)
    assert listed()[session["_id"]]["name"] == "Hamlet"  # lagging until reconcile
    assert mongo.sessions().find_one({"_id": session["_id"]})["listingDue"] is True

    report = reconcile.reconcile()
    assert report.listings_written == 1
    assert listed()[session["_id"]]["name"] == "Macbeth"
    assert "listingDue" not in mongo.sessions().find_one({"_id": session["_id"]})
    assert reconcile.reconcile().listings_written == 0  # nothing left flagged


def test_a_cancel_that_crashed_before_its_listing_is_off_whats_on_after_reconcile(crash_at):
    session = make_session()
    crash_at("listing.before_write")
    with pytest.raises(faults.InjectedCrash):
        session_service.cancel_session(session["_id"])
    faults.set_hook(None)
    assert session["_id"] in listed()
    reconcile.reconcile()
    assert session["_id"] not in listed()


def test_an_older_revision_never_overwrites_a_newer_listing():
    session = make_session(name="Hamlet")
    projection = {field: 1 for field in listings.LISTED_FIELDS} | {"listingRev": 1}
    edit_name(session, "Macbeth")
    read_before = mongo.sessions().find_one({"_id": session["_id"]}, projection)  # a slow writer read this...
    edit_name(session, "Othello")  # ...while a newer edit was written through
    assert listings.refresh([]) == 0
    assert listings._write(read_before) == 0  # the slow writer comes last: refused
    assert mongo.listings().find_one({"_id": session["_id"]})["name"] == "Othello"


def test_the_flag_stays_when_a_newer_write_came_between_the_listing_and_the_clear(fault_hook):
    session = make_session(name="Hamlet")
    calls: list[str] = []

    def edit_meanwhile(name):
        if name == "listing.before_clear" and not calls:
            calls.append(name)
            # another edit lands after this refresh wrote its listing, before it clears the flag;
            # its own refresh is lost with its process
            mongo.sessions().update_one(
                {"_id": session["_id"]}, listings.due({"$set": {"name": "Othello"}, "$inc": {"version": 1}})
            )

    fault_hook(edit_meanwhile)
    edit_name(session, "Macbeth")
    fault_hook(None)
    assert mongo.sessions().find_one({"_id": session["_id"]})["listingDue"] is True  # not cleared
    assert listed()[session["_id"]]["name"] == "Macbeth"
    reconcile.reconcile()
    assert listed()[session["_id"]]["name"] == "Othello"


def test_sessions_from_before_listings_are_backfilled():
    session = make_session(name="Hamlet")
    past = make_session(name="Yesterday")
    mongo.sessions().update_one({"_id": past["_id"]}, {"$set": {"start": clock.now() - timedelta(days=1)}})
    mongo.listings().delete_many({})
    mongo.sessions().update_many({}, {"$unset": {"listingRev": "", "listingDue": ""}})
    assert listed() == {}
    assert listings.backfill(clock.now()) == 1  # the upcoming one; the past one is not listed
    assert list(listed()) == [session["_id"]]
    assert listings.backfill(clock.now()) == 0  # once


def test_a_stadium_match_is_listed_once_with_the_seats_left_of_all_its_sections():
    from booking.sales.demo_stadium import create_match, create_stadium

    stadium = create_stadium("Test Stadium", seats=3 * 40, rows=4, half=5)
    first = create_match(stadium)
    assert mongo.listings().count_documents({"start": first["start"]}) == 3  # one per section
    (match,) = selectors.upcoming_sessions()
    assert match["_id"] == first["performanceId"] and match["seatsAvailable"] == 120
