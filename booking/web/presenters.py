"""Shaping engine data for templates: grouping and labels only, no decisions about bookings."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.translation import get_language, gettext, ngettext, pgettext

from booking.core.domain import Order, seats_left
from booking.core.formatting import day_title, escape, format_money, thousands
from booking.core.localized import (
    category_names,
    localized,
    order_category,
    sold_ticket_type,
    ticket_type_condition,
    ticket_type_name,
)
from booking.sales import offers
from booking.venues.addresses import address_lines


def whats_on_days(sessions: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Sessions (already sorted by start) grouped by local day, then by theater in order of first
    show; each theater's shows as cards (``session_card``) for the ``show-card`` partial."""
    days: list[dict] = []
    for session in sessions:
        start = timezone.localtime(session["start"])
        if not days or days[-1]["date"] != start.date():
            days.append({"date": start.date(), "title": day_title(start.date(), get_language()), "theaters": []})
        theaters = days[-1]["theaters"]
        group = next((t for t in theaters if t["id"] == session["theaterId"]), None)
        if group is None:
            group = {"id": session["theaterId"], "name": localized(session, "theaterName"), "cards": []}
            theaters.append(group)
        group["cards"].append(session_card(session, start))
    return days


@dataclass(frozen=True)
class SessionCard:
    """What a performance's heading and its what's on card show. Frozen and compared by value: the
    card's ``repr`` names every field, so the ``show-card`` partial is cached on the card itself."""

    id: str
    name: str
    description: str
    theater: str
    start: datetime
    end: datetime | None
    price_range: str
    seats_left: int
    seats_total: int
    sold_out: bool
    few_left: bool
    sectioned: bool  # a stadium: the link opens its section overview


