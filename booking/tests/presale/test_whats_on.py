"""What's on: each show's card (the show-card partial of whats_on.html), what the query
reads, and that what it shows is current."""

import re

import pytest
from django import forms
from django.utils import timezone

from booking.core import clock, mongo
from booking.presale.forms import WhatsOnFilterForm
from booking.sales import holds, selectors
from booking.sales.demo_stadium import create_match, create_stadium
from booking.tests.commands import counting_commands
from booking.tests.factories import make_session, make_theater

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]


def cards(page: str) -> list[str]:
    return re.findall(r'<li class="show[^"]*">.*?</li>', page, re.S)


def card_of(page: str, name: str) -> str:
    return next(c for c in cards(page) if f'<span class="show-name">{name}</span>' in c)


def test_a_card_links_to_its_seat_map_with_local_time_price_and_seats_left(client):
    session = make_session(name="Hamlet", description="A play", days=1)
    page = client.get("/").content.decode()
    card = card_of(page, "Hamlet")
    local = timezone.localtime(session["start"])
    start = local.strftime("%H:%M")
    assert f'<h2 class="day-title">{local:%A}, {local.day} {local:%B}</h2>' in page  # e.g. Saturday, 5 December
    assert f'<a class="show-link" href="/sessions/{session["_id"]}/">' in card
    assert f'<span class="show-time">{start}</span>' in card
    assert '<span class="show-desc">A play</span>' in card
    assert '<span class="show-price">€20 – €35</span>' in card
    assert '<span class="badge">24 seats left</span>' in card
    assert card.startswith('<li class="show">')
    text = re.sub(r"<[^>]+>", "", card)
    assert text == f"{start} Hamlet A play €20 – €35 24 seats left"  # the link's words stay apart


def test_badges_few_left_and_sold_out(client):
    few = make_session(name="Few", days=1)
    sold = make_session(name="Gone", days=2)
    mongo.sessions().update_one({"_id": few["_id"]}, {"$set": {"seatsAvailable": 3}})
    mongo.sessions().update_one({"_id": sold["_id"]}, {"$set": {"seatsAvailable": 0}})
    page = client.get("/").content.decode()
    assert '<span class="badge badge-few">Only 3 left</span>' in card_of(page, "Few")
    gone = card_of(page, "Gone")
    assert gone.startswith('<li class="show sold-out">')
    assert '<span class="badge badge-sold">Sold out</span>' in gone


def test_long_descriptions_are_cut_like_truncatechars_and_everything_is_escaped(client):
    long = "Ein Stück in fünf Akten & mehr. " * 6
    make_session(name='<b>"Hamlet"</b>', description=long, days=1)
    page = client.get("/").content.decode()
    card = card_of(page, "&lt;b&gt;&quot;Hamlet&quot;&lt;/b&gt;")
    desc = re.search(r'<span class="show-desc">(.*?)</span>', card).group(1)
    assert desc == (long[:109] + "…").replace("&", "&amp;")
    decomposed = "Cafe\u0301"  # NFC-normalised, as the filter did
    make_session(name="Cafe", description=decomposed, days=2)
    page = client.get("/").content.decode()
    assert '<span class="show-desc">Café</span>' in card_of(page, "Cafe")


def test_stadium_is_one_card_opening_its_sections_with_seats_left_now(client):
    stadium = create_stadium("Test Stadium", seats=3 * 40, rows=4, half=5)
    first = create_match(stadium, days=3)
    make_session(name="Hamlet", days=1)
    page = client.get("/").content.decode()
    match = card_of(page, "Cup Final")
    assert f'href="/performances/{first["performanceId"]}/"' in match
    assert "120 seats left" in match
    assert len(cards(page)) == 2
    holds.hold_seats(first["_id"], "s:alice", None, ["0:0", "0:1"])
    assert "118 seats left" in card_of(client.get("/").content.decode(), "Cup Final")  # never a stale copy


def test_the_query_reads_only_what_the_page_shows():
    stadium = create_stadium("Test Stadium", seats=3 * 40, rows=4, half=5)
    create_match(stadium)
    make_session(days=1)
    with counting_commands() as counter:
        listed = selectors.upcoming_sessions()
    # the listings by date, then the seats left of those sessions by _id: two finds, no seat maps
    assert counter.commands == [("find", "listings"), ("find", "sessions")]
    query = {"start": {"$gt": clock.now()}, "status": "on_sale"}
    listed_raw = list(mongo.listings().find(query, selectors.LISTING_FIELDS))
    assert len(listed_raw) == 4 and len(listed) == 2
    for doc in listed_raw:
        assert set(doc) <= {"_id", *selectors.LISTING_FIELDS}
    assert sorted(s["seatsAvailable"] for s in listed) == [24, 120]  # read from the sessions
    for summary in listed:
        assert not {"seats", "layout", "reservations", "end", "section"} & set(summary)


def test_filtered_list_by_day_still_shows_cards(client):
    session = make_session(name="Tomorrow", days=1)
    make_session(name="Later", days=4)
    day = timezone.localtime(session["start"]).date().isoformat()
    page = client.get("/", {"date": day}, HTTP_HX_REQUEST="true").content.decode()
    assert [re.search(r'show-name">(.*?)<', c).group(1) for c in cards(page)] == ["Tomorrow"]


class PlainFilterForm(WhatsOnFilterForm):
    """The same form with Django's own widgets, to compare with."""

    date = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))  # type: ignore[assignment]  # Django's own field on purpose
    theater = forms.ChoiceField(required=False, choices=[("", "All theaters")])


@pytest.mark.parametrize(
    "data",
    [None, {"date": "2030-01-02", "theater": "650000000000000000000001"}, {"date": "yesterday-ish", "theater": "x"}],
)
def test_filter_widgets_kept_html_is_djangos_own(data):
    theaters = [
        {"_id": "650000000000000000000001", "name": "Grand <Hall>"},
        {"_id": "65000000000000000000002", "name": "Studio"},
    ]
    for _ in range(2):  # built, then kept
        kept, plain = WhatsOnFilterForm(data, theaters=theaters), PlainFilterForm(data, theaters=theaters)
        if data:
            assert kept.is_valid() == plain.is_valid()
        assert str(kept["date"]) == str(plain["date"])
        assert str(kept["theater"]) == str(plain["theater"])
    assert "Grand &lt;Hall&gt;" in str(kept["theater"])


def test_filter_lists_a_new_theater_at_once(client):
    make_session(make_theater(name="Old Hall"), days=1)
    assert "Old Hall</option>" in client.get("/").content.decode()
    make_session(make_theater(name="New Hall"), days=2)
    page = client.get("/").content.decode()
    assert "Old Hall</option>" in page and "New Hall</option>" in page
