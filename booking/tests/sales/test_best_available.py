"""Best available as the buyer uses it: a category of their choice, the seats in words,
released in one click, the engine's split offered and taken, true messages, exactly what was
asked added, wheelchair spaces with companions."""

import re

import pytest
from django.urls import reverse

from booking.core import mongo
from booking.core.errors import InvalidRequest, NoAdjacentSeats
from booking.sales import holds, selectors
from booking.tests.factories import make_session, make_theater
from booking.tests.headers import HTMX
from booking.venues.seat_grid import FREE, HELD, best_wheelchair, longest_block

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hold_rate_limit")]

CATEGORIES = [
    {"code": "p", "name": "Premium", "color": "#a855f7"},
    {"code": "s", "name": "Stalls", "color": "#3b82f6"},
]
# Premium in the middle of the front rows (where best available looks first), stalls round it.
HALL = """\
A: sspppppss
B: sspppppss
C: sssssssss
"""


@pytest.fixture
def hall():
    return make_session(make_theater(HALL, CATEGORIES, name="Hall"), prices={"p": 5500, "s": 2000})


def best(client, session, **data):
    return client.post(reverse("booking:best_available", args=[str(session["_id"])]), data, **HTMX)


def cart_items(session):
    # test-only read of an unindexed shape (notablescan): hinted on _id
    cart = mongo.carts().find_one({"items.sessionId": session["_id"]}, hint=[("_id", 1)])
    return cart["items"] if cart else []


def test_it_holds_the_chosen_category_and_says_which_seats_in_words(client, hall):
    page = best(client, hall, count="2", category="s").content.decode()
    items = cart_items(hall)
    assert [i["cat"] for i in items] == ["s", "s"]  # not the premium seats in the middle
    rows = {i["row"] for i in items}
    assert len(rows) == 1
    words = re.search(r"Held for you:</strong> ([^<]+)</p>", page).group(1)
    seats = sorted(int(i["seat"]) for i in items)
    assert words == f"Row {rows.pop()}, seats {seats[0]}–{seats[1]}, Stalls, €40"
    assert "highlighted on the map" in page


def test_any_category_says_the_category_and_the_price_it_picked(client, hall):
    page = best(client, hall, count="3").content.decode()
    assert re.search(r"Held for you:</strong> Row B, seats 4–6, Premium, €165</p>", page)


def test_it_adds_exactly_what_was_asked_to_seats_already_held(client, hall):
    sid = str(hall["_id"])
    for key in ("2:0", "2:1"):  # two stalls seats picked by hand first
        client.post(reverse("booking:toggle_seat", args=[sid]), {"seat": key}, **HTMX)
    before = {i["key"] for i in cart_items(hall)}
    page = client.get(reverse("booking:session", args=[sid])).content.decode()
    assert "You hold 2 seats here already: these are added to them." in page
    best(client, hall, count="4", category="s")
    items = cart_items(hall)
    added = [i for i in items if i["key"] not in before]
    assert len(items) == 6 and len(added) == 4
    assert {i["cat"] for i in added} == {"s"}  # only the category asked for
    session = selectors.get_session(hall["_id"])
    assert session["seatsAvailable"] == session["seatsTotal"] - 6  # nothing else taken


def test_the_result_is_released_in_one_click(client, hall):
    page = best(client, hall, count="2", category="s").content.decode()
    keys = re.search(r'name="seats" value="([^"]+)"', page).group(1)
    assert sorted(keys.split(",")) == sorted(i["key"] for i in cart_items(hall))
    released = client.post(reverse("booking:release", args=[str(hall["_id"])]), {"seats": keys}, **HTMX)
    assert released.status_code == 200
    assert cart_items(hall) == []
    session = selectors.get_session(hall["_id"])
    assert all(session["seats"][int(k.split(":")[0])][int(k.split(":")[1])] == FREE for k in keys.split(","))


def test_no_block_left_offers_the_engines_split_and_holds_it_when_accepted(client, hall):
    mongo.sessions().update_one(
        {"_id": hall["_id"]}, {"$set": {"seats.0.4": HELD, "seats.1.4": HELD, "seats.2.4": HELD}}
    )
    page = best(client, hall, count="5").content.decode()
    assert "There are no 5 seats together any more." in page  # the hall had them: now it has not
    offered = re.search(r'name="accept" value="([^"]+)"', page).group(1).split(",")
    assert len(offered) == 5 and cart_items(hall) == []  # offered, nothing held yet
    assert "Not side by side, but close:" in page and "Hold these 5 seats" in page
    taken = best(client, hall, count="5", accept=",".join(offered))
    assert taken.status_code == 200
    assert sorted(i["key"] for i in cart_items(hall)) == sorted(offered)


