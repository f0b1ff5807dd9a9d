"""The buyer's cart panel as HTML, built in Python: the cart summary, the phone's cart bar and the
notice area, each an element swapped in by its id.

Every click on a seat answers with all three (``seat_change``), so they are built here in one pass
instead of through the template engine, which cost a third of a hold's CPU (docs/performance.md, "A
hold's CPU, profiled"). The page shows the same HTML: ``booking/session.html``'s partials
``cart-summary``, ``cart-bar`` and ``notice`` call these builders through ``booking_tags``.

``values`` is what the templates get from ``presale.context.cart_context`` (``cart``, ``groups``,
``total``, ``seat_count``, ``seconds_left``, ``expires_at``, ``canceled_shows``, ``cart_expired``)
plus ``notice``, ``notice_level`` and ``oob`` (an htmx out-of-band swap). Words are looked up with
the msgids the template tags used, so the German catalog applies as before; the buyer's text and
the staff's names are escaped, the words themselves are not (the templates' ``{% translate %}`` of
a literal is not either).
"""

from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.formats import date_format
from django.utils.timezone import get_current_timezone_name, is_aware, localtime
from django.utils.translation import get_language, gettext, ngettext

from booking.core.formatting import countdown, escape, format_money
from booking.core.localized import localized

OOB = ' hx-swap-oob="true"'


@lru_cache(maxsize=8)
def _words(language: str) -> dict[str, str]:
    """The panel's fixed words in ``language`` (the active one), looked up once per language:
    a dozen lookups per click cost more than the rest of the panel."""
    return {
        "your_seats": gettext("Your seats"),
        "held_for_you": gettext(
            'Held for you for <strong class="countdown-time">%(left)s</strong> more '
            '<span class="until">(until %(until)s)</span>'
        ),
        "row_seat": gettext("Row %(row)s, seat %(seat)s"),
        "wheelchair": gettext("wheelchair space"),
        "check_out": gettext("Check out"),
        "edit_cart": gettext("Edit cart"),
        "expired": gettext("Your hold has expired."),
        "back_on_sale": gettext("The seats went back on sale."),
        "again": gettext("Please choose your seats again."),
        "click": gettext("Click a free seat on the map to hold it, or let us pick the best available."),
        "tap": gettext("Tap a free seat on the map to see it and hold it, or let us pick the best available."),
        "held_for": gettext("Held for"),
        "sticky_bar": gettext("sticky bar"),
        "date_format": gettext("D j M, H:i"),
    }


@lru_cache(maxsize=8)
def _urls(urlconf: str | None, prefix: str) -> dict[str, str]:
    """The panel's fixed links (they depend on the URLconf and the script prefix alone)."""
    return {"checkout": escape(reverse("booking:checkout")), "cart": escape(reverse("booking:cart"))}


@lru_cache(maxsize=512)
def _group_head(
    session_id: str, name: str, start: datetime | None, theater: str, where: tuple, date_format_of_language: str
) -> str:
    """A cart group's heading: the performance linked, its start and theater. Kept per performance,
    language and time zone (``where``: URLconf, script prefix, time zone; the pattern names the
    language), as the template's fragment cache kept it."""
    href = escape(reverse("booking:session", args=[session_id]))
    head = f'<h3><a href="{href}">{escape(name)}</a></h3>\n        '
    if start:
        head += f'<p class="small">{_when(start, date_format_of_language)} · {escape(theater)}</p>'
    return head


def _oob(values: Mapping[str, Any]) -> str:
    return OOB if values.get("oob") else ""


def _items(values: Mapping[str, Any]) -> list:
    cart = values.get("cart")
    return (cart.get("items") or []) if cart else []


def _money(cents) -> str:
    """Minor units as the templates' ``money`` filter writes them (nothing for none)."""
    return "" if cents in (None, "") else escape(format_money(int(cents)))


def _local(moment: datetime) -> datetime:
    """As the templates convert a time: an aware one into the site's time zone, a naive one as it is."""
    return localtime(moment) if is_aware(moment) else moment


def _when(moment, pattern: str) -> str:
    """A time as the templates' ``date`` filter writes it (the site's time zone)."""
    return escape(date_format(_local(moment), pattern)) if moment else ""


def notice(values: Mapping[str, Any]) -> str:
    """The notice area: what the last action did (``notice``, its ``notice_level``), or empty."""
    text = values.get("notice")
    said = f'<p class="msg msg-{escape(values.get("notice_level") or "info")}">{escape(text)}</p>' if text else ""
    return f'<div id="notice" class="notice-area" role="status" aria-live="polite"{_oob(values)}>{said}</div>'


