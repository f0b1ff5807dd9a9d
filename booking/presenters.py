"""Shaping engine data for templates: grouping and labels only, no decisions about bookings."""

import html
import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache

from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.text import Truncator
from django.utils.translation import get_language

from .rendering import format_money


def whats_on_days(sessions: list[dict]) -> list[dict]:
    """Sessions (already sorted by start) grouped by local day, then by theater in order of first
    show. Each theater's shows come as ready HTML (``cards_html``, see ``whats_on_card_html``)."""
    days: list[dict] = []
    urls = _CardUrls()
    for session in sessions:
        start = timezone.localtime(session["start"])
        if not days or days[-1]["date"] != start.date():
            days.append({"date": start.date(), "title": day_title(start.date(), get_language()), "theaters": []})
        theaters = days[-1]["theaters"]
        group = next((t for t in theaters if t["id"] == session["theaterId"]), None)
        if group is None:
            group = {"id": session["theaterId"], "name": session.get("theaterName", ""), "cards": []}
            theaters.append(group)
        group["cards"].append(whats_on_card_html(session_card(session, start), urls))
    for day in days:
        for group in day["theaters"]:
            group["cards_html"] = mark_safe("".join(group.pop("cards")))  # noqa: S308 - escaped in whats_on_card_html
    return days


@lru_cache(maxsize=256)
def day_title(day: date, language: str) -> str:
    """A day's heading in the what's on list, e.g. Saturday, 5 December (Django's ``l, j F``),
    formatted once per day and language rather than a dozen times on every request."""
    return date_format(day, "l, j F")


class _CardUrls:
    """A session's and a performance's URL, reversed once per page rather than once per card."""

    placeholder = "0" * 24

    def __init__(self):
        self.session = reverse("booking:session", args=[self.placeholder])
        self.performance = reverse("booking:performance", args=[self.placeholder])

    def __call__(self, card: dict) -> str:
        return (self.performance if card["sectioned"] else self.session).replace(self.placeholder, card["id"])


def whats_on_card_html(card: dict, urls: _CardUrls | None = None) -> str:
    """One show of the what's on list as HTML, every value escaped. Built in Python: the same
    markup through the template engine cost more than the rest of the page."""
    url = (urls or _CardUrls())(card)
    left = card["seats_left"]
    if card["sold_out"]:
        badge = '<span class="badge badge-sold">Sold out</span>'
    elif card["few_left"]:
        badge = f'<span class="badge badge-few">Only {left} left</span>'
    else:
        badge = f'<span class="badge">{left} seats left</span>'
    # the spaces between the parts keep the words apart in the link's text (its accessible name)
    return (
        f'<li class="show{" sold-out" if card["sold_out"] else ""}">'
        f'<a class="show-link" href="{html.escape(url)}">'
        f'<span class="show-time">{card["start"]:%H:%M}</span> '
        f'<span class="show-main"><span class="show-name">{html.escape(card["name"])}</span> '
        f'<span class="show-desc">{html.escape(truncate_chars(card["description"] or "", 110))}</span></span> '
        f'<span class="show-meta"><span class="show-price">{html.escape(card["price_range"])}</span> {badge}</span>'
        "</a></li>\n"
    )


def truncate_chars(text: str, length: int) -> str:
    """Django's ``truncatechars`` filter, without its cost when the text is short enough."""
    text = unicodedata.normalize("NFC", text)
    return text if len(text) <= length else Truncator(text).chars(length)