def test_an_offer_that_is_no_longer_the_best_is_offered_again_not_held(client, hall):
    mongo.sessions().update_one(
        {"_id": hall["_id"]}, {"$set": {"seats.0.4": HELD, "seats.1.4": HELD, "seats.2.4": HELD}}
    )
    page = best(client, hall, count="5").content.decode()
    offered = re.search(r'name="accept" value="([^"]+)"', page).group(1)
    stale = offered.replace(offered.split(",")[0], "2:8")  # not what the engine offers now
    again = best(client, hall, count="5", accept=stale).content.decode()
    assert cart_items(hall) == [] and 'name="accept"' in again
    assert best(client, hall, count="5", accept="nonsense").status_code == 400


def test_the_message_is_true_for_a_hall_that_never_had_the_block():
    empty = make_session(grid="A: sss.sss\nB: sss.sss")
    assert longest_block(empty["layout"]) == 3
    with pytest.raises(NoAdjacentSeats) as exc:
        holds.hold_best_available(empty["_id"], "s:ann", None, 8)
    assert "There are no 8 seats side by side in this hall." in exc.value.message
    assert "any more" not in exc.value.message
    assert len(exc.value.suggestion) == 8
    assert selectors.get_session(empty["_id"])["seatsAvailable"] == 12  # nothing held


def test_an_unknown_category_is_400_and_holds_nothing(client, hall):
    response = best(client, hall, count="2", category="z")
    assert response.status_code == 400 and cart_items(hall) == []
    assert best(client, hall, count="2", category="<b>").status_code == 400


WHEELCHAIR_HALL = """\
A: ssssssss
B: Sss..ssS
"""


def test_wheelchair_spaces_come_with_a_companion_seat_each(client):
    session = make_session(make_theater(WHEELCHAIR_HALL, CATEGORIES[1:], name="Small"), prices={"s": 2000})
    page = client.get(reverse("booking:session", args=[str(session["_id"])])).content.decode()
    assert "Wheelchair spaces, each with a companion seat" in page
    picked = best_wheelchair(session["layout"], session["seats"], 2)
    assert picked == [(1, 0), (1, 1), (1, 6), (1, 7)]
    answer = best(client, session, count="2", wheelchair="on").content.decode()
    cells = [session["layout"]["rows"][1]["cells"][int(i["key"].split(":")[1])] for i in cart_items(session)]
    assert sum(1 for c in cells if c.get("wheelchair")) == 2 and sum(1 for c in cells if c.get("companion")) == 2
    assert "with wheelchair space" in answer
    with pytest.raises(NoAdjacentSeats, match="no free wheelchair space"):
        holds.hold_best_available(session["_id"], "s:bob", None, 1, wheelchair=True)


def test_a_hall_without_wheelchair_spaces_does_not_offer_them(client, hall):
    page = client.get(reverse("booking:session", args=[str(hall["_id"])])).content.decode()
    assert "Wheelchair spaces, each with a companion seat" not in page
    with pytest.raises(InvalidRequest):
        holds.hold_best_available(hall["_id"], "s:ann", None, 6, wheelchair=True)  # 12 seats: over the cart's 10


def test_a_price_limit_keeps_to_the_categories_at_or_under_it(client, hall):
    page = client.get(reverse("booking:session", args=[str(hall["_id"])])).content.decode()
    assert '<option value="2000">Up to €20 a seat</option>' in page
    best(client, hall, count="3", max_price="2000")  # exactly the stalls price: stalls only
    assert {i["cat"] for i in cart_items(hall)} == {"s"}
    with pytest.raises(NoAdjacentSeats, match="at that price"):
        holds.hold_best_available(hall["_id"], "s:ann", None, 2, max_price=1999)
    with pytest.raises(NoAdjacentSeats, match="at that price"):
        holds.hold_best_available(hall["_id"], "s:ann", None, 2, {"p"}, max_price=2000)
    assert best(client, hall, count="2", max_price="-1").status_code == 400
