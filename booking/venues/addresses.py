"""Where a theater is: its postal address and how to get there, in both languages. Buyers see them
on the confirmation page, the tickets, the mail and in the calendar entry; staff set them on the
theater's "Address and directions" page. Pages read the theater's current address (a move or a
corrected street reaches buyers who booked before), through the order's sessions."""

from bson import ObjectId
from django.utils.translation import gettext

from booking.core import clock, mongo
from booking.core.domain import VenueAddress
from booking.core.errors import InvalidRequest, NotFound
from booking.core.localized import localized
from booking.core.text_checks import has_invisible_characters

# the longest each line of the address may be; directions (which may have line breaks) are longer
LINE_LONGEST = {"street": 120, "postalCode": 12, "city": 80}
DIRECTIONS_LONGEST = 1000
LINE_BREAKS = frozenset("\n")


def clean_address(
    *, street: str, postal_code: str, city: str, directions: str = "", directions_de: str = ""
) -> VenueAddress | None:
    """The address as stored, or None when every field is empty (the theater has no address)."""
    lines = {
        "street": " ".join(str(street or "").split()),
        "postalCode": " ".join(str(postal_code or "").split()),
        "city": " ".join(str(city or "").split()),
    }
    texts = {
        "directions": str(directions or "").replace("\r\n", "\n").strip(),
        "directionsDe": str(directions_de or "").replace("\r\n", "\n").strip(),
    }
    if not any(lines.values()) and not any(texts.values()):
        return None
    if not (lines["street"] and lines["city"]):
        raise InvalidRequest(gettext("An address needs at least the street and the city."))
    for field, text in lines.items():
        if len(text) > LINE_LONGEST[field]:
            raise InvalidRequest(
                gettext("Please keep this line of the address under %(n)d characters: %(line)s")
                % {"n": LINE_LONGEST[field], "line": text[:40] + "…"}
            )
    if any(len(text) > DIRECTIONS_LONGEST for text in texts.values()):
        raise InvalidRequest(gettext("Please keep the directions under %(n)d characters.") % {"n": DIRECTIONS_LONGEST})
    if any(has_invisible_characters(text) for text in lines.values()) or any(
        has_invisible_characters(text, allowed=LINE_BREAKS) for text in texts.values()
    ):
        raise InvalidRequest(gettext("The address has control or invisible characters; please retype it."))
    return {
        "street": lines["street"],
        "postalCode": lines["postalCode"],
        "city": lines["city"],
        "directions": texts["directions"],
        "directionsDe": texts["directionsDe"],
    }


def update_address(
    *, theater_id: ObjectId, street: str, postal_code: str, city: str, directions: str = "", directions_de: str = ""
) -> VenueAddress | None:
    """Set (or, all fields empty, remove) a theater's address and directions."""
    address = clean_address(
        street=street, postal_code=postal_code, city=city, directions=directions, directions_de=directions_de
    )
    change: dict = {"$set": {"modifiedOn": clock.now()}}
    if address is None:
        change["$unset"] = {"address": ""}
    else:
        change["$set"]["address"] = address
    if not mongo.theaters().update_one({"_id": theater_id}, change).matched_count:
        raise NotFound(gettext("No such theater."))
    return address


def address_of(theater_id: ObjectId) -> VenueAddress | None:
    theater = mongo.theaters().find_one({"_id": theater_id}, {"address": 1})
    return (theater or {}).get("address")


def address_lines(address: VenueAddress | None) -> list[str]:
    """The postal address as printed: street, then postal code and city."""
    if not address:
        return []
    town = " ".join(part for part in (address.get("postalCode", ""), address.get("city", "")) if part)
    return [line for line in (address.get("street", ""), town) if line]


def directions_text(address: VenueAddress | None, language: str | None = None) -> str:
    """How to get there in ``language`` (default: the active one): the German text on German pages
    when staff wrote one, else the main one."""
    if not address:
        return ""
    return localized(
        {"directions": address.get("directions", ""), "directionsDe": address.get("directionsDe", "")},
        "directions",
        language,
    )