def session_card(session: Mapping[str, Any], start: datetime | None = None) -> SessionCard:
    prices = sorted((session.get("prices") or {}).values())
    currency = session.get("currency")
    if not prices:
        price_range = ""
    elif prices[0] == prices[-1]:
        price_range = format_money(prices[0], currency)
    else:
        price_range = f"{format_money(prices[0], currency)} – {format_money(prices[-1], currency)}"
    left = seats_left(session)  # what the quota still allows
    return SessionCard(
        id=str(session["_id"]),
        name=localized(session, "name"),  # the staff's German text on German pages, when set
        description=localized(session, "description"),
        theater=localized(session, "theaterName"),
        start=start or timezone.localtime(session["start"]),
        end=session.get("end"),
        price_range=price_range,
        seats_left=left,
        seats_total=session.get("seatsTotal", 0),
        sold_out=left <= 0,
        few_left=0 < left <= max(10, session.get("seatsTotal", 0) // 20),
        sectioned=bool(session.get("sections")),
    )


def type_shown(offer: dict) -> dict:
    """A ticket type offered for a seat as the buyer reads it, in their language: its name and its
    condition (what its holder must be or show)."""
    return {**offer, "name": ticket_type_name(offer), "condition": ticket_type_condition(offer)}


@dataclass
class CartGroup:
    session_id: str
    name: str
    theater: str
    start: datetime | None
    lines: list[dict] = field(default_factory=list)
    subtotal: int = 0


def cart_groups(cart: Mapping[str, Any], sessions: dict) -> list[CartGroup]:
    """The cart's seats grouped by session, in the order they were added.

    ``sessions`` maps session id -> a session document (summary fields and layout categories).
    """
    groups: dict = {}
    category_names_of: dict = {}  # session id -> its categories' names, read once per performance
    language = get_language()
    for item in cart.get("items", []):
        session = sessions.get(item["sessionId"]) or {}
        group = groups.get(item["sessionId"])
        if group is None:
            start = session.get("start")
            group = groups[item["sessionId"]] = CartGroup(
                session_id=str(item["sessionId"]),
                name=localized(session, "name", language) or gettext("Performance"),
                theater=localized(session, "theaterName", language),
                start=timezone.localtime(start) if start else None,
            )
            layout_categories = (session.get("layout") or {}).get("categories")
            category_names_of[item["sessionId"]] = category_names(layout_categories, language)
        categories = category_names_of[item["sessionId"]]
        chosen = type_shown(offers.item_offer(item))
        group.lines.append(
            {
                "key": item["key"],
                "row": item["row"],
                "seat": item["seat"],
                "category": categories.get(item["cat"], item["cat"]),
                "wheelchair": bool(item.get("wheelchair")),
                "price": item["price"],
                "ticket_type": offers.item_type(item),
                "ticket_type_name": chosen["name"],
                "condition": chosen["condition"],
                # only what the buyer may choose now (no companion ticket without a wheelchair space)
                "offers": [type_shown(offer) for offer in offers.choosable_offers(cart["items"], item)],
                "error_key": f"{item['sessionId']}:{item['key']}",
            }
        )
        group.subtotal += item["price"]
    return list(groups.values())


def order_tickets(order: Order, *, venues: dict | None = None) -> list[dict]:
    """One e-ticket per seat with the details printed on it; with ``venues``
    (``sales.order_venues.venues_of_order``) the venue's address too."""
    sessions = {s["_id"]: s for s in order.get("sessions", [])}
    tickets = []
    for line in order.get("lines", []):
        session: Mapping[str, Any] = sessions.get(line["sessionId"], {})
        start = session.get("start")
        venue = (venues or {}).get(line["sessionId"])
        tickets.append(
            {
                "code": line["ticket"],
                "show": localized(session, "name"),
                "theater": localized(session, "theaterName"),
                "address": ", ".join(address_lines(venue.address)) if venue else "",
                "start": timezone.localtime(start) if start else None,
                "row": line["row"],
                "seat": line["seat"],
                "category": order_category(session, line["cat"]),
                "wheelchair": bool(line.get("wheelchair")),  # for the usher at the door, and the buyer
                "price": line["price"],
                "ticket_type": ticket_type_name(sold_ticket_type(line)),
                "condition": ticket_type_condition(sold_ticket_type(line)),  # what to show at the door
                "holder": holder["name"] if (holder := line.get("holder")) else "",  # handed on: the buyer sees no code
            }
        )
    return tickets


def seconds_left(expires_at: datetime, now: datetime) -> int:
    return max(0, int((expires_at - now).total_seconds()))


TIERS = 4  # price tiers a stadium's sections are coloured by (tier-1 the cheapest)


def section_price_range(section: Mapping[str, Any]) -> str:
    """A section's full prices, cheapest to dearest ("€20 – €45"), or its one price."""
    prices = sorted(set((section.get("prices") or {}).values()))
    if not prices:
        return ""
    currency = section.get("currency")
    if len(prices) == 1:
        return format_money(prices[0], currency)
    return f"{format_money(prices[0], currency)} – {format_money(prices[-1], currency)}"


def price_tiers(sections: Sequence[Mapping[str, Any]]) -> tuple[dict, list[dict]]:
    """Each section's price tier (1 to ``TIERS``, by its dearest full price among the venue's
    distinct ones) and the legend: [{tier, range}] of the tiers used."""
    tops = {s["_id"]: max((s.get("prices") or {0: 0}).values()) for s in sections}
    distinct = sorted(set(tops.values()))
    tier_of_price = {price: 1 + (i * TIERS) // len(distinct) for i, price in enumerate(distinct)}
    tiers = {section_id: tier_of_price[top] for section_id, top in tops.items()}
    currency = sections[0].get("currency") if sections else None
    legend = []
    for tier in sorted(set(tier_of_price.values())):
        members = [price for price, t in tier_of_price.items() if t == tier]
        low, high = format_money(members[0], currency), format_money(members[-1], currency)
        legend.append({"tier": tier, "range": low if low == high else f"{low} – {high}"})
    return tiers, legend


def section_stands(sections: Sequence[Mapping[str, Any]]) -> list[dict]:
    """A sectioned venue's sections grouped into stands by the first word of their names
    ("North 3" -> North), in the venue's order. Each block shows its free seats with their unit
    and its price range, coloured by its price tier (``price_tiers``). Each stand's blocks come as
    ready HTML: a stadium has a hundred of them, and a template loop over them costs more than the
    rest of the page."""
    placeholder = "0" * 24
    session_url = reverse("booking:session", args=[placeholder])
    stands: list[dict] = []
    sold_out = pgettext("a stadium section", "sold out")
    tiers, _legend = price_tiers(sections)
    for section in sections:
        slug = section["section"]["name"].split(" ", 1)[0].lower()  # the stand's place (CSS), in English
        name = localized(section["section"], "name")  # "Nord 3" on German pages when staff named it
        stand_name = name.split(" ", 1)[0]
        if not stands or stands[-1]["slug"] != slug:
            stands.append({"name": stand_name, "slug": slug, "blocks": []})
        free, total = section.get("seatsAvailable", 0), section.get("seatsTotal", 0)
        level = "sold" if free <= 0 else ("few" if free * 10 <= total else "ok")
        short = escape(name.removeprefix(stand_name).strip() or name)
        prices = escape(section_price_range(section))
        if free > 0:
            shown = ngettext("%(free)s seat free", "%(free)s seats free", free) % {"free": thousands(free)}
        else:
            shown = sold_out
        # the name holds the visible text in its order ("1 40 seats free €45"): label in name
        label = gettext("Section %(name)s: %(state)s") % {"name": escape(name), "state": escape(shown)}
        url = session_url.replace(placeholder, str(section["_id"]))
        stands[-1]["blocks"].append(
            f'<li><a class="block block-{level} tier-{tiers[section["_id"]]}" href="{url}" '
            f'aria-label="{label}, {prices}"><strong>{short}</strong> <small>{escape(shown)}</small> '
            f'<small class="block-price">{prices}</small></a></li>'
        )
    for stand in stands:
        stand["blocks_html"] = mark_safe("".join(stand.pop("blocks")))  # noqa: S308 - every part escaped above
    return stands


def canceled_shows(cart: Mapping[str, Any]) -> list[str]:
    """What the buyer is told about performances canceled while they held seats in them (the
    cart remembers them: sales.carts.drop_canceled_session)."""
    from django.utils.formats import date_format
    from django.utils.translation import ngettext

    told = []
    for note in cart.get("canceledShows", []):
        when = date_format(timezone.localtime(note["start"]), "D j M, H:i") if note.get("start") else ""
        told.append(
            ngettext(
                "“%(name)s” (%(when)s) has been canceled. The seat you held for it was released; nothing was charged.",
                "“%(name)s” (%(when)s) has been canceled. The %(count)s seats you held for it were released; "
                "nothing was charged.",
                note["seats"],
            )
            % {"name": note["name"], "when": when, "count": note["seats"]}
        )
    return told