def session_card(session: dict, start: datetime | None = None) -> dict:
    prices = sorted((session.get("prices") or {}).values())
    currency = session.get("currency")
    if not prices:
        price_range = ""
    elif prices[0] == prices[-1]:
        price_range = format_money(prices[0], currency)
    else:
        price_range = f"{format_money(prices[0], currency)} – {format_money(prices[-1], currency)}"
    left = session.get("seatsAvailable", 0)
    return {
        "id": str(session["_id"]),
        "name": session.get("name", ""),
        "description": session.get("description", ""),
        "theater": session.get("theaterName", ""),
        "start": start or timezone.localtime(session["start"]),
        "end": session.get("end"),
        "price_range": price_range,
        "seats_left": left,
        "seats_total": session.get("seatsTotal", 0),
        "sold_out": left <= 0,
        "few_left": 0 < left <= max(10, session.get("seatsTotal", 0) // 20),
        "sectioned": bool(session.get("sections")),  # a stadium: the link opens its section overview
    }


@dataclass
class CartGroup:
    session_id: str
    name: str
    theater: str
    start: datetime | None
    lines: list[dict] = field(default_factory=list)
    subtotal: int = 0


def cart_groups(cart: dict, sessions: dict) -> list[CartGroup]:
    """The cart's seats grouped by session, in the order they were added.

    ``sessions`` maps session id -> a session document (summary fields and layout categories).
    """
    groups: dict = {}
    for item in cart.get("items", []):
        session = sessions.get(item["sessionId"]) or {}
        group = groups.get(item["sessionId"])
        if group is None:
            start = session.get("start")
            group = groups[item["sessionId"]] = CartGroup(
                session_id=str(item["sessionId"]),
                name=session.get("name", "Performance"),
                theater=session.get("theaterName", ""),
                start=timezone.localtime(start) if start else None,
            )
        categories = {c["code"]: c["name"] for c in (session.get("layout") or {}).get("categories", [])}
        group.lines.append(
            {
                "key": item["key"],
                "row": item["row"],
                "seat": item["seat"],
                "category": categories.get(item["cat"], item["cat"]),
                "price": item["price"],
            }
        )
        group.subtotal += item["price"]
    return list(groups.values())


def order_tickets(order: dict) -> list[dict]:
    """One e-ticket per seat with the details printed on it."""
    sessions = {s["_id"]: s for s in order.get("sessions", [])}
    tickets = []
    for line in order.get("lines", []):
        session = sessions.get(line["sessionId"], {})
        start = session.get("start")
        tickets.append(
            {
                "code": line["ticket"],
                "show": session.get("name", ""),
                "theater": session.get("theaterName", ""),
                "start": timezone.localtime(start) if start else None,
                "row": line["row"],
                "seat": line["seat"],
                "category": (session.get("categories") or {}).get(line["cat"], line["cat"]),
                "price": line["price"],
            }
        )
    return tickets


def seconds_left(expires_at: datetime, now: datetime) -> int:
    return max(0, int((expires_at - now).total_seconds()))


def section_stands(sections: list[dict]) -> list[dict]:
    """A sectioned venue's sections grouped into stands by the first word of their names
    ("North 3" -> North), in the venue's order. Each stand's blocks come as ready HTML: a stadium
    has a hundred of them, and a template loop over them costs more than the rest of the page."""
    placeholder = "0" * 24
    session_url = reverse("booking:session", args=[placeholder])
    stands: list[dict] = []
    for section in sections:
        name = section["section"]["name"]
        stand = name.split(" ", 1)[0]
        if not stands or stands[-1]["name"] != stand:
            stands.append({"name": stand, "slug": stand.lower(), "blocks": []})
        free, total = section.get("seatsAvailable", 0), section.get("seatsTotal", 0)
        level = "sold" if free <= 0 else ("few" if free * 10 <= total else "ok")
        short = escape(name.removeprefix(stand).strip() or name)
        label = f"Section {escape(name)}: " + (f"{free} of {total} seats free" if free > 0 else "sold out")
        url = session_url.replace(placeholder, str(section["_id"]))
        stands[-1]["blocks"].append(
            f'<li><a class="block block-{level}" href="{url}" aria-label="{label}">'
            f"<strong>{short}</strong><small>{free if free > 0 else 'sold out'}</small></a></li>"
        )
    for stand in stands:
        stand["blocks_html"] = mark_safe("".join(stand.pop("blocks")))  # noqa: S308 - every part escaped above
    return stands


def sale_time(moment: datetime) -> str:
    """An on-sale or presale time as the buyer reads it (seconds only when they matter)."""
    local = timezone.localtime(moment)
    return local.strftime("%a %d %b %Y, %H:%M:%S" if local.second else "%a %d %b %Y, %H:%M")