def cart_summary(values: Mapping[str, Any]) -> str:
    """The side panel "Your seats": the held seats by performance, the countdown and the total,
    or the expired hold's message, or how to start."""
    cart, items = values.get("cart"), _items(values)
    words = _words(get_language())
    out = [
        f'<section id="cart-summary" class="panel cart-summary" aria-label="{words["your_seats"]}"{_oob(values)}>\n'
        f"  <h2>{words['your_seats']}</h2>\n  "
    ]
    groups = values.get("groups") or []
    if cart and cart.get("subscription"):
        named = ngettext(
            "Subscription %(name)s: %(counter)s performance",
            "Subscription %(name)s: %(counter)s performances",
            len(groups),
        ) % {"name": escape(localized(cart["subscription"], "name")), "counter": len(groups)}
        out.append(f'<p class="subscription-name">{named}</p>')
    out.append("\n  ")
    for told in values.get("canceled_shows") or []:
        out.append(f'<p class="msg msg-error canceled-show" role="alert">{escape(told)}</p>')
    out.append("\n  ")
    if items:
        out.append(_held_seats(values, groups, words))
    elif values.get("cart_expired"):
        out.append(
            f'\n    <div class="expired" role="alert">\n      <p><strong>{words["expired"]}</strong> '
            f"{words['back_on_sale']}</p>\n      <p>{words['again']}</p>\n    </div>\n  "
        )
    else:
        out.append(f'\n    <p class="empty"><span class="click-hint">{words["click"]}</span>')
        out.append(f'<span class="touch-hint">{words["tap"]}</span></p>\n  ')
    out.append("\n</section>")
    return "".join(out)


def _held_seats(values: Mapping[str, Any], groups: list, words: dict[str, str]) -> str:
    seconds_left, expires_at = values.get("seconds_left"), values.get("expires_at")
    # the date filter's "H:i" is strftime's "%H:%M"
    until = _local(expires_at).strftime("%H:%M") if expires_at else ""
    held_for = words["held_for_you"] % {"left": escape(countdown(seconds_left)), "until": until}
    out = [f'\n    <p class="countdown" data-seconds="{escape(seconds_left)}">\n      {held_for}\n    </p>\n    ']
    row_seat, wheelchair = words["row_seat"], words["wheelchair"]
    where = (get_urlconf(), get_script_prefix(), get_current_timezone_name())
    urls = _urls(where[0], where[1])
    for group in groups:
        head = _group_head(group.session_id, group.name, group.start, group.theater, where, words["date_format"])
        out.append(f'\n      <div class="cart-group">\n        {head}\n        <ul class="lines">\n          ')
        for line in group.lines:
            seat = row_seat % {"row": escape(line.get("row", "")), "seat": escape(line.get("seat", ""))}
            about = escape(line.get("category", ""))
            if line.get("wheelchair"):
                about += f" · {wheelchair}"
            if len(line.get("offers") or ()) > 1:
                about += f" · {escape(line.get('ticket_type_name', ''))}"
            price = _money(line.get("price"))
            out.append(f'<li><span>{seat} <span class="small">{about}</span></span><span>{price}</span></li>')
        out.append("\n        </ul>\n      </div>\n    ")
    seat_count = values.get("seat_count", 0)
    total = ngettext("Total (%(counter)s seat)", "Total (%(counter)s seats)", seat_count) % {"counter": seat_count}
    out.append(
        f'\n    <p class="total"><span>{total}</span><strong>{_money(values.get("total"))}</strong></p>\n'
        '    <p class="actions">\n'
        f'      <a class="btn btn-primary" href="{urls["checkout"]}">{words["check_out"]}</a>\n'
        f'      <a class="btn btn-quiet" href="{urls["cart"]}">{words["edit_cart"]}</a>\n'
        "    </p>\n  "
    )
    return "".join(out)


def cart_bar(values: Mapping[str, Any]) -> str:
    """The bar at the bottom of a phone's screen while seats are held: count, total, countdown,
    Check out (hidden while the cart is empty)."""
    if not _items(values):
        return f'<div id="cart-bar" class="cart-bar"{_oob(values)} hidden></div>'
    seat_count, seconds_left = values.get("seat_count", 0), values.get("seconds_left")
    seats = ngettext("%(n)s seat", "%(n)s seats", seat_count) % {"n": seat_count}
    words, checkout = _words(get_language()), _urls(get_urlconf(), get_script_prefix())["checkout"]
    return (
        f'<div id="cart-bar" class="cart-bar"{_oob(values)}>\n'
        f'  <p class="bar-sum"><span>{seats}</span> <strong>{_money(values.get("total"))}</strong></p>\n'
        f'  <p class="bar-time countdown-bar" data-seconds="{escape(seconds_left)}"><span class="visually-hidden">'
        f'{words["held_for"]} </span><strong class="countdown-time">{escape(countdown(seconds_left))}</strong></p>\n'
        f'  <a class="btn btn-primary" href="{checkout}">{words["check_out"]}'
        f'<span class="visually-hidden"> ({words["sticky_bar"]})</span></a>\n'
        "</div>"
    )


def seat_change(values: Mapping[str, Any], seat_updates: str) -> str:
    """The answer to a seat click that went through: the seats it changed (``seatmap_html``'s
    ``seat_updates``), then the cart summary, the cart bar and the notice, swapped in by id."""
    return seat_updates + cart_summary(values) + cart_bar(values) + notice(values)
