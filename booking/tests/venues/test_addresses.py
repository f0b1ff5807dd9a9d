"""A theater's address and directions: what staff may store, and how it is shown."""

import pytest
from bson import ObjectId

from booking.core import mongo
from booking.core.errors import InvalidRequest, NotFound
from booking.tests.factories import make_theater
from booking.venues.addresses import (
    DIRECTIONS_LONGEST,
    LINE_LONGEST,
    address_lines,
    address_of,
    directions_text,
    update_address,
)

pytestmark = pytest.mark.django_db


def set_address(theater, **fields):
    given = {"street": "Goethestraße 1", "postal_code": "04109", "city": "Leipzig", **fields}
    return update_address(theater_id=theater["_id"], **given)


def test_an_address_is_stored_tidied_and_printed_as_two_lines():
    theater = make_theater()
    stored = set_address(theater, street="  Goethestraße   1 ", directions="Tram 4 to Augustusplatz.\r\nThen left.")
    assert address_of(theater["_id"]) == stored
    assert stored["street"] == "Goethestraße 1"
    assert stored["directions"] == "Tram 4 to Augustusplatz.\nThen left."
    assert address_lines(stored) == ["Goethestraße 1", "04109 Leipzig"]
    assert address_lines(None) == []


def test_german_pages_show_the_german_directions_and_fall_back_to_the_main_text():
    theater = make_theater()
    stored = set_address(theater, directions="Tram 4.", directions_de="Straßenbahn 4.")
    assert directions_text(stored, "de") == "Straßenbahn 4."
    assert directions_text(stored, "en") == "Tram 4."
    plain = set_address(theater, directions="Tram 4.", directions_de="")
    assert directions_text(plain, "de") == "Tram 4."


def test_every_field_empty_removes_the_address():
    theater = make_theater()
    set_address(theater)
    assert update_address(theater_id=theater["_id"], street=" ", postal_code="", city="") is None
    assert "address" not in mongo.theaters().find_one({"_id": theater["_id"]})


@pytest.mark.parametrize("missing", ["street", "city"])
def test_an_address_without_street_or_city_is_refused_and_changes_nothing(missing):
    theater = make_theater()
    before = set_address(theater)
    with pytest.raises(InvalidRequest, match="street and the city"):
        set_address(theater, **{missing: ""})
    assert address_of(theater["_id"]) == before


@pytest.mark.parametrize(("argument", "field"), [("street", "street"), ("postal_code", "postalCode"), ("city", "city")])
def test_each_line_may_be_exactly_as_long_as_its_limit_and_not_one_character_more(argument, field):
    theater = make_theater()
    longest = LINE_LONGEST[field]
    assert dict(set_address(theater, **{argument: "x" * longest}) or {})[field] == "x" * longest
    with pytest.raises(InvalidRequest, match="under"):
        set_address(theater, **{argument: "y" * (longest + 1)})
    assert dict(address_of(theater["_id"]) or {})[field] == "x" * longest


@pytest.mark.parametrize("argument", ["directions", "directions_de"])
def test_directions_may_be_as_long_as_their_limit(argument):
    theater = make_theater()
    set_address(theater, **{argument: "d" * DIRECTIONS_LONGEST})
    with pytest.raises(InvalidRequest, match="directions"):
        set_address(theater, **{argument: "d" * (DIRECTIONS_LONGEST + 1)})


@pytest.mark.parametrize(
    "fields",
    [
        {"street": "Main\u202estreet 1"},
        {"city": "Leip\x00zig"},
        {"directions": "Tram\x1b[31m 4"},
        {"street": "A\u200bB"},
    ],
)
def test_control_and_invisible_characters_are_refused(fields):
    theater = make_theater()
    with pytest.raises(InvalidRequest, match="invisible"):
        set_address(theater, **fields)
    assert address_of(theater["_id"]) is None


def test_an_unknown_theater_is_not_found():
    with pytest.raises(NotFound):
        update_address(theater_id=ObjectId(), street="A 1", postal_code="", city="B")
